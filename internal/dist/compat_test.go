package dist

import (
	"errors"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/config"
)

// TestRandom checks that a random pool builds a router that spreads lookups
// of one key over the servers, as twemproxy spreads requests.
func TestRandom(t *testing.T) {
	p := mustPool(t, "web:\n  distribution: random\n  servers:\n   - 10.0.0.1:11211:1\n   - 10.0.0.2:11211:5\n   - 10.0.0.3:11211:1\n")
	r := mustBuild(t, p, p.Servers)
	var hits [3]int
	for range 3000 {
		i, err := r.Lookup([]byte("key"))
		if err != nil || i < 0 || i > 2 {
			t.Fatalf("Lookup = %d, %v; want an index of 3 servers", i, err)
		}
		hits[i]++
	}
	for i, n := range hits {
		// Weights are ignored, as in twemproxy: about 1000 each.
		if n < 800 || n > 1200 {
			t.Errorf("server %d got %d of 3000 lookups; want about 1000 (hits %v)", i, n, hits)
		}
	}
	if e, _ := EntryOf(p); !e.Random || e.Method != None {
		t.Errorf("random's entry: Random %v, Method %q; want true, none", e.Random, e.Method)
	}
	err := p.ErrorAt("distribution", ErrRandom)
	for _, want := range []string{`test.yml:2: pool "web"`, "random", "cannot be routed offline", "ketama or modula"} {
		if !strings.Contains(err.Error(), want) || !errors.Is(err, ErrRandom) {
			t.Errorf("error %q; want it to say %q and wrap ErrRandom", err, want)
		}
	}
}

// TestCompatNames checks that each distribution hashes the name its program
// hashes and reports the server by its index.
func TestCompatNames(t *testing.T) {
	const list = "  servers:\n   - 10.0.0.1:11211:1\n   - 10.0.0.2:11212:1 cache2\n   - /tmp/mc.sock:1\n"
	tests := []struct {
		dist string
		want []string // hashed names of the three servers
	}{
		{"ketama", []string{"10.0.0.1", "cache2", "/tmp/mc.sock:"}},
		{"libmemcached", []string{"10.0.0.1", "10.0.0.2:11212", "/tmp/mc.sock"}},
		{"libketama", []string{"10.0.0.1:11211", "10.0.0.2:11212", "/tmp/mc.sock"}},
		{"nginx", []string{"10.0.0.1:11211", "10.0.0.2:11212", "/tmp/mc.sock"}},
	}
	for _, tt := range tests {
		p := mustPool(t, "p:\n  distribution: "+tt.dist+"\n"+list)
		ring, index := mustBuild(t, p, p.Servers).(*ringRouter).Ring()
		if ring.Len() != len(tt.want) {
			t.Fatalf("%s: a ring of %d nodes; want %d", tt.dist, ring.Len(), len(tt.want))
		}
		for k, n := range ring.Nodes() {
			if want := tt.want[index[k]]; n.Name != want {
				t.Errorf("%s: ring node %q stands for server %d, hashed as %q", tt.dist, n.Name, index[k], want)
			}
		}
	}
}

func TestCompatErrors(t *testing.T) {
	tests := []struct {
		conf, want string
	}{
		{"p:\n  distribution: groupcache\n  servers:\n   - 10.0.0.1:80:2\n", "has no weights"},
		{"p:\n  distribution: stathat\n  servers:\n   - 10.0.0.1:80:3\n", "has no weights"},
		{"p:\n  distribution: stathat\n  hash: md5\n  servers:\n   - 10.0.0.1:80:1\n", "crc32a only"},
		{"p:\n  distribution: nginx\n  hash: fnv1a_64\n  servers:\n   - 10.0.0.1:80:1\n", "crc32a only"},
		{"p:\n  distribution: ketama\n  points: 100\n  servers:\n   - 10.0.0.1:80:1\n", "points is not used"},
		{"p:\n  distribution: ketama\n  servers:\n   - 10.0.0.1:11211:1\n   - 10.0.0.2:11211:1 10.0.0.1\n", "cannot tell them apart"},
		{"p:\n  distribution: groupcache\n  points: 100000000\n  servers:\n   - 10.0.0.1:80:1\n", "points"},
	}
	for _, tt := range tests {
		f, err := config.Parse("test.yml", []byte(tt.conf))
		if err == nil {
			_, err = Build(f.Pools[0], f.Pools[0].Servers)
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "test.yml") {
			t.Errorf("config %q: error %v; want one naming the file and saying %q", tt.conf, err, tt.want)
		}
	}
}

// TestCompatConfigOrder checks the tie rules' direction through the config: in
// groupcache and stathat the server listed last owns a shared point ("a" and "1a"
// share the label "11a"); groupcache's key "11a" hashes exactly onto it.
func TestCompatConfigOrder(t *testing.T) {
	for _, order := range [][2]string{{"a", "1a"}, {"1a", "a"}} {
		p := mustPool(t, "p:\n  distribution: groupcache\n  servers:\n   - 10.0.0.1:80:1 "+order[0]+"\n   - 10.0.0.2:80:1 "+order[1]+"\n")
		if got := route(t, p, "11a")[0]; got != order[1] {
			t.Errorf("servers %q: 11a -> %q; want %q, listed last", order, got, order[1])
		}
	}
}
