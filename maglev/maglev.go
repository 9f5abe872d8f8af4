// Package maglev implements Maglev hashing, the consistent hash of Google's
// Maglev load balancer: Daniel E. Eisenbud et al., "Maglev: A Fast and Reliable
// Software Network Load Balancer", NSDI 2016, section 3.4.
//
// Each node walks its own permutation of a lookup table of prime size M, and the
// nodes take turns claiming the next free entry of their permutations until the
// table is full. A lookup hashes the key to an entry and reads it: one hash, one
// multiplication and one memory access, whatever the number of nodes. Every node
// ends up with ⌊M/n⌋ or ⌈M/n⌉ entries (in proportion to its weight, when
// weighted), so the balance is near perfect.
//
// The table holds M entries of 2 bytes (4 bytes past 65536 nodes) and takes
// O(M log M) steps to build. M should be much larger than the number of nodes;
// the paper uses M > 100·n, which the default 65537 meets up to 655 nodes.
// Weights follow the paper's suggestion: in each round a node of weight w takes
// w turns.
//
// # Movement
//
// Maglev trades minimal disruption for balance: when a node joins or leaves,
// the turns of the remaining nodes shift and some entries change hands between
// nodes that did not change. Measured on this implementation (TestMovement
// prints the figures; nodes named node0, node1, ..., five joins or leaves
// each), the entries that change hands, as a multiple of the entries the
// joining or leaving node owns, which is the minimum:
//
//	M        n     leave  join
//	65537    10    1.02   1.03
//	65537    100   1.55   1.55
//	65537    1000  7.00   6.65
//	655373   1000  4.34   4.22
//
// So at n = 1000 with the default size a change moves about 7 times the keys
// it must; a larger M helps slowly. A ring or
// rendezvous hashing moves exactly the fair share.
package maglev

import (
	"cmp"
	"fmt"
	"math/big"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/internal/splitmix"
)

// DefaultSize is the table size when Config.Size is zero, the smaller of the
// two sizes the paper evaluates.
const DefaultSize = 65537

// maxSize caps the table at 2^28 entries (1 GiB at 4 bytes).
const maxSize = 1 << 28

// Config configures a Table. The zero value is ready to use.
type Config struct {
	// Size is the number of table entries, a prime at least the total weight
	// of the nodes. If zero, it defaults to DefaultSize (65537).
	Size int
	// KeyHash hashes a key to 64 bits, which are mapped onto the table by
	// multiplication. If nil, it defaults to XXH64 with seed 0.
	KeyHash func(key []byte) uint64
}

// Table is an immutable Maglev lookup table over named nodes. It is safe for
// concurrent use.
type Table struct {
	cfg   Config
	nodes []chash.Node // sorted by Name
	names []string     // the nodes' names, for lookups
	m     uint64
	t16   []uint16 // entries, when there are at most 65536 nodes
	t32   []uint32 // otherwise
}

// New builds the table of nodes. It is an error, naming the node, for an empty
// or duplicate name or a weight below 1, and an error if Size is not a prime or
// is smaller than the total weight. An empty list gives a Table whose lookups
// return chash.ErrEmpty. The table depends only on the nodes, not on their order;
// Order is ignored.
func New(cfg Config, nodes []chash.Node) (*Table, error) {
	m := cfg.Size
	if m == 0 {
		m = DefaultSize
	}
	if m < 2 || m > maxSize || !big.NewInt(int64(m)).ProbablyPrime(0) {
		return nil, fmt.Errorf("maglev: table size %d is not a prime in [2, %d]", m, maxSize)
	}
	if err := chash.CheckNodes(nodes); err != nil {
		return nil, fmt.Errorf("maglev: %w", err)
	}
	ns := slices.Clone(nodes)
	total := 0
	for _, n := range ns {
		if n.Weight > m-total { // also before the sum could overflow
			return nil, fmt.Errorf("maglev: table size %d is smaller than the total weight (%d before node %q of weight %d)", m, total, n.Name, n.Weight)
		}
		total += n.Weight
	}
	slices.SortFunc(ns, func(a, b chash.Node) int { return cmp.Compare(a.Name, b.Name) })
	t := &Table{cfg: cfg, nodes: ns, names: make([]string, len(ns)), m: uint64(m)}
	for i, n := range ns {
		t.names[i] = n.Name
	}
	if len(ns) > 0 {
		t.populate()
	}
	return t, nil
}

// populate fills the table as the paper's Populate does: nodes take turns, in
// name order, each claiming the next entry of its permutation not yet taken.
// Node i's permutation is offset + j·skip mod M, with offset and skip from
// XXH64 of its name; skip ∈ [1, M) is coprime with the prime M, so the
// permutation visits every entry.
func (t *Table) populate() {
	m := t.m
	n := len(t.nodes)
	next := make([]uint64, n) // the next entry of each node's permutation
	skip := make([]uint64, n)
	for i, node := range t.nodes {
		h := xxhash.Sum64String(node.Name)
		next[i] = h % m
		skip[i] = splitmix.Mix64(h)%(m-1) + 1
	}
	entry := make([]int32, m)
	for j := range entry {
		entry[j] = -1
	}
	filled := uint64(0)
	for filled < m {
		for i := range n {
			for range t.nodes[i].Weight {
				c := next[i]
				for entry[c] >= 0 {
					if c += skip[i]; c >= m {
						c -= m
					}
				}
				entry[c] = int32(i)
				if c += skip[i]; c >= m {
					c -= m
				}
				next[i] = c
				if filled++; filled == m {
					break
				}
			}
			if filled == m {
				break
			}
		}
	}
	if n <= 1<<16 {
		t.t16 = make([]uint16, m)
		for j, e := range entry {
			t.t16[j] = uint16(e)
		}
	} else {
		t.t32 = make([]uint32, m)
		for j, e := range entry {
			t.t32[j] = uint32(e)
		}
	}
}

// slot returns the table entry of key.
func (t *Table) slot(key []byte) uint64 {
	var h uint64
	if t.cfg.KeyHash != nil {
		h = t.cfg.KeyHash(key)
	} else {
		h = xxhash.Sum64(key)
	}
	j, _ := bits.Mul64(h, t.m) // ⌊h·M / 2^64⌋, uniform over [0, M)
	return j
}

// Lookup returns the name of the node that owns key. It allocates nothing.
func (t *Table) Lookup(key []byte) (string, error) {
	// slot's body, by hand: the hot path is one call (the hash) and two loads.
	var h uint64
	if t.cfg.KeyHash != nil {
		h = t.cfg.KeyHash(key)
	} else {
		h = xxhash.Sum64(key)
	}
	j, _ := bits.Mul64(h, t.m)
	if t16 := t.t16; j < uint64(len(t16)) {
		return t.names[t16[j]], nil
	}
	if t32 := t.t32; j < uint64(len(t32)) {
		return t.names[t32[j]], nil
	}
	return "", chash.ErrEmpty
}

// LookupString is Lookup for a string key; it does not copy the key.
func (t *Table) LookupString(key string) (string, error) {
	return t.Lookup(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// Size returns the number of table entries.
func (t *Table) Size() int { return int(t.m) }

// Entry returns the index in Nodes of the node that owns table entry j,
// 0 ≤ j < Size, or -1 if there are no nodes. Entries are equal shares of the
// key space, so counting them gives exact loads.
func (t *Table) Entry(j int) int {
	switch {
	case t.t16 != nil:
		return int(t.t16[j])
	case t.t32 != nil:
		return int(t.t32[j])
	}
	return -1
}

// Nodes returns the nodes sorted by name, the order Entry uses.
func (t *Table) Nodes() []chash.Node { return slices.Clone(t.nodes) }

// Len returns the number of nodes.
func (t *Table) Len() int { return len(t.nodes) }
