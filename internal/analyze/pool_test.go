package analyze

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/dist"
)

// TestPoolMethods checks that every distribution of the catalogue is measured
// by the method its entry names, and that its balance covers its servers.
func TestPoolMethods(t *testing.T) {
	sv := servers(8)
	for _, e := range dist.All() {
		p, err := NewPool(&config.Pool{Name: "p", Distribution: e.Name, Servers: sv}, sv)
		if e.Random {
			if !errors.Is(err, dist.ErrRandom) || !strings.Contains(err.Error(), `pool "p"`) {
				t.Errorf("%s: NewPool error %v; want ErrRandom about pool p", e.Name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		b, err := p.Balance(SampleKeys(20000, 1))
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		if b.Method != string(e.Method) {
			t.Errorf("%s: measured by %q; the entry says %q", e.Name, b.Method, e.Method)
		}
		if !slices.Equal(names(b), p.Names()) {
			t.Errorf("%s: balance of %q; want the servers %q in order", e.Name, names(b), p.Names())
		}
		onePoint := e.Points && e.DefaultPoints == 0 // seed: one point per server, as unbalanced as it gets
		if !onePoint && (b.MaxOverMean > 2 || b.MinOverMean < 0.3) {
			t.Errorf("%s: max/mean %.3f, min/mean %.3f over 8 servers", e.Name, b.MaxOverMean, b.MinOverMean)
		}
		if arcs := p.Arcs(); (arcs != nil) != (e.Method == dist.Arcs) {
			t.Errorf("%s: %d arcs; the entry's method is %s", e.Name, len(arcs), e.Method)
		}
		// Measuring never loads the pool's own router.
		if e.LoadAware {
			first, _ := p.Router.Lookup([]byte("k"))
			for range 3 {
				if _, err := p.Balance(SampleKeys(1000, 2)); err != nil {
					t.Fatal(err)
				}
			}
			if again, _ := p.Router.Lookup([]byte("k")); again != first {
				t.Errorf("%s: Balance changed where the pool's router sends k", e.Name)
			}
		}
	}
}

func names(b *Balance) []string {
	var s []string
	for _, n := range b.Nodes {
		s = append(s, n.Name)
	}
	return s
}

// TestPoolHashTag checks that a pool's figures route keys through its hash tag:
// keys that share a tag all count for one server.
func TestPoolHashTag(t *testing.T) {
	sv := servers(5)
	p, err := NewPool(&config.Pool{Name: "p", Distribution: "rendezvous", HashTag: "{}", Servers: sv}, sv)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Count(StringKeys([]string{"{u}a", "{u}b", "{u}c", "{u}d"}))
	if err != nil {
		t.Fatal(err)
	}
	if b.Method != MethodKeys || b.MaxOverMean != 5 {
		t.Errorf("four keys of one tag: method %q, max/mean %v; want keys, 5 (all on one of 5 servers)", b.Method, b.MaxOverMean)
	}
}

// TestDiffPoolsOrder checks that DiffPools gives balances and flows in the
// order of the pools' servers and modulo hashing over that order, for an
// exact ring diff, whose rings order nodes otherwise.
func TestDiffPoolsOrder(t *testing.T) {
	old := servers(6)
	slices.Reverse(old) // cache-05 first: not the ring's order
	new := slices.Delete(slices.Clone(old), 2, 3)
	op := mustPool(t, "chash", old)
	np, err := NewPool(op.Config, new)
	if err != nil {
		t.Fatal(err)
	}
	d, err := DiffPools(op, np, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Method != MethodArcs || !slices.Equal(names(d.Old), op.Names()) || !slices.Equal(names(d.New), np.Names()) {
		t.Errorf("DiffPools: method %q, old %q, new %q; want arcs in the servers' order", d.Method, names(d.Old), names(d.New))
	}
	for _, f := range d.Flows {
		if f.From != old[2].Name() {
			t.Errorf("flow %s→%s; only %s leaves", f.From, f.To, old[2].Name())
		}
	}
	if !slices.IsSortedFunc(d.Flows, func(a, b Flow) int {
		return slices.Index(np.Names(), a.To) - slices.Index(np.Names(), b.To)
	}) {
		t.Errorf("flows %v; want them in the order of the new servers", d.Flows)
	}
	if want := ModuloMovedNodes(op.Nodes, np.Nodes); d.ModuloMoved != want {
		t.Errorf("ModuloMoved %v; want %v, over the servers in modula order", d.ModuloMoved, want)
	}
}

// TestPlaceDiff checks a load-aware pool's diff: keys placed in turn on both,
// a join moving about the ideal, and no server above the bound.
func TestPlaceDiff(t *testing.T) {
	old, grown := mustPool(t, "bounded", servers(10)), mustPool(t, "bounded", servers(11))
	const keys = 100000
	b, err := old.Balance(SampleKeys(keys, 1))
	if err != nil {
		t.Fatal(err)
	}
	if b.Method != MethodPlaced || b.MaxOverMean > 1.25+10.0/keys {
		t.Errorf("placed balance: method %q, max/mean %v; want placed, at most 1.25", b.Method, b.MaxOverMean)
	}
	d, err := DiffPools(old, grown, SampleKeys(keys, 1))
	if err != nil {
		t.Fatal(err)
	}
	if d.Method != MethodPlaced || math.Abs(d.Ideal-1.0/11) > 1e-12 || d.OverIdeal() < 1 || d.OverIdeal() > 1.5 {
		t.Errorf("placed diff: method %q, moved %v, ideal %v; want placed, about the ideal 1/11", d.Method, d.Moved, d.Ideal)
	}
}

// TestHashClusters measures pools by their distribution and hash:
// twemproxy's default fnv1a_64 on ketama clusters similar keys whatever the
// servers (none, for a pool whose servers come from etcd), md5 on ketama and
// chash's own ring do not; under modula it depends on the servers' number;
// one server has nothing to cluster on, and a random distribution nothing
// to measure.
func TestHashClusters(t *testing.T) {
	servers := func(n int) []config.Server {
		var sv []config.Server
		for i := range n {
			sv = append(sv, config.Server{Host: "127.0.0.1", Port: 11211 + i, Weight: 1})
		}
		return sv
	}
	for _, tt := range []struct {
		dist, hash, from string
		servers          int
		want             bool
	}{
		{"ketama", "", "", 4, true}, // fnv1a_64, twemproxy's default
		{"ketama", "fnv1a_64", "etcd://127.0.0.1:2379/chash/a/", 0, true},
		{"ketama", "md5", "", 4, false},
		{"chash", "", "", 4, false},
		{"ketama", "fnv1_32", "", 7, true},
		{"ketama", "", "", 1, false},
		{"modula", "", "", 3, true}, // 0x1b3, FNV's prime mod 2^32, is a multiple of 3
		{"modula", "", "", 4, false},
		{"jump", "", "", 4, false},
	} {
		p := config.NewPool("p")
		p.Distribution, p.Hash, p.ServersFrom, p.Servers = tt.dist, tt.hash, tt.from, servers(tt.servers)
		c, err := HashClusters(p)
		if err != nil || c == nil {
			t.Fatalf("%s %q over %d: HashClusters = %v, %v", tt.dist, tt.hash, tt.servers, c, err)
		}
		if c.Clustered() != tt.want {
			t.Errorf("%s %q over %d: %d of %d groups on one server, clustered %v; want %v", tt.dist, tt.hash, tt.servers, c.Together, c.Groups, c.Clustered(), tt.want)
		}
	}
	p := config.NewPool("p")
	p.Distribution = "random"
	if c, err := HashClusters(p); c != nil || err != nil {
		t.Errorf("random: HashClusters = %v, %v; want nil, nil", c, err)
	}
}
