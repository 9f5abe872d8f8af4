package main

import (
	"bufio"
	"context"
	"strings"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/dist"
)

func init() { register(newRoute) }

type routeFlags struct {
	config string
	pool   string
}

func newRoute() *Command {
	f := new(routeFlags)
	c := &Command{
		UsageLine: "route --config FILE [--pool NAME] [KEY ...]",
		Short:     "print the server each key goes to",
		Long: `Route prints the server that a pool of the configuration FILE sends each KEY
to: one line "KEY<TAB>SERVER" per key, in order. SERVER is the server's name
as the file gives it: its alias if it has one, else host:port.

With no KEY arguments, route reads keys from standard input, one per line. A
line's trailing "\n" or "\r\n" is not part of its key and nothing else is
stripped, so an empty line is the empty key. Lines may be of any length.

FILE is in twemproxy's nutcracker.yml format, to which chash adds keys and
distributions of its own (chash, seed), of other programs and of other
algorithms: 'chash help config' lists every key. --pool names the pool and
may be left out when the file has only one. A pool whose servers live in
etcd or in a file (servers_from:) is routed over the servers listed there
now, read once; the proxies that follow the list route alike as long as it
does not change, and their GET /ring shows the fingerprint of that list.
The servers a pool drains (drain:) own no keys, as in the proxy: route,
analyze and diff place keys over the others. Keys pass through the pool's hash_tag before they are hashed, as in
twemproxy. A pool whose distribution is random cannot be routed offline:
twemproxy sends each request to a server chosen at random.

With distribution: bounded, the keys read are the load: each key in turn goes
to the first server clockwise whose load is below the bound ceil(c*m/n), m
being the number of keys placed so far including this one; so a key's server
depends on the keys before it.

A bad configuration is reported with its file, line and pool, and route exits
with status 2, as for a bad flag. Flags may come before or after the keys;
put "--" before keys that begin with "-", which would otherwise be taken for
flags.`,
	}
	c.Flag.StringVar(&f.config, "config", "", "read the configuration `FILE` (required)")
	c.Flag.StringVar(&f.pool, "pool", "", "route with the pool called `NAME` (required if FILE has several)")
	c.Run = f.run
	return c
}

func (f *routeFlags) run(ctx context.Context, cmd *Command, env *Env, args []string) int {
	if f.config == "" {
		return cmd.UsageError(env.Stderr, "--config is required")
	}
	file, err := config.Load(f.config)
	if err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 2
	}
	if f.pool == "" && len(file.Pools) > 1 {
		names := make([]string, len(file.Pools))
		for i, p := range file.Pools {
			names[i] = p.Name
		}
		cmd.Errorf(env.Stderr, "%s has %d pools (%s): choose one with --pool", f.config, len(names), strings.Join(names, ", "))
		return 2
	}
	pool, err := file.Pool(f.pool)
	if err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 2
	}
	if code := readServers(ctx, cmd, env, pool); code != 0 {
		return code
	}
	servers, code := owners(cmd, env, pool, pool.Servers)
	if code != 0 {
		return code
	}
	e, err := dist.EntryOf(pool)
	if err == nil && e.Random {
		err = pool.ErrorAt("distribution", dist.ErrRandom)
	}
	var r dist.Router
	if err == nil {
		r, err = dist.Build(pool, servers)
	}
	if err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 2
	}

	// A load-aware router (distribution: bounded) treats the keys read as its
	// load: each key is placed, in order, and counts against its server.
	lookup := r.Lookup
	if p, ok := r.(dist.Placer); ok {
		lookup = p.Acquire
	}
	w := bufio.NewWriterSize(env.Stdout, 64<<10)
	route := func(key []byte) error {
		i, err := lookup(pool.HashKey(key))
		if err != nil {
			return err
		}
		w.Write(key)
		w.WriteByte('\t')
		w.WriteString(servers[i].Name())
		return w.WriteByte('\n')
	}
	if len(args) > 0 {
		for _, key := range args {
			if err := route([]byte(key)); err != nil {
				cmd.Errorf(env.Stderr, "%v", err)
				return 1
			}
		}
	} else if err := eachLine(env.Stdin, w, route); err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 1
	}
	if err := w.Flush(); err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 1
	}
	return 0
}
