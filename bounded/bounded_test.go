package bounded

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/internal/algotest"
)

// TestBound checks the guarantee exactly: after each of m placements, no node
// holds more than ⌈c·m·w/W⌉, for uniform keys, a skewed key stream, one key
// repeated, and weighted nodes.
func TestBound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	zipf := rand.NewZipf(r, 1.2, 1, 1000)
	for _, tc := range []struct {
		name     string
		c        float64
		weighted bool
		key      func(i int) []byte
	}{
		{"uniform c=1.25", 0, false, algotest.Key},
		{"uniform c=1.1", 1.1, false, algotest.Key},
		{"zipf c=1.25", 0, false, func(int) []byte { return algotest.Key(int(zipf.Uint64())) }},
		{"one key c=1.5", 1.5, false, func(int) []byte { return []byte("hot") }},
		{"weighted c=1.25", 0, true, algotest.Key},
	} {
		ns := algotest.Nodes(40)
		if tc.weighted {
			for i := range ns {
				ns[i].Weight = 1 + i%3
			}
		}
		b, err := New(Config{C: tc.c}, ns)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20000 {
			name, err := b.Acquire(tc.key(i))
			if err != nil {
				t.Fatal(err)
			}
			m := uint64(i + 1)
			load, _ := b.Load(name)
			capacity, _ := b.Capacity(name, m)
			if load > capacity {
				t.Fatalf("%s: after %d keys %s holds %d; capacity %d", tc.name, m, name, load, capacity)
			}
		}
		loads := b.Loads()
		for i, n := range b.Nodes() {
			if c, _ := b.Capacity(n.Name, 20000); loads[i] > c {
				t.Errorf("%s: %s holds %d of 20000; capacity %d", tc.name, n.Name, loads[i], c)
			}
		}
	}
}

// TestCapacity checks the integer formula against hand-computed values.
func TestCapacity(t *testing.T) {
	for _, tc := range []struct {
		c    float64
		n    int
		m    uint64
		want uint64
	}{
		{1.25, 10, 8, 1},     // 1.25·8/10 = 1 exactly
		{1.25, 10, 9, 2},     // 1.125
		{1.1, 11, 100, 10},   // 10 exactly, where float arithmetic gives 10.000000000000002
		{2, 3, 1, 1},         // 0.67
		{1.000001, 1, 1, 2},  // 1.000001
		{1.25, 4, 1000, 313}, // 312.5
	} {
		b, err := New(Config{C: tc.c}, algotest.Nodes(tc.n))
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := b.Capacity("node0", tc.m); got != tc.want {
			t.Errorf("c=%v n=%d: Capacity(node0, %d) = %d; want %d", tc.c, tc.n, tc.m, got, tc.want)
		}
	}
}

// TestAcquireRelease simulates a load balancer: requests come and go at
// random, and every placement respects the bound for the load at that time.
func TestAcquireRelease(t *testing.T) {
	b, _ := New(Config{}, algotest.Nodes(20))
	r := rand.New(rand.NewPCG(2, 2))
	var open []string
	for i := range 50000 {
		if len(open) > 0 && r.IntN(2) == 0 {
			j := r.IntN(len(open))
			if err := b.Release(open[j]); err != nil {
				t.Fatal(err)
			}
			open[j] = open[len(open)-1]
			open = open[:len(open)-1]
			continue
		}
		name, _ := b.Acquire(algotest.Key(r.IntN(100)))
		open = append(open, name)
		load, _ := b.Load(name)
		if c, _ := b.Capacity(name, uint64(len(open))); load > c {
			t.Fatalf("step %d: %s holds %d of %d in flight; capacity %d", i, name, load, len(open), c)
		}
	}
	for _, name := range open {
		b.Release(name)
	}
	for i, l := range b.Loads() {
		if l != 0 {
			t.Errorf("node %d has load %d after every release", i, l)
		}
	}
	if err := b.Release("node0"); err == nil {
		t.Error("Release with no load succeeded; want an error")
	}
	if err := b.Release("nope"); err == nil {
		t.Error("Release(nope) succeeded; want an error")
	}
}

// TestUnbounded checks that with room everywhere a key goes where the plain
// ring sends it.
func TestUnbounded(t *testing.T) {
	b, _ := New(Config{C: 1000}, algotest.Nodes(10))
	for i := range 1000 {
		got, _ := b.Acquire(algotest.Key(i))
		want, _ := b.Ring().Lookup(algotest.Key(i))
		if got != want {
			t.Fatalf("Acquire(%q) = %q; the ring says %q", algotest.Key(i), got, want)
		}
	}
}

// placeAll places keys 0..m-1 in turn and returns where each went.
func placeAll(b *Balancer, m int) []string {
	out := make([]string, m)
	for i := range out {
		out[i], _ = b.Acquire(algotest.Key(i))
	}
	return out
}

// TestMovement measures the keys that move when a node joins, placing the
// same key sequence before and after each of five joins to 100 nodes, against
// the ideal m/101 per join, and shows what the plain ring moves for the same
// joins. The package comment quotes the log (go test -v -run Movement).
func TestMovement(t *testing.T) {
	const n, joins = 100, 5
	m := 100_000
	if raceEnabled {
		m = 10_000
	}
	joined := func(j int) []chash.Node {
		return append(algotest.Nodes(n), chash.Node{Name: "new" + strconv.Itoa(j), Weight: 1})
	}
	ideal := float64(joins*m) / (n + 1)
	ringMoved := 0
	a, _ := chash.New(nil, algotest.Nodes(n))
	for j := range joins {
		b, _ := chash.New(nil, joined(j))
		for i := range m {
			x, _ := a.Lookup(algotest.Key(i))
			y, _ := b.Lookup(algotest.Key(i))
			if x != y {
				ringMoved++
			}
		}
	}
	for _, c := range []float64{1.1, 1.25, 1.5, 2} {
		a, _ := New(Config{C: c}, algotest.Nodes(n))
		pa := placeAll(a, m)
		moved := 0
		for j := range joins {
			b, _ := New(Config{C: c}, joined(j))
			pb := placeAll(b, m)
			for i := range pa {
				if pa[i] != pb[i] {
					moved++
				}
			}
		}
		ratio := float64(moved) / ideal
		t.Logf("c=%v: a join moves %.2f× the ideal (the plain ring: %.2f×)", c, ratio, float64(ringMoved)/ideal)
		if ratio < 0.5 || ratio > 10 {
			t.Errorf("c=%v: a join moves %.2f× the ideal; want 0.5..10", c, ratio)
		}
	}
}

func TestConcurrent(t *testing.T) {
	b, _ := New(Config{}, algotest.Nodes(8))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				name, err := b.Acquire(algotest.Key(g*10000 + i))
				if err != nil {
					t.Error(err)
					return
				}
				b.Lookup(algotest.Key(i))
				if i%2 == 0 {
					b.Release(name)
				}
			}
		})
	}
	wg.Wait()
	var total uint64
	for _, l := range b.Loads() {
		total += l
	}
	if total != 4000 {
		t.Errorf("total load %d after 8000 acquires and 4000 releases; want 4000", total)
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
		{Config{C: 1}, algotest.Nodes(2)},
		{Config{C: 0.5}, algotest.Nodes(2)},
		{Config{C: 1.0000001}, algotest.Nodes(2)},
		{Config{C: 5000}, algotest.Nodes(2)},
		{Config{Points: -1}, algotest.Nodes(2)},
	} {
		if _, err := New(tc.cfg, tc.nodes); err == nil {
			t.Errorf("New(%+v, %v) succeeded; want an error", tc.cfg, tc.nodes)
		}
	}
	b, _ := New(Config{}, nil)
	if _, err := b.Acquire([]byte("k")); !errors.Is(err, chash.ErrEmpty) {
		t.Errorf("Acquire on no nodes: err = %v; want chash.ErrEmpty", err)
	}
	if _, err := b.Lookup([]byte("k")); !errors.Is(err, chash.ErrEmpty) {
		t.Errorf("Lookup on no nodes: err = %v; want chash.ErrEmpty", err)
	}
}

func TestAllocs(t *testing.T) {
	b, _ := New(Config{}, algotest.Nodes(100))
	k := []byte("some:key")
	algotest.NoAllocs(t, "Acquire", func() { b.Acquire(k) })
	algotest.NoAllocs(t, "Lookup", func() { b.Lookup(k) })
}
