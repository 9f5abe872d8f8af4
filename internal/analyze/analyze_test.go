package analyze

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/compat"
	"github.com/chash-dev/chash/internal/dist"
)

// fixed is a scheme whose nodes' points are given by the test, a node of weight w
// owning its first w points, and whose keys are 4-byte big-endian ring positions,
// so a test can look up any position.
type fixed map[string][]uint32

func (f fixed) NumPoints(weight, total, n int) int { return weight }

func (f fixed) AppendPoints(dst []uint32, name string, from, to int) []uint32 {
	return append(dst, f[name][from:to]...)
}

func (f fixed) Hash(key []byte) uint32 { return binary.BigEndian.Uint32(key) }

// positional is Standard with keys that are 4-byte big-endian ring positions.
type positional struct{ chash.Standard }

func (positional) Hash(key []byte) uint32 { return binary.BigEndian.Uint32(key) }

func posKey(p uint32) []byte { return binary.BigEndian.AppendUint32(nil, p) }

func owner(t *testing.T, r *chash.Ring, p uint32) string {
	t.Helper()
	name, err := r.Lookup(posKey(p))
	if err != nil {
		t.Fatal(err)
	}
	return name
}

func mustRing(t testing.TB, s chash.Scheme, nodes ...chash.Node) *chash.Ring {
	t.Helper()
	r, err := chash.New(s, nodes)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func equalNodes(names ...string) []chash.Node {
	ns := make([]chash.Node, len(names))
	for i, n := range names {
		ns[i] = chash.Node{Name: n, Weight: 1}
	}
	return ns
}

func TestRingExact(t *testing.T) {
	// a owns (300, 2^32) ∪ [0, 100]; b owns (100, 200]; c owns (200, 300].
	s := fixed{"a": {100}, "b": {200}, "c": {300}}
	r := mustRing(t, s, equalNodes("a", "b", "c")...)
	b, err := Ring(r)
	if err != nil {
		t.Fatal(err)
	}
	wantCounts := []uint64{1<<32 - 300 + 100, 100, 100}
	for i, n := range b.Nodes {
		if n.Count != wantCounts[i] {
			t.Errorf("node %s: count %d; want %d", n.Name, n.Count, wantCounts[i])
		}
		if n.Expected != 1.0/3 {
			t.Errorf("node %s: expected %v; want 1/3", n.Name, n.Expected)
		}
	}
	if b.Total != RingSize || b.Method != MethodArcs {
		t.Errorf("total %d method %q; want 2^32 %q", b.Total, b.Method, MethodArcs)
	}
	if b.Most != "a" || b.Least != "b" {
		t.Errorf("most %q least %q; want a b", b.Most, b.Least)
	}
	wantMax := float64(wantCounts[0]) / RingSize * 3
	if b.MaxOverMean != wantMax {
		t.Errorf("max/mean = %v; want %v", b.MaxOverMean, wantMax)
	}
	r1, r2 := wantMax-1, 300.0/RingSize-1
	wantStd := math.Sqrt((r1*r1 + 2*r2*r2) / 3)
	if math.Abs(b.StdOverMean-wantStd) > 1e-15 {
		t.Errorf("std/mean = %v; want %v", b.StdOverMean, wantStd)
	}
	if maxStdErr(b) != 0 {
		t.Errorf("exact balance has a standard error")
	}
}

// maxStdErr returns b's largest standard error.
func maxStdErr(b *Balance) float64 {
	m := 0.0
	for _, n := range b.Nodes {
		m = max(m, n.StdErr)
	}
	return m
}

func TestRingWeightedAndTied(t *testing.T) {
	// b has weight 2; a and b tie at 500, which a (first by name) owns.
	s := fixed{"a": {500}, "b": {500, 1000}}
	r := mustRing(t, s, chash.Node{Name: "a", Weight: 1}, chash.Node{Name: "b", Weight: 2})
	b, err := Ring(r)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := b.Nodes[0].Count, uint64(1<<32-1000+500); got != want {
		t.Errorf("a count %d; want %d", got, want)
	}
	if got, want := b.Nodes[1].Count, uint64(500); got != want {
		t.Errorf("b count %d; want %d", got, want)
	}
	if b.Nodes[1].Expected != 2.0/3 {
		t.Errorf("b expected %v; want 2/3", b.Nodes[1].Expected)
	}
	arcs := Arcs(r)
	want := []Arc{{0, 500, "a"}, {501, 1000, "b"}, {1001, math.MaxUint32, "a"}}
	if !slices.Equal(arcs, want) {
		t.Errorf("Arcs = %v; want %v", arcs, want)
	}
}

func TestArcsSumToShares(t *testing.T) {
	for _, s := range []chash.Scheme{chash.Standard{Points: 7}, compat.Seed{}, compat.Seed{Points: 5}, fixed{"a": {0}, "b": {math.MaxUint32}}} {
		r := mustRing(t, s, equalNodes("a", "b")...)
		if _, ok := s.(fixed); !ok {
			r = mustRing(t, s, equalNodes(seedServers...)...)
		}
		sum := map[string]uint64{}
		var next uint64
		for _, a := range Arcs(r) {
			if uint64(a.Start) != next {
				t.Fatalf("%T: arc %v starts after a gap at %d", s, a, next)
			}
			sum[a.Node] += uint64(a.End) - uint64(a.Start) + 1
			next = uint64(a.End) + 1
		}
		if next != RingSize {
			t.Fatalf("%T: arcs end at %d", s, next)
		}
		shares := r.Shares()
		for i, n := range r.Nodes() {
			if sum[n.Name] != shares[i] {
				t.Errorf("%T: node %s arcs sum to %d; Shares says %d", s, n.Name, sum[n.Name], shares[i])
			}
		}
	}
}

var seedServers = []string{"192.168.0.0:111", "192.168.0.1:111", "192.168.0.2:111", "192.168.0.3:111", "192.168.0.4:111"}

// TestSampleAgrees routes a million sample keys and checks every node's sampled
// share against its exact share, within four standard errors.
func TestSampleAgrees(t *testing.T) {
	const keys = 1_000_000
	rings := map[string]*chash.Ring{
		"standard 10×160": mustRing(t, nil, equalNodes(names10()...)...),
		"seed 5×5":        mustRing(t, compat.Seed{Points: 5}, equalNodes(seedServers...)...),
		"seed 5×1":        mustRing(t, compat.Seed{}, equalNodes(seedServers...)...),
	}
	for name, r := range rings {
		t.Run(name, func(t *testing.T) {
			exact, err := Ring(r)
			if err != nil {
				t.Fatal(err)
			}
			sampled, err := Sample(RingOf(r), r.Nodes(), SampleKeys(keys, 1))
			if err != nil {
				t.Fatal(err)
			}
			if sampled.Total != keys || sampled.Method != MethodSample {
				t.Fatalf("sampled total %d method %q", sampled.Total, sampled.Method)
			}
			for i, e := range exact.Nodes {
				s := sampled.Nodes[i]
				se := math.Sqrt(e.Share * (1 - e.Share) / keys)
				if d := math.Abs(s.Share - e.Share); d > 4*se {
					t.Errorf("%s: sampled %.6f, exact %.6f: %.1f standard errors apart", e.Name, s.Share, e.Share, d/se)
				}
			}
			// The summary agrees too: max/mean within four standard errors of the
			// most loaded node's ratio.
			most, _ := exact.Node(exact.Most)
			se := math.Sqrt(most.Share*(1-most.Share)/keys) / most.Expected
			if d := math.Abs(sampled.MaxOverMean - exact.MaxOverMean); d > 4*se {
				t.Errorf("max/mean: sampled %.4f, exact %.4f", sampled.MaxOverMean, exact.MaxOverMean)
			}
		})
	}
}

func names10() []string {
	s := make([]string, 10)
	for i := range s {
		s[i] = fmt.Sprintf("cache-%02d:11211", i)
	}
	return s
}

// TestRandomClosedForm checks the exact std/mean of many rings of pseudo-random
// points against the closed form for random points, sqrt((N−1)/(N·V+1)): averaged
// (as a mean square) over 300 rings of different names, it must agree within 6%,
// about three times the averaging's own error.
func TestRandomClosedForm(t *testing.T) {
	const rings = 300
	for _, tc := range []struct{ n, v int }{{5, 1}, {5, 100}, {10, 10}, {10, 160}, {50, 20}} {
		t.Run(fmt.Sprintf("%dx%d", tc.n, tc.v), func(t *testing.T) {
			var sq float64
			for k := range rings {
				ns := make([]chash.Node, tc.n)
				for i := range ns {
					ns[i] = chash.Node{Name: fmt.Sprintf("ring%d-node%d", k, i), Weight: 1}
				}
				b, err := Ring(mustRing(t, chash.Standard{Points: tc.v}, ns...))
				if err != nil {
					t.Fatal(err)
				}
				sq += b.StdOverMean * b.StdOverMean
			}
			got, want := math.Sqrt(sq/rings), RandomStdOverMean(tc.n, tc.v)
			t.Logf("std/mean %.4f, closed form %.4f", got, want)
			if math.Abs(got/want-1) > 0.06 {
				t.Errorf("std/mean over %d rings = %.4f; closed form %.4f", rings, got, want)
			}
		})
	}
}

func TestCounts(t *testing.T) {
	nodes := []chash.Node{{Name: "a", Weight: 1}, {Name: "b", Weight: 3}}
	b, err := Counts(MethodKeys, nodes, []uint64{30, 70})
	if err != nil {
		t.Fatal(err)
	}
	sa, sb, ea, eb := 0.3, 0.7, 0.25, 0.75 // variables: constant division would be exact
	if b.Nodes[0].Ratio != sa/ea || b.Nodes[1].Ratio != sb/eb {
		t.Errorf("ratios %v %v; want 1.2 0.9333", b.Nodes[0].Ratio, b.Nodes[1].Ratio)
	}
	if want := math.Sqrt(0.3 * 0.7 / 100); b.Nodes[0].StdErr != want {
		t.Errorf("stderr %v; want %v", b.Nodes[0].StdErr, want)
	}
	for _, tc := range []struct {
		nodes  []chash.Node
		counts []uint64
		want   string
	}{
		{nil, nil, "analyze: no nodes"},
		{nodes, []uint64{1}, "analyze: 1 counts for 2 nodes"},
		{nodes, []uint64{0, 0}, "analyze: nothing counted"},
		{[]chash.Node{{Name: "z"}}, []uint64{1}, `analyze: node "z": weight 0, want at least 1`},
	} {
		_, err := Counts(MethodKeys, tc.nodes, tc.counts)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Counts(%v, %v) error = %v; want %q", tc.nodes, tc.counts, err, tc.want)
		}
	}
}

func TestCountErrors(t *testing.T) {
	r := mustRing(t, nil, equalNodes("a", "b")...)
	if _, err := Count(RingOf(r), equalNodes("a"), StringKeys([]string{"x", "y", "z", "w"})); err == nil {
		t.Errorf("Count with a missing node: no error")
	}
	if _, err := Count(RingOf(&chash.Ring{}), equalNodes("a"), StringKeys([]string{"x"})); err == nil {
		t.Errorf("Count on an empty ring: no error")
	}
	if _, err := Ring(&chash.Ring{}); err == nil {
		t.Errorf("Ring of an empty ring: no error")
	}
}

// table is a Table whose entries are given as owner indexes; it hashes a key by
// its first byte.
type table []int

func (t table) Lookup(key []byte) (int, error) { return t[int(key[0])%len(t)], nil }
func (t table) Size() int                      { return len(t) }
func (t table) Entry(j int) int                { return t[j] }

// router is a router that is neither a ring nor a table.
type router struct{ dist.Router }

// renamedRing is a RingRouter whose node i is ring node len-1-i, named
// "srv-" and the ring node's name.
type renamedRing struct{ r *chash.Ring }

func (r renamedRing) Lookup(key []byte) (int, error) {
	k, err := r.r.LookupIndex(key)
	return r.r.Len() - 1 - k, err
}

func (r renamedRing) Ring() (*chash.Ring, []int) {
	index := make([]int, r.r.Len())
	for k := range index {
		index[k] = r.r.Len() - 1 - k
	}
	return r.r, index
}

func (r renamedRing) nodes() []chash.Node {
	ns := r.r.Nodes()
	slices.Reverse(ns)
	for i := range ns {
		ns[i].Name = "srv-" + ns[i].Name
	}
	return ns
}

func TestMeasure(t *testing.T) {
	r := mustRing(t, nil, equalNodes("a", "b", "c")...)
	b, err := Measure(RingOf(r), r.Nodes(), nil)
	if err != nil || b.Method != MethodArcs {
		t.Fatalf("Measure(ring) = %v, %v; want arcs", b, err)
	}
	b, err = Measure(table{0, 1, 0, 2}, equalNodes("a", "b", "c"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.Method != MethodTable || b.Nodes[0].Count != 2 || b.Total != 4 {
		t.Errorf("Measure(table) = %+v; want a owning 2 of 4 entries", b)
	}
	b, err = Measure(router{RingOf(r)}, r.Nodes(), SampleKeys(1000, 1))
	if err != nil {
		t.Fatal(err)
	}
	if b.Method != MethodSample || b.Total != 1000 {
		t.Errorf("Measure(router) method %q total %d; want sample 1000", b.Method, b.Total)
	}
	rr := renamedRing{r}
	b, err = Measure(rr, rr.nodes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	exact, _ := Ring(r)
	if b.Method != MethodArcs || b.Nodes[0].Name != "srv-c" || b.Nodes[0].Share != exact.Nodes[2].Share || b.Most != "srv-"+exact.Most {
		t.Errorf("Measure(renamed ring) = %+v; want exact shares under srv- names, in the router's order", b)
	}
	arcs := RouterArcs(rr, rr.nodes())
	for i, a := range Arcs(r) {
		if arcs[i].Node != "srv-"+a.Node || arcs[i].Start != a.Start || arcs[i].End != a.End {
			t.Fatalf("RouterArcs[%d] = %v; want %v under its srv- name", i, arcs[i], a)
		}
	}
	if _, err := Measure(table{0, 5}, equalNodes("a"), nil); err == nil {
		t.Error("Measure of a table owned by a node out of range: no error")
	}
}

func TestSampleKeys(t *testing.T) {
	var got []string
	for k := range SampleKeys(3, 7) {
		got = append(got, string(k))
	}
	var again []string
	for k := range SampleKeys(3, 7) {
		again = append(again, string(k))
	}
	if !slices.Equal(got, again) || len(got) != 3 || len(got[0]) != 20 || got[0][:4] != "key:" {
		t.Errorf("SampleKeys(3, 7) = %q then %q", got, again)
	}
	n := 0
	for range SampleKeys(10, 1) {
		if n++; n == 2 {
			break
		}
	}
	var seq []string
	for k := range SequentialKeys("k", 3) {
		seq = append(seq, string(k))
	}
	if !slices.Equal(seq, []string{"k0", "k1", "k2"}) {
		t.Errorf("SequentialKeys = %q", seq)
	}
}
