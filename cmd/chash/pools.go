package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

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

// owners returns the servers that own keys, as the proxy routes them: those
// the pool's drain: list does not name, which stay connected but own none.
// With none left it reports the error and returns the exit status, 2.
func owners(cmd *Command, env *Env, p *config.Pool, servers []config.Server) ([]config.Server, int) {
	if len(p.Drain) == 0 {
		return servers, 0
	}
	out, _ := splitDrained(p, servers)
	if len(out) == 0 && len(servers) > 0 {
		cmd.Errorf(env.Stderr, "%v", p.ErrorAt("drain", fmt.Errorf("drain names every server of %s; at least one must own the keys", p.ServersFrom)))
		return nil, 2
	}
	return out, 0
}

// drainedOf returns the names of the servers that p's drain: list names.
func drainedOf(p *config.Pool, servers []config.Server) []string {
	_, drained := splitDrained(p, servers)
	return drained
}

// splitDrained returns the servers that p's drain: list does not name, and
// the names of those it names.
func splitDrained(p *config.Pool, servers []config.Server) (own []config.Server, drained []string) {
	for _, s := range servers {
		if slices.Contains(p.Drain, s.Name()) {
			drained = append(drained, s.Name())
		} else {
			own = append(own, s)
		}
	}
	return own, drained
}

// drainedText is " (drained, owning no keys: A, B)", or "" for none.
func drainedText(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf(" (drained, owning no keys: %s)", strings.Join(names, ", "))
}

// measure builds the router of p over servers, less the drained (owners),
// for analysis; on failure it reports the error and returns the exit
// status, 2.
func measure(cmd *Command, env *Env, p *config.Pool, servers []config.Server) (*analyze.Pool, int) {
	servers, code := owners(cmd, env, p, servers)
	if code != 0 {
		return nil, code
	}
	ap, err := analyze.NewPool(p, servers)
	if err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return nil, 2
	}
	return ap, 0
}
