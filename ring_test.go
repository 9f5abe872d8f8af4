package chash

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func nodes(n int) []Node {
	ns := make([]Node, n)
	for i := range ns {
		ns[i] = Node{Name: fmt.Sprintf("10.0.%d.%d:11211", i/250, i%250), Weight: 1}
	}
	return ns
}

func keys(n int) [][]byte {
	ks := make([][]byte, n)
	for i := range ks {
		ks[i] = fmt.Appendf(nil, "user:%014d", i)
	}
	return ks
}

func mustNew(t testing.TB, s Scheme, ns []Node) *Ring {
	t.Helper()
	r, err := New(s, ns)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// refLookup is an independent reference: every point the scheme gives, sorted by
// (position, Order, Name), searched linearly for the first at or after the hash.
func refLookup(s Scheme, ns []Node, key []byte) string {
	type pt struct {
		pos  uint32
		node Node
	}
	total := 0
	for _, n := range ns {
		total += n.Weight
	}
	var pts []pt
	for _, n := range ns {
		for _, p := range s.AppendPoints(nil, n.Name, 0, s.NumPoints(n.Weight, total, len(ns))) {
			pts = append(pts, pt{p, n})
		}
	}
	if len(pts) == 0 {
		return ""
	}
	slices.SortFunc(pts, func(a, b pt) int {
		if a.pos != b.pos {
			if a.pos < b.pos {
				return -1
			}
			return 1
		}
		return compareNodes(a.node, b.node)
	})
	h := s.Hash(key)
	for _, p := range pts {
		if p.pos >= h {
			return p.node.Name
		}
	}
	return pts[0].node.Name
}

// sameRing reports whether two rings route alike: the same nodes and counts, the
// same points with the same owners, and index entries that say the same. Owner
// ids may differ: a merged ring keeps the ids nodes had.
func sameRing(a, b *Ring) error {
	if !slices.Equal(a.nodes, b.nodes) {
		return fmt.Errorf("nodes differ: %v vs %v", a.nodes, b.nodes)
	}
	if !slices.Equal(a.counts, b.counts) {
		return fmt.Errorf("counts differ: %v vs %v", a.counts, b.counts)
	}
	if len(a.pts) != len(b.pts) {
		return fmt.Errorf("points differ (%d vs %d points)", len(a.pts), len(b.pts))
	}
	for i := range a.pts {
		if a.pts[i]>>32 != b.pts[i]>>32 || a.names[uint32(a.pts[i])] != b.names[uint32(b.pts[i])] {
			return fmt.Errorf("point %d differs: %#x %q vs %#x %q", i,
				a.pts[i]>>32, a.names[uint32(a.pts[i])], b.pts[i]>>32, b.names[uint32(b.pts[i])])
		}
	}
	if len(a.index) != len(b.index) || a.shift != b.shift || a.packed != b.packed {
		return fmt.Errorf("index shapes differ: %d slots, shift %d, packed %v vs %d, %d, %v",
			len(a.index), a.shift, a.packed, len(b.index), b.shift, b.packed)
	}
	for s := range a.index {
		if ea, eb := a.entry(s), b.entry(s); ea != eb {
			return fmt.Errorf("index slot %d differs: %+v vs %+v", s, ea, eb)
		}
	}
	for id, name := range a.names {
		if name != "" && a.ids[a.rank[id]] != uint32(id) || name == "" && a.rank[id] != -1 {
			return fmt.Errorf("id %d (%q) has rank %d", id, name, a.rank[id])
		}
	}
	return nil
}

// slot is what an index entry says, owner ids resolved to names.
type slot struct {
	direct bool
	owner  string
	point  uint32
}

func (r *Ring) entry(s int) slot {
	e := r.index[s]
	if e&direct == 0 {
		return slot{point: e >> r.pointShift}
	}
	return slot{direct: true, owner: r.names[e&r.ownerMask], point: (e &^ direct) >> r.pointShift}
}

func TestEmpty(t *testing.T) {
	var zero Ring
	empty := mustNew(t, nil, nil)
	var h Holder
	for name, r := range map[string]*Ring{"zero": &zero, "New(nil)": empty, "Holder": h.Load()} {
		if got, err := r.LookupString("k"); !errors.Is(err, ErrEmpty) {
			t.Errorf("%s: Lookup = %q, %v; want ErrEmpty", name, got, err)
		}
		if got, err := r.AppendN(nil, []byte("k"), 3); !errors.Is(err, ErrEmpty) || len(got) != 0 {
			t.Errorf("%s: AppendN = %q, %v; want ErrEmpty", name, got, err)
		}
		if s := r.Shares(); len(s) != 0 {
			t.Errorf("%s: Shares = %v; want none", name, s)
		}
	}
	// Removing the last node leaves an empty ring, not an error.
	r := mustNew(t, nil, nodes(1))
	r, err := r.Remove(r.nodes[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.LookupString("k"); !errors.Is(err, ErrEmpty) {
		t.Errorf("after removing the only node: Lookup error = %v; want ErrEmpty", err)
	}
	// Adding to the zero ring works.
	r, err = zero.Add(Node{Name: "a", Weight: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.LookupString("k"); got != "a" || err != nil {
		t.Errorf("zero.Add(a).Lookup = %q, %v; want a", got, err)
	}
}

func TestBadNodes(t *testing.T) {
	base := mustNew(t, nil, []Node{{Name: "a", Weight: 1}})
	tests := []struct {
		name string
		f    func() (*Ring, error)
		want string
	}{
		{"empty name", func() (*Ring, error) { return New(nil, []Node{{Weight: 1}}) }, "empty name"},
		{"zero weight", func() (*Ring, error) { return New(nil, []Node{{Name: "x"}}) }, `"x": weight 0`},
		{"negative weight", func() (*Ring, error) { return New(nil, []Node{{Name: "x", Weight: -3}}) }, `"x": weight -3`},
		{"duplicate", func() (*Ring, error) {
			return New(nil, []Node{{Name: "x", Weight: 1}, {Name: "y", Weight: 1}, {Name: "x", Weight: 2}})
		}, `duplicate node "x"`},
		{"duplicate other order", func() (*Ring, error) {
			return New(nil, []Node{{Name: "x", Weight: 1, Order: 2}, {Name: "x", Weight: 1, Order: 1}})
		}, `duplicate node "x"`},
		{"add existing", func() (*Ring, error) { return base.Add(Node{Name: "a", Weight: 1}) }, `duplicate node "a"`},
		{"add bad weight", func() (*Ring, error) { return base.Add(Node{Name: "b"}) }, `"b": weight 0`},
		{"remove missing", func() (*Ring, error) { return base.Remove("zz") }, `remove "zz": no such node`},
		{"reweight missing", func() (*Ring, error) { return base.Reweight(Node{Name: "zz", Weight: 2}) }, `reweight "zz": no such node`},
		{"reweight zero", func() (*Ring, error) { return base.Reweight(Node{Name: "a"}) }, `"a": weight 0`},
	}
	for _, tt := range tests {
		r, err := tt.f()
		if err == nil || r != nil {
			t.Errorf("%s: got ring %v, error %v; want error", tt.name, r != nil, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "chash: ") {
			t.Errorf("%s: error %q; want it to start with \"chash: \" and contain %q", tt.name, err, tt.want)
		}
	}
	if got, _ := base.LookupString("k"); got != "a" {
		t.Errorf("failed updates changed the ring: Lookup = %q; want a", got)
	}
}

func TestLookupMatchesReference(t *testing.T) {
	schemes := map[string]Scheme{
		"standard":   Standard{},
		"standard-3": Standard{Points: 3},
		"ketamaish":  normScheme{},
		"clumped":    clumpScheme{},
	}
	ns := nodes(13)
	ns[3].Weight, ns[7].Weight, ns[11].Weight = 2, 5, 3
	ns[5].Order, ns[9].Order = -1, 4
	for name, s := range schemes {
		r := mustNew(t, s, ns)
		for _, k := range keys(2000) {
			got, err := r.Lookup(k)
			if want := refLookup(s, ns, k); got != want || err != nil {
				t.Fatalf("%s: Lookup(%q) = %q, %v; want %q", name, k, got, err, want)
			}
		}
	}
}

// TestWrap checks that keys past the last point and before the first go to the
// first point's owner, and a key exactly on a point goes to that point.
func TestWrap(t *testing.T) {
	s := fixedScheme{"a": {100}, "b": {200}, "c": {300}}
	r := mustNew(t, s, []Node{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}, {Name: "c", Weight: 1}})
	tests := []struct {
		h    uint32
		want string
	}{
		{0, "a"}, {99, "a"}, {100, "a"}, {101, "b"}, {200, "b"}, {201, "c"}, {300, "c"},
		{301, "a"}, {1 << 31, "a"}, {0xFFFFFFFE, "a"}, {0xFFFFFFFF, "a"},
	}
	for _, tt := range tests {
		if got, _ := r.Lookup(hkey(tt.h)); got != tt.want {
			t.Errorf("Lookup(hash %d) = %q; want %q", tt.h, got, tt.want)
		}
	}
	// A real point at the top of the ring must win over the sentinel.
	s = fixedScheme{"a": {5}, "top": {0xFFFFFFFF}}
	r = mustNew(t, s, []Node{{Name: "a", Weight: 1}, {Name: "top", Weight: 1}})
	if got, _ := r.Lookup(hkey(0xFFFFFFFF)); got != "top" {
		t.Errorf("Lookup(hash MaxUint32) = %q; want top", got)
	}
	if got, _ := r.Lookup(hkey(6)); got != "top" {
		t.Errorf("Lookup(hash 6) = %q; want top", got)
	}
}

func TestTies(t *testing.T) {
	// Every node puts its points at the same positions: the tie rule alone decides.
	s := clumpScheme{}
	ns := []Node{{Name: "d", Weight: 1}, {Name: "b", Weight: 1}, {Name: "c", Weight: 1, Order: -1}, {Name: "a", Weight: 1}}
	r := mustNew(t, s, ns)
	for _, k := range keys(100) {
		if got, _ := r.Lookup(k); got != "c" {
			t.Fatalf("Lookup(%q) = %q; want c (lowest Order)", k, got)
		}
	}
	ns[2].Order = 0
	r = mustNew(t, s, ns)
	for _, k := range keys(100) {
		if got, _ := r.Lookup(k); got != "a" {
			t.Fatalf("Lookup(%q) = %q; want a (first name)", k, got)
		}
	}
	if sh := r.Shares(); sh[0] != 1<<32 {
		t.Errorf("Shares = %v; want all 2^32 to a", sh)
	}
}

// TestPermutations builds a ring of the same six nodes in every order, both with
// New and by adding one node at a time, and requires identical rings.
func TestPermutations(t *testing.T) {
	s := clumpPartly{}
	ns := nodes(6)
	ns[2].Weight = 3
	want := mustNew(t, s, ns)
	n := 0
	for p := range permutations(len(ns)) {
		perm := make([]Node, len(ns))
		for i, j := range p {
			perm[i] = ns[j]
		}
		if err := sameRing(mustNew(t, s, perm), want); err != nil {
			t.Fatalf("New(%v): %v", p, err)
		}
		r := mustNew(t, s, nil)
		for _, nd := range perm {
			var err error
			if r, err = r.Add(nd); err != nil {
				t.Fatal(err)
			}
		}
		if err := sameRing(r, want); err != nil {
			t.Fatalf("Add in order %v: %v", p, err)
		}
		n++
	}
	if n != 720 {
		t.Fatalf("tried %d permutations; want 720", n)
	}
}

func permutations(n int) func(yield func([]int) bool) {
	return func(yield func([]int) bool) {
		p := make([]int, n)
		for i := range p {
			p[i] = i
		}
		var rec func(k int) bool
		rec = func(k int) bool {
			if k == n {
				return yield(slices.Clone(p))
			}
			for i := k; i < n; i++ {
				p[k], p[i] = p[i], p[k]
				if !rec(k + 1) {
					return false
				}
				p[k], p[i] = p[i], p[k]
			}
			return true
		}
		rec(0)
	}
}

// TestUpdatesMatchBuild applies random batches of adds, removes and reweights and
// checks each merged ring is identical to one built from scratch.
func TestUpdatesMatchBuild(t *testing.T) {
	for name, s := range map[string]Scheme{
		"standard": Standard{Points: 40}, "ketamaish": normScheme{}, "clumped": clumpPartly{},
		"pairs": pairScheme{},
	} {
		rng := rand.New(rand.NewPCG(1, 2))
		r := mustNew(t, s, nodes(20))
		next := 100
		for step := range 300 {
			var err error
			cur := r.Nodes()
			switch op := rng.IntN(3); {
			case op == 0 || len(cur) < 2:
				var add []Node
				for range 1 + rng.IntN(3) {
					add = append(add, Node{Name: fmt.Sprintf("n%d", next), Weight: 1 + rng.IntN(4), Order: rng.IntN(3) - 1})
					next++
				}
				r, err = r.Add(add...)
			case op == 1:
				var names []string
				for _, i := range rng.Perm(len(cur))[:1+rng.IntN(min(3, len(cur)-1))] {
					names = append(names, cur[i].Name)
				}
				r, err = r.Remove(names...)
			default:
				nd := cur[rng.IntN(len(cur))]
				nd.Weight = 1 + rng.IntN(5)
				r, err = r.Reweight(nd)
			}
			if err != nil {
				t.Fatalf("%s step %d: %v", name, step, err)
			}
			if err := sameRing(r, mustNew(t, s, r.Nodes())); err != nil {
				t.Fatalf("%s step %d: merged ring differs from a fresh build: %v", name, step, err)
			}
		}
	}
}

// TestUpdateFickleScheme checks that a scheme whose points change between calls
// gets a usable ring from Remove, not a corrupt one.
func TestUpdateFickleScheme(t *testing.T) {
	s := fickleScheme{new(atomic.Uint32)}
	r := mustNew(t, s, nodes(5))
	gone := r.nodes[2].Name
	r, err := r.Remove(gone)
	if err != nil {
		t.Fatal(err)
	}
	if r.Len() != 4 || r.NumPoints() != 40 {
		t.Fatalf("after Remove: %d nodes, %d points; want 4, 40", r.Len(), r.NumPoints())
	}
	for _, k := range keys(1000) {
		if got, err := r.Lookup(k); err != nil || got == gone {
			t.Fatalf("Lookup(%q) = %q, %v after removing it", k, got, err)
		}
	}
}

// TestIDsCompacted checks that ids left unused by removals are numbered afresh
// once they are many, and that the ring still routes as a fresh build.
func TestIDsCompacted(t *testing.T) {
	r := mustNew(t, Standard{Points: 10}, nodes(200))
	for _, n := range nodes(200)[:150] {
		var err error
		if r, err = r.Remove(n.Name); err != nil {
			t.Fatal(err)
		}
		if len(r.names) > 2*r.Len()+64 {
			t.Fatalf("%d nodes use %d ids", r.Len(), len(r.names))
		}
	}
	if err := sameRing(r, mustNew(t, Standard{Points: 10}, r.Nodes())); err != nil {
		t.Fatal(err)
	}
}

// TestUpdatesMatchBuildLarge checks single updates on a ring of 1000 nodes × 160
// points, whose index has every slot kind, against fresh builds.
func TestUpdatesMatchBuildLarge(t *testing.T) {
	r := mustNew(t, nil, nodes(1000))
	if !r.packed {
		t.Fatal("the ring's index is not packed; the test would not cover patching")
	}
	mid := r.nodes[500]
	for name, update := range map[string]func() (*Ring, error){
		"add first": func() (*Ring, error) { return r.Add(Node{Name: "", Weight: 1}) },
		"add":       func() (*Ring, error) { return r.Add(Node{Name: "joining:11211", Weight: 1}) },
		"add heavy": func() (*Ring, error) { return r.Add(Node{Name: "big", Weight: 7, Order: -1}) },
		"add last":  func() (*Ring, error) { return r.Add(Node{Name: "zz", Weight: 1, Order: 9}) },
		"remove":    func() (*Ring, error) { return r.Remove(mid.Name) },
		"remove 3":  func() (*Ring, error) { return r.Remove(r.nodes[0].Name, mid.Name, r.nodes[999].Name) },
		"reweight":  func() (*Ring, error) { return r.Reweight(Node{Name: mid.Name, Weight: 3}) },
	} {
		got, err := update()
		if name == "add first" {
			if err == nil {
				t.Fatal("adding a node with an empty name succeeded")
			}
			got, err = r.Add(Node{Name: "0", Weight: 1})
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := sameRing(got, mustNew(t, nil, got.Nodes())); err != nil {
			t.Errorf("%s: merged ring differs from a fresh build: %v", name, err)
		}
	}
}

// TestMovement checks the consistent-hashing promise exactly, arc by arc: adding a
// node only moves keys to it, removing one only moves its keys away.
func TestMovement(t *testing.T) {
	r := mustNew(t, nil, nodes(50))
	added, err := r.Add(Node{Name: "new", Weight: 2})
	if err != nil {
		t.Fatal(err)
	}
	moved := uint64(0)
	forEachRange(r, added, func(lo, hi uint32, from, to string) {
		if from != to {
			if to != "new" {
				t.Fatalf("adding moved [%d,%d] from %s to %s", lo, hi, from, to)
			}
			moved += uint64(hi-lo) + 1
		}
	})
	share := added.Shares()[added.find("new")]
	if moved != share {
		t.Errorf("adding moved %d positions; want the new node's share %d", moved, share)
	}
	removed, err := added.Remove("10.0.0.7:11211")
	if err != nil {
		t.Fatal(err)
	}
	forEachRange(added, removed, func(lo, hi uint32, from, to string) {
		if from != to && from != "10.0.0.7:11211" {
			t.Fatalf("removing moved [%d,%d] from %s to %s", lo, hi, from, to)
		}
	})
	// Sampled keys agree with the exact picture.
	for _, k := range keys(20000) {
		a, _ := r.Lookup(k)
		b, _ := added.Lookup(k)
		if a != b && b != "new" {
			t.Fatalf("key %q moved from %s to %s on add", k, a, b)
		}
	}
}

// forEachRange calls f for each maximal hash range on which both rings have a
// fixed owner.
func forEachRange(a, b *Ring, f func(lo, hi uint32, from, to string)) {
	cuts := []uint32{}
	for _, r := range []*Ring{a, b} {
		for i := range r.NumPoints() {
			p, _ := r.Point(i)
			cuts = append(cuts, p)
		}
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	lo := uint32(0)
	for _, c := range cuts {
		f(lo, c, ownerAt(a, c), ownerAt(b, c))
		if c == 0xFFFFFFFF {
			return
		}
		lo = c + 1
	}
	f(lo, 0xFFFFFFFF, ownerAt(a, 0xFFFFFFFF), ownerAt(b, 0xFFFFFFFF))
}

// ownerAt returns the owner of ring position h, found by the lookups' search.
func ownerAt(r *Ring, h uint32) string {
	return r.names[r.owner(h)]
}

func TestShares(t *testing.T) {
	for _, n := range []int{1, 2, 7, 100} {
		r := mustNew(t, nil, nodes(n))
		sum := uint64(0)
		for _, s := range r.Shares() {
			sum += s
		}
		if sum != 1<<32 {
			t.Errorf("%d nodes: shares sum to %d; want 2^32", n, sum)
		}
	}
	s := fixedScheme{"a": {100}, "b": {200}, "c": {300}}
	r := mustNew(t, s, []Node{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}, {Name: "c", Weight: 1}})
	want := []uint64{1<<32 - 300 + 100, 100, 100}
	if got := r.Shares(); !slices.Equal(got, want) {
		t.Errorf("Shares = %v; want %v", got, want)
	}
}

func TestAppendN(t *testing.T) {
	ns := nodes(9)
	ns[4].Weight = 6
	r := mustNew(t, Standard{Points: 7}, ns)
	for _, k := range keys(3000) {
		for _, n := range []int{0, 1, 2, 3, 8, 9, 20} {
			got, err := r.AppendN([]string{"keep"}, k, n)
			if err != nil {
				t.Fatal(err)
			}
			want := min(n, 9)
			if len(got) != want+1 || got[0] != "keep" {
				t.Fatalf("AppendN(%q, %d) = %q; want %d names after \"keep\"", k, n, got, want)
			}
			got = got[1:]
			if n > 0 {
				if owner, _ := r.Lookup(k); got[0] != owner {
					t.Fatalf("AppendN(%q, %d)[0] = %q; want the owner %q", k, n, got[0], owner)
				}
			}
			if c := slices.Clone(got); len(slices.Compact(slices.Sorted(slices.Values(c)))) != len(got) {
				t.Fatalf("AppendN(%q, %d) = %q has duplicates", k, n, got)
			}
		}
	}
	// The replica set is the clockwise walk: the second replica is the owner of the
	// point after the owner's run of points.
	s := fixedScheme{"a": {100, 150}, "b": {120}, "c": {300}}
	r = mustNew(t, s, []Node{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}, {Name: "c", Weight: 1}})
	for _, tt := range []struct {
		h    uint32
		want string
	}{{0, "a b c"}, {110, "b a c"}, {130, "a c b"}, {200, "c a b"}, {400, "a b c"}} {
		got, _ := r.AppendN(nil, hkey(tt.h), 5)
		if strings.Join(got, " ") != tt.want {
			t.Errorf("AppendN(hash %d, 5) = %q; want %q", tt.h, got, tt.want)
		}
	}
}

// TestLookupIndex checks that LookupIndex and AppendIndexN name, by index in
// Nodes, the nodes Lookup and AppendN name, also on rings made by updates,
// whose node ids are no longer their indexes.
func TestLookupIndex(t *testing.T) {
	built := mustNew(t, Standard{Points: 20}, nodes(30))
	removed, err := built.Remove(nodes(30)[3].Name, nodes(30)[17].Name)
	if err != nil {
		t.Fatal(err)
	}
	added, err := removed.Add(Node{Name: "a-newcomer", Weight: 2}, Node{Name: "zz-newcomer", Weight: 1})
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*Ring{"built": built, "removed": removed, "added": added} {
		ns := r.Nodes()
		for _, k := range keys(2000) {
			owner, _ := r.Lookup(k)
			i, err := r.LookupIndex(k)
			if err != nil || i < 0 || i >= len(ns) || ns[i].Name != owner {
				t.Fatalf("%s: LookupIndex(%q) = %d, %v; want the index of %q", name, k, i, err, owner)
			}
			names, _ := r.AppendN(nil, k, 4)
			idx, err := r.AppendIndexN([]int{-7}, k, 4)
			if err != nil || len(idx) != len(names)+1 || idx[0] != -7 {
				t.Fatalf("%s: AppendIndexN([-7], %q, 4) = %v, %v; want -7 and %d indexes", name, k, idx, err, len(names))
			}
			for j, n := range names {
				if got := ns[idx[j+1]].Name; got != n {
					t.Fatalf("%s: AppendIndexN(%q, 4)[%d] names %q; want %q", name, k, j, got, n)
				}
			}
		}
	}
	var zero Ring
	if i, err := zero.LookupIndex([]byte("k")); i != -1 || !errors.Is(err, ErrEmpty) {
		t.Errorf("empty ring: LookupIndex = %d, %v; want -1, ErrEmpty", i, err)
	}
	if got, err := zero.AppendIndexN(nil, []byte("k"), 2); len(got) != 0 || !errors.Is(err, ErrEmpty) {
		t.Errorf("empty ring: AppendIndexN = %v, %v; want none, ErrEmpty", got, err)
	}
}

func TestAllocs(t *testing.T) {
	r := mustNew(t, nil, nodes(100))
	k := []byte("user:00000000000042")
	ks := string(k)
	dst := make([]string, 0, 3)
	idx := make([]int, 0, 3)
	var h Holder
	h.Store(r)
	for name, f := range map[string]func(){
		"Lookup":       func() { r.Lookup(k) },
		"LookupString": func() { r.LookupString(ks) },
		"AppendN":      func() { r.AppendN(dst[:0], k, 3) },
		"LookupIndex":  func() { r.LookupIndex(k) },
		"AppendIndexN": func() { r.AppendIndexN(idx[:0], k, 3) },
		"Holder":       func() { h.LookupString(ks) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s allocates %v times; want 0", name, n)
		}
	}
}

func TestHolderConcurrent(t *testing.T) {
	var h Holder
	h.Store(mustNew(t, nil, nodes(10)))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := h.LookupString("some-key"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var writers sync.WaitGroup
	for w := range 2 {
		writers.Go(func() {
			for i := range 50 {
				name := fmt.Sprintf("w%d-%d", w, i)
				if _, err := h.Update(func(r *Ring) (*Ring, error) { return r.Add(Node{Name: name, Weight: 1}) }); err != nil {
					t.Error(err)
				}
			}
		})
	}
	writers.Wait()
	close(stop)
	wg.Wait()
	if got := h.Load().Len(); got != 110 {
		t.Errorf("after 100 concurrent adds the ring has %d nodes; want 110 (no lost update)", got)
	}
	if _, err := h.Update(func(r *Ring) (*Ring, error) { return r.Remove("nope") }); err == nil {
		t.Error("Update with a failing change returned no error")
	}
	if got := h.Load().Len(); got != 110 {
		t.Errorf("a failed Update changed the ring to %d nodes", got)
	}
}

func TestIndexBounds(t *testing.T) {
	// Big rings cap the index at 2^20 slots; lookups must stay exact.
	if testing.Short() {
		t.Skip("builds a 2M-point ring")
	}
	ns := nodes(2000)
	r := mustNew(t, Standard{Points: 1100}, ns)
	if len(r.index) != 1<<maxIndexBits {
		t.Errorf("index has %d slots; want %d", len(r.index), 1<<maxIndexBits)
	}
	// 2000 owners and 2.2M points need 33 bits: this ring's empty slots cannot
	// also name their next point, and search must walk.
	if r.packed {
		t.Errorf("a 2000-node ring of %d points has packed index entries", r.NumPoints())
	}
	if small := mustNew(t, nil, nodes(1000)); !small.packed {
		t.Error("a 1000-node ring of 160 points each does not have packed index entries")
	}
	for _, k := range keys(200) {
		h := r.Hash(k)
		i := r.search(h)
		j, _ := slices.BinarySearch(r.pts[:len(r.pts)-1], uint64(h)<<32)
		if i != j {
			t.Fatalf("search(%d) = %d; want %d", h, i, j)
		}
		if j == len(r.pts)-1 {
			j = 0
		}
		if o := r.owner(h); o != uint32(r.pts[j]) {
			t.Fatalf("owner(%d) = %d; want %d", h, o, uint32(r.pts[j]))
		}
	}
}
