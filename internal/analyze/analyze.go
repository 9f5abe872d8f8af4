// Package analyze computes how evenly a pool spreads keys over its servers and
// how many keys move when its servers change, exactly where that can be done
// and by routing keys where it cannot. It measures the routers of package
// dist's catalogue, which map a key to the index of its server; Pool and
// DiffPools measure a configuration's pool as chash analyze and diff print it,
// and CompareDistributions the whole catalogue side by side, as chash compare
// does.
//
// How each figure is computed (dist.Entry.Method says which applies):
//
//   - A ring (a *chash.Ring, or a RingRouter, a router backed by one) divides the
//     2^32 ring positions into arcs; a node's share is the total length of the
//     arcs ending at its points (Ring.Shares), an exact count of positions.
//     Movement between two rings is exact too: the two sorted point arrays are
//     merged into hash ranges over which both owners are constant, and each range
//     whose owner changes is counted whole (Rings). When keys hash to part of
//     the ring only (a SpannedRing, whose hash has fewer than 32 bits, such as
//     twemproxy's crc32 of 0..32767), only the positions of its Span count
//     (RingsIn).
//   - A Table (a router that hashes keys uniformly onto a fixed table of entries,
//     as Maglev does) is measured by counting the entries each node owns, and
//     movement by comparing the two tables entry by entry. Both are exact for keys
//     whose hashes are uniform over the entries.
//   - A load-aware router (dist.Placer) is measured by placing keys in turn, each
//     counting as load, as chash route places the keys it reads (Place).
//   - Any other router (jump hash, rendezvous, modula) is measured by routing
//     keys, a key file's or generated ones (SampleKeys), and counting. Such figures
//     are exact for those keys and estimates of the key space's shares, with the
//     standard error that NodeShare.StdErr reports.
//   - Modulo hashing (hash mod n over the same servers, each repeated by its
//     weight, in the order of twemproxy's modula) is computed exactly for hashes
//     uniform over 32 bits, without hashing a key (ModuloMovedNodes).
//
// All shares are fractions of the key space, and all figures are deterministic.
package analyze

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/internal/dist"
)

// A Table is a router that hashes each key uniformly onto one of a fixed number
// of equal table entries and returns the entry's owner, as Maglev does. Measure
// and Compare count its entries for exact figures instead of routing keys.
type Table interface {
	dist.Router
	// Size returns the number of entries.
	Size() int
	// Entry returns the index of the node that owns entry j.
	Entry(j int) int
}

// A RingRouter is a router backed by a *chash.Ring, whose nodes may be named
// otherwise than the router's, as when a ring hashes a server's host but the
// pool names it "host:port". Measure and Compare use its ring for exact figures,
// under the router's names.
type RingRouter interface {
	dist.Router
	// Ring returns the ring and, for each of its nodes in Nodes order, the index
	// of the router's node it stands for.
	Ring() (*chash.Ring, []int)
}

// Span is the run of ring positions that keys hash to, Lo through Hi
// inclusive. A key hash of fewer than 32 bits, such as twemproxy's crc32
// (0..32767, see hashfn.Max), reaches only part of the ring: a key past the
// span's last point goes to the ring's first point, and an arc outside the span
// owns no keys whatever its length. Exact figures count the positions of each
// arc that lie in the span, keys being taken as uniform over it.
type Span struct {
	Lo, Hi uint32
}

// FullSpan is the whole ring, the span of a hash of 32 bits.
var FullSpan = Span{0, math.MaxUint32}

// Len returns the number of positions in s.
func (s Span) Len() uint64 { return uint64(s.Hi) - uint64(s.Lo) + 1 }

// A SpannedRing is a RingRouter whose keys hash to part of its ring only.
// Measure and Compare count only the positions of its span.
type SpannedRing interface {
	RingRouter
	// KeySpan returns the first and last ring positions keys hash to.
	KeySpan() (lo, hi uint32)
}

// spanOf returns the span of r's keys: r's KeySpan if it has one, else the
// whole ring.
func spanOf(r RingRouter) Span {
	if s, ok := r.(SpannedRing); ok {
		lo, hi := s.KeySpan()
		return Span{lo, hi}
	}
	return FullSpan
}

// RingOf returns r as a RingRouter whose nodes are r.Nodes(), in that order.
func RingOf(r *chash.Ring) RingRouter {
	index := make([]int, r.Len())
	for i := range index {
		index[i] = i
	}
	return ringRouter{r, index}
}

type ringRouter struct {
	r     *chash.Ring
	index []int
}

func (r ringRouter) Lookup(key []byte) (int, error) { return r.r.LookupIndex(key) }
func (r ringRouter) Ring() (*chash.Ring, []int)     { return r.r, r.index }

// Methods say how a Balance or Diff was computed.
const (
	MethodArcs   = string(dist.Arcs)   // exact arc lengths on a ring of 2^32 positions
	MethodTable  = string(dist.Table)  // exact slot counts of a lookup table
	MethodKeys   = "keys"              // counts of the given keys, such as a key file
	MethodSample = string(dist.Sample) // counts of generated sample keys, an estimate
	MethodPlaced = string(dist.Placed) // counts of keys placed in turn, each counting as load
)

// RingSize is the number of positions on a ring, the Total of exact ring figures.
const RingSize = 1 << 32

// NodeShare is one node's part of the key space.
type NodeShare struct {
	// Name is the node's name.
	Name string `json:"name"`
	// Weight is the node's weight.
	Weight int `json:"weight"`
	// Share is the fraction of the key space (or of the counted keys) the node owns.
	Share float64 `json:"share"`
	// Expected is the node's weight-fair share: its weight over the total weight.
	Expected float64 `json:"expected"`
	// Ratio is Share/Expected: 1 is a fair load, 2 twice the fair load.
	Ratio float64 `json:"ratio"`
	// Count is what Share counts: ring positions, table slots or keys.
	Count uint64 `json:"count"`
	// StdErr is, for counted keys, the standard error of Share as an estimate of the
	// node's share of the whole key space, were the keys a random sample:
	// sqrt(Share·(1−Share)/keys). It is zero for exact figures.
	StdErr float64 `json:"stderr,omitempty"`
}

// Balance is how a router divides the key space among its nodes.
type Balance struct {
	// Method is how the figures were computed: MethodArcs, MethodTable, MethodKeys
	// or MethodSample.
	Method string `json:"method"`
	// Total is the denominator of the shares: 2^32 positions, the table size or the
	// number of keys.
	Total uint64 `json:"total"`
	// Nodes holds one entry per node, in the router's node order.
	Nodes []NodeShare `json:"nodes"`
	// MaxOverMean is the largest Ratio: the most loaded node's share over its fair
	// share (1 is perfect balance).
	MaxOverMean float64 `json:"max_over_mean"`
	// MinOverMean is the smallest Ratio.
	MinOverMean float64 `json:"min_over_mean"`
	// StdOverMean is the coefficient of variation of the load: the root mean square
	// over the nodes of Ratio−1. With equal weights it is the population standard
	// deviation of the shares divided by their mean.
	StdOverMean float64 `json:"std_over_mean"`
	// Most and Least name the nodes with the largest and smallest Ratio (the first
	// in node order on a tie).
	Most  string `json:"most"`
	Least string `json:"least"`
}

// Node returns the entry for the named node and whether there is one.
func (b *Balance) Node(name string) (NodeShare, bool) {
	for _, n := range b.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return NodeShare{}, false
}

// reorder puts b's nodes in the order of names, as a configuration lists them;
// nodes not named keep their order after the named ones.
func (b *Balance) reorder(names []string) {
	rank := rankOf(names)
	slices.SortStableFunc(b.Nodes, func(x, y NodeShare) int {
		rx, okx := rank[x.Name]
		ry, oky := rank[y.Name]
		switch {
		case okx && oky:
			return cmp.Compare(rx, ry)
		case okx:
			return -1
		case oky:
			return 1
		}
		return 0
	})
}

// rankOf maps each of names to its first index.
func rankOf(names []string) map[string]int {
	rank := make(map[string]int, len(names))
	for i, n := range names {
		if _, ok := rank[n]; !ok {
			rank[n] = i
		}
	}
	return rank
}

var errNoNodes = errors.New("analyze: no nodes")

// Ring returns the exact balance of r, from arc lengths, under its nodes' names
// in its Nodes order. It is an error if r has no points.
func Ring(r *chash.Ring) (*Balance, error) {
	if r.NumPoints() == 0 {
		return nil, errNoNodes
	}
	return Counts(MethodArcs, r.Nodes(), r.Shares())
}

// Counts returns the balance of nodes given what each owns out of the sum of
// counts: positions, slots or keys. method is recorded in the result; for
// MethodKeys and MethodSample each node's StdErr is set. It is an error if the
// lengths differ, a weight is below 1 or the counts sum to zero.
func Counts(method string, nodes []chash.Node, counts []uint64) (*Balance, error) {
	if len(nodes) == 0 {
		return nil, errNoNodes
	}
	if len(counts) != len(nodes) {
		return nil, fmt.Errorf("analyze: %d counts for %d nodes", len(counts), len(nodes))
	}
	var total uint64
	weights := 0
	for i, n := range nodes {
		if n.Weight < 1 {
			return nil, fmt.Errorf("analyze: node %q: weight %d, want at least 1", n.Name, n.Weight)
		}
		weights += n.Weight
		total += counts[i]
	}
	if total == 0 {
		return nil, errors.New("analyze: nothing counted")
	}
	b := &Balance{Method: method, Total: total, Nodes: make([]NodeShare, len(nodes))}
	sampled := method == MethodKeys || method == MethodSample
	for i, n := range nodes {
		s := NodeShare{
			Name:     n.Name,
			Weight:   n.Weight,
			Share:    float64(counts[i]) / float64(total),
			Expected: float64(n.Weight) / float64(weights),
			Count:    counts[i],
		}
		s.Ratio = s.Share / s.Expected
		if sampled {
			s.StdErr = math.Sqrt(s.Share * (1 - s.Share) / float64(total))
		}
		b.Nodes[i] = s
	}
	b.summarize()
	return b, nil
}

func (b *Balance) summarize() {
	b.MaxOverMean, b.MinOverMean = math.Inf(-1), math.Inf(1)
	var sq float64
	for _, n := range b.Nodes {
		if n.Ratio > b.MaxOverMean {
			b.MaxOverMean, b.Most = n.Ratio, n.Name
		}
		if n.Ratio < b.MinOverMean {
			b.MinOverMean, b.Least = n.Ratio, n.Name
		}
		sq += (n.Ratio - 1) * (n.Ratio - 1)
	}
	b.StdOverMean = math.Sqrt(sq / float64(len(b.Nodes)))
}

// Exact reports whether b's shares are exact: from a ring's arcs or a table's
// entries.
func (b *Balance) Exact() bool { return b.Method == MethodArcs || b.Method == MethodTable }

// RingBalance returns the exact balance of r's ring, from arc lengths, for
// nodes, the router's nodes in its order. Only the positions of r's Span count,
// if it is a SpannedRing; Total is then the span's length.
func RingBalance(r RingRouter, nodes []chash.Node) (*Balance, error) {
	ring, index := r.Ring()
	if ring.NumPoints() == 0 {
		return nil, errNoNodes
	}
	counts := make([]uint64, len(nodes))
	for k, c := range spanShares(ring, spanOf(r)) {
		if index[k] < 0 || index[k] >= len(nodes) {
			return nil, fmt.Errorf("analyze: ring node %d stands for node %d of %d", k, index[k], len(nodes))
		}
		counts[index[k]] += c
	}
	return Counts(MethodArcs, nodes, counts)
}

// TableBalance returns the exact balance of a lookup table from the number of
// entries each of nodes, the table's nodes in its order, owns.
func TableBalance(t Table, nodes []chash.Node) (*Balance, error) {
	if len(nodes) == 0 {
		return nil, errNoNodes
	}
	counts := make([]uint64, len(nodes))
	for j := range t.Size() {
		e := t.Entry(j)
		if e < 0 || e >= len(nodes) {
			return nil, fmt.Errorf("analyze: table entry %d owned by node %d of %d", j, e, len(nodes))
		}
		counts[e]++
	}
	return Counts(MethodTable, nodes, counts)
}

// spanShares is r.Shares counting only the positions in s: for each node in
// Nodes order, how many positions of s it owns.
func spanShares(r *chash.Ring, s Span) []uint64 {
	if s == FullSpan {
		return r.Shares()
	}
	shares := make([]uint64, r.Len())
	in := func(start, end int64) uint64 { // the positions of start..end in s
		return uint64(max(0, min(end, int64(s.Hi))-max(start, int64(s.Lo))+1))
	}
	prev := int64(-1) // point i owns the positions after the previous one
	for i := range r.NumPoints() {
		pos, owner := r.Point(i)
		if int64(pos) == prev {
			continue // a tied point owns nothing
		}
		shares[owner] += in(prev+1, int64(pos))
		prev = int64(pos)
	}
	_, first := r.Point(0)
	shares[first] += in(prev+1, math.MaxUint32) // past the last point: the first's
	return shares
}

// Count routes every key through r and returns the balance of the counts over
// nodes, r's nodes in its order, with Method MethodKeys.
func Count(r dist.Router, nodes []chash.Node, keys iter.Seq[[]byte]) (*Balance, error) {
	counts, err := count(r.Lookup, nodes, keys)
	if err != nil {
		return nil, err
	}
	return Counts(MethodKeys, nodes, counts)
}

// Sample is Count for generated sample keys (SampleKeys): the same figures with
// Method MethodSample, estimates of the key space's shares.
func Sample(r dist.Router, nodes []chash.Node, keys iter.Seq[[]byte]) (*Balance, error) {
	counts, err := count(r.Lookup, nodes, keys)
	if err != nil {
		return nil, err
	}
	return Counts(MethodSample, nodes, counts)
}

// Place places every key in turn with r's Acquire, each counting as load, and
// returns the balance of the placements, with Method MethodPlaced. r's loads
// grow by the keys: pass a router built for the purpose.
func Place(r dist.Placer, nodes []chash.Node, keys iter.Seq[[]byte]) (*Balance, error) {
	counts, err := count(r.Acquire, nodes, keys)
	if err != nil {
		return nil, err
	}
	return Counts(MethodPlaced, nodes, counts)
}

// count routes every key with lookup and counts the keys of each of nodes.
func count(lookup func([]byte) (int, error), nodes []chash.Node, keys iter.Seq[[]byte]) ([]uint64, error) {
	counts := make([]uint64, len(nodes))
	for k := range keys {
		i, err := lookup(k)
		if err != nil {
			return nil, fmt.Errorf("analyze: lookup %q: %w", k, err)
		}
		if i < 0 || i >= len(nodes) {
			return nil, fmt.Errorf("analyze: key %q routed to node %d of %d", k, i, len(nodes))
		}
		counts[i]++
	}
	return counts, nil
}

// Measure returns the balance of r over nodes, r's nodes in its order, exactly
// where it can: from arc lengths when r is a RingRouter, from entry counts when
// r is a Table; otherwise by routing keys with r's Lookup, with Method
// MethodSample. It never changes r, even a load-aware one (see Place).
func Measure(r dist.Router, nodes []chash.Node, keys iter.Seq[[]byte]) (*Balance, error) {
	switch r := r.(type) {
	case RingRouter:
		return RingBalance(r, nodes)
	case Table:
		return TableBalance(r, nodes)
	}
	return Sample(r, nodes, keys)
}

// rename renames b's nodes by names, for a ring whose nodes are named
// otherwise than the router's.
func (b *Balance) rename(names map[string]string) {
	for i := range b.Nodes {
		b.Nodes[i].Name = renamed(names, b.Nodes[i].Name)
	}
	b.Most, b.Least = renamed(names, b.Most), renamed(names, b.Least)
}

func renamed(names map[string]string, name string) string {
	if n, ok := names[name]; ok {
		return n
	}
	return name
}

// ringNames returns r's ring and the map from its nodes' names to those of
// nodes, the router's nodes.
func ringNames(r RingRouter, nodes []chash.Node) (*chash.Ring, map[string]string) {
	ring, index := r.Ring()
	names := make(map[string]string, len(index))
	for k, n := range ring.Nodes() {
		if i := index[k]; i >= 0 && i < len(nodes) {
			names[n.Name] = nodes[i].Name
		}
	}
	return ring, names
}

// Arc is a run of ring positions owned by one node: Start through End inclusive.
type Arc struct {
	Start uint32 `json:"start"`
	End   uint32 `json:"end"`
	Node  string `json:"node"`
}

// Arcs returns r's arcs in position order, adjacent arcs of the same node merged,
// covering all 2^32 positions without wrapping: the first arc starts at 0 and the
// last ends at 2^32−1 (both belong to the owner of the first point).
func Arcs(r *chash.Ring) []Arc {
	n := r.NumPoints()
	if n == 0 {
		return nil
	}
	nodes := r.Nodes()
	var arcs []Arc
	add := func(start, end uint32, owner int) {
		name := nodes[owner].Name
		if k := len(arcs) - 1; k >= 0 && arcs[k].Node == name {
			arcs[k].End = end
			return
		}
		arcs = append(arcs, Arc{start, end, name})
	}
	var next uint32 // first position not yet covered
	_, first := r.Point(0)
	for i := 0; i < n; i++ {
		pos, owner := r.Point(i)
		if i > 0 && pos == prevPos(r, i) {
			continue // a tied point owns nothing
		}
		add(next, pos, owner)
		if pos == math.MaxUint32 {
			return arcs
		}
		next = pos + 1
	}
	add(next, math.MaxUint32, first)
	return arcs
}

func prevPos(r *chash.Ring, i int) uint32 {
	p, _ := r.Point(i - 1)
	return p
}

// RouterArcs is Arcs of r's ring under the names of nodes, r's nodes in its
// order.
func RouterArcs(r RingRouter, nodes []chash.Node) []Arc {
	ring, names := ringNames(r, nodes)
	arcs := Arcs(ring)
	for i := range arcs {
		arcs[i].Node = renamed(names, arcs[i].Node)
	}
	return arcs
}
