package balanced

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/internal/algotest"
)

// spread returns the largest and smallest load per unit of weight of an
// allocator's nodes, relative to the mean.
func spread(a *allocator) (hi, lo float64) {
	var w uint64
	for _, x := range a.weight {
		w += x
	}
	mean := float64(1<<32) / float64(w)
	hi, lo = 0, 2
	for o, l := range a.load {
		r := float64(l) / float64(a.weight[o]) / mean
		hi, lo = max(hi, r), min(lo, r)
	}
	return hi, lo
}

// TestBalance checks the targets for every ring of 1 to 1000 nodes
// grown one join at a time: a most loaded node at most 1.05 times the mean
// with 16 tokens per node and 1.02 with 160 (1.01 is met), every join taking
// at most 1.05 times the ideal movement, and every key that moves going to the
// joining node. Loads are exact arc lengths.
func TestBalance(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 200
	}
	for _, tc := range []struct {
		points  int
		maxMean float64
	}{{16, 1.05}, {160, 1.01}} {
		a := &allocator{}
		worstHi, worstLo, worstMove := 0.0, 2.0, 0.0
		for i := range n {
			before := slices.Clone(a.load)
			o := a.addNode("node"+strconv.Itoa(i), 1)
			a.join(o, tc.points)
			for x, l := range before {
				if a.load[x] > l {
					t.Fatalf("points=%d: join %d gave node %d load (%d -> %d); keys may move only to the joining node", tc.points, i, x, l, a.load[x])
				}
			}
			hi, lo := spread(a)
			move := float64(a.load[o]) / (float64(1<<32) / float64(i+1))
			worstHi, worstLo, worstMove = max(worstHi, hi), min(worstLo, lo), max(worstMove, move)
			if hi > tc.maxMean {
				t.Fatalf("points=%d, %d nodes: max/mean = %.4f; want at most %.2f", tc.points, i+1, hi, tc.maxMean)
			}
			if move > 1.05 {
				t.Fatalf("points=%d: join of node %d moved %.4f× the ideal; want at most 1.05", tc.points, i, move)
			}
		}
		t.Logf("points=%d, 1..%d nodes: worst max/mean %.4f, min/mean %.4f, join movement %.4f× ideal", tc.points, n, worstHi, worstLo, worstMove)
	}
}

// TestWeightedBalance checks the same bound per unit of weight with mixed
// weights.
func TestWeightedBalance(t *testing.T) {
	ns := algotest.Nodes(300)
	for i := range ns {
		ns[i].Weight = 1 + i%4
	}
	a := &allocator{}
	for _, n := range ns {
		a.join(a.addNode(n.Name, n.Weight), 16*n.Weight)
		if hi, _ := spread(a); hi > 1.05 {
			t.Fatalf("%s joined: max/mean per weight = %.4f; want at most 1.05", n.Name, hi)
		}
	}
}

// shares returns each node's share of the ring by name, from the public Ring.
func shares(r *Ring) map[string]uint64 {
	m := map[string]uint64{}
	ring := r.Ring()
	for i, s := range ring.Shares() {
		m[ring.Nodes()[i].Name] = s
	}
	return m
}

// TestRing checks that the public Ring routes by the allocated tokens: its
// exact shares are the allocator's loads, within the targets, and Lookup
// agrees with the shares.
func TestRing(t *testing.T) {
	r, err := New(Config{}, algotest.Nodes(100))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Ring().NumPoints(); got != 1600 {
		t.Errorf("NumPoints() = %d; want 1600", got)
	}
	sh := shares(r)
	mean := float64(1<<32) / 100
	for name, s := range sh {
		if float64(s)/mean > 1.05 {
			t.Errorf("node %s owns %.4f× the mean; want at most 1.05", name, float64(s)/mean)
		}
	}
	count := map[string]int{}
	const keys = 200_000
	for i := range keys {
		name, err := r.LookupString("key:" + strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		count[name]++
	}
	for name, s := range sh {
		want := float64(s) / (1 << 32) * keys
		if got := float64(count[name]); got < want*0.85 || got > want*1.15 {
			t.Errorf("node %s got %v of %d keys; its share predicts %.0f", name, got, keys, want)
		}
	}
}

// TestDeterministic checks that the tokens are a function of the node list:
// two builds agree, and joining nodes one at a time with Add gives what New
// gives for the whole list.
func TestDeterministic(t *testing.T) {
	ns := algotest.Nodes(60)
	ns[5].Weight = 3
	a, _ := New(Config{}, ns)
	b, _ := New(Config{}, ns)
	c, _ := New(Config{}, ns[:1])
	for _, n := range ns[1:] {
		var err error
		if c, err = c.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	d, _ := New(Config{}, ns[:40])
	d, _ = d.Add(ns[40:]...)
	for _, n := range ns {
		ta := a.Tokens(n.Name)
		if len(ta) != 16*n.Weight {
			t.Fatalf("node %s has %d tokens; want %d", n.Name, len(ta), 16*n.Weight)
		}
		for _, o := range []*Ring{b, c, d} {
			if tb := o.Tokens(n.Name); !slices.Equal(ta, tb) {
				t.Fatalf("node %s: tokens differ between builds of the same list:\n%v\n%v", n.Name, ta, tb)
			}
		}
	}
}

// TestJoinMovement checks, through the public Ring, that a join moves only
// the joining node's fair share and only to it.
func TestJoinMovement(t *testing.T) {
	r, _ := New(Config{}, algotest.Nodes(50))
	r2, err := r.Add(chash.Node{Name: "new", Weight: 1})
	if err != nil {
		t.Fatal(err)
	}
	before, after := shares(r), shares(r2)
	for name, s := range before {
		if after[name] > s {
			t.Errorf("node %s grew from %d to %d positions on a join", name, s, after[name])
		}
	}
	ideal := float64(1<<32) / 51
	if got := float64(after["new"]) / ideal; got > 1.05 || got < 0.95 {
		t.Errorf("the joining node took %.4f× its fair share; want 0.95..1.05", got)
	}
}

// TestRemove checks that Remove moves only the removed node's keys.
func TestRemove(t *testing.T) {
	r, _ := New(Config{}, algotest.Nodes(30))
	r2, err := r.Remove("node7", "node20")
	if err != nil {
		t.Fatal(err)
	}
	if r2.Len() != 28 || r.Len() != 30 {
		t.Fatalf("Len() = %d, original %d; want 28, 30", r2.Len(), r.Len())
	}
	for i := range 20000 {
		k := "key:" + strconv.Itoa(i)
		a, _ := r.LookupString(k)
		b, _ := r2.LookupString(k)
		if a != b && a != "node7" && a != "node20" {
			t.Fatalf("Lookup(%q) moved %q -> %q on removing node7 and node20", k, a, b)
		}
	}
	if _, err := r.Remove("nope"); err == nil {
		t.Error("Remove(nope) succeeded; want an error")
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
		{Config{Points: -1}, algotest.Nodes(2)},
		{Config{Points: 1 << 23}, algotest.Nodes(3)},
	} {
		if _, err := New(tc.cfg, tc.nodes); err == nil {
			t.Errorf("New(%+v, %v) succeeded; want an error", tc.cfg, tc.nodes)
		}
	}
	nodes := algotest.Nodes(3)
	if _, err := New(Config{Points: 1 << 23}, nodes); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("at node %q (weight 1, 8388608 points each)", nodes[2].Name)) {
		t.Errorf("New of 3 nodes of 2^23 points: %v; want the node that passes the limit, named", err)
	}
	r, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Lookup([]byte("k")); err != chash.ErrEmpty {
		t.Errorf("Lookup on no nodes: err = %v; want chash.ErrEmpty", err)
	}
	if r.Ring() == nil {
		t.Error("Ring() of an empty ring is nil")
	}
}

func TestAllocs(t *testing.T) {
	r, _ := New(Config{}, algotest.Nodes(100))
	k := []byte("some:key")
	dst := make([]string, 0, 3)
	algotest.NoAllocs(t, "Lookup", func() { r.Lookup(k) })
	algotest.NoAllocs(t, "AppendN", func() { r.AppendN(dst[:0], k, 3) })
}

func TestAppendN(t *testing.T) {
	r, _ := New(Config{}, algotest.Nodes(12))
	for i := range 500 {
		k := []byte("key:" + strconv.Itoa(i))
		all, err := r.AppendN(nil, k, 20)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 12 {
			t.Fatalf("AppendN(%q, 20) has %d names; want 12", k, len(all))
		}
		if u := slices.Compact(slices.Sorted(slices.Values(all))); len(u) != 12 {
			t.Fatalf("AppendN(%q, 20) = %q repeats a name", k, all)
		}
		if first, _ := r.Lookup(k); all[0] != first {
			t.Fatalf("AppendN(%q)[0] = %q; Lookup = %q", k, all[0], first)
		}
	}
}
