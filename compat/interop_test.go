package compat_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/chash-dev/chash/compat/internal/live"
	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/dist"
)

// This file holds what the golden tests and the interop tests share: cases written
// as chash configs, keys, and the comparison.

// A routeCase is a server list routed by a program, written as a chash config
// (nutcracker.yml syntax) whose pool routes like that program.
type routeCase struct {
	name         string
	distribution string // a config distribution name
	hash         string // "" for the distribution's default
	hashTag      string
	servers      []live.Server
}

// pool returns the case as a chash config's pool, "pool".
func (c routeCase) pool() *config.Pool {
	return live.Pool{Distribution: c.distribution, Hash: c.hash, HashTag: c.hashTag, Servers: c.servers}.Config("")
}

// displayName is the name chash route prints for s: its alias, else host:port.
func displayName(s live.Server) string {
	if s.Alias != "" {
		return s.Alias
	}
	return s.Addr()
}

// routeConfig routes keys through pool p as chash route does, after writing it
// to a config named file and reading that back, and returns the server names.
func routeConfig(file string, p *config.Pool, keys [][]byte) ([]string, error) {
	conf, err := config.Marshal(&config.File{Path: file, Pools: []*config.Pool{p}})
	if err != nil {
		return nil, err
	}
	f, err := config.Parse(file, conf)
	if err != nil {
		return nil, err
	}
	if p, err = f.Pool(""); err != nil {
		return nil, err
	}
	r, err := dist.Build(p, p.Servers)
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, conf)
	}
	got := make([]string, len(keys))
	for i, k := range keys {
		s, err := r.Lookup(p.HashKey(k))
		if err != nil {
			return nil, fmt.Errorf("Lookup(%q): %w", k, err)
		}
		got[i] = p.Servers[s].Name()
	}
	return got, nil
}

// compareRoutes reports keys on which got and want differ: a count and the first
// few.
func compareRoutes(t *testing.T, what string, keys [][]byte, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d answers for %d keys", what, len(got), len(want))
	}
	bad := 0
	for i := range keys {
		if got[i] != want[i] {
			if bad < 5 {
				t.Errorf("%s: Lookup(%q) = %q; want %q", what, keys[i], got[i], want[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d keys routed differently", what, bad, len(keys))
	}
}

// names maps server indexes to display names.
func names(servers []live.Server, where []int) []string {
	out := make([]string, len(where))
	for i, w := range where {
		out[i] = displayName(servers[w])
	}
	return out
}

func hasNonASCII(keys [][]byte) bool {
	for _, k := range keys {
		if bytes.IndexFunc(k, func(r rune) bool { return r >= 0x80 }) >= 0 {
			return true
		}
	}
	return false
}
