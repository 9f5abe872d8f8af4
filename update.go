package chash

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Add returns a new ring with the given nodes added. It is an error, naming the
// node, if one is already present or is invalid, or if the ring would have more
// than MaxPoints points; r is never changed.
func (r *Ring) Add(nodes ...Node) (*Ring, error) {
	ns := make([]Node, 0, len(r.nodes)+len(nodes))
	ns = append(append(ns, r.nodes...), nodes...)
	if err := CheckNodes(ns); err != nil {
		return nil, err
	}
	slices.SortFunc(ns, compareNodes)
	return r.rebuild(ns)
}

// Remove returns a new ring without the named nodes. It is an error, naming the
// node, if one is not present or is named twice (or if the scheme gives the
// rest more than MaxPoints points); r is never changed.
func (r *Ring) Remove(names ...string) (*Ring, error) {
	gone := make(map[string]bool, len(names))
	for _, name := range names {
		if r.find(name) < 0 {
			return nil, fmt.Errorf("chash: remove %q: no such node", name)
		}
		if gone[name] {
			return nil, fmt.Errorf("chash: remove %q: node named twice", name)
		}
		gone[name] = true
	}
	ns := make([]Node, 0, len(r.nodes))
	for _, n := range r.nodes {
		if !gone[n.Name] {
			ns = append(ns, n)
		}
	}
	return r.rebuild(ns)
}

// Reweight returns a new ring in which each given node (matched by Name) has the
// given Weight; Order is kept. It is an error if a node is not present or is
// given twice, a weight is below 1, or the ring would have more than MaxPoints
// points; r is never changed.
func (r *Ring) Reweight(nodes ...Node) (*Ring, error) {
	ns := slices.Clone(r.nodes)
	seen := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		if err := checkNode(n); err != nil {
			return nil, err
		}
		i := r.find(n.Name)
		if i < 0 {
			return nil, fmt.Errorf("chash: reweight %q: no such node", n.Name)
		}
		if seen[n.Name] {
			return nil, fmt.Errorf("chash: reweight %q: node given twice", n.Name)
		}
		seen[n.Name] = true
		ns[i].Weight = n.Weight
	}
	return r.rebuild(ns)
}

// rebuild returns the ring of ns (valid, sorted by compareNodes) by merging: points
// of unchanged nodes are copied, never re-hashed; a node whose point count grows
// generates only its new points, one that shrinks or leaves generates only the
// points it drops. Nodes keep their ids, so the points and index entries of
// unchanged nodes are copied as they are and only the index slots around
// changed points are computed. Routing is identical to build(r.scheme, ns, counts).
// It fails if the scheme gives ns more than MaxPoints points (pointCounts).
func (r *Ring) rebuild(ns []Node) (*Ring, error) {
	s := r.Scheme()
	counts, err := pointCounts(s, ns)
	if err != nil {
		return nil, err
	}

	if r.NumPoints() == 0 || len(r.names) > 2*len(ns)+64 {
		// Nothing to merge into, or ids left unused by many removals, which a
		// fresh build numbers afresh.
		return build(s, ns, counts), nil
	}
	// was[k] is the old rank of the node of new rank k, or -1 if it is new.
	was := make([]int, len(ns))
	kept := 0 // points kept
	for k, j := 0, 0; k < len(ns); k++ {
		for j < len(r.nodes) && compareNodes(r.nodes[j], ns[k]) < 0 {
			j++
		}
		was[k] = -1
		if j < len(r.nodes) && r.nodes[j].Name == ns[k].Name {
			was[k] = j
			kept += min(r.counts[j], counts[k])
		}
	}
	// Kept nodes keep their ids; new nodes take ids unused in r, then new ones.
	// Ids freed by this update are not reused by it, so that an old point's id
	// always names its old node.
	r2 := &Ring{scheme: s, hash: s.Hash, std: r.std, nodes: ns, counts: counts}
	r2.ids = make([]uint32, len(ns))
	r2.names = make([]string, len(r.names), max(len(r.names), len(ns)))
	r2.rank = make([]int32, len(r.names), cap(r2.names))
	for id := range r2.rank {
		r2.rank[id] = -1
	}
	free := 0 // the next id to try
	for k, n := range ns {
		var id int
		if was[k] >= 0 {
			id = int(r.ids[was[k]])
		} else {
			for free < len(r.names) && r.names[free] != "" {
				free++
			}
			if id = free; free < len(r.names) {
				free++
			} else {
				id = len(r2.names)
				r2.names, r2.rank = append(r2.names, ""), append(r2.rank, 0)
			}
		}
		r2.ids[k], r2.names[id], r2.rank[id] = uint32(id), n.Name, int32(k)
	}

	// add holds the new points and del the dropped ones, as position<<32 | id.
	var add, del []uint64
	var buf []uint32
	for k, n := range ns {
		c0, c1 := 0, counts[k]
		if was[k] >= 0 {
			c0 = r.counts[was[k]]
		}
		id := uint64(r2.ids[k])
		switch {
		case c1 > c0:
			buf = s.AppendPoints(buf[:0], n.Name, c0, c1)
			for _, p := range buf {
				add = append(add, uint64(p)<<32|id)
			}
		case c1 < c0:
			buf = s.AppendPoints(buf[:0], n.Name, c1, c0)
			for _, p := range buf {
				del = append(del, uint64(p)<<32|id)
			}
		}
	}
	for j, n := range r.nodes {
		if r2.names[r.ids[j]] != n.Name && r.counts[j] > 0 { // removed
			buf = s.AppendPoints(buf[:0], n.Name, 0, r.counts[j])
			for _, p := range buf {
				del = append(del, uint64(p)<<32|uint64(r.ids[j]))
			}
		}
	}
	// When most points change, building afresh is as cheap and simpler.
	if len(add)+len(del) > kept {
		return build(s, ns, counts), nil
	}
	sortPoints(add)
	r2.rankTies(add)
	sortPoints(del)
	drop, ok := r.locate(del)
	if !ok {
		return build(s, ns, counts), nil // the scheme did not give the same points twice
	}

	n0 := r.NumPoints()
	pts := make([]uint64, n0-len(drop)+len(add)+1) // and the sentinel
	k, j := 0, 0
	for a := add; len(a) > 0 || len(drop) > 0; {
		// Stop at the next dropped point or at the place of the next new one,
		// whichever comes first; a new point goes before a dropped one there.
		next, insert := n0, false
		if len(a) > 0 {
			next, insert = r.place(a[0], r2.rank), true
		}
		if len(drop) > 0 && drop[0] < next {
			next, insert = drop[0], false
		}
		k += copy(pts[k:], r.pts[j:next])
		if j = next; insert {
			pts[k] = a[0]
			k, a = k+1, a[1:]
		} else {
			j, drop = j+1, drop[1:]
		}
	}
	copy(pts[k:], r.pts[j:n0])
	r2.pts = pts
	r2.finishFrom(r, add, del)
	return r2, nil
}

// rankTies puts points sorted by position<<32 | id that share a position in
// rank order.
func (r *Ring) rankTies(pts []uint64) {
	for i := 1; i < len(pts); i++ {
		if pts[i]>>32 != pts[i-1]>>32 {
			continue
		}
		j := i + 1
		for j < len(pts) && pts[j]>>32 == pts[i]>>32 {
			j++
		}
		slices.SortStableFunc(pts[i-1:j], func(a, b uint64) int {
			return cmp.Compare(r.rank[uint32(a)], r.rank[uint32(b)])
		})
		i = j
	}
}

// locate returns the indexes in r.pts of the points in del (sorted), ascending,
// and false if one is missing.
func (r *Ring) locate(del []uint64) ([]int, bool) {
	pts := r.pts[:r.NumPoints()]
	drop := make([]int, len(del))
	for k, p := range del {
		i, _ := slices.BinarySearch(pts, p&^math.MaxUint32)
		if k > 0 && p == del[k-1] {
			i = drop[k-1] + 1 // a node with two points on one position
		}
		// Points on one position are in rank order, not id order.
		for i < len(pts) && pts[i] != p && pts[i]>>32 == p>>32 {
			i++
		}
		if i >= len(pts) || pts[i] != p {
			return nil, false
		}
		drop[k] = i
	}
	slices.Sort(drop)
	return drop, true
}

// place returns the index in r.pts before which the new point a goes: the first
// point at a's position or after it whose owner ranks after a's in the new ring
// (rank, by id). Points of removed nodes are skipped.
func (r *Ring) place(a uint64, rank []int32) int {
	pts := r.pts[:r.NumPoints()]
	i, _ := slices.BinarySearch(pts, a&^math.MaxUint32)
	for ; i < len(pts) && pts[i]>>32 == a>>32; i++ {
		if o := rank[uint32(pts[i])]; o > rank[uint32(a)] {
			break
		}
	}
	return i
}

// finishFrom is finish for a ring merged from old by adding the points add and
// dropping del. When the index keeps its shape, each entry is old's with the
// point number moved by the points added and dropped before its slot; only
// the slots whose points, or whose next point, changed are computed afresh.
func (r *Ring) finishFrom(old *Ring, add, del []uint64) {
	if !r.prepare() {
		return
	}
	if len(old.index) == 0 || r.shift != old.shift || !r.packed || !old.packed || r.pointShift != old.pointShift {
		r.index = make([]uint32, 1<<(32-r.shift))
		r.fillIndex()
		return
	}
	// A copy that the runtime need not zero first.
	idx := append([]uint32(nil), old.index...)
	r.index = idx
	s, delta := 0, uint32(0)
	for a, d := add, del; len(a) > 0 || len(d) > 0; {
		var pos uint64
		var step uint32
		if len(d) == 0 || len(a) > 0 && a[0] < d[0] {
			pos, step, a = a[0]>>32, 1, a[1:]
		} else {
			pos, step, d = d[0]>>32, math.MaxUint32, d[1:] // minus one
		}
		// Slots from s to pos's come after every earlier change and not after
		// this one.
		if end := int(pos>>r.shift) + 1; end > s {
			addTo(idx[s:end], delta<<r.pointShift)
			s = end
		}
		delta += step
	}
	addTo(idx[s:], delta<<r.pointShift)
	for _, p := range add {
		r.refill(uint32(p >> 32))
	}
	for _, p := range del {
		r.refill(uint32(p >> 32))
	}
}

// addTo adds d to every entry: it moves the point numbers of packed entries,
// direct or not, and leaves their owners alone.
func addTo(idx []uint32, d uint32) {
	if d == 0 {
		return
	}
	for i := range idx {
		idx[i] += d
	}
}

// refill computes afresh the entries of the slots from the one holding the last
// point before pos to the one holding pos: those whose points or next point a
// change at pos may have changed. If no point precedes pos, the slots after the
// last point, whose next point is the first, are computed too.
func (r *Ring) refill(pos uint32) {
	n := len(r.pts) - 1
	i, _ := slices.BinarySearch(r.pts[:n], uint64(pos)<<32)
	if i == 0 {
		r.fillSlots(0, pos>>r.shift)
		r.fillSlots(uint32(r.pts[n-1]>>32)>>r.shift, uint32(len(r.index)-1))
		return
	}
	r.fillSlots(uint32(r.pts[i-1]>>32)>>r.shift, pos>>r.shift)
}

// fillSlots computes the entries of slots s0 to s1 from the points; the index
// must be packed.
func (r *Ring) fillSlots(s0, s1 uint32) {
	n := len(r.pts) - 1
	i, _ := slices.BinarySearch(r.pts[:n], uint64(s0)<<r.shift<<32)
	for s := uint64(s0); s <= uint64(s1); s++ {
		for start := s << r.shift << 32; i < n && r.pts[i] < start; {
			i++
		}
		if i < n && r.pts[i]>>32>>r.shift == s {
			r.index[s] = uint32(i) << r.pointShift
		} else {
			r.index[s] = uint32(i)<<r.pointShift | direct | uint32(r.pts[i])
		}
	}
}
