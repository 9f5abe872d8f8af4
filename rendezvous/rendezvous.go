// Package rendezvous implements weighted rendezvous hashing, also called
// highest random weight (HRW) hashing: every node scores the key, and the key
// belongs to the node with the highest score.
//
// Rendezvous hashing is due to David Thaler and Chinya Ravishankar, "Using
// Name-Based Mappings to Increase Hit Rates" (IEEE/ACM Transactions on
// Networking, 1998). Weights use the logarithmic method of Christian
// Schindelhauer and Gunnar Schomaker, "Weighted Distributed Hash Tables" (SPAA
// 2005), in the form Jason Resch's "New Hashing Algorithms for Data Storage"
// (SNIA SDC 2015) made known: node i scores −wᵢ / ln(Uᵢ), where Uᵢ ∈ (0, 1] is
// a hash of the key and the node, so that node i wins with probability exactly
// wᵢ / Σw. Changing one node's weight moves keys only to or from that node.
// With equal weights the scores order the nodes as Uᵢ does, and Lookup skips
// the logarithm; with weights it takes one only for the few nodes that could
// still win.
//
// Adding or removing a node moves only the keys it wins or won, the minimum, and
// the next-highest scores give replica sets for free (AppendN). The price is a
// lookup that scores every node: O(n) time, some microseconds at n = 1000, where
// ring and table methods take nanoseconds.
//
// Weighted scores use math.Log and math.Exp, whose results may differ in the
// last bit between architectures that implement them in assembly; two nodes
// whose scores for a key tie to within that bit could then be ordered
// differently on two platforms. The chance per key is about 2^-50.
package rendezvous

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/internal/splitmix"
)

// Config configures a Set. The zero value is ready to use.
type Config struct {
	// KeyHash hashes a key to 64 bits, which are then mixed with each node's
	// seed. If nil, it defaults to XXH64 with seed 0.
	KeyHash func(key []byte) uint64
}

// Set is an immutable set of nodes that routes keys by rendezvous hashing. It
// is safe for concurrent use.
type Set struct {
	cfg      Config
	nodes    []chash.Node // sorted by Name
	seeds    []uint64     // XXH64 of each node's name
	weights  []float64
	weighted bool // some weight differs from the others

	// When there are few distinct weights, class[i] is the index in classW of
	// node i's weight, and Lookup skips the logarithm for nodes that cannot win;
	// otherwise class is nil.
	class  []uint8
	classW []float64
}

// maxClasses is the most distinct weights for which Lookup prefilters.
const maxClasses = 16

// New returns a Set of nodes. It is an error, naming the node, for an empty or
// duplicate name or a weight below 1. An empty list gives a Set whose lookups
// return chash.ErrEmpty. Routing depends only on the nodes, not on their order;
// Order is ignored (scores do not tie in practice).
func New(cfg Config, nodes []chash.Node) (*Set, error) {
	if err := chash.CheckNodes(nodes); err != nil {
		return nil, fmt.Errorf("rendezvous: %w", err)
	}
	ns := slices.Clone(nodes)
	slices.SortFunc(ns, func(a, b chash.Node) int { return cmp.Compare(a.Name, b.Name) })
	s := &Set{cfg: cfg, nodes: ns, seeds: make([]uint64, len(ns)), weights: make([]float64, len(ns))}
	for i, n := range ns {
		s.seeds[i] = xxhash.Sum64String(n.Name)
		s.weights[i] = float64(n.Weight)
		if n.Weight != ns[0].Weight {
			s.weighted = true
		}
	}
	if s.weighted {
		s.class = make([]uint8, len(ns))
		for i, w := range s.weights {
			c := slices.Index(s.classW, w)
			if c < 0 {
				if len(s.classW) == maxClasses {
					s.class, s.classW = nil, nil
					break
				}
				c = len(s.classW)
				s.classW = append(s.classW, w)
			}
			s.class[i] = uint8(c)
		}
	}
	return s, nil
}

func (s *Set) hash(key []byte) uint64 {
	if s.cfg.KeyHash != nil {
		return s.cfg.KeyHash(key)
	}
	return xxhash.Sum64(key)
}

// draw returns node i's 53-bit uniform draw for the key hash h, in [1, 2^53].
func (s *Set) draw(h uint64, i int) uint64 {
	return splitmix.Mix64(h^s.seeds[i])>>11 + 1
}

// score returns node i's score for the key hash h: −w/ln(U) with U ∈ (0, 1],
// or, when all weights are equal, U's numerator, which orders the nodes the
// same way for less work.
func (s *Set) score(h uint64, i int) float64 {
	u := s.draw(h, i)
	if !s.weighted {
		return float64(u)
	}
	// ln(U) < 0 for U < 1; U = 1 (u = 2^53) gives −0 and a score of +Inf.
	return -s.weights[i] / math.Log(float64(u)*0x1p-53)
}

// Lookup returns the name of the node with the highest score for key. It
// allocates nothing.
func (s *Set) Lookup(key []byte) (string, error) {
	if len(s.nodes) == 0 {
		return "", chash.ErrEmpty
	}
	h := s.hash(key)
	if s.class != nil {
		return s.nodes[s.lookupClasses(h)].Name, nil
	}
	best, bestScore := 0, s.score(h, 0)
	for i := 1; i < len(s.nodes); i++ {
		if sc := s.score(h, i); sc > bestScore {
			best, bestScore = i, sc
		}
	}
	return s.nodes[best].Name, nil
}

// lookupClasses returns the index of the winning node for key hash h, as the
// plain loop in Lookup would, taking a logarithm only for nodes that may win:
// node i beats the best score S only if its draw U exceeds exp(−wᵢ/S), a bound
// that changes only when S does, about ln n times per lookup. The bound is
// loosened by a relative 2^-30 so that rounding can never skip a winner.
func (s *Set) lookupClasses(h uint64) int {
	var thr [maxClasses]uint64
	best, bestScore := 0, s.score(h, 0)
	s.thresholds(&thr, bestScore)
	for i := 1; i < len(s.nodes); i++ {
		if s.draw(h, i) < thr[s.class[i]] {
			continue
		}
		if sc := s.score(h, i); sc > bestScore {
			best, bestScore = i, sc
			s.thresholds(&thr, bestScore)
		}
	}
	return best
}

// thresholds sets thr[c] to a draw below which a node of weight classW[c]
// scores less than best.
func (s *Set) thresholds(thr *[maxClasses]uint64, best float64) {
	for c, w := range s.classW {
		thr[c] = uint64(math.Exp(-w/best) * (1 - 0x1p-30) * 0x1p53)
	}
}

// LookupString is Lookup for a string key; it does not copy the key.
func (s *Set) LookupString(key string) (string, error) {
	return s.Lookup(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// AppendN appends to dst the names of the n nodes with the highest scores for
// key, highest first: the owner, then the nodes a replica set adds. The first
// is what Lookup returns; the set for n is a prefix of the set for n+1, and
// removing a node from the Set only drops it from the lists. It returns all the
// nodes if there are fewer than n, and allocates only if dst lacks capacity or
// n > 16.
func (s *Set) AppendN(dst []string, key []byte, n int) ([]string, error) {
	if len(s.nodes) == 0 {
		return dst, chash.ErrEmpty
	}
	n = min(n, len(s.nodes))
	if n <= 0 {
		return dst, nil
	}
	type entry struct {
		score float64
		i     int
	}
	var small [16]entry
	top := small[:0]
	if n > len(small) {
		top = make([]entry, 0, n)
	}
	h := s.hash(key)
	for i := range s.nodes {
		sc := s.score(h, i)
		if len(top) == n && sc <= top[n-1].score {
			continue
		}
		// Insert in descending order of score; ties keep name order.
		j := len(top)
		if j < n {
			top = top[:j+1]
		} else {
			j = n - 1
		}
		for j > 0 && top[j-1].score < sc {
			top[j] = top[j-1]
			j--
		}
		top[j] = entry{sc, i}
	}
	for _, e := range top {
		dst = append(dst, s.nodes[e.i].Name)
	}
	return dst, nil
}

// AppendNString is AppendN for a string key; it does not copy the key.
func (s *Set) AppendNString(dst []string, key string, n int) ([]string, error) {
	return s.AppendN(dst, unsafe.Slice(unsafe.StringData(key), len(key)), n)
}

// Nodes returns the nodes sorted by name.
func (s *Set) Nodes() []chash.Node { return slices.Clone(s.nodes) }

// Len returns the number of nodes.
func (s *Set) Len() int { return len(s.nodes) }
