package main

import (
	"github.com/chash-dev/chash/internal/analyze"
	"github.com/chash-dev/chash/internal/config"
)

// loadPool loads the configuration at path and returns its pool called name
// (its only pool if name is empty). On failure it reports the error and
// returns the exit status, 2: a bad configuration is a usage error.
func loadPool(cmd *Command, env *Env, path, name string) (*config.Pool, int) {
	file, err := config.Load(path)
	if err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return nil, 2
	}
	pool, err := file.Pool(name)
	if err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return nil, 2
	}
	return pool, 0
}

// measure builds the router of p over servers, for analysis; on failure it
// reports the error and returns the exit status, 2.
func measure(cmd *Command, env *Env, p *config.Pool, servers []config.Server) (*analyze.Pool, int) {
	ap, err := analyze.NewPool(p, servers)
	if err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return nil, 2
	}
	return ap, 0
}
