package rendezvous

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/internal/algotest"
)

func counts(t *testing.T, s *Set, keys int) map[string]int {
	t.Helper()
	c := map[string]int{}
	for i := range keys {
		n, err := s.Lookup(algotest.Key(i))
		if err != nil {
			t.Fatal(err)
		}
		c[n]++
	}
	return c
}

// TestWeights checks that each node's share is its weight's share, within 5
// standard deviations.
func TestWeights(t *testing.T) {
	ns := algotest.Nodes(8)
	total := 0
	for i := range ns {
		ns[i].Weight = i + 1
		total += i + 1
	}
	s, err := New(Config{}, ns)
	if err != nil {
		t.Fatal(err)
	}
	const keys = 200_000
	c := counts(t, s, keys)
	for _, n := range ns {
		p := float64(n.Weight) / float64(total)
		mean, sd := keys*p, math.Sqrt(keys*p*(1-p))
		if got := float64(c[n.Name]); math.Abs(got-mean) > 5*sd {
			t.Errorf("node %s (weight %d) has %v keys; want %.0f ± %.0f", n.Name, n.Weight, got, mean, 5*sd)
		}
	}
}

// TestMinimalMovement checks that adding a node moves keys only to it, removing
// one moves only its keys, and reweighting one moves keys only to or from it.
func TestMinimalMovement(t *testing.T) {
	ns := algotest.Nodes(20)
	s20, _ := New(Config{}, ns)
	s21, _ := New(Config{}, append(algotest.Nodes(20), chash.Node{Name: "new", Weight: 1}))
	re := algotest.Nodes(20)
	re[5].Weight = 3
	sRe, _ := New(Config{}, re)
	const keys = 50_000
	moved := 0
	for i := range keys {
		a, _ := s20.Lookup(algotest.Key(i))
		b, _ := s21.Lookup(algotest.Key(i))
		c, _ := sRe.Lookup(algotest.Key(i))
		if a != b {
			moved++
			if b != "new" {
				t.Fatalf("key %d moved %s -> %s on add; want only to new", i, a, b)
			}
		}
		if a != c && c != "node5" {
			t.Fatalf("key %d moved %s -> %s on reweighting node5", i, a, c)
		}
	}
	if ideal := keys / 21; math.Abs(float64(moved-ideal)) > 0.1*float64(ideal) {
		t.Errorf("add moved %d keys; want about %d", moved, ideal)
	}
}

func TestOrderIndependent(t *testing.T) {
	algotest.OrderIndependent(t, 50, func(ns []chash.Node) (*Set, error) { return New(Config{}, ns) })
}

func TestAppendN(t *testing.T) {
	ns := algotest.Nodes(30)
	ns[3].Weight = 5
	s, _ := New(Config{}, ns)
	s2, _ := s.withoutForTest("node7")
	for i := range 2000 {
		k := algotest.Key(i)
		all, err := s.AppendN(nil, k, 40)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 30 {
			t.Fatalf("AppendN(%q, 40) has %d names; want 30", k, len(all))
		}
		if u := slices.Compact(slices.Sorted(slices.Values(all))); len(u) != len(all) {
			t.Fatalf("AppendN(%q, 40) = %q: repeats a name", k, all)
		}
		first, _ := s.Lookup(k)
		if all[0] != first {
			t.Fatalf("AppendN(%q)[0] = %q; Lookup = %q", k, all[0], first)
		}
		for n := range 31 {
			got, _ := s.AppendN(nil, k, n)
			if !slices.Equal(got, all[:n]) {
				t.Fatalf("AppendN(%q, %d) = %q; want prefix %q", k, n, got, all[:n])
			}
		}
		// Removing node7 only drops it from the list.
		want := slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == "node7" })
		got, _ := s2.AppendN(nil, k, 40)
		if !slices.Equal(got, want) {
			t.Fatalf("after removing node7, AppendN(%q) = %q; want %q", k, got, want)
		}
	}
}

func (s *Set) withoutForTest(name string) (*Set, error) {
	ns := slices.DeleteFunc(s.Nodes(), func(n chash.Node) bool { return n.Name == name })
	return New(s.cfg, ns)
}

func TestErrors(t *testing.T) {
	for _, ns := range [][]chash.Node{
		{{Name: "", Weight: 1}},
		{{Name: "a", Weight: 0}},
		{{Name: "a", Weight: 1}, {Name: "a", Weight: 2}},
	} {
		if _, err := New(Config{}, ns); err == nil {
			t.Errorf("New(%v) succeeded; want an error", ns)
		}
	}
	s, _ := New(Config{}, nil)
	if _, err := s.Lookup([]byte("k")); !errors.Is(err, chash.ErrEmpty) {
		t.Errorf("Lookup on no nodes: err = %v; want chash.ErrEmpty", err)
	}
	if _, err := s.AppendN(nil, []byte("k"), 2); !errors.Is(err, chash.ErrEmpty) {
		t.Errorf("AppendN on no nodes: err = %v; want chash.ErrEmpty", err)
	}
}

func TestAllocs(t *testing.T) {
	ns := algotest.Nodes(100)
	ns[0].Weight = 2
	s, _ := New(Config{}, ns)
	k := []byte("some:key")
	dst := make([]string, 0, 8)
	algotest.NoAllocs(t, "Lookup", func() { s.Lookup(k) })
	algotest.NoAllocs(t, "AppendN", func() { s.AppendN(dst[:0], k, 3) })
}

// TestPrefilter checks that the weighted lookup, which skips logarithms for
// nodes that cannot win, picks what scoring every node picks.
func TestPrefilter(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, classes := range []int{2, 5, maxClasses, maxClasses + 1} {
		ns := algotest.Nodes(300)
		for i := range ns {
			ns[i].Weight = 1 + r.IntN(classes)*7
		}
		s, _ := New(Config{}, ns)
		if (s.class != nil) != (classes <= maxClasses) {
			t.Fatalf("%d weight classes: prefilter %v", classes, s.class != nil)
		}
		for i := range 5000 {
			h := s.hash(algotest.Key(i))
			best, bestScore := 0, s.score(h, 0)
			for j := 1; j < len(s.nodes); j++ {
				if sc := s.score(h, j); sc > bestScore {
					best, bestScore = j, sc
				}
			}
			got, _ := s.Lookup(algotest.Key(i))
			if want := s.nodes[best].Name; got != want {
				t.Fatalf("%d classes: Lookup(%q) = %q; want %q", classes, algotest.Key(i), got, want)
			}
		}
	}
}
