package maglev

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/internal/algotest"
)

// loads counts each node's entries by name.
func loads(t *Table) map[string]int {
	l := make(map[string]int, t.Len())
	for j := range t.Size() {
		l[t.nodes[t.Entry(j)].Name]++
	}
	return l
}

// TestBalance checks the table's defining property: with equal weights every
// node owns ⌊M/n⌋ or ⌈M/n⌉ entries; with weights, w·r to w·(r+1) entries,
// r being the number of full rounds of turns.
func TestBalance(t *testing.T) {
	for _, tc := range []struct {
		n, size  int
		weighted bool
	}{{3, 0, false}, {1000, 0, false}, {7, 251, false}, {50, 0, true}, {1000, 655373, true}} {
		ns := algotest.Nodes(tc.n)
		total := 0
		for i := range ns {
			if tc.weighted {
				ns[i].Weight = 1 + i%4
			}
			total += ns[i].Weight
		}
		tb, err := New(Config{Size: tc.size}, ns)
		if err != nil {
			t.Fatal(err)
		}
		m := tb.Size()
		l := loads(tb)
		rounds := m / total
		for _, n := range ns {
			lo, hi := n.Weight*rounds, n.Weight*(rounds+1)
			if !tc.weighted {
				lo, hi = m/tc.n, (m+tc.n-1)/tc.n
			}
			if got := l[n.Name]; got < lo || got > hi {
				t.Errorf("n=%d M=%d: node %s (weight %d) owns %d entries; want %d..%d", tc.n, m, n.Name, n.Weight, got, lo, hi)
			}
		}
	}
}

// movement returns the entries whose owner differs between a and b, and how
// many of those the changed node owns in a (removal) or b (addition).
func movement(a, b *Table, name string) (changed, fair int) {
	for j := range a.Size() {
		x, y := a.nodes[a.Entry(j)].Name, b.nodes[b.Entry(j)].Name
		if x != y {
			changed++
		}
		if x == name || y == name {
			fair++
		}
	}
	return changed, fair
}

// TestMovement measures how many entries change hands when a node leaves or
// joins, against the entries the node itself owns, the minimum. The figures in
// the package comment come from this test's log (go test -v -run Movement).
func TestMovement(t *testing.T) {
	cases := []struct{ n, size int }{{10, DefaultSize}, {100, DefaultSize}, {1000, DefaultSize}, {1000, 655373}}
	if raceEnabled {
		cases = cases[:2]
	}
	for _, tc := range cases {
		n, cfg := tc.n, Config{Size: tc.size}
		all, _ := New(cfg, algotest.Nodes(n))
		for _, op := range []string{"remove", "add"} {
			var changed, fair int
			for k := range 5 {
				var a, b *Table
				name := "node" + strconv.Itoa(k*(n/5))
				if op == "remove" {
					ns := algotest.Nodes(n)
					ns = append(ns[:k*(n/5)], ns[k*(n/5)+1:]...)
					b, _ = New(cfg, ns)
					a = all
				} else {
					name = "new" + strconv.Itoa(k)
					a = all
					b, _ = New(cfg, append(algotest.Nodes(n), chash.Node{Name: name, Weight: 1}))
				}
				c, f := movement(a, b, name)
				changed += c
				fair += f
			}
			ratio := float64(changed) / float64(fair)
			t.Logf("M=%d n=%d %s: %.2f× the ideal movement", tc.size, n, op, ratio)
			if ratio < 1 || ratio > 20 {
				t.Errorf("n=%d %s: %.2f× the ideal movement; want 1..20", n, op, ratio)
			}
		}
	}
}

func TestOrderIndependent(t *testing.T) {
	ns := algotest.Nodes(100)
	a, _ := New(Config{}, ns)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(ns), func(i, j int) { ns[i], ns[j] = ns[j], ns[i] })
	b, _ := New(Config{}, ns)
	for j := range a.Size() {
		if a.Entry(j) != b.Entry(j) {
			t.Fatalf("entry %d differs between two orders of the same nodes", j)
		}
	}
}

func TestLookup(t *testing.T) {
	tb, _ := New(Config{Size: 13}, algotest.Nodes(3))
	for i := range 100 {
		k := []byte(strconv.Itoa(i))
		got, err := tb.Lookup(k)
		want := tb.nodes[tb.Entry(int(tb.slot(k)))].Name
		if err != nil || got != want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", k, got, err, want)
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
		{Config{Size: 65536}, algotest.Nodes(2)},
		{Config{Size: -7}, algotest.Nodes(2)},
		{Config{Size: 1}, nil},
		{Config{Size: 5}, algotest.Nodes(6)},
	} {
		if _, err := New(tc.cfg, tc.nodes); err == nil {
			t.Errorf("New(%+v, %v) succeeded; want an error", tc.cfg, tc.nodes)
		}
	}
	// The error says where the weights pass the table's size.
	nodes := algotest.Nodes(6)
	if _, err := New(Config{Size: 5}, nodes); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("(5 before node %q of weight 1)", nodes[5].Name)) {
		t.Errorf("New of 6 nodes on a table of 5: %v; want the sum before the node that passes it, named", err)
	}
	tb, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Lookup([]byte("k")); !errors.Is(err, chash.ErrEmpty) {
		t.Errorf("Lookup on no nodes: err = %v; want chash.ErrEmpty", err)
	}
}

func TestAllocs(t *testing.T) {
	tb, _ := New(Config{}, algotest.Nodes(100))
	k := []byte("some:key")
	algotest.NoAllocs(t, "Lookup", func() { tb.Lookup(k) })
}
