package analyze

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/dist"
)

func compareKeys(n int) [][]byte {
	var keys [][]byte
	for k := range SampleKeys(n, 1) {
		keys = append(keys, slices.Clone(k))
	}
	return keys
}

// TestCompareDistributions compares the whole catalogue over 40 servers: every
// distribution gets figures but random, which says why not; consistent ones
// move about the ideal, modula most keys; and the progress reaches the end.
func TestCompareDistributions(t *testing.T) {
	var done []int
	res, err := CompareDistributions(CompareConfig{Nodes: 40, Keys: compareKeys(20000),
		Progress: func(d, total int) { done = append(done, d, total) }})
	if err != nil {
		t.Fatal(err)
	}
	all := dist.All()
	if len(res) != len(all) || len(done) != 2*len(all) || done[len(done)-2] != len(all) {
		t.Fatalf("%d comparisons, progress %v; want %d, reaching the end", len(res), done, len(all))
	}
	for i, r := range res {
		e := r.Entry
		if e.Name != all[i].Name {
			t.Errorf("comparison %d is %s; want %s, in catalogue order", i, e.Name, all[i].Name)
		}
		if e.Random {
			if r.Err == nil || !strings.Contains(r.Err.Error(), "at random") {
				t.Errorf("%s: error %v; want one saying it routes at random", e.Name, r.Err)
			}
			continue
		}
		if r.Err != nil {
			t.Errorf("%s: %v", e.Name, r.Err)
			continue
		}
		if r.Method != string(e.Method) || r.Lookup <= 0 || r.MaxOverMean < 1 || r.MinOverMean > 1 {
			t.Errorf("%s: %+v", e.Name, r)
		}
		if math.Abs(r.Add.Ideal-1.0/41) > 1e-9 {
			t.Errorf("%s: add ideal %v; want 1/41", e.Name, r.Add.Ideal)
		}
		if r.Add.ModuloMoved < 0.9 || r.Remove.ModuloMoved < 0.9 {
			t.Errorf("%s: modulo hashing moves %v and %v; want most keys", e.Name, r.Add.ModuloMoved, r.Remove.ModuloMoved)
		}
		limit := 2.0 // maglev moves more than a ring; bounded's bound costs some
		if e.Name == "modula" || e.Points && e.DefaultPoints == 0 {
			limit = 100 // modula; seed's ring of one point per server, at the mercy of one arc
		}
		if a, b := r.Add.OverIdeal(), r.Remove.OverIdeal(); a < 0.5 || a > limit || b < 0.5 || b > limit {
			t.Errorf("%s: moves %.2f× and %.2f× the ideal", e.Name, a, b)
		}
		if e.Name == "modula" && r.Add.OverIdeal() < 10 {
			t.Errorf("modula moves %.2f× the ideal on a join; want most keys", r.Add.OverIdeal())
		}
	}
}

// TestCompareWeights checks that distributions without weights say so when a
// weight is not 1, and those with weights do not.
func TestCompareWeights(t *testing.T) {
	var entries []dist.Entry
	for _, name := range []string{"jump", "groupcache", "chash", "maglev"} {
		e, err := dist.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	res, err := CompareDistributions(CompareConfig{Nodes: 10, Weights: []int{1, 2}, Keys: compareKeys(5000), Entries: entries})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if failed := r.Err != nil; failed == r.Entry.Weights {
			t.Errorf("%s: error %v; Weights %v", r.Entry.Name, r.Err, r.Entry.Weights)
		}
		if r.Err != nil && strings.Contains(r.Err.Error(), "config:") {
			t.Errorf("%s: error %q names a configuration; the comparison has none", r.Entry.Name, r.Err)
		}
	}
	for _, bad := range []CompareConfig{{Nodes: 1, Keys: compareKeys(1)}, {Nodes: 5}} {
		if _, err := CompareDistributions(bad); err == nil || errors.Is(err, dist.ErrRandom) {
			t.Errorf("CompareDistributions(%+v): error %v; want one", bad, err)
		}
	}
}
