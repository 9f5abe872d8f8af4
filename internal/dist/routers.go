package dist

import (
	"math"
	"math/rand/v2"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/bounded"
	"github.com/chash-dev/chash/compat"
	"github.com/chash-dev/chash/hashfn"
	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/jump"
	"github.com/chash-dev/chash/maglev"
	"github.com/chash-dev/chash/memento"
	"github.com/chash-dev/chash/multiprobe"
	"github.com/chash-dev/chash/rendezvous"
)

// ringRouter routes with a ring whose node of index k in Nodes order is server
// index[k]: a lookup is the ring's and one load, with no name compared or
// hashed.
type ringRouter struct {
	ring   *chash.Ring
	index  []int
	lo, hi uint32 // the ring positions keys hash to (keySpan)
}

// newRingRouter builds a ring of nodes, nodes[i] being servers[i] under the
// name the distribution hashes.
//
// If prev is a ring router whose ring has the scheme s, the new ring is merged
// from prev's (see Update); otherwise it is built afresh.
func newRingRouter(p *config.Pool, s chash.Scheme, nodes []chash.Node, prev Router) (*ringRouter, error) {
	if r := mergeRing(prev, s, nodes); r != nil {
		return ringOver(r, nodes), nil
	}
	r, err := chash.New(s, nodes)
	if err != nil {
		return nil, p.ErrorAt("servers", err)
	}
	return ringOver(r, nodes), nil
}

// buildSpanned is e.build, then sets the span of the keys of the router, if
// it is a ring's, from the pool's hash (keySpan).
func (e Entry) buildSpanned(p *config.Pool, servers []config.Server, prev Router) (Router, error) {
	r, err := e.build(p, servers, prev)
	if err != nil {
		return nil, err
	}
	var rr *ringRouter
	switch r := r.(type) {
	case *ringRouter:
		rr = r
	case replicaRing:
		rr = r.ringRouter
	default:
		return r, nil
	}
	name := p.Hash
	if name == "" {
		name = e.DefaultHash
	}
	rr.lo, rr.hi = keySpan(name, rr.ring.Scheme())
	return r, nil
}

// keySpan returns the first and last ring positions that keys hashed with
// the function called hash, placed by scheme s, can land on: the whole ring,
// unless the hash has fewer than 32 bits (hashfn.Max),
// as twemproxy's crc32 (0..32767) has. compat.Seed moves a hash's values as
// its doc says, so the span moves with them.
func keySpan(hash string, s chash.Scheme) (lo, hi uint32) {
	m, err := hashfn.Max(hash)
	if err != nil || m == math.MaxUint32 {
		return 0, math.MaxUint32
	}
	if seed, ok := s.(compat.Seed); ok {
		if seed.Signed {
			if m >= 1<<31 {
				return 0, math.MaxUint32
			}
			return 1 << 31, 1<<31 | m // the sign bit flipped
		}
		if m >= 1<<31-1 {
			return 0, math.MaxUint32
		}
		return 0, 2*m + 1 // v at 2v+1
	}
	return 0, m
}

// ringOver returns the router of r, whose nodes are named as in nodes, the
// list of the router's servers.
func ringOver(r *chash.Ring, nodes []chash.Node) *ringRouter {
	at := make(map[string]int, len(nodes))
	for i, n := range nodes {
		at[n.Name] = i
	}
	rr := &ringRouter{ring: r, index: make([]int, r.Len())}
	for k, n := range r.Nodes() {
		rr.index[k] = at[n.Name]
	}
	return rr
}

func (r *ringRouter) Lookup(key []byte) (int, error) {
	k, err := r.ring.LookupIndex(key)
	if err != nil {
		return -1, err
	}
	return r.index[k], nil
}

// Ring returns the ring and, for each of its nodes in Nodes order, the index
// of its server, for exact analysis. The caller must not change the slice.
func (r *ringRouter) Ring() (*chash.Ring, []int) { return r.ring, r.index }

// KeySpan returns the first and last ring positions keys hash to, for exact
// analysis: the whole ring unless the pool's hash has fewer than 32 bits.
func (r *ringRouter) KeySpan() (lo, hi uint32) { return r.lo, r.hi }

// replicaRing is a ringRouter with the ring's replica sets: the first distinct
// servers clockwise.
type replicaRing struct{ *ringRouter }

func (r replicaRing) AppendN(dst []int, key []byte, n int) ([]int, error) {
	start := len(dst)
	dst, err := r.ring.AppendIndexN(dst, key, n)
	for i := start; i < len(dst); i++ {
		dst[i] = r.index[dst[i]]
	}
	return dst, err
}

// byName maps the names a router returns to server indexes.
type byName map[string]int

func namesOf(nodes []chash.Node) byName {
	m := make(byName, len(nodes))
	for i, n := range nodes {
		m[n.Name] = i
	}
	return m
}

// index returns the server of a name a router returned.
func (m byName) index(name string, err error) (int, error) {
	if err != nil {
		return -1, err
	}
	return m[name], nil
}

// named is the router of a package whose lookups return node names: a lookup
// is the package's and one map lookup.
type named struct {
	r interface {
		Lookup(key []byte) (string, error)
	}
	names byName
}

func (r *named) Lookup(key []byte) (int, error) { return r.names.index(r.r.Lookup(key)) }

// appendIndexes appends the servers of names, which a router returned, to dst.
func (m byName) appendIndexes(dst []int, names []string) []int {
	for _, name := range names {
		dst = append(dst, m[name])
	}
	return dst
}

// rendezvousRouter and multiprobeRouter are the routers of the packages with
// replica sets that return node names. Each is a type of its own, not an
// instance of a generic one, so that AppendN can pass the package a buffer on
// its stack: through a generic type's method the compiler cannot tell that
// the buffer does not escape, and every call would allocate it.
type rendezvousRouter struct {
	s     *rendezvous.Set
	names byName
}

func (r *rendezvousRouter) Lookup(key []byte) (int, error) { return r.names.index(r.s.Lookup(key)) }

func (r *rendezvousRouter) AppendN(dst []int, key []byte, n int) ([]int, error) {
	var small [8]string
	names, err := r.s.AppendN(small[:0], key, n)
	return r.names.appendIndexes(dst, names), err
}

type multiprobeRouter struct {
	r     *multiprobe.Ring
	names byName
}

func (r *multiprobeRouter) Lookup(key []byte) (int, error) { return r.names.index(r.r.Lookup(key)) }

func (r *multiprobeRouter) AppendN(dst []int, key []byte, n int) ([]int, error) {
	var small [8]string
	names, err := r.r.AppendN(small[:0], key, n)
	return r.names.appendIndexes(dst, names), err
}

// randomRouter sends each lookup to a server chosen at random, as twemproxy's
// random distribution does.
type randomRouter struct{ n int }

func (r randomRouter) Lookup([]byte) (int, error) { return rand.IntN(r.n), nil }

// tableRouter is Maglev's table, whose entries analysis counts.
type tableRouter struct {
	t     *maglev.Table
	names byName
	index []int // the server of each of the table's nodes
}

func (r *tableRouter) Lookup(key []byte) (int, error) { return r.names.index(r.t.Lookup(key)) }

// Size returns the number of entries of the table.
func (r *tableRouter) Size() int { return r.t.Size() }

// Entry returns the server that owns entry j.
func (r *tableRouter) Entry(j int) int { return r.index[r.t.Entry(j)] }

// placer is a bounded-load balancer: Lookup asks where a key would go, Acquire
// places it.
type placer struct {
	b       *bounded.Balancer
	names   byName
	servers []string // the balancer's name of each server
}

func (r *placer) Lookup(key []byte) (int, error)  { return r.names.index(r.b.Lookup(key)) }
func (r *placer) Acquire(key []byte) (int, error) { return r.names.index(r.b.Acquire(key)) }
func (r *placer) Release(server int) error        { return r.b.Release(r.servers[server]) }

var (
	_ ReplicaRouter = replicaRing{}
	_ ReplicaRouter = (*rendezvousRouter)(nil)
	_ ReplicaRouter = (*multiprobeRouter)(nil)
	_ Placer        = (*placer)(nil)
	_ Router        = (*named)(nil)
	_ Router        = randomRouter{}
	_ Router        = (*tableRouter)(nil)

	_ interface{ Lookup([]byte) (string, error) } = (*compat.Modula)(nil)
	_ interface{ Lookup([]byte) (string, error) } = (*jump.Buckets)(nil)
	_ interface{ Lookup([]byte) (string, error) } = (*memento.Buckets)(nil)
)
