package dist

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/config"
)

const algoServers = `  servers:
   - 10.0.0.1:11211:1
   - 10.0.0.2:11211:1
   - 10.0.0.3:11211:1
   - 10.0.0.4:11211:1
`

var algorithms = []string{"jump", "jumpback", "rendezvous", "maglev", "multiprobe", "bounded", "memento", "balanced"}

// TestAlgorithms builds each algorithm's router from a file, with and without
// a hash, and routes keys to known servers.
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
}

func TestAlgorithmErrors(t *testing.T) {
	for _, conf := range []string{
		"a:\n  distribution: jump\n  points: 3\n" + algoServers,
		"a:\n  distribution: maglev\n  points: 3\n" + algoServers,
		"a:\n  distribution: jump\n  servers:\n   - 10.0.0.1:1:2\n",
		"a:\n  distribution: memento\n  servers:\n   - 10.0.0.1:1:2\n",
		"a:\n  distribution: rendezvous\n  hash: nope\n" + algoServers,
	} {
		f, err := config.Parse("test.yml", []byte(conf))
		if err != nil {
			continue // rejected while parsing: fine too
		}
		if _, err := Build(f.Pools[0], f.Pools[0].Servers); err == nil || !strings.Contains(err.Error(), "test.yml:") {
			t.Errorf("Build of\n%s: error %v; want one naming the file", conf, err)
		}
	}
}

// TestEjection checks that a memento or balanced router over a subset of the
// servers is the full one with the others removed: ejecting a server moves
// only its keys. A list not drawn from the pool's servers is a list of its
// own.
func TestEjection(t *testing.T) {
	keys := someKeys(3000)
	for _, name := range []string{"memento", "balanced"} {
		p := mustPool(t, "a:\n  distribution: "+name+"\n"+algoServers)
		all := route(t, p, keys...)
		live := slices.Delete(slices.Clone(p.Servers), 1, 2)
		some := routeOver(t, p, live, keys...)
		for i, k := range keys {
			if all[i] != some[i] && all[i] != p.Servers[1].Name() {
				t.Fatalf("%s: ejecting %s moved %q from %s to %s", name, p.Servers[1].Name(), k, all[i], some[i])
			}
		}
		own := []config.Server{p.Servers[2], {Host: "10.0.0.9", Port: 11211, Weight: 1}, p.Servers[0]}
		if got, want := routeOver(t, p, own, keys...), routeOver(t, poolOf(name, own), own, keys...); !slices.Equal(got, want) {
			t.Errorf("%s: a list with a server of its own routes otherwise than a pool of it", name)
		}
	}
}

// TestBoundedPlace checks what chash route does with the bounded router:
// placing each key with Acquire keeps every server within ⌈1.25·m/n⌉, and
// Release takes the load away again.
func TestBoundedPlace(t *testing.T) {
	p := mustPool(t, "a:\n  distribution: bounded\n"+algoServers)
	r := mustBuild(t, p, p.Servers).(Placer)
	first, _ := r.Lookup([]byte("same-key"))
	loads := make([]int, len(p.Servers))
	for m := 1; m <= 1000; m++ {
		i, err := r.Acquire([]byte("same-key"))
		if err != nil {
			t.Fatal(err)
		}
		loads[i]++
		if bound := (5*m + 15) / 16; loads[i] > bound { // ⌈1.25·m/4⌉
			t.Fatalf("key %d: server %d holds %d; the bound is %d", m, i, loads[i], bound)
		}
	}
	for i, n := range loads {
		for range n {
			if err := r.Release(i); err != nil {
				t.Fatalf("Release(%d): %v", i, err)
			}
		}
	}
	if err := r.Release(0); err == nil {
		t.Error("Release of a server without load succeeded")
	}
	if again, _ := r.Lookup([]byte("same-key")); again != first {
		t.Errorf("with the loads released, same-key goes to %d; want %d, as before", again, first)
	}
}

// TestAlgorithmsSpreadWithHash checks that each algorithm without a ring,
// given a pool's hash of 32 bits or fewer (crc32 has 15), still spreads keys
// over all its servers: maglev maps 64-bit hashes onto its table by
// multiplication, and once sent every key of a 32-bit hash to one entry. (A
// ring's keys of a 15-bit hash all fall before its first points.)
func TestAlgorithmsSpreadWithHash(t *testing.T) {
	keys := make([]string, 4000)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	for _, name := range []string{"jump", "jumpback", "rendezvous", "maglev", "multiprobe", "memento"} {
		for _, hash := range []string{"md5", "crc32", "java_fnv1_32"} {
			p := mustPool(t, "a:\n  distribution: "+name+"\n  hash: "+hash+"\n"+algoServers)
			count := map[string]int{}
			for _, s := range route(t, p, keys...) {
				count[s]++
			}
			for _, s := range p.Servers {
				if n := count[s.Name()]; n < len(keys)/4/2 {
					t.Errorf("%s with hash %s: %d of %d keys to %s; want about a quarter", name, hash, n, len(keys), s.Name())
				}
			}
		}
	}
}
