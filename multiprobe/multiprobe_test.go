package multiprobe

import (
	"errors"
	"slices"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/internal/algotest"
	"github.com/chash-dev/chash/internal/splitmix"
)

// TestBalance measures the load of each node over many keys. The paper
// predicts a peak-to-mean ratio near 1.05 with 21 probes; the bound here
// leaves room for the sampling noise of 20000 keys per node (about ±2%).
func TestBalance(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("slow, and starts no goroutines for the race detector to watch")
	}
	const n, perNode = 100, 20000
	r, _ := New(Config{}, algotest.Nodes(n))
	load := map[string]int{}
	for i := range n * perNode {
		name, _ := r.Lookup(algotest.Key(i))
		load[name]++
	}
	lo, hi := n*perNode, 0
	for _, c := range load {
		lo, hi = min(lo, c), max(hi, c)
	}
	if len(load) < n {
		lo = 0
	}
	maxMean, minMean := float64(hi)/perNode, float64(lo)/perNode
	t.Logf("n=%d, 21 probes: max/mean %.3f, min/mean %.3f", n, maxMean, minMean)
	if maxMean > 1.12 {
		t.Errorf("max/mean = %.3f; want at most 1.12", maxMean)
	}
}

// TestMinimalMovement checks that adding a node moves keys only to it and
// removing one moves only its keys.
func TestMinimalMovement(t *testing.T) {
	a, _ := New(Config{}, algotest.Nodes(50))
	b, _ := New(Config{}, append(algotest.Nodes(50), chash.Node{Name: "new", Weight: 1}))
	c, _ := New(Config{}, slices.Delete(algotest.Nodes(50), 7, 8))
	moved := 0
	const keys = 50000
	for i := range keys {
		x, _ := a.Lookup(algotest.Key(i))
		y, _ := b.Lookup(algotest.Key(i))
		z, _ := c.Lookup(algotest.Key(i))
		if x != y {
			moved++
			if y != "new" {
				t.Fatalf("Lookup(%q) moved %q -> %q on add; want only to new", algotest.Key(i), x, y)
			}
		}
		if x != z && x != "node7" {
			t.Fatalf("Lookup(%q) moved %q -> %q on removing node7", algotest.Key(i), x, z)
		}
	}
	t.Logf("add to 50 nodes moved %d of %d keys (ideal %d)", moved, keys, keys/51)
	if moved == 0 || moved > 2*keys/51 {
		t.Errorf("add moved %d keys; want about %d", moved, keys/51)
	}
}

func TestOrderIndependent(t *testing.T) {
	algotest.OrderIndependent(t, 100, func(ns []chash.Node) (*Ring, error) { return New(Config{}, ns) })
}

// TestLookupBrute compares Lookup with a linear scan over every point.
func TestLookupBrute(t *testing.T) {
	ns := algotest.Nodes(40)
	ns[3].Weight = 3
	r, _ := New(Config{Probes: 5, Points: 2}, ns)
	pts := r.pos[:len(r.pos)-1]
	for i := range 3000 {
		h := xxhashSum(algotest.Key(i))
		bestD, bestO := ^uint64(0), uint32(0)
		for range 5 {
			h += golden
			p := splitmix.Mix64(h)
			for j, q := range pts {
				if d := q - p; d < bestD {
					bestD, bestO = d, r.own[j]
				}
			}
		}
		got, _ := r.Lookup(algotest.Key(i))
		if want := r.nodes[bestO].Name; got != want {
			t.Fatalf("Lookup(%q) = %q; want %q", algotest.Key(i), got, want)
		}
	}
}

func TestAppendN(t *testing.T) {
	r, _ := New(Config{}, algotest.Nodes(20))
	for i := range 1000 {
		all, _ := r.AppendN(nil, algotest.Key(i), 25)
		if len(all) != 20 {
			t.Fatalf("AppendN(%q, 25) has %d names; want 20", algotest.Key(i), len(all))
		}
		if u := slices.Compact(slices.Sorted(slices.Values(all))); len(u) != 20 {
			t.Fatalf("AppendN(%q, 25) = %q repeats a name", algotest.Key(i), all)
		}
		first, _ := r.Lookup(algotest.Key(i))
		three, _ := r.AppendN(nil, algotest.Key(i), 3)
		if all[0] != first || !slices.Equal(three, all[:3]) {
			t.Fatalf("AppendN(%q) = %q, n=3 %q; Lookup = %q", algotest.Key(i), all, three, first)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg   Config
		nodes []chash.Node
	}{
		{Config{}, []chash.Node{{Name: "", Weight: 1}}},
		{Config{}, []chash.Node{{Name: "a", Weight: 0}}},
		{Config{}, []chash.Node{{Name: "a", Weight: 1}, {Name: "a", Weight: 1}}},
		{Config{Probes: -1}, algotest.Nodes(2)},
		{Config{Points: -1}, algotest.Nodes(2)},
		{Config{Probes: MaxProbes + 1}, algotest.Nodes(2)}, // a lookup of a billion hashes, if 1e9
	} {
		if _, err := New(tc.cfg, tc.nodes); err == nil {
			t.Errorf("New(%+v, %v) succeeded; want an error", tc.cfg, tc.nodes)
		}
	}
	if _, err := New(Config{Probes: MaxProbes}, algotest.Nodes(2)); err != nil {
		t.Errorf("New with MaxProbes: %v", err)
	}
	r, _ := New(Config{}, nil)
	if _, err := r.Lookup([]byte("k")); !errors.Is(err, chash.ErrEmpty) {
		t.Errorf("Lookup on no nodes: err = %v; want chash.ErrEmpty", err)
	}
}

func TestAllocs(t *testing.T) {
	r, _ := New(Config{}, algotest.Nodes(100))
	k := []byte("some:key")
	dst := make([]string, 0, 3)
	algotest.NoAllocs(t, "Lookup", func() { r.Lookup(k) })
	algotest.NoAllocs(t, "AppendN", func() { r.AppendN(dst[:0], k, 3) })
}
