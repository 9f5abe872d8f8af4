package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/chash-dev/chash/bounded"
	"github.com/chash-dev/chash/memento"
)

const algoServers = `  servers:
   - 10.0.0.1:11211:1
   - 10.0.0.2:11211:1
   - 10.0.0.3:11211:1
   - 10.0.0.4:11211:1
`

var algorithms = []string{"jump", "jumpback", "rendezvous", "maglev", "multiprobe", "bounded", "memento", "balanced"}

// TestAlgorithms builds each algorithm's router from a file, with and without
// a hash and points where they apply, and routes keys to known servers.
func TestAlgorithms(t *testing.T) {
	for _, name := range algorithms {
		for _, extra := range []string{"", "  hash: fnv1a_64\n"} {
			p := mustPool(t, "a:\n  distribution: "+name+"\n"+extra+algoServers)
			got := route(t, p, "user:1", "user:2", "user:3", "{tag}x")
			for _, s := range got {
				if !strings.HasPrefix(s, "10.0.0.") {
					t.Errorf("%s %q: routed to %q", name, extra, s)
				}
			}
		}
	}
	for _, name := range algorithms {
		if d := Distributions(); !slices.Contains(d, name) {
			t.Errorf("Distributions() = %q; want it to contain %q", d, name)
		}
	}
}

func TestAlgorithmErrors(t *testing.T) {
	for _, conf := range []string{
		"a:\n  distribution: jump\n  points: 3\n" + algoServers,
		"a:\n  distribution: maglev\n  points: 3\n" + algoServers,
		"a:\n  distribution: jump\n  servers:\n   - 10.0.0.1:1:2\n",
		"a:\n  distribution: memento\n  servers:\n   - 10.0.0.1:1:2\n",
		"a:\n  distribution: rendezvous\n  hash: nope\n" + algoServers,
	} {
		f, err := Parse("test.yml", []byte(conf))
		if err != nil {
			continue // rejected while parsing: fine too
		}
		if _, err := f.Pools[0].Router(); err == nil {
			t.Errorf("Router() of\n%s succeeded; want an error", conf)
		}
	}
}

// TestMementoEjection checks that a memento router over a subset of the
// servers is the full one with the others removed: ejecting a server moves
// only its keys.
func TestMementoEjection(t *testing.T) {
	p := mustPool(t, "a:\n  distribution: memento\n"+algoServers)
	all, _ := p.Router()
	live := slices.Delete(slices.Clone(p.Servers), 1, 2)
	some, err := p.RouterOf(live)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := some.(*memento.Buckets); !ok {
		t.Fatalf("memento router is %T", some)
	}
	for i := range 2000 {
		k := []byte("key" + string(rune('a'+i%26)) + strings.Repeat("x", i%7) + string(rune(i)))
		a, _ := all.Lookup(k)
		b, _ := some.Lookup(k)
		if a != b && a != p.Servers[1].Name() {
			t.Fatalf("ejecting %s moved %q from %s to %s", p.Servers[1].Name(), k, a, b)
		}
	}
}

// TestBoundedRoute checks what chash route does with the bounded router:
// placing each key with Acquire keeps every server within ⌈1.25·m/n⌉.
func TestBoundedRoute(t *testing.T) {
	p := mustPool(t, "a:\n  distribution: bounded\n"+algoServers)
	r, _ := p.Router()
	b := r.(*bounded.Balancer)
	for i := range 1000 {
		name, err := b.AcquireString("same-key")
		if err != nil {
			t.Fatal(err)
		}
		load, _ := b.Load(name)
		if c, _ := b.Capacity(name, uint64(i+1)); load > c {
			t.Fatalf("key %d: %s holds %d; capacity %d", i, name, load, c)
		}
	}
}
