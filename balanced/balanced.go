// Package balanced builds consistent-hash rings whose tokens are allocated to
// even out ownership, instead of hashed at random.
//
// The idea is Cassandra's (CASSANDRA-7032, "Improve vnode allocation", and
// Branimir Lambov's allocator that shipped with Cassandra 3.0): a joining node
// looks at the ring it joins and places each of its tokens inside an arc of
// the node then most loaded, so that it takes its fair share from those who
// have the most. This package does the same for a ring without replication
// (Cassandra's replication factor 1):
//
//   - The first node gets its tokens evenly spaced around the ring, from a
//     position hashed from its name.
//   - Each later node of weight w takes exactly its fair share, 2^32·w/W of the
//     positions (W the total weight with it), as Points·w pieces: each piece is
//     cut from the start of the longest arc of the node then most loaded per
//     unit of weight, and is the share still to take divided by the pieces
//     still to place.
//
// Every load is computed exactly from arc lengths, and every choice breaks
// ties by name or position, so the ring is a function of the node list: every
// proxy and client that is given the same list computes the same tokens.
//
// With 16 tokens per node (Cassandra's recommended num_tokens with its
// allocator, and DefaultPoints here) the most loaded node carries at most
// 1.05 times the mean, and with 160 at most 1.01 times, for every ring of 1 to
// 1000 nodes built by New (TestBalance asserts this; random tokens need
// thousands per node for as much). A join moves exactly the joining node's
// fair share of keys, all of them to it.
//
// # Limits
//
// Tokens depend on the order of joins. The node list is read in order, each
// node joining the ring of those before it, so a node added later must be
// appended to the list (Add does this); inserting it elsewhere re-allocates
// the tokens of the nodes after it and moves many keys.
//
// Remove keeps every other node's tokens, so a departure moves only the
// departing node's keys, but they go to the nodes that follow its tokens and
// the balance loosens (about 1/Points of the mean for up to Points nodes). The
// result is not what New gives for the shortened list: two parties that must
// agree should both apply the same Add and Remove calls in the same order.
package balanced

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/hashfn"
)

// DefaultPoints is the number of tokens per unit of weight when Config.Points
// is zero.
const DefaultPoints = 16

// maxTokens caps the tokens of a ring, 2^24 of them taking some 200 MiB while
// they are allocated.
const maxTokens = 1 << 24

// Config configures a Ring. The zero value is ready to use.
type Config struct {
	// Points is the number of tokens per unit of weight. If zero, it defaults
	// to DefaultPoints (16).
	Points int
	// KeyHash hashes a key to its ring position. If nil, it defaults to
	// hashfn.XXH64, as in chash.Standard.
	KeyHash hashfn.Func
}

// Ring is an immutable ring with balanced tokens. It is safe for concurrent
// use.
type Ring struct {
	cfg    Config
	points int
	nodes  []chash.Node // in join order
	tokens map[string][]uint32
	ring   *chash.Ring
}

// New builds the ring of nodes, joining them in the order given. It is an
// error, naming the node, for an empty or duplicate name or a weight below 1,
// and an error for a negative Points or a ring of more than 2^24 tokens. An
// empty list gives a ring whose lookups return chash.ErrEmpty.
func New(cfg Config, nodes []chash.Node) (*Ring, error) {
	points := cfg.Points
	if points == 0 {
		points = DefaultPoints
	}
	if points < 0 {
		return nil, fmt.Errorf("balanced: points %d, want at least 1", cfg.Points)
	}
	r := &Ring{cfg: cfg, points: points, tokens: map[string][]uint32{}}
	return r.Add(nodes...)
}

// Add returns a ring with nodes joined, in order, after the existing ones:
// each takes its fair share of keys, from the most loaded nodes. When r was
// built by New and Add alone, the result is what New gives for the old list
// followed by nodes; after a Remove it is not (see the package comment). r is
// never changed.
func (r *Ring) Add(nodes ...chash.Node) (*Ring, error) {
	if r.points == 0 { // the zero Ring, which New had not set up
		z, err := New(r.cfg, nil)
		if err != nil {
			return nil, err
		}
		r = z
	}
	all := slices.Concat(r.nodes, nodes)
	if err := chash.CheckNodes(all); err != nil {
		return nil, fmt.Errorf("balanced: %w", err)
	}
	count := 0
	for _, n := range all {
		if count += chash.MulPoints(n.Weight, r.points); n.Weight > maxTokens || count > maxTokens || count < 0 {
			return nil, fmt.Errorf("balanced: more than %d tokens (weight × points, summed over the nodes) at node %q (weight %d, %d points each)", maxTokens, n.Name, n.Weight, r.points)
		}
	}
	a := r.allocator()
	for _, n := range nodes {
		a.join(a.addNode(n.Name, n.Weight), n.Weight*r.points)
	}
	return r.build(all, a.result())
}

// allocator returns an allocator holding r's nodes and tokens.
func (r *Ring) allocator() *allocator {
	a := &allocator{}
	type tok struct {
		pos uint32
		own int32
	}
	var ts []tok
	for _, n := range r.nodes {
		o := a.addNode(n.Name, n.Weight)
		for _, p := range r.tokens[n.Name] {
			ts = append(ts, tok{p, o})
		}
	}
	slices.SortFunc(ts, func(x, y tok) int { return int(int64(x.pos) - int64(y.pos)) })
	for i, t := range ts {
		prev := ts[(i+len(ts)-1)%len(ts)].pos
		a.addToken(t.own, t.pos, prev)
		a.load[t.own] += a.arc(int32(i))
	}
	for o := range r.nodes {
		a.push(int32(o))
	}
	return a
}

// result returns each node's tokens.
func (a *allocator) result() map[string][]uint32 {
	m := make(map[string][]uint32, len(a.names))
	for o, name := range a.names {
		ps := make([]uint32, len(a.tokens[o]))
		for j, t := range a.tokens[o] {
			ps[j] = a.pos[t]
		}
		slices.Sort(ps)
		m[name] = ps
	}
	return m
}

// build returns the ring of nodes (in join order) with the given tokens.
func (r *Ring) build(nodes []chash.Node, tokens map[string][]uint32) (*Ring, error) {
	ring, err := chash.New(scheme{points: r.points, tokens: tokens, hash: r.cfg.KeyHash}, nodes)
	if err != nil {
		return nil, fmt.Errorf("balanced: %w", err)
	}
	return &Ring{cfg: r.cfg, points: r.points, nodes: nodes, tokens: tokens, ring: ring}, nil
}

// Remove returns a ring without the named nodes; every other node keeps its
// tokens, so only the removed nodes' keys move. See the package comment for
// what this does to balance. It is an error if a node is not present or is
// named twice; r is never changed.
func (r *Ring) Remove(names ...string) (*Ring, error) {
	gone := make(map[string]bool, len(names))
	for _, name := range names {
		if _, ok := r.tokens[name]; !ok {
			return nil, fmt.Errorf("balanced: remove %q: no such node", name)
		}
		if gone[name] {
			return nil, fmt.Errorf("balanced: remove %q: node named twice", name)
		}
		gone[name] = true
	}
	nodes := slices.DeleteFunc(slices.Clone(r.nodes), func(n chash.Node) bool { return gone[n.Name] })
	tokens := make(map[string][]uint32, len(nodes))
	for _, n := range nodes {
		tokens[n.Name] = r.tokens[n.Name]
	}
	return r.build(nodes, tokens)
}

// Lookup returns the name of the node that owns key. It allocates nothing.
func (r *Ring) Lookup(key []byte) (string, error) {
	if r.ring == nil {
		return "", chash.ErrEmpty
	}
	return r.ring.Lookup(key)
}

// LookupString is Lookup for a string key; it does not copy the key.
func (r *Ring) LookupString(key string) (string, error) {
	return r.Lookup(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// AppendN appends to dst the names of the first n distinct nodes clockwise from
// key, as chash.Ring.AppendN does.
func (r *Ring) AppendN(dst []string, key []byte, n int) ([]string, error) {
	if r.ring == nil {
		return dst, chash.ErrEmpty
	}
	return r.ring.AppendN(dst, key, n)
}

// AppendNString is AppendN for a string key; it does not copy the key.
func (r *Ring) AppendNString(dst []string, key string, n int) ([]string, error) {
	return r.AppendN(dst, unsafe.Slice(unsafe.StringData(key), len(key)), n)
}

// Nodes returns the nodes in join order.
func (r *Ring) Nodes() []chash.Node { return slices.Clone(r.nodes) }

// Len returns the number of nodes.
func (r *Ring) Len() int { return len(r.nodes) }

// Tokens returns the named node's tokens in ascending order, or nil if it is
// not in the ring.
func (r *Ring) Tokens(name string) []uint32 { return slices.Clone(r.tokens[name]) }

// Ring returns the underlying chash.Ring, for its Shares, Point and the other
// read-only methods; use this Ring's Add and Remove to change it, as the
// chash.Ring's own would drop or omit tokens.
func (r *Ring) Ring() *chash.Ring {
	if r.ring == nil {
		ring, _ := chash.New(scheme{hash: r.cfg.KeyHash}, nil)
		return ring
	}
	return r.ring
}

// scheme is a chash.Scheme that hands out allocated tokens: a node of weight
// w has points·w of them (join always places them all; see there).
type scheme struct {
	points int
	tokens map[string][]uint32
	hash   hashfn.Func
}

func (s scheme) NumPoints(weight, total, n int) int { return s.points * weight }

func (s scheme) AppendPoints(dst []uint32, name string, from, to int) []uint32 {
	ts := s.tokens[name]
	return append(dst, ts[min(from, len(ts)):min(to, len(ts))]...)
}

func (s scheme) Hash(key []byte) uint32 {
	if s.hash != nil {
		return s.hash(key)
	}
	return uint32(xxhash.Sum64(key)) // hashfn.XXH64, one call shorter
}
