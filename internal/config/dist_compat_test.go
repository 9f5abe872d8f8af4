package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestCompatDistributions(t *testing.T) {
	got := Distributions()
	for _, name := range []string{"ketama", "modula", "random", "libketama", "spymemcached", "libmemcached", "nginx", "groupcache", "stathat"} {
		if !slices.Contains(got, name) {
			t.Errorf("Distributions() = %q; want it to contain %q", got, name)
		}
	}
}

// TestRandom checks that a random pool parses but says, on every lookup, why it
// cannot be routed offline: chash route prints that message.
func TestRandom(t *testing.T) {
	p := mustPool(t, "web:\n  distribution: random\n  servers:\n   - 10.0.0.1:11211:1\n   - 10.0.0.2:11211:1\n")
	r, err := p.Router()
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Lookup([]byte("key"))
	if !errors.Is(err, ErrRandom) {
		t.Fatalf("Lookup: error %v; want ErrRandom", err)
	}
	for _, want := range []string{`test.yml:2: pool "web"`, "random", "cannot be routed offline", "ketama or modula"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Lookup: error %q; want it to say %q", err, want)
		}
	}
}

// TestCompatNames checks that each distribution hashes the name its program hashes
// and reports the server as the config names it.
func TestCompatNames(t *testing.T) {
	const servers = "  servers:\n   - 10.0.0.1:11211:1\n   - 10.0.0.2:11212:1 cache2\n   - /tmp/mc.sock:1\n"
	tests := []struct {
		dist string
		want []string // hashed names of the three servers
	}{
		{"ketama", []string{"10.0.0.1", "cache2", "/tmp/mc.sock:"}},
		{"libmemcached", []string{"10.0.0.1", "10.0.0.2:11212", "/tmp/mc.sock"}},
		{"libketama", []string{"10.0.0.1:11211", "10.0.0.2:11212", "/tmp/mc.sock"}},
		{"nginx", []string{"10.0.0.1:11211", "10.0.0.2:11212", "/tmp/mc.sock"}},
	}
	display := []string{"10.0.0.1:11211", "cache2", "/tmp/mc.sock"}
	for _, tt := range tests {
		p := mustPool(t, "p:\n  distribution: "+tt.dist+"\n"+servers)
		r, err := p.Router()
		if err != nil {
			t.Fatal(err)
		}
		n, ok := r.(*namedRing)
		if !ok {
			t.Fatalf("%s: router %T; want *namedRing", tt.dist, r)
		}
		ring, names := n.Ring()
		if ring == nil || ring.Len() != len(tt.want) {
			t.Fatalf("%s: Ring() gives no ring of %d nodes", tt.dist, len(tt.want))
		}
		for i, h := range tt.want {
			if got := names[h]; got != display[i] {
				t.Errorf("%s: server hashed as %q reported as %q; want %q", tt.dist, h, got, display[i])
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
		f, err := Parse("test.yml", []byte(tt.conf))
		if err == nil {
			_, err = f.Pools[0].Router()
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
