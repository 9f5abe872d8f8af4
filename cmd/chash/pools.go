package main

import (
	"context"
	"fmt"

	"github.com/chash-dev/chash/internal/analyze"
	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/membership"
)

// loadPool loads the configuration at path and returns its pool called name
// (its only pool if name is empty), with its servers read if they live
// elsewhere (readServers). On failure it reports the error and returns the
// exit status: 2 for a bad configuration, a usage error; 1 for servers that
// cannot be read.
func loadPool(ctx context.Context, cmd *Command, env *Env, path, name string) (*config.Pool, int) {
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
	return pool, readServers(ctx, cmd, env, pool)
}

// readServers gives a pool whose servers live elsewhere (servers_from) the
// servers listed there now, read once (membership.Read: etcd has
// membership.ReadTimeout to answer), and returns the exit status: 0, 2 for a
// servers_from that is no valid URL, or 1 for a list that cannot be read, is
// not valid or is empty. A pool with servers: is left as it is.
func readServers(ctx context.Context, cmd *Command, env *Env, p *config.Pool) int {
	if p.ServersFrom == "" {
		return 0
	}
	if _, err := membership.ParseURL(p.ServersFrom); err != nil {
		cmd.Errorf(env.Stderr, "%v", p.ErrorAt("servers_from", err))
		return 2
	}
	servers, err := membership.Read(ctx, p.ServersFrom)
	if err == nil && len(servers) == 0 {
		err = fmt.Errorf("%s lists no servers", p.ServersFrom)
	}
	if err != nil {
		cmd.Errorf(env.Stderr, "%v", p.ErrorAt("servers_from", err))
		return 1
	}
	p.Servers = servers
	return 0
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
