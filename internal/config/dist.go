package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/chash-dev/chash/hashfn"
)

// A Router maps a key to the Name of the server that owns it. *chash.Ring is one.
// The Routers this package builds are safe for concurrent use.
type Router interface {
	Lookup(key []byte) (string, error)
}

// A builder makes the Router of a distribution for pool p over servers, which are
// p.Servers or a subset of them (the live ones, when hosts are ejected). It must
// return an error rather than panic on any pool, even one not made by Parse, and
// should make its errors with p.errorAt.
type builder func(p *Pool, servers []Server) (Router, error)

// distributions maps the names a pool's "distribution:" may give to builders.
// Each family of distributions registers its own from an init function in its
// own file (dist_core.go, ...).
var distributions = map[string]builder{}

// register makes b the builder of the distribution called name. It panics if the
// name is taken: that is a mistake in this package, not in a configuration.
func register(name string, b builder) {
	if _, dup := distributions[name]; dup {
		panic("config: distribution " + name + " registered twice")
	}
	distributions[name] = b
}

// Distributions returns the names of the registered distributions, sorted.
func Distributions() []string {
	names := make([]string, 0, len(distributions))
	for n := range distributions {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Router builds the pool's router over all its servers. Callers pass keys
// through HashKey before Lookup.
func (p *Pool) Router() (Router, error) {
	return p.RouterOf(p.Servers)
}

// RouterOf builds the pool's router over servers, for example the servers of
// p.Servers that are not ejected. It is an error if servers is empty.
func (p *Pool) RouterOf(servers []Server) (Router, error) {
	b, ok := distributions[p.Distribution]
	if !ok {
		return nil, p.errorAt("distribution", fmt.Errorf("distribution %q is unknown (known: %s)", p.Distribution, strings.Join(Distributions(), ", ")))
	}
	if len(servers) == 0 {
		return nil, p.errorAt("servers", fmt.Errorf("no servers"))
	}
	return b(p, servers)
}

// keyHash returns the function named by the pool's Hash, or by def if the pool
// sets none.
func (p *Pool) keyHash(def string) (hashfn.Func, error) {
	name := p.Hash
	if name == "" {
		name = def
	}
	f, err := hashfn.Lookup(name)
	if err != nil {
		return nil, p.errorAt("hash", fmt.Errorf("hash %q is unknown (known: %s)", name, strings.Join(hashfn.Names(), ", ")))
	}
	return f, nil
}

// errorAt returns an *Error about the pool at the line of key's value (the
// pool's line if the pool does not set key).
func (p *Pool) errorAt(key string, err error) error {
	return &Error{File: p.file, Line: p.line(key), Pool: p.Name, Err: err}
}
