package chash

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// ErrEmpty is returned by lookups on a ring that has no points, and by the
// lookups of every algorithm package (jump, maglev, rendezvous, ...) built over
// no nodes: one error for one condition, whichever the algorithm.
var ErrEmpty = errors.New("chash: no nodes")

// Node is a member of a ring.
type Node struct {
	// Name identifies the node; it is what lookups return, and most schemes hash it
	// to place the node's points. It must be non-empty and unique in a ring.
	Name string
	// Weight scales the node's share of points. It must be at least 1.
	Weight int
	// Order breaks ties when points of two nodes fall on the same position: the node
	// with the lower Order owns the position, and among equal Orders the node whose
	// Name sorts first. The zero value for every node makes routing independent of
	// the order in which nodes were given or added; compatibility schemes set it to
	// copy a deployed program's tie rule (for example, config order).
	Order int
}

// Ring is an immutable consistent-hash ring. It is safe for concurrent use. The zero
// value is an empty ring whose lookups return ErrEmpty.
type Ring struct {
	scheme Scheme
	hash   func([]byte) uint32
	std    bool   // scheme is Standard with the default key hash: call it directly
	nodes  []Node // sorted by (Order, Name), the rank order
	counts []int  // points per node, in rank order
	live   int    // nodes with at least one point

	// Points and index entries name their owner by an id that a node keeps while
	// it stays in the ring, so that an update leaves other nodes' points and
	// entries alone. ids[k] is the id of the node of rank k; names[id] its name
	// ("" for an unused id) and rank[id] its rank (-1 for an unused id).
	ids   []uint32
	names []string
	rank  []int32

	// pts holds each point as position<<32 | owner id, by position and, among
	// points on one position, by owner rank (the lower rank owns the position),
	// followed by a sentinel at position math.MaxUint32 owned by the first
	// point's owner, so that a search always stops and past-the-end wraps. One
	// word per point keeps a point's position and owner in one cache line.
	pts []uint64
	// index has one entry per slot of 2^shift positions. The entry of a slot that
	// holds no point has the direct bit set and the owner of every position in it
	// in its low bits (under ownerMask); most slots are empty, so most lookups end
	// with one load. Entries also hold, shifted left by pointShift, the first point
	// at or after the slot's start, except in empty slots' entries when the owner
	// and point numbers do not fit in 31 bits together (pointShift is then 0 and
	// packed false).
	index      []uint32
	ownerMask  uint32
	shift      uint8
	pointShift uint8
	packed     bool
}

// direct marks an index entry that holds an owner rather than a point.
const direct = 1 << 31

// maxIndexBits caps the lookup index at 2^20 slots (4 MiB).
const maxIndexBits = 20

// New builds a ring of the given nodes with scheme s (Standard{} when s is nil).
// It returns an error, naming the node, for an empty or duplicate name or a weight
// below 1, if the weights sum past math.MaxInt, and if the scheme gives the
// nodes more than MaxPoints points in all. It also returns the error of a
// scheme that is a Validator (Standard with negative Points, say). An empty
// node list gives an empty ring.
func New(s Scheme, nodes []Node) (*Ring, error) {
	if s == nil {
		s = Standard{}
	}
	if v, ok := s.(Validator); ok {
		if err := v.Validate(); err != nil {
			return nil, err
		}
	}
	if err := CheckNodes(nodes); err != nil {
		return nil, err
	}
	ns := slices.Clone(nodes)
	slices.SortFunc(ns, compareNodes)
	counts, err := pointCounts(s, ns)
	if err != nil {
		return nil, err
	}
	return build(s, ns, counts), nil
}

// MaxPoints bounds the points of a ring: 2^24 take 64 MiB, and twice that
// while the ring is built. A weight or Points that would give more (160 points
// per unit of weight and a weight in megabytes of memory, say) is refused
// rather than built or, overflowing, silently given no points.
const MaxPoints = 1 << 24

// CheckNodes reports the first problem that makes nodes unusable by any of
// chash's algorithms: an empty name, a weight below 1, or a name given twice.
// The error names the node; packages built on Node wrap it with their own name.
func CheckNodes(nodes []Node) error {
	if err := checkNodes(nodes); err != nil {
		return err
	}
	seen := make(map[string]struct{}, len(nodes))
	for _, n := range nodes {
		if _, dup := seen[n.Name]; dup {
			return fmt.Errorf("chash: duplicate node %q", n.Name)
		}
		seen[n.Name] = struct{}{}
	}
	return nil
}

func checkNodes(ns []Node) error {
	for _, n := range ns {
		if err := checkNode(n); err != nil {
			return err
		}
	}
	return nil
}

func checkNode(n Node) error {
	if n.Name == "" {
		return errors.New("chash: node with an empty name")
	}
	if n.Weight < 1 {
		return fmt.Errorf("chash: node %q: weight %d, want at least 1", n.Name, n.Weight)
	}
	return nil
}

func compareNodes(a, b Node) int {
	if c := cmp.Compare(a.Order, b.Order); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// pointCounts asks s how many points each node owns, and reports an error,
// naming the node that takes it past, if that is more than MaxPoints in all or
// if the weights sum past math.MaxInt, where a scheme that divides by the sum
// (ketama's) would give every node no point.
func pointCounts(s Scheme, ns []Node) ([]int, error) {
	weights, past := 0, -1
	for i, n := range ns {
		if n.Weight > math.MaxInt-weights {
			weights, past = math.MaxInt, i
			break
		}
		weights += n.Weight
	}
	counts := make([]int, len(ns))
	total := 0
	for i, n := range ns {
		c := max(0, s.NumPoints(n.Weight, weights, len(ns)))
		if c > MaxPoints-total {
			return nil, fmt.Errorf("chash: node %q: weight %d gives the ring more than %d points; lower the weights or the points per unit of weight", n.Name, n.Weight, MaxPoints)
		}
		counts[i], total = c, total+c
	}
	if past >= 0 {
		return nil, fmt.Errorf("chash: node %q: weight %d takes the sum of the weights past %d; lower the weights", ns[past].Name, ns[past].Weight, math.MaxInt)
	}
	return counts, nil
}

// build makes a ring of ns, which is valid and sorted by compareNodes, each
// node owning counts points (pointCounts).
func build(s Scheme, ns []Node, counts []int) *Ring {
	total := 0
	for _, c := range counts {
		total += c
	}
	// Generate points in rank order, with ids equal to ranks, then sort them by
	// position: ties keep rank order, which is the documented tie rule.
	keys := make([]uint64, 0, total+1)
	var buf []uint32
	for i, n := range ns {
		buf = s.AppendPoints(buf[:0], n.Name, 0, counts[i])
		for _, p := range buf {
			keys = append(keys, uint64(p)<<32|uint64(i))
		}
	}
	sortPoints(keys)
	r := newRing(s, ns, counts)
	r.pts = append(keys, 0) // room for the sentinel
	r.finish()
	return r
}

// newRing returns a ring of ns with no points yet, whose ids are its ranks.
func newRing(s Scheme, ns []Node, counts []int) *Ring {
	r := &Ring{scheme: s, hash: s.Hash, nodes: ns, counts: counts}
	if std, ok := s.(Standard); ok && std.KeyHash == nil {
		r.std = true
	}
	r.ids = make([]uint32, len(ns))
	r.names = make([]string, len(ns))
	r.rank = make([]int32, len(ns))
	for i, n := range ns {
		r.ids[i], r.names[i], r.rank[i] = uint32(i), n.Name, int32(i)
	}
	return r
}

// finish sets the sentinel, the live count and the lookup index once pts holds
// the sorted points and one spare word.
func (r *Ring) finish() {
	if r.prepare() {
		r.index = make([]uint32, 1<<(32-r.shift))
		r.fillIndex()
	}
}

// prepare sets the sentinel, the live count and the index's shape, and reports
// whether the ring has points. An empty ring has neither points nor index.
func (r *Ring) prepare() bool {
	n := len(r.pts) - 1
	r.live = 0
	for _, c := range r.counts {
		if c > 0 {
			r.live++
		}
	}
	if n <= 0 {
		r.pts, r.index = nil, nil
		return false
	}
	r.pts[n] = math.MaxUint32<<32 | r.pts[0]&math.MaxUint32
	// Two to four slots per point: most slots then hold no point.
	b := min(max(bits.Len(uint(n))+1, 1), maxIndexBits)
	r.shift = uint8(32 - b)
	r.ownerMask, r.pointShift, r.packed = direct-1, 0, false
	if ob := bits.Len(uint(len(r.names) - 1)); ob+bits.Len(uint(n)) <= 31 {
		r.ownerMask, r.pointShift, r.packed = 1<<ob-1, uint8(ob), true
	}
	return true
}

// fillIndex computes every entry of the index from the points.
func (r *Ring) fillIndex() {
	n := len(r.pts) - 1
	// Count the points in each slot, then turn the counts into entries with a
	// prefix sum; neither pass has an unpredictable branch. The points are sorted,
	// so the first pass walks the index in order.
	idx, shift := r.index, 32+r.shift
	for _, p := range r.pts[:n] {
		idx[p>>shift]++
	}
	// Locals, so the compiler need not reload fields after each store.
	pts, pp, ps := r.pts, r.pointShift, r.pointShift
	if !r.packed {
		ps = 32 // clears the point number from empty slots' entries below
	}
	sum := uint32(0)
	for s, c := range idx {
		// Three slots in four are empty, at random: choose the entry with a mask,
		// not a branch the processor would mispredict.
		empty := -((c - 1) >> 31) // all ones if c == 0, else 0
		e := uint32(uint64(sum)<<ps) | direct | uint32(pts[sum])
		idx[s] = sum<<pp&^empty | e&empty
		sum += c
	}
}

// sortPoints sorts keys (position<<32 | owner) ascending. Keys are generated in
// owner order, so a stable sort on the position alone suffices; large inputs take
// an LSD radix sort, which beats a comparison sort several times over.
func sortPoints(keys []uint64) {
	if len(keys) < 512 {
		slices.Sort(keys)
		return
	}
	const digit = 11
	tmp := make([]uint64, len(keys))
	src, dst := keys, tmp
	for shift := 32; shift < 64; shift += digit {
		var count [1 << digit]int
		for _, k := range src {
			count[(k>>shift)&(1<<digit-1)]++
		}
		sum := 0
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for _, k := range src {
			d := (k >> shift) & (1<<digit - 1)
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	// Three 11-bit passes leave the result in tmp.
	copy(keys, src)
}

// search returns the index of the first point at or after h; the sentinel's index
// when h is past the last point, whose owner is the first point's.
func (r *Ring) search(h uint32) int {
	s := int(h >> r.shift)
	e := r.index[s]
	if r.packed || e&direct == 0 {
		i := int(e&^direct) >> r.pointShift
		for k := uint64(h) << 32; r.pts[i] < k; {
			i++
		}
		return i
	}
	// An empty slot: the point is the first of the next slot that has one.
	for s++; s < len(r.index); s++ {
		if e := r.index[s]; e&direct == 0 {
			return int(e)
		}
	}
	return len(r.pts) - 1
}

// owner returns the owner of position h.
func (r *Ring) owner(h uint32) uint32 {
	e := r.index[h>>r.shift]
	if e&direct != 0 {
		return e & r.ownerMask
	}
	i := e >> r.pointShift
	for k := uint64(h) << 32; r.pts[i] < k; {
		i++
	}
	return uint32(r.pts[i])
}

// Lookup returns the name of the node that owns key.
func (r *Ring) Lookup(key []byte) (string, error) {
	if len(r.pts) == 0 {
		return "", ErrEmpty
	}
	var h uint32
	if r.std {
		h = uint32(xxhash.Sum64(key))
	} else {
		h = r.hash(key)
	}
	return r.names[r.owner(h)], nil
}

// LookupIndex returns the index in Nodes of the node that owns key, or -1 and
// ErrEmpty. A caller that keeps its own slice of servers in Nodes order, or a
// map from each index to its server, finds the owner without comparing or
// hashing names.
func (r *Ring) LookupIndex(key []byte) (int, error) {
	if len(r.pts) == 0 {
		return -1, ErrEmpty
	}
	var h uint32
	if r.std {
		h = uint32(xxhash.Sum64(key))
	} else {
		h = r.hash(key)
	}
	return int(r.rank[r.owner(h)]), nil
}

// LookupString is Lookup for a string key; it does not copy the key.
func (r *Ring) LookupString(key string) (string, error) {
	return r.Lookup(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// AppendN appends to dst the names of the first n distinct nodes clockwise from
// key: the owner first, then the nodes a replica set would add. It returns fewer
// than n when the ring has fewer nodes with points, never a name twice. It
// allocates only if dst lacks capacity or n is above 8.
func (r *Ring) AppendN(dst []string, key []byte, n int) ([]string, error) {
	var small [8]uint32
	ids, err := r.distinct(small[:0], key, n)
	for _, id := range ids {
		dst = append(dst, r.names[id])
	}
	return dst, err
}

// AppendIndexN is AppendN giving the nodes' indexes in Nodes instead of their
// names.
func (r *Ring) AppendIndexN(dst []int, key []byte, n int) ([]int, error) {
	var small [8]uint32
	ids, err := r.distinct(small[:0], key, n)
	for _, id := range ids {
		dst = append(dst, int(r.rank[id]))
	}
	return dst, err
}

// distinct appends to ids, whose capacity it uses before allocating, the ids
// of the first n distinct owners clockwise from key.
func (r *Ring) distinct(ids []uint32, key []byte, n int) ([]uint32, error) {
	if len(r.pts) == 0 {
		return ids, ErrEmpty
	}
	n = min(n, r.live)
	if n <= 0 {
		return ids, nil
	}
	if n > cap(ids) {
		ids = make([]uint32, 0, n)
	}
	i := r.search(r.Hash(key))
	pts := r.pts[:len(r.pts)-1]
	if i == len(pts) {
		i = 0 // past the last point: the first
	}
	ids = append(ids, uint32(pts[i]))
	start := i
next:
	for len(ids) < n {
		if i++; i == len(pts) {
			i = 0
		}
		if i == start {
			// Round the ring: a Scheme that gave a node fewer points than
			// NumPoints said (none) left fewer owners than live counts.
			break
		}
		o := uint32(pts[i])
		for _, s := range ids {
			if s == o {
				continue next
			}
		}
		ids = append(ids, o)
	}
	return ids, nil
}

// AppendNString is AppendN for a string key; it does not copy the key.
func (r *Ring) AppendNString(dst []string, key string, n int) ([]string, error) {
	return r.AppendN(dst, unsafe.Slice(unsafe.StringData(key), len(key)), n)
}

// Hash returns key's position on the ring, as the ring's scheme hashes it.
func (r *Ring) Hash(key []byte) uint32 {
	if r.hash == nil || r.std {
		return uint32(xxhash.Sum64(key))
	}
	return r.hash(key)
}

// Scheme returns the ring's scheme.
func (r *Ring) Scheme() Scheme {
	if r.scheme == nil {
		return Standard{}
	}
	return r.scheme
}

// Len returns the number of nodes.
func (r *Ring) Len() int { return len(r.nodes) }

// Nodes returns the nodes sorted by (Order, Name), the order Shares and Point use.
func (r *Ring) Nodes() []Node { return slices.Clone(r.nodes) }

// NumPoints returns the number of points on the ring.
func (r *Ring) NumPoints() int { return max(len(r.pts)-1, 0) }

// Point returns the position of point i (0 ≤ i < NumPoints, ascending) and the
// index in Nodes of the node that owns it.
func (r *Ring) Point(i int) (pos uint32, node int) {
	return uint32(r.pts[i] >> 32), int(r.rank[uint32(r.pts[i])])
}

// Shares returns, for each node in Nodes order, how many of the 2^32 positions it
// owns, computed from arc lengths: point i owns the positions after point i-1 up to
// and including its own. The shares sum to exactly 2^32 on a non-empty ring.
func (r *Ring) Shares() []uint64 {
	shares := make([]uint64, len(r.nodes))
	n := len(r.pts) - 1
	if n <= 0 {
		return shares
	}
	byID := make([]uint64, len(r.names))
	prev := r.pts[n-1]>>32 - 1<<32 // the last point, one turn back
	for _, p := range r.pts[:n] {
		byID[uint32(p)] += p>>32 - prev
		prev = p >> 32
	}
	for k, id := range r.ids {
		shares[k] = byID[id]
	}
	return shares
}

// Weight returns the weight of the named node and whether it is in the ring.
func (r *Ring) Weight(name string) (int, bool) {
	if i := r.find(name); i >= 0 {
		return r.nodes[i].Weight, true
	}
	return 0, false
}

// find returns the index of the named node, or -1.
func (r *Ring) find(name string) int {
	for i := range r.nodes {
		if r.nodes[i].Name == name {
			return i
		}
	}
	return -1
}
