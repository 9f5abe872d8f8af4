package dist

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/chash-dev/chash/internal/config"
)

// FuzzBuild parses configuration files and builds every pool's router, over
// all its servers and over all but the first: Build never panics, refuses a
// pool only with a *config.Error naming the file, a line and the pool, and a
// router sends keys only to servers of its list. The seed corpus is config's
// test files, the examples and testdata/fuzz/FuzzBuild.
func FuzzBuild(f *testing.F) {
	paths, _ := filepath.Glob("../config/testdata/*.yml")
	more, _ := filepath.Glob("../../examples/*.yml")
	for _, path := range append(paths, more...) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := config.Parse("fuzz.yml", data)
		if err != nil {
			return // config's FuzzParse checks what Parse refuses
		}
		for _, p := range file.Pools {
			total, points := 0, max(p.Points, 160)
			for _, s := range p.Servers {
				total += min(s.Weight, 1<<20)
			}
			if total*points > 1<<16 {
				continue // too big a ring to build for every input
			}
			check(t, p, p.Servers)
			if len(p.Servers) > 1 {
				check(t, p, p.Servers[1:])
			}
		}
	})
}

func check(t *testing.T, p *config.Pool, servers []config.Server) {
	t.Helper()
	r, err := Build(p, servers)
	if err != nil {
		var e *config.Error
		if !errors.As(err, &e) || e.File != "fuzz.yml" || e.Line < 1 || e.Pool != p.Name {
			t.Fatalf("pool %q: Build error %q does not name the file, a line and the pool", p.Name, err)
		}
		return
	}
	for _, key := range []string{"", "a", "{user}:1", "\xff\x00"} {
		i, err := r.Lookup(p.HashKey([]byte(key)))
		if err != nil || i < 0 || i >= len(servers) {
			t.Fatalf("pool %q: Lookup(%q) = %d, %v; want an index of its %d servers", p.Name, key, i, err, len(servers))
		}
		if rr, ok := r.(ReplicaRouter); ok {
			set, err := rr.AppendN(nil, p.HashKey([]byte(key)), 3)
			if err != nil || len(set) != min(3, len(servers)) || set[0] != i {
				t.Fatalf("pool %q: AppendN(%q, 3) = %v, %v; want %d servers from %d", p.Name, key, set, err, min(3, len(servers)), i)
			}
		}
	}
}
