// Package multiprobe implements multi-probe consistent hashing: Ben Appleton
// and Michael O'Reilly, "Multi-Probe Consistent Hashing" (2015,
// arXiv:1505.00062).
//
// Each node has one point on a ring of 2^64 positions (one per unit of
// weight, or Points per unit). A key is hashed k times, k being the number of
// probes; each probe finds the first point at or after it, and the key
// belongs to the point nearest to any of its probes. With k = 21, the paper's
// choice and the default here, the most loaded node gets about 1.05 times the
// mean load, as a ring with hundreds of points per node would give, while the
// ring keeps only one point per node: little memory and cheap membership
// changes. A lookup costs k hashes and k searches.
//
// The balance is lopsided. Multi-probe hashing flattens the top of the load
// distribution but not the bottom: a node whose point follows a short arc is
// reached by few probes, however many there are, and the least loaded nodes
// can starve. TestBalance measures, at n = 100 with 21 probes, a most loaded
// node at 1.06× the mean and a least loaded one at 0.06×. Callers that must
// keep every node busy, not only none overloaded, should prefer maglev or
// balanced tokens, or give each node a few points (Config.Points).
//
// Adding or removing a node moves only the keys whose nearest probe now
// lands on or used to land on its point: the minimum, in expectation.
package multiprobe

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/internal/splitmix"
)

// DefaultProbes is the number of probes when Config.Probes is zero, the
// paper's choice for a peak-to-mean load ratio of 1.05.
const DefaultProbes = 21

// MaxProbes bounds Config.Probes: a lookup hashes its key once a probe, and
// past a few hundred probes the load is as even as the points allow.
const MaxProbes = 4096

// Config configures a Ring. The zero value is ready to use.
type Config struct {
	// Probes is the number of probes per lookup, at most MaxProbes. If
	// zero, it defaults to DefaultProbes (21).
	Probes int
	// Points is the number of points per unit of weight. If zero, it defaults
	// to 1, as in the paper.
	Points int
	// KeyHash hashes a key to 64 bits, from which the probes are derived. If
	// nil, it defaults to XXH64 with seed 0.
	KeyHash func(key []byte) uint64
}

// Ring is an immutable multi-probe ring. It is safe for concurrent use.
type Ring struct {
	cfg    Config
	probes int
	nodes  []chash.Node // sorted by Name
	// pos holds the points in ascending order followed by a sentinel
	// 2^64-1; own holds each point's node, own[len(pos)-1] repeating own[0].
	pos []uint64
	own []uint32
	// index[s] is the first point at or after s<<shift.
	index []uint32
	shift uint8
}

// New builds the ring of nodes. It is an error, naming the node, for an empty
// or duplicate name or a weight below 1, and an error for a negative Probes or
// Points or Probes over MaxProbes. An empty list gives a Ring whose lookups return chash.ErrEmpty. The ring
// depends only on the nodes, not on their order; points that collide go to
// the node whose name sorts first, and Order is ignored.
func New(cfg Config, nodes []chash.Node) (*Ring, error) {
	r := &Ring{cfg: cfg, probes: cfg.Probes}
	if r.probes == 0 {
		r.probes = DefaultProbes
	}
	per := cfg.Points
	if per == 0 {
		per = 1
	}
	if r.probes < 1 || per < 1 {
		return nil, fmt.Errorf("multiprobe: probes %d and points %d, want at least 1", cfg.Probes, cfg.Points)
	}
	if r.probes > MaxProbes {
		return nil, fmt.Errorf("multiprobe: probes %d, want at most %d (each costs a lookup one hash)", cfg.Probes, MaxProbes)
	}
	if err := chash.CheckNodes(nodes); err != nil {
		return nil, fmt.Errorf("multiprobe: %w", err)
	}
	ns := slices.Clone(nodes)
	slices.SortFunc(ns, func(a, b chash.Node) int { return cmp.Compare(a.Name, b.Name) })
	total := 0
	for _, n := range ns {
		// An overflow would give the node no point, and AppendN would then
		// look for it forever.
		if c := chash.MulPoints(per, n.Weight); c > chash.MaxPoints-total {
			return nil, fmt.Errorf("multiprobe: node %q: weight %d gives more than %d points; lower the weights or the points", n.Name, n.Weight, chash.MaxPoints)
		} else {
			total += c
		}
	}
	type point struct {
		pos uint64
		own uint32
	}
	var pts []point
	for i, n := range ns {
		seed := xxhash.Sum64String(n.Name)
		for j := range n.Weight * per {
			pts = append(pts, point{splitmix.Mix64(seed + uint64(j)*golden), uint32(i)})
		}
	}
	r.nodes = ns
	if len(pts) == 0 {
		return r, nil
	}
	slices.SortFunc(pts, func(a, b point) int {
		if c := cmp.Compare(a.pos, b.pos); c != 0 {
			return c
		}
		return cmp.Compare(a.own, b.own)
	})
	r.pos = make([]uint64, len(pts)+1)
	r.own = make([]uint32, len(pts)+1)
	for i, p := range pts {
		r.pos[i], r.own[i] = p.pos, p.own
	}
	r.pos[len(pts)] = ^uint64(0)
	r.own[len(pts)] = r.own[0]
	b := min(max(bits.Len(uint(len(pts))), 1), 20)
	r.shift = uint8(64 - b)
	r.index = make([]uint32, 1<<b)
	i := 0
	for s := range r.index {
		start := uint64(s) << r.shift
		for r.pos[i] < start {
			i++
		}
		r.index[s] = uint32(i)
	}
	return r, nil
}

const golden = 0x9E3779B97F4A7C15

// search returns the index of the first point at or after p; the sentinel's
// index when p is past the last point.
func (r *Ring) search(p uint64) int {
	i := r.index[p>>r.shift]
	for r.pos[i] < p {
		i++
	}
	return int(i)
}

// best returns the index of the point nearest after any of key's probes.
// Probe j of a key hashed to h is SplitMix64's output for h + (j+1)·golden,
// so probes cost a few multiplications each. Distances wrap past the top, and
// ties go to the lower probe number.
func (r *Ring) best(key []byte) int {
	var h uint64
	if r.cfg.KeyHash != nil {
		h = r.cfg.KeyHash(key)
	} else {
		h = xxhash.Sum64(key)
	}
	last := len(r.pos) - 1
	bestI, bestD := 0, ^uint64(0)
	for range r.probes {
		h += golden
		p := splitmix.Mix64(h)
		i := r.search(p)
		if i == last {
			i = 0 // wrapped: the first point, at distance 2^64 - p + pos[0]
		}
		if d := r.pos[i] - p; d < bestD {
			bestI, bestD = i, d
		}
	}
	return bestI
}

// Lookup returns the name of the node that owns key. It allocates nothing.
func (r *Ring) Lookup(key []byte) (string, error) {
	if len(r.pos) == 0 {
		return "", chash.ErrEmpty
	}
	return r.nodes[r.own[r.best(key)]].Name, nil
}

// LookupString is Lookup for a string key; it does not copy the key.
func (r *Ring) LookupString(key string) (string, error) {
	return r.Lookup(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// AppendN appends to dst the names of up to n distinct nodes for key: the
// owner, then the owners of the points that follow the owner's point
// clockwise, skipping repeats, as a ring's replica set does. Removing a node
// other than the owner changes the list only by dropping that node and
// adding the next one. It allocates only if dst lacks capacity or n > 8.
func (r *Ring) AppendN(dst []string, key []byte, n int) ([]string, error) {
	if len(r.pos) == 0 {
		return dst, chash.ErrEmpty
	}
	n = min(n, len(r.nodes))
	if n <= 0 {
		return dst, nil
	}
	var small [8]uint32
	seen := small[:0]
	if n > len(small) {
		seen = make([]uint32, 0, n)
	}
	last := len(r.pos) - 1
	for i := r.best(key); len(seen) < n; {
		if o := r.own[i]; !slices.Contains(seen, o) {
			seen = append(seen, o)
			dst = append(dst, r.nodes[o].Name)
		}
		if i++; i == last {
			i = 0
		}
	}
	return dst, nil
}

// AppendNString is AppendN for a string key; it does not copy the key.
func (r *Ring) AppendNString(dst []string, key string, n int) ([]string, error) {
	return r.AppendN(dst, unsafe.Slice(unsafe.StringData(key), len(key)), n)
}

// Nodes returns the nodes sorted by name.
func (r *Ring) Nodes() []chash.Node { return slices.Clone(r.nodes) }

// Len returns the number of nodes.
func (r *Ring) Len() int { return len(r.nodes) }
