package analyze

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"math"
	"math/bits"
	"slices"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/compat"
	"github.com/chash-dev/chash/internal/dist"
)

// Flow is the part of the key space that moves from one node to another.
type Flow struct {
	// From is the old owner; To the new one.
	From string `json:"from"`
	To   string `json:"to"`
	// Share is the fraction of the key space that moves.
	Share float64 `json:"share"`
	// Count is what Share counts: ring positions, table slots or keys.
	Count uint64 `json:"count"`
	// Ranges is the number of hash ranges in the flow (exact ring diffs only).
	Ranges int `json:"ranges,omitempty"`
}

// Range is a run of ring positions, Start through End inclusive, that moves from
// one node to another. A key is in it when the ring's hash of the key
// (chash.Ring.Hash) is.
type Range struct {
	Start uint32 `json:"start"`
	End   uint32 `json:"end"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// Len returns the number of positions in the range.
func (r Range) Len() uint64 { return uint64(r.End) - uint64(r.Start) + 1 }

// Movement is how much of the key space changes owner when nodes change, next
// to the ideal and to what modulo hashing would move.
// diff, sweep and compare report movement with these three names.
type Movement struct {
	// Moved is the fraction of the key space whose owner changes.
	Moved float64 `json:"moved"`
	// Ideal is what moves between the two configurations when every node ends at
	// its fair share (a scheme that leaves a joining node short moves less): the
	// larger of what leaving nodes hold (their actual old share) plus what
	// reweighted nodes must give up (their drop in fair share), and what joining
	// nodes must take (their fair new share) plus what reweighted nodes must gain.
	// For a pure addition it is the joining nodes' fair share; for a pure removal,
	// the leaving nodes' share.
	Ideal float64 `json:"ideal"`
	// ModuloMoved is what would move with modulo hashing (hash mod n) over the same
	// nodes, each repeated by its weight, in twemproxy's modula order
	// (ModuloMovedNodes), exactly,
	// for hashes uniform over 32 bits.
	ModuloMoved float64 `json:"modulo_moved"`
	// Repointed, for exact ring figures, tells of the nodes that keep their
	// weight but own another number of points after (nil if none): a
	// distribution that sizes each node's points by the whole pool, as the
	// weighted ketama formula does (in float32, as twemproxy computes it),
	// moves keys between nodes that stay as well.
	Repointed *Repointed `json:"repointed,omitempty"`
}

// Repointed counts the nodes that keep their weight but not their number of
// points, and gives the first of them.
type Repointed struct {
	// Nodes is how many of the Kept nodes, in both configurations at the
	// same weight, own another number of points.
	Nodes int `json:"nodes"`
	Kept  int `json:"kept"`
	// Name is the first of them, in the new order of nodes, and Old and New
	// its points before and after.
	Name string `json:"name"`
	Old  int    `json:"old_points"`
	New  int    `json:"new_points"`
}

// repointed compares the points of the nodes of both rings that keep their
// weight.
func repointed(old, new *chash.Ring) *Repointed {
	oc, nc := pointCounts(old), pointCounts(new)
	on := old.Nodes()
	index := make(map[string]int, len(on))
	for i, n := range on {
		index[n.Name] = i
	}
	var r Repointed
	for j, n := range new.Nodes() {
		i, ok := index[n.Name]
		if !ok || on[i].Weight != n.Weight {
			continue
		}
		r.Kept++
		if oc[i] != nc[j] {
			if r.Nodes == 0 {
				r.Name, r.Old, r.New = n.Name, oc[i], nc[j]
			}
			r.Nodes++
		}
	}
	if r.Nodes == 0 {
		return nil
	}
	return &r
}

// pointCounts returns the number of points of each of r's nodes.
func pointCounts(r *chash.Ring) []int {
	c := make([]int, r.Len())
	for i := range r.NumPoints() {
		_, n := r.Point(i)
		c[n]++
	}
	return c
}

// OverIdeal returns Moved as a multiple of Ideal, or NaN if Ideal is zero.
func (m Movement) OverIdeal() float64 {
	if m.Ideal == 0 {
		return math.NaN()
	}
	return m.Moved / m.Ideal
}

// Diff is what changes owner between two configurations of nodes.
type Diff struct {
	// Method is how the figures were computed: MethodArcs, MethodTable, MethodKeys,
	// MethodSample or MethodPlaced.
	Method string `json:"method"`
	// Total is the denominator of the shares, as in Balance.
	Total uint64 `json:"total"`
	Movement
	// Added, Removed and Reweighted name the nodes that join, leave, or change weight.
	Added      []string `json:"added"`
	Removed    []string `json:"removed"`
	Reweighted []string `json:"reweighted"`
	// Flows is the from→to matrix of moved fractions, its non-zero entries sorted
	// by From then To in node order.
	Flows []Flow `json:"flows"`
	// Ranges lists the moved hash ranges in position order (exact ring diffs only):
	// a migration plan.
	Ranges []Range `json:"ranges"`
	// Old and New are the balances before and after.
	Old *Balance `json:"old"`
	New *Balance `json:"new"`
}

// Rings returns the exact difference between two rings. It merges the two sorted
// point arrays into ranges over which both owners are constant, so it costs one
// pass over the points of both. It is an error if either ring has no points, or
// if the two rings hash keys differently (as found by hashing probe keys with
// both), since their positions would then not be comparable.
func Rings(old, new *chash.Ring) (*Diff, error) {
	return RingsIn(old, new, FullSpan)
}

// RingsIn is Rings for keys that hash to the positions of span only (see
// Span): only those positions count, in the balances, the flows and the
// moved ranges, and Total is the span's length.
func RingsIn(old, new *chash.Ring, span Span) (*Diff, error) {
	if old.NumPoints() == 0 || new.NumPoints() == 0 {
		return nil, errNoNodes
	}
	if !SameHash(old, new) {
		return nil, errors.New("analyze: the two rings hash keys differently")
	}
	ob, err := Counts(MethodArcs, old.Nodes(), spanShares(old, span))
	if err != nil {
		return nil, err
	}
	nb, err := Counts(MethodArcs, new.Nodes(), spanShares(new, span))
	if err != nil {
		return nil, err
	}
	d := newDiff(MethodArcs, span.Len(), old.Nodes(), new.Nodes(), ob, nb)
	d.Repointed = repointed(old, new)
	on, nn := old.Nodes(), new.Nodes()
	flows := map[[2]int]*Flow{}
	var moved uint64
	emit := func(start, end uint32, o, n int) {
		from, to := on[o].Name, nn[n].Name
		if from == to || end < span.Lo || start > span.Hi {
			return
		}
		start, end = max(start, span.Lo), min(end, span.Hi)
		length := uint64(end) - uint64(start) + 1
		moved += length
		f := flows[[2]int{o, n}]
		if f == nil {
			f = &Flow{From: from, To: to}
			flows[[2]int{o, n}] = f
		}
		f.Count += length
		if k := len(d.Ranges) - 1; k >= 0 && d.Ranges[k].From == from && d.Ranges[k].To == to &&
			uint64(d.Ranges[k].End)+1 == uint64(start) {
			d.Ranges[k].End = end
			return
		}
		d.Ranges = append(d.Ranges, Range{start, end, from, to})
		f.Ranges++
	}
	// Walk the union of both rings' positions. Positions (prev, b] have, in each
	// ring, the owner of the first point at or after b: the point the ring's index
	// stands at, or its first point once past the last.
	no, nw := old.NumPoints(), new.NumPoints()
	_, o0 := old.Point(0)
	_, n0 := new.Point(0)
	i, j := 0, 0
	var start uint64
	for i < no || j < nw {
		b := uint64(math.MaxUint64)
		ownO, ownN := o0, n0
		if i < no {
			var p uint32
			p, ownO = old.Point(i)
			b = uint64(p)
		}
		if j < nw {
			p, own := new.Point(j)
			if uint64(p) <= b {
				b = uint64(p)
			}
			ownN = own
		}
		emit(uint32(start), uint32(b), ownO, ownN)
		for i < no && pointAt(old, i) == b {
			i++
		}
		for j < nw && pointAt(new, j) == b {
			j++
		}
		start = b + 1
	}
	if start <= math.MaxUint32 {
		emit(uint32(start), math.MaxUint32, o0, n0)
	}
	d.finish(moved, flows)
	return d, nil
}

func pointAt(r *chash.Ring, i int) uint64 {
	p, _ := r.Point(i)
	return uint64(p)
}

// Tables returns the exact difference between two lookup tables of the same size,
// comparing them entry by entry; oldNodes and newNodes are the tables' nodes.
func Tables(old, new Table, oldNodes, newNodes []chash.Node) (*Diff, error) {
	if old.Size() != new.Size() {
		return nil, fmt.Errorf("analyze: tables of %d and %d entries", old.Size(), new.Size())
	}
	ob, err := TableBalance(old, oldNodes)
	if err != nil {
		return nil, err
	}
	nb, err := TableBalance(new, newNodes)
	if err != nil {
		return nil, err
	}
	d := newDiff(MethodTable, uint64(old.Size()), oldNodes, newNodes, ob, nb)
	flows := map[[2]int]*Flow{}
	var moved uint64
	for j := range old.Size() {
		o, n := old.Entry(j), new.Entry(j)
		if oldNodes[o].Name != newNodes[n].Name {
			moved++
			addFlow(flows, o, n, oldNodes[o].Name, newNodes[n].Name)
		}
	}
	d.finish(moved, flows)
	return d, nil
}

// CountDiff routes every key through both routers and counts the keys whose
// owner changes, with Method MethodKeys (or method, if given, such as
// MethodSample); oldNodes and newNodes are the routers' nodes.
func CountDiff(method string, old, new dist.Router, oldNodes, newNodes []chash.Node, keys iter.Seq[[]byte]) (*Diff, error) {
	if method == "" {
		method = MethodKeys
	}
	return countDiff(method, old.Lookup, new.Lookup, oldNodes, newNodes, keys)
}

// PlaceDiff places every key in turn on both load-aware routers, as Place
// does, and counts the keys whose placement changes, with Method
// MethodPlaced. The routers' loads grow by the keys.
func PlaceDiff(old, new dist.Placer, oldNodes, newNodes []chash.Node, keys iter.Seq[[]byte]) (*Diff, error) {
	return countDiff(MethodPlaced, old.Acquire, new.Acquire, oldNodes, newNodes, keys)
}

func countDiff(method string, old, new func([]byte) (int, error), oldNodes, newNodes []chash.Node, keys iter.Seq[[]byte]) (*Diff, error) {
	oc, nc := make([]uint64, len(oldNodes)), make([]uint64, len(newNodes))
	flows := map[[2]int]*Flow{}
	var moved, total uint64
	for k := range keys {
		o, err := old(k)
		if err != nil {
			return nil, fmt.Errorf("analyze: lookup %q: %w", k, err)
		}
		n, err := new(k)
		if err != nil {
			return nil, fmt.Errorf("analyze: lookup %q: %w", k, err)
		}
		if o < 0 || o >= len(oldNodes) || n < 0 || n >= len(newNodes) {
			return nil, fmt.Errorf("analyze: key %q routed to nodes %d of %d and %d of %d", k, o, len(oldNodes), n, len(newNodes))
		}
		total++
		oc[o]++
		nc[n]++
		if a, b := oldNodes[o].Name, newNodes[n].Name; a != b {
			moved++
			addFlow(flows, o, n, a, b)
		}
	}
	ob, err := Counts(method, oldNodes, oc)
	if err != nil {
		return nil, err
	}
	nb, err := Counts(method, newNodes, nc)
	if err != nil {
		return nil, err
	}
	d := newDiff(method, total, oldNodes, newNodes, ob, nb)
	d.finish(moved, flows)
	return d, nil
}

// Compare returns the difference between two routers, oldNodes and newNodes
// being their nodes, exactly where it can: RingsIn for two RingRouters that
// hash keys alike to the same Span (under the routers' names), Tables for two Tables of the same
// size, and otherwise CountDiff over keys with Method MethodSample.
func Compare(old, new dist.Router, oldNodes, newNodes []chash.Node, keys iter.Seq[[]byte]) (*Diff, error) {
	if a, b, ok := alikeRings(old, new); ok {
		ar, an := ringNames(a, oldNodes)
		br, bn := ringNames(b, newNodes)
		d, err := RingsIn(ar, br, spanOf(a))
		if err != nil {
			return nil, err
		}
		d.rename(an, bn)
		return d, nil
	}
	if a, ok := old.(Table); ok {
		if b, ok := new.(Table); ok && a.Size() == b.Size() {
			return Tables(a, b, oldNodes, newNodes)
		}
	}
	return CountDiff(MethodSample, old, new, oldNodes, newNodes, keys)
}

// alikeRings returns old and new as RingRouters, and whether they are two
// rings that hash keys alike to the same Span, which Compare compares arc by
// arc.
func alikeRings(old, new dist.Router) (a, b RingRouter, ok bool) {
	a, ok = old.(RingRouter)
	if !ok {
		return nil, nil, false
	}
	if b, ok = new.(RingRouter); !ok {
		return nil, nil, false
	}
	ar, _ := a.Ring()
	br, _ := b.Ring()
	return a, b, spanOf(a) == spanOf(b) && SameHash(ar, br)
}

// SameHash reports whether two rings put keys at the same positions, as far as
// 64 probe keys of assorted lengths can tell.
func SameHash(a, b *chash.Ring) bool {
	for k := range SampleKeys(32, 0x5eed) {
		if a.Hash(k) != b.Hash(k) || a.Hash(k[:len(k)%7]) != b.Hash(k[:len(k)%7]) {
			return false
		}
	}
	return true
}

// rename renames d's nodes, old ones by on and new ones by nn.
func (d *Diff) rename(on, nn map[string]string) {
	d.Old.rename(on)
	d.New.rename(nn)
	for i, n := range d.Removed {
		d.Removed[i] = renamed(on, n)
	}
	for i, n := range d.Added {
		d.Added[i] = renamed(nn, n)
	}
	for i, n := range d.Reweighted {
		d.Reweighted[i] = renamed(nn, n)
	}
	if d.Repointed != nil {
		d.Repointed.Name = renamed(nn, d.Repointed.Name)
	}
	for i := range d.Flows {
		d.Flows[i].From, d.Flows[i].To = renamed(on, d.Flows[i].From), renamed(nn, d.Flows[i].To)
	}
	for i := range d.Ranges {
		d.Ranges[i].From, d.Ranges[i].To = renamed(on, d.Ranges[i].From), renamed(nn, d.Ranges[i].To)
	}
}

func addFlow(flows map[[2]int]*Flow, o, n int, from, to string) {
	f := flows[[2]int{o, n}]
	if f == nil {
		f = &Flow{From: from, To: to}
		flows[[2]int{o, n}] = f
	}
	f.Count++
}

// newDiff fills in what does not depend on the method's walk: membership changes,
// the ideal and modulo hashing.
func newDiff(method string, total uint64, on, nn []chash.Node, ob, nb *Balance) *Diff {
	d := &Diff{Method: method, Total: total, Old: ob, New: nb,
		Added: []string{}, Removed: []string{}, Reweighted: []string{},
		Flows: []Flow{}, Ranges: []Range{}}
	ow, nw := weights(on), weights(nn)
	var out, in float64
	for _, n := range ob.Nodes {
		if _, ok := nw[n.Name]; !ok {
			d.Removed = append(d.Removed, n.Name)
			out += n.Share
		}
	}
	for _, n := range nb.Nodes {
		w, ok := ow[n.Name]
		if !ok {
			d.Added = append(d.Added, n.Name)
			in += n.Expected
			continue
		}
		if w != n.Weight {
			d.Reweighted = append(d.Reweighted, n.Name)
			o, _ := ob.Node(n.Name)
			in += max(0, n.Expected-o.Expected)
			out += max(0, o.Expected-n.Expected)
		}
	}
	d.Ideal = max(out, in)
	d.ModuloMoved = ModuloMovedNodes(on, nn)
	return d
}

func (d *Diff) finish(moved uint64, flows map[[2]int]*Flow) {
	d.Moved = float64(moved) / float64(d.Total)
	keys := make([][2]int, 0, len(flows))
	for k := range flows {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]int) int {
		if c := cmp.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return cmp.Compare(a[1], b[1])
	})
	for _, k := range keys {
		f := *flows[k]
		f.Share = float64(f.Count) / float64(d.Total)
		d.Flows = append(d.Flows, f)
	}
}

func weights(nodes []chash.Node) map[string]int {
	m := make(map[string]int, len(nodes))
	for _, n := range nodes {
		m[n.Name] = n.Weight
	}
	return m
}

// ModuloMoved returns the fraction of 32-bit hashes h for which old[h mod len(old)]
// differs from new[h mod len(new)]: what moves with modulo hashing, exactly, when
// key hashes are uniform over 32 bits. A name may appear several times, as in a
// weighted modulo table. It returns 1 if either list is empty.
func ModuloMoved(old, new []string) float64 {
	return moduloMoved(blocksOf(old), blocksOf(new))
}

// ModuloMovedNodes is ModuloMoved for the weighted modulo tables of nodes, laid
// out as twemproxy's modula lays out a pool: one slot per unit of weight, the
// nodes sorted by the length of their names, then bytewise (compat.Modula), so
// that the order in which nodes are listed does not matter. It takes time that
// grows with the nodes, not with their weights.
func ModuloMovedNodes(old, new []chash.Node) float64 {
	return moduloMoved(nodeBlocks(old), nodeBlocks(new))
}

func moduloMoved(old, new []block) float64 {
	if len(old) == 0 || len(new) == 0 {
		return 1
	}
	return float64(RingSize-moduloKept(old, new, RingSize)) / RingSize
}

// A block is a run of slots of a modulo table held by one name.
type block struct {
	name string
	n    uint64
}

func blocksOf(names []string) []block {
	b := make([]block, 0, len(names))
	for _, name := range names {
		if len(b) > 0 && b[len(b)-1].name == name {
			b[len(b)-1].n++
		} else {
			b = append(b, block{name, 1})
		}
	}
	return b
}

func nodeBlocks(nodes []chash.Node) []block {
	sorted := slices.Clone(nodes)
	slices.SortStableFunc(sorted, compat.ModulaOrder)
	b := make([]block, 0, len(sorted))
	for _, n := range sorted {
		b = append(b, block{n.Name, uint64(max(n.Weight, 1))})
	}
	return b
}

func slots(b []block) uint64 {
	var n uint64
	for _, x := range b {
		n += x.n
	}
	return n
}

// moduloKept counts the h in [0, space) whose slot h mod n of old (n slots)
// and slot h mod m of new hold the same name, by the cheaper of two exact
// counts: over the pairs of slots that hold the same name (keptByPairs), whose
// number grows with the product of the weights, or along h (keptByRuns), whose
// steps grow with space and the blocks per slot.
func moduloKept(old, new []block, space uint64) uint64 {
	n, m := slots(old), slots(new)
	at := spansOf(new)
	var pairs uint64
	for _, b := range old {
		for i := at.first(b.name); i >= 0; i = at.spans[i].next {
			hi, lo := bits.Mul64(b.n, at.spans[i].n)
			if sum, carry := bits.Add64(pairs, lo, 0); hi == 0 && carry == 0 {
				pairs = sum
			} else {
				pairs = math.MaxUint64
			}
		}
	}
	if runs := (space/n+1)*uint64(len(old)) + (space/m+1)*uint64(len(new)); runs < pairs {
		return keptByRuns(old, new, space)
	}
	return keptByPairs(old, new, at, space)
}

// spans indexes the blocks of a table by name: first(name) is the index in
// spans of the name's first block, and each span the index of the next.
type spans struct {
	head  map[string]int
	spans []span
}

type span struct {
	start, n uint64 // the block's slots
	next     int    // the name's next block in spans, or -1
}

func spansOf(table []block) spans {
	s := spans{head: make(map[string]int, len(table)), spans: make([]span, len(table))}
	var start uint64
	for i := len(table) - 1; i >= 0; i-- {
		start += table[i].n
	}
	for i := len(table) - 1; i >= 0; i-- { // backwards, so each name's list runs forwards
		b := table[i]
		start -= b.n
		next, ok := s.head[b.name]
		if !ok {
			next = -1
		}
		s.spans[i] = span{start, b.n, next}
		s.head[b.name] = i
	}
	return s
}

func (s spans) first(name string) int {
	if i, ok := s.head[name]; ok {
		return i
	}
	return -1
}

// keptByRuns walks h from 0 to space a run at a time, a run being the h over
// which neither slot leaves its block.
func keptByRuns(old, new []block, space uint64) uint64 {
	var kept uint64
	i, j := 0, 0                 // the blocks of old and new h is in
	ai, bj := old[0].n, new[0].n // the slots left in them
	for h := uint64(0); h < space; {
		step := min(ai, bj, space-h)
		if old[i].name == new[j].name {
			kept += step
		}
		h += step
		if ai -= step; ai == 0 {
			i = (i + 1) % len(old)
			ai = old[i].n
		}
		if bj -= step; bj == 0 {
			j = (j + 1) % len(new)
			bj = new[j].n
		}
	}
	return kept
}

// keptByPairs counts over the pairs of slots (a, b) that hold the same name,
// at indexing new's blocks.
//
// Such a pair fixes h mod L = lcm(n, m) (by the Chinese remainder theorem, when
// a ≡ b mod gcd(n, m)). With space = q·L + rem, residue r occurs q times, plus
// once more if r < rem.
func keptByPairs(old, new []block, at spans, space uint64) uint64 {
	n, m := slots(old), slots(new)
	g := gcd(n, m)
	l := n / g * m
	q, rem := space/l, space%l
	mg := m / g
	inv := modInverse((n/g)%mg, mg)
	var kept uint64
	var start uint64
	for _, ob := range old {
		first := at.first(ob.name)
		for a := start; a < start+ob.n; a++ {
			am := a % m
			for i := first; i >= 0; i = at.spans[i].next {
				sp := at.spans[i]
				for b := sp.start; b < sp.start+sp.n; b++ {
					var diff uint64 // (b − a) mod m
					if b >= am {
						diff = b - am
					} else {
						diff = b + m - am
					}
					if diff%g != 0 {
						continue
					}
					// r = a + n·k with n·k ≡ b − a (mod m), so k ≡ (diff/g)·inv (mod m/g).
					k := mulMod(diff/g, inv, mg)
					r := a + n*k
					kept += q
					if r < rem {
						kept++
					}
				}
			}
		}
		start += ob.n
	}
	return kept
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// modInverse returns x with a·x ≡ 1 (mod m), for a coprime to m; 0 when m is 1.
func modInverse(a, m uint64) uint64 {
	if m == 1 {
		return 0
	}
	// Extended Euclid on signed values; m is at most the number of nodes.
	t, newT := int64(0), int64(1)
	r, newR := int64(m), int64(a)
	for newR != 0 {
		q := r / newR
		t, newT = newT, t-q*newT
		r, newR = newR, r-q*newR
	}
	if t < 0 {
		t += int64(m)
	}
	return uint64(t)
}

func mulMod(a, b, m uint64) uint64 {
	if m == 1 {
		return 0
	}
	hi, lo := bits.Mul64(a, b)
	return bits.Rem64(hi, lo, m)
}
