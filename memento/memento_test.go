package memento

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/internal/algotest"
	"github.com/chash-dev/chash/internal/splitmix"
)

func hashes(n int) []uint64 {
	hs := make([]uint64, n)
	s := uint64(99)
	for i := range hs {
		s += golden
		hs[i] = splitmix.Mix64(s)
	}
	return hs
}

func assign(t *Table, hs []uint64) []int {
	bs := make([]int, len(hs))
	for i, h := range hs {
		bs[i] = t.Bucket(h)
	}
	return bs
}

// TestRandomHistory drives a Table through random removals and restorations
// and checks after each step the defining properties: keys land only on
// working buckets, a removal moves only the removed bucket's keys, a
// restoration moves keys only to the restored bucket and undoes the removal
// exactly, and every working bucket keeps a fair share.
func TestRandomHistory(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	hs := hashes(10000)
	tb, _ := NewTable(40)
	cur := assign(tb, hs)
	type step struct {
		t  *Table
		bs []int
	}
	var stack []step // states before each removal, to check restorations
	for range 200 {
		if tb.Len() > 2 && (r.IntN(3) > 0 || tb.Len() > 60) {
			var b int
			for b = r.IntN(tb.Size()); !tb.Working(b); b = r.IntN(tb.Size()) {
			}
			next, err := tb.Remove(b)
			if err != nil {
				t.Fatal(err)
			}
			bs := assign(next, hs)
			for i := range hs {
				if !next.Working(bs[i]) {
					t.Fatalf("key %d on removed bucket %d", i, bs[i])
				}
				if bs[i] != cur[i] && cur[i] != b {
					t.Fatalf("removing bucket %d moved key %d from %d to %d", b, i, cur[i], bs[i])
				}
			}
			stack = append(stack, step{tb, cur})
			tb, cur = next, bs
		} else {
			next, b := tb.Restore()
			bs := assign(next, hs)
			for i := range hs {
				if bs[i] != cur[i] && bs[i] != b {
					t.Fatalf("restoring bucket %d moved key %d from %d to %d", b, i, cur[i], bs[i])
				}
			}
			if len(stack) > 0 && tb.Size() == next.Size() {
				prev := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if !slices.Equal(bs, prev.bs) {
					t.Fatalf("restoring bucket %d did not undo its removal", b)
				}
			} else {
				stack = stack[:0] // a shrink or an append: no memento to compare
			}
			tb, cur = next, bs
		}
		// Balance: every working bucket within 6 standard deviations.
		counts := make([]int, tb.Size())
		for _, b := range cur {
			counts[b]++
		}
		mean := float64(len(hs)) / float64(tb.Len())
		for b, c := range counts {
			if tb.Working(b) && math.Abs(float64(c)-mean) > 6*math.Sqrt(mean) {
				t.Fatalf("%d working buckets of %d: bucket %d has %d keys; want %.0f", tb.Len(), tb.Size(), b, c, mean)
			}
		}
	}
}

func TestTableEdges(t *testing.T) {
	if _, err := NewTable(-1); err == nil {
		t.Error("NewTable(-1) succeeded; want an error")
	}
	tb, _ := NewTable(0)
	if b := tb.Bucket(1); b != -1 {
		t.Errorf("Bucket on no buckets = %d; want -1", b)
	}
	tb, _ = NewTable(3)
	if _, err := tb.Remove(3); err == nil {
		t.Error("Remove(3) of 3 buckets succeeded; want an error")
	}
	tb, _ = tb.Remove(2) // the last: a shrink
	if tb.Size() != 2 || tb.Len() != 2 {
		t.Errorf("after removing the last bucket: Size %d, Len %d; want 2, 2", tb.Size(), tb.Len())
	}
	tb, _ = tb.Remove(0)
	tb, _ = tb.Remove(1)
	if b := tb.Bucket(12345); b != -1 {
		t.Errorf("Bucket with every bucket removed = %d; want -1", b)
	}
	if _, err := tb.Remove(1); err == nil {
		t.Error("removing a removed bucket succeeded; want an error")
	}
	tb, b := tb.Restore()
	if b != 1 || tb.Bucket(777) != 1 {
		t.Errorf("Restore() = %d, Bucket = %d; want 1, 1", b, tb.Bucket(777))
	}
}

func TestBuckets(t *testing.T) {
	b, err := New(Config{}, algotest.Nodes(10))
	if err != nil {
		t.Fatal(err)
	}
	b2, err := b.Remove("node3", "node7")
	if err != nil {
		t.Fatal(err)
	}
	b3, err := b2.Add(chash.Node{Name: "fresh", Weight: 1})
	if err != nil {
		t.Fatal(err)
	}
	only3, _ := b.Remove("node3")
	if b.Len() != 10 || b2.Len() != 8 || b3.Len() != 9 {
		t.Fatalf("Len = %d, %d, %d; want 10, 8, 9", b.Len(), b2.Len(), b3.Len())
	}
	for i := range 20000 {
		k := "key:" + strconv.Itoa(i)
		x, _ := b.LookupString(k)
		y, _ := b2.LookupString(k)
		z, _ := b3.LookupString(k)
		if x != y && x != "node3" && x != "node7" {
			t.Fatalf("Lookup(%q) moved %q -> %q on removing node3, node7", k, x, y)
		}
		if y == "node3" || y == "node7" {
			t.Fatalf("Lookup(%q) = removed node %q", k, y)
		}
		// fresh takes node7's bucket, the last removed, and with it the keys
		// node7 would have if only node3 had been removed.
		w, _ := only3.LookupString(k)
		if w == "node7" {
			w = "fresh"
		}
		if z != w {
			t.Fatalf("Lookup(%q) = %q after fresh took node7's place; want %q", k, z, w)
		}
	}
	got := b3.Nodes()
	if len(got) != 9 || got[6].Name != "fresh" {
		t.Errorf("Nodes() = %v; want fresh in node7's place", got)
	}
}

func TestErrors(t *testing.T) {
	for _, ns := range [][]chash.Node{
		{{Name: "", Weight: 1}},
		{{Name: "a", Weight: 2}},
		{{Name: "a", Weight: 1}, {Name: "a", Weight: 1}},
	} {
		if _, err := New(Config{}, ns); err == nil {
			t.Errorf("New(%v) succeeded; want an error", ns)
		}
	}
	b, _ := New(Config{}, nil)
	if _, err := b.Lookup([]byte("k")); !errors.Is(err, chash.ErrEmpty) {
		t.Errorf("Lookup on no nodes: err = %v; want chash.ErrEmpty", err)
	}
	b, _ = New(Config{}, algotest.Nodes(2))
	if _, err := b.Remove("nope"); err == nil {
		t.Error("Remove(nope) succeeded; want an error")
	}
}

func TestAllocs(t *testing.T) {
	b, _ := New(Config{}, algotest.Nodes(100))
	b, _ = b.Remove("node5", "node50", "node77")
	k := []byte("some:key")
	algotest.NoAllocs(t, "Lookup", func() { b.Lookup(k) })
}
