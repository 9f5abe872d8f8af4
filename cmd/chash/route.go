package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"

	"github.com/chash-dev/chash/internal/config"
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
distributions of its own (chash, seed) and of other programs: 'chash help
config' lists every key. --pool names the pool and may be left
out when the file has only one. Keys pass through the pool's hash_tag
before they are hashed, as in twemproxy.

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

func (f *routeFlags) run(_ context.Context, cmd *Command, env *Env, args []string) int {
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
	r, err := pool.Router()
	if err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 2
	}

	// A load-aware router (distribution: bounded) treats the keys read as its
	// load: each key is placed, in order, and counts against its server.
	lookup := r.Lookup
	if p, ok := r.(placer); ok {
		lookup = p.Acquire
	}
	w := bufio.NewWriterSize(env.Stdout, 64<<10)
	route := func(key []byte) error {
		server, err := lookup(pool.HashKey(key))
		if err != nil {
			return err
		}
		w.Write(key)
		w.WriteByte('\t')
		w.WriteString(server)
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

// placer is a router that places keys under a load bound, such as
// *bounded.Balancer: Acquire routes a key and counts it as load.
type placer interface {
	Acquire(key []byte) (string, error)
}

// eachLine calls f with each line of r, without its trailing "\n" or "\r\n",
// however long. Before it waits for more input it flushes w, so that routing
// typed keys answers each at once while piped keys are written in large blocks.
func eachLine(r io.Reader, w *bufio.Writer, f func(line []byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		if br.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && err != io.EOF {
			return err
		}
		if len(line) > 0 {
			if bytes.HasSuffix(line, []byte("\n")) {
				line = line[:len(line)-1]
				line = bytes.TrimSuffix(line, []byte("\r"))
			}
			if ferr := f(line); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}
