package analyze

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/compat"
)

func TestRingsByHand(t *testing.T) {
	// Old: a@100 b@200 c@300. New: d joins at 150 and c leaves.
	// Old owners: [0,100] a, (100,200] b, (200,300] c, (300,max] a.
	// New owners: [0,100] a, (100,150] d, (150,200] b, (200,max] a.
	s := fixed{"a": {100}, "b": {200}, "c": {300}, "d": {150}}
	old := mustRing(t, s, equalNodes("a", "b", "c")...)
	new := mustRing(t, s, equalNodes("a", "b", "d")...)
	d, err := Rings(old, new)
	if err != nil {
		t.Fatal(err)
	}
	wantRanges := []Range{{101, 150, "b", "d"}, {201, 300, "c", "a"}}
	if !slices.Equal(d.Ranges, wantRanges) {
		t.Errorf("Ranges = %v; want %v", d.Ranges, wantRanges)
	}
	wantFlows := []Flow{
		{From: "b", To: "d", Count: 50, Share: 50.0 / RingSize, Ranges: 1},
		{From: "c", To: "a", Count: 100, Share: 100.0 / RingSize, Ranges: 1},
	}
	if !slices.Equal(d.Flows, wantFlows) {
		t.Errorf("Flows = %v; want %v", d.Flows, wantFlows)
	}
	if d.Moved != 150.0/RingSize {
		t.Errorf("Moved = %v; want 150/2^32", d.Moved)
	}
	if !slices.Equal(d.Added, []string{"d"}) || !slices.Equal(d.Removed, []string{"c"}) || len(d.Reweighted) != 0 {
		t.Errorf("Added %q Removed %q Reweighted %q; want [d] [c] []", d.Added, d.Removed, d.Reweighted)
	}
	// c held 100 positions; d's fair share is a third: the ideal is the larger.
	if d.Ideal != 1.0/3 {
		t.Errorf("Ideal = %v; want 1/3", d.Ideal)
	}
}

func TestRingsEdges(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new fixed
		want     []Range
	}{
		{"point at 0 and top", fixed{"a": {0}, "b": {math.MaxUint32}}, fixed{"a": {0}, "b": {7}},
			[]Range{{8, math.MaxUint32, "b", "a"}}},
		{"wrap segment moves", fixed{"a": {10}, "b": {20}}, fixed{"a": {30}, "b": {20}},
			[]Range{{0, 10, "a", "b"}, {31, math.MaxUint32, "a", "b"}}},
		{"same ring", fixed{"a": {10}, "b": {20}}, fixed{"a": {10}, "b": {20}}, []Range{}},
		{"tie taken by a", fixed{"a": {10}, "b": {20}}, fixed{"a": {20}, "b": {20}},
			[]Range{{11, 20, "b", "a"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := mustRing(t, tc.old, equalNodes("a", "b")...)
			new := mustRing(t, tc.new, equalNodes("a", "b")...)
			d, err := Rings(old, new)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.Ranges, tc.want) {
				t.Errorf("Ranges = %v; want %v", d.Ranges, tc.want)
			}
			checkRanges(t, old, new, d, 2000)
		})
	}
	if _, err := Rings(&chash.Ring{}, mustRing(t, nil, equalNodes("a")...)); err == nil {
		t.Errorf("Rings from an empty ring: no error")
	}
}

// checkRanges checks d's ranges position by position: the ends of every range and
// the positions just outside it, and n random positions, must move exactly as the
// ranges say, and the ranges' lengths must add up to Moved.
func checkRanges(t *testing.T, old, new *chash.Ring, d *Diff, n int) {
	t.Helper()
	var sum uint64
	want := func(p uint32) (from, to string, moved bool) {
		i, ok := slices.BinarySearchFunc(d.Ranges, p, func(r Range, p uint32) int {
			switch {
			case r.End < p:
				return -1
			case r.Start > p:
				return 1
			}
			return 0
		})
		if !ok {
			return "", "", false
		}
		return d.Ranges[i].From, d.Ranges[i].To, true
	}
	check := func(p uint32) {
		a, b := owner(t, old, p), owner(t, new, p)
		from, to, moved := want(p)
		if moved != (a != b) || moved && (from != a || to != b) {
			t.Fatalf("position %d: %s → %s, ranges say moved %v %s → %s", p, a, b, moved, from, to)
		}
	}
	for i, r := range d.Ranges {
		if i > 0 && d.Ranges[i-1].End >= r.Start {
			t.Fatalf("ranges out of order: %v then %v", d.Ranges[i-1], r)
		}
		sum += r.Len()
		check(r.Start)
		check(r.End)
		if r.Start > 0 {
			check(r.Start - 1)
		}
		if r.End < math.MaxUint32 {
			check(r.End + 1)
		}
	}
	if got := float64(sum) / RingSize; got != d.Moved {
		t.Errorf("ranges add up to %v; Moved = %v", got, d.Moved)
	}
	var flows uint64
	for _, f := range d.Flows {
		flows += f.Count
	}
	if flows != sum {
		t.Errorf("flows add up to %d positions; ranges to %d", flows, sum)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range n {
		check(rng.Uint32())
	}
}

// TestRingsAddRemove checks the exact identities of a ring: adding a node moves
// exactly the new node's share, all of it to the new node; removing one moves
// exactly its old share, all of it away from it.
func TestRingsAddRemove(t *testing.T) {
	s := positional{chash.Standard{Points: 40}}
	base := mustRing(t, s, equalNodes(names10()...)...)
	grown, err := base.Add(chash.Node{Name: "new", Weight: 2})
	if err != nil {
		t.Fatal(err)
	}
	d, err := Rings(base, grown)
	if err != nil {
		t.Fatal(err)
	}
	nn, _ := d.New.Node("new")
	if d.Moved != nn.Share {
		t.Errorf("add: moved %v; the new node's share is %v", d.Moved, nn.Share)
	}
	for _, f := range d.Flows {
		if f.To != "new" {
			t.Errorf("add: flow %v not to the new node", f)
		}
	}
	if d.Ideal != nn.Expected {
		t.Errorf("add: ideal %v; want the new node's fair share %v", d.Ideal, nn.Expected)
	}
	checkRanges(t, base, grown, d, 20000)

	shrunk, err := base.Remove("cache-03:11211")
	if err != nil {
		t.Fatal(err)
	}
	d, err = Rings(base, shrunk)
	if err != nil {
		t.Fatal(err)
	}
	gone, _ := d.Old.Node("cache-03:11211")
	if d.Moved != gone.Share || d.Ideal != gone.Share {
		t.Errorf("remove: moved %v ideal %v; want the leaving node's share %v", d.Moved, d.Ideal, gone.Share)
	}
	for _, f := range d.Flows {
		if f.From != "cache-03:11211" {
			t.Errorf("remove: flow %v not from the leaving node", f)
		}
	}
	checkRanges(t, base, shrunk, d, 20000)

	heavier, err := base.Reweight(chash.Node{Name: "cache-05:11211", Weight: 3})
	if err != nil {
		t.Fatal(err)
	}
	d, err = Rings(base, heavier)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Reweighted, []string{"cache-05:11211"}) {
		t.Errorf("reweight: Reweighted = %q", d.Reweighted)
	}
	if want := 3.0/12 - 1.0/10; math.Abs(d.Ideal-want) > 1e-15 {
		t.Errorf("reweight: ideal %v; want %v", d.Ideal, want)
	}
	checkRanges(t, base, heavier, d, 20000)
}

// TestRingsAgreeWithSampling compares an exact diff with one counted over a
// million sample keys: the moved fraction and every flow agree within four
// standard errors.
func TestRingsAgreeWithSampling(t *testing.T) {
	const keys = 1_000_000
	s := compat.Seed{Points: 5}
	old := mustRing(t, s, equalNodes(seedServers...)...)
	new, err := old.Add(chash.Node{Name: "192.168.0.5:111", Weight: 1})
	if err != nil {
		t.Fatal(err)
	}
	exact, err := Rings(old, new)
	if err != nil {
		t.Fatal(err)
	}
	sampled, err := CountDiff(MethodSample, RingOf(old), RingOf(new), old.Nodes(), new.Nodes(), SampleKeys(keys, 2))
	if err != nil {
		t.Fatal(err)
	}
	near := func(what string, got, want float64) {
		se := math.Sqrt(want * (1 - want) / keys)
		if math.Abs(got-want) > 4*se {
			t.Errorf("%s: sampled %.6f, exact %.6f", what, got, want)
		}
	}
	near("moved", sampled.Moved, exact.Moved)
	if len(sampled.Flows) != len(exact.Flows) {
		t.Fatalf("sampled flows %v; exact %v", sampled.Flows, exact.Flows)
	}
	for i, f := range exact.Flows {
		g := sampled.Flows[i]
		if g.From != f.From || g.To != f.To {
			t.Fatalf("flow %d: sampled %s→%s, exact %s→%s", i, g.From, g.To, f.From, f.To)
		}
		near(f.From+"→"+f.To, g.Share, f.Share)
	}
	if sampled.Ideal != exact.Ideal || sampled.ModuloMoved != exact.ModuloMoved {
		t.Errorf("ideal/modulo: sampled %v %v, exact %v %v", sampled.Ideal, sampled.ModuloMoved, exact.Ideal, exact.ModuloMoved)
	}
}

func TestTables(t *testing.T) {
	ab, abc := equalNodes("a", "b"), equalNodes("a", "b", "c")
	d, err := Tables(table{0, 1, 0, 1}, table{0, 2, 0, 1}, ab, abc)
	if err != nil {
		t.Fatal(err)
	}
	if d.Method != MethodTable || d.Moved != 0.25 || len(d.Flows) != 1 || d.Flows[0] != (Flow{From: "b", To: "c", Share: 0.25, Count: 1}) {
		t.Errorf("Tables = %+v", d)
	}
	if !slices.Equal(d.Added, []string{"c"}) || d.Ideal != 1.0/3 {
		t.Errorf("Tables: added %q ideal %v; want [c] 1/3", d.Added, d.Ideal)
	}
	if _, err := Tables(table{0}, table{0, 1}, ab, ab); err == nil {
		t.Errorf("Tables of different sizes: no error")
	}
	d, err = Compare(table{0, 1, 0, 1}, table{0, 2, 0, 1}, ab, abc, nil)
	if err != nil || d.Method != MethodTable {
		t.Errorf("Compare(table, table) = %v, %v; want a table diff", d, err)
	}
	r := mustRing(t, nil, ab...)
	d, err = Compare(router{RingOf(r)}, RingOf(r), ab, ab, SampleKeys(100, 1))
	if err != nil || d.Method != MethodSample || d.Moved != 0 || d.Total != 100 {
		t.Errorf("Compare(router, same ring) = %+v, %v; want a sampled diff moving nothing", d, err)
	}
	r2, err := r.Add(chash.Node{Name: "c", Weight: 1})
	if err != nil {
		t.Fatal(err)
	}
	old, new := renamedRing{r}, renamedRing{r2}
	d, err = Compare(old, new, old.nodes(), new.nodes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Method != MethodArcs || !slices.Equal(d.Added, []string{"srv-c"}) || d.Flows[0].To != "srv-c" ||
		d.Ranges[0].To != "srv-c" || d.New.Nodes[2].Name != "srv-c" {
		t.Errorf("Compare(renamed rings) = %+v; want an exact diff under srv- names", d)
	}
}

func TestModuloKeptBruteForce(t *testing.T) {
	lists := [][]string{
		{"a"},
		{"a", "b"},
		{"a", "b", "c"},
		{"a", "b", "c", "d"},
		{"b", "a", "c", "d", "e", "f"},
		{"a", "c", "e"},
		{"x", "y"},
		{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"},
		{"a", "b", "b", "c"},
		{"a", "b", "b", "c", "c", "c", "d"},
	}
	for _, old := range lists {
		for _, new := range lists {
			for _, space := range []uint64{1, 7, 60, 997, 4096} {
				var want uint64
				for h := range space {
					if old[h%uint64(len(old))] == new[h%uint64(len(new))] {
						want++
					}
				}
				ob, nb := blocksOf(old), blocksOf(new)
				if got := keptByPairs(ob, nb, spansOf(nb), space); got != want {
					t.Errorf("keptByPairs(%q, %q, %d) = %d; want %d", old, new, space, got, want)
				}
				if got := keptByRuns(ob, nb, space); got != want {
					t.Errorf("keptByRuns(%q, %q, %d) = %d; want %d", old, new, space, got, want)
				}
				if got := moduloKept(ob, nb, space); got != want {
					t.Errorf("moduloKept(%q, %q, %d) = %d; want %d", old, new, space, got, want)
				}
			}
		}
	}
}

func TestModuloMoved(t *testing.T) {
	for _, n := range []int{1, 4, 5, 9, 100, 1000} {
		old := make([]string, n)
		for i := range old {
			old[i] = fmt.Sprint(i)
		}
		add := append(slices.Clone(old), "new")
		// h mod n == h mod n+1 exactly when h mod n(n+1) < n: a fraction 1/(n+1).
		if got, want := ModuloMoved(old, add), float64(n)/float64(n+1); math.Abs(got-want) > 1e-6 {
			t.Errorf("add to %d: modulo moved %v; want about %v", n, got, want)
		}
	}
	if got := ModuloMoved([]string{"a", "b"}, []string{"a", "b"}); got != 0 {
		t.Errorf("same list: moved %v; want 0", got)
	}
	if got := ModuloMoved(nil, []string{"a"}); got != 1 {
		t.Errorf("from nothing: moved %v; want 1", got)
	}
	if got := ModuloMoved([]string{"a", "b"}, []string{"b", "a"}); got != 1 {
		t.Errorf("swapped: moved %v; want 1", got)
	}
}

// TestModuloMovedNodes checks the weighted tables in modula's order: the
// order nodes are listed in does not matter, a weight counts as that many
// slots, and large weights take no time (the pairs of slots of one server
// number 2^40 here; the count goes along the hashes instead).
func TestModuloMovedNodes(t *testing.T) {
	abc := []chash.Node{{Name: "a", Weight: 1}, {Name: "bb", Weight: 2}, {Name: "c", Weight: 1}}
	cba := []chash.Node{abc[1], abc[2], abc[0]}
	if got := ModuloMovedNodes(abc, cba); got != 0 {
		t.Errorf("reordered: moved %v; want 0", got)
	}
	// Modula's table of abc is a c bb bb; with bb's weight 1, a c bb: the
	// same as the lists.
	abc1 := slices.Clone(abc)
	abc1[1].Weight = 1
	if got, want := ModuloMovedNodes(abc, abc1), ModuloMoved([]string{"a", "c", "bb", "bb"}, []string{"a", "c", "bb"}); got != want {
		t.Errorf("reweighted: moved %v; want %v", got, want)
	}
	heavy := func(names ...string) []chash.Node {
		var nodes []chash.Node
		for _, n := range names {
			nodes = append(nodes, chash.Node{Name: n, Weight: 1 << 20})
		}
		return nodes
	}
	// 3·2^20 slots to 4·2^20: a period of lcm = 3·2^22 hashes keeps a
	// quarter, as for three unweighted servers to four; 2^32 is 341 periods
	// and 2^22 hashes, of which the first 3·2^20 keep their server (a, b and c
	// in both tables). Kept: 341·3·2^20 + 3·2^20 = 1026·2^20 of 2^32.
	if got, want := ModuloMovedNodes(heavy("a", "b", "c"), heavy("a", "b", "c", "d")), 1-1026.0/4096; got != want {
		t.Errorf("heavy 3 → 4: moved %v; want %v", got, want)
	}
	if got := ModuloMovedNodes(heavy("a", "b", "c", "d"), heavy("a", "b", "c", "d")); got != 0 {
		t.Errorf("heavy, same: moved %v; want 0", got)
	}
}

// TestModuloKeptMethods checks the two exact counts against each other on
// weighted tables too large to count by brute force.
func TestModuloKeptMethods(t *testing.T) {
	tables := [][]block{
		{{"a", 3}, {"b", 5}},
		{{"a", 1}, {"b", 5}, {"c", 7}},
		{{"b", 4}, {"a", 2}, {"c", 7}, {"d", 1}},
		{{"x", 9}},
		{{"a", 100}, {"b", 37}},
	}
	for _, old := range tables {
		for _, new := range tables {
			for _, space := range []uint64{1, 1000, 1 << 20, 1<<20 + 12345} {
				if p, r := keptByPairs(old, new, spansOf(new), space), keptByRuns(old, new, space); p != r {
					t.Errorf("%v → %v over %d: %d kept by pairs, %d along the hashes", old, new, space, p, r)
				}
			}
		}
	}
}

func TestRingsDifferentHashes(t *testing.T) {
	a := mustRing(t, nil, equalNodes("a", "b")...)
	b := mustRing(t, compat.Seed{Points: 160}, equalNodes("a", "b")...)
	if _, err := Rings(a, b); err == nil {
		t.Errorf("Rings of rings with different key hashes: no error")
	}
	d, err := Compare(RingOf(a), RingOf(b), a.Nodes(), b.Nodes(), SampleKeys(1000, 1))
	if err != nil {
		t.Fatal(err)
	}
	if d.Method != MethodSample {
		t.Errorf("Compare of rings with different key hashes: method %q; want sample", d.Method)
	}
}

func TestReorder(t *testing.T) {
	b, err := Counts(MethodKeys, equalNodes("a", "b", "c", "d"), []uint64{1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	b.reorder([]string{"c", "a"})
	var got []string
	for _, n := range b.Nodes {
		got = append(got, n.Name)
	}
	if want := []string{"c", "a", "b", "d"}; !slices.Equal(got, want) {
		t.Errorf("reorder = %q; want %q", got, want)
	}
}
