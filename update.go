package chash

import (
	"fmt"
	"slices"
)

// Add returns a new ring with the given nodes added. It is an error, naming the
// node, if one is already present or is invalid; r is never changed.
func (r *Ring) Add(nodes ...Node) (*Ring, error) {
	ns := make([]Node, 0, len(r.nodes)+len(nodes))
	ns = append(append(ns, r.nodes...), nodes...)
	if err := CheckNodes(ns); err != nil {
		return nil, err
	}
	slices.SortFunc(ns, compareNodes)
	return r.rebuild(ns), nil
}

// Remove returns a new ring without the named nodes. It is an error, naming the
// node, if one is not present; r is never changed.
func (r *Ring) Remove(names ...string) (*Ring, error) {
	gone := make(map[string]bool, len(names))
	for _, name := range names {
		if r.find(name) < 0 {
			return nil, fmt.Errorf("chash: remove %q: no such node", name)
		}
		gone[name] = true
	}
	ns := make([]Node, 0, len(r.nodes))
	for _, n := range r.nodes {
		if !gone[n.Name] {
			ns = append(ns, n)
		}
	}
	return r.rebuild(ns), nil
}

// Reweight returns a new ring in which each given node (matched by Name) has the
// given Weight; Order is kept. It is an error if a node is not present or a weight
// is below 1; r is never changed.
func (r *Ring) Reweight(nodes ...Node) (*Ring, error) {
	ns := slices.Clone(r.nodes)
	for _, n := range nodes {
		if err := checkNode(n); err != nil {
			return nil, err
		}
		i := r.find(n.Name)
		if i < 0 {
			return nil, fmt.Errorf("chash: reweight %q: no such node", n.Name)
		}
		ns[i].Weight = n.Weight
	}
	return r.rebuild(ns), nil
}

// rebuild returns the ring of ns (valid, sorted by compareNodes) by merging: points
// of unchanged nodes are copied, never re-hashed; a node whose point count grows
// generates only its new points, one that shrinks regenerates only the points it
// drops, and a removed node's points are dropped by owner. The result is identical
// to build(r.scheme, ns).
func (r *Ring) rebuild(ns []Node) *Ring {
	s := r.Scheme()
	counts := pointCounts(s, ns)

	// remap[o] is the new index of old node o, or -1 if it was removed.
	remap := make([]int32, len(r.nodes))
	for o := range remap {
		remap[o] = -1
	}
	oldCount := make([]int, len(ns))
	for i, j := 0, 0; i < len(ns); i++ {
		for j < len(r.nodes) && compareNodes(r.nodes[j], ns[i]) < 0 {
			j++
		}
		if j < len(r.nodes) && r.nodes[j].Name == ns[i].Name {
			remap[j] = int32(i)
			oldCount[i] = r.counts[j]
		}
	}

	var add, del []uint64 // position<<32 | new owner
	var buf []uint32
	kept := 0
	for i, n := range ns {
		c0, c1 := oldCount[i], counts[i]
		switch {
		case c1 > c0:
			buf = s.AppendPoints(buf[:0], n.Name, c0, c1)
			for _, p := range buf {
				add = append(add, uint64(p)<<32|uint64(i))
			}
		case c1 < c0:
			buf = s.AppendPoints(buf[:0], n.Name, c1, c0)
			for _, p := range buf {
				del = append(del, uint64(p)<<32|uint64(i))
			}
		}
		kept += min(c0, c1)
	}
	// When most points change, building afresh is as cheap and simpler.
	if len(add)+len(del) > kept {
		return build(s, ns)
	}
	sortPoints(add)
	sortPoints(del)

	r2 := newRing(s, ns, counts)
	pts := make([]uint64, 0, kept+len(add)+1)
	for _, p := range r.pts[:max(len(r.pts)-1, 0)] {
		o := remap[uint32(p)]
		if o < 0 {
			continue
		}
		key := p&^0xFFFFFFFF | uint64(o)
		for len(del) > 0 && del[0] < key {
			del = del[1:] // cannot happen for a deterministic scheme; skip stale entries
		}
		if len(del) > 0 && del[0] == key {
			del = del[1:]
			continue
		}
		for len(add) > 0 && add[0] < key {
			pts = append(pts, add[0])
			add = add[1:]
		}
		pts = append(pts, key)
	}
	pts = append(pts, add...)
	r2.pts = append(pts, 0) // room for the sentinel
	r2.finish()
	return r2
}
