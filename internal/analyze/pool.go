package analyze

import (
	"cmp"
	"fmt"
	"iter"
	"slices"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/dist"
)

// Pool is a configuration's pool with the router of its distribution over a
// list of its servers, ready to measure. Its methods route keys through the
// pool's hash tag, as the proxy does, and never change its Router.
type Pool struct {
	// Config is the pool.
	Config *config.Pool
	// Entry is the pool's distribution.
	Entry dist.Entry
	// Servers are the servers routed to: Config.Servers or another list.
	Servers []config.Server
	// Nodes are the servers as nodes, named by Server.Name, in Servers order:
	// the names and weights of every figure.
	Nodes []chash.Node
	// Router is the distribution's router over Servers.
	Router dist.Router
}

// NewPool builds the router of p's distribution over servers (see dist.Build).
// A distribution that routes at random is an error at the pool's
// distribution: line wrapping dist.ErrRandom: its keys have no server to
// measure.
func NewPool(p *config.Pool, servers []config.Server) (*Pool, error) {
	e, err := dist.EntryOf(p)
	if err != nil {
		return nil, err
	}
	if e.Random {
		return nil, p.ErrorAt("distribution", dist.ErrRandom)
	}
	r, err := dist.Build(p, servers)
	if err != nil {
		return nil, err
	}
	nodes := make([]chash.Node, len(servers))
	for i, s := range servers {
		nodes[i] = chash.Node{Name: s.Name(), Weight: s.Weight}
	}
	return &Pool{Config: p, Entry: e, Servers: servers, Nodes: nodes, Router: r}, nil
}

// Names returns the servers' names, in Servers order.
func (p *Pool) Names() []string {
	names := make([]string, len(p.Nodes))
	for i, n := range p.Nodes {
		names[i] = n.Name
	}
	return names
}

// hashKeys passes each key through the pool's hash tag.
func (p *Pool) hashKeys(keys iter.Seq[[]byte]) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for k := range keys {
			if !yield(p.Config.HashKey(k)) {
				return
			}
		}
	}
}

// fresh returns a router of the pool built anew, for placing keys without
// loading the pool's own.
func (p *Pool) fresh() (dist.Placer, error) {
	r, err := dist.Build(p.Config, p.Servers)
	if err != nil {
		return nil, err
	}
	placer, ok := r.(dist.Placer)
	if !ok {
		return nil, fmt.Errorf("analyze: distribution %s is load-aware but its router cannot place keys", p.Entry.Name)
	}
	return placer, nil
}

// Balance returns how the pool divides the key space among its servers, by the
// distribution's method: exactly from a ring's arcs or a table's entries, or
// by placing keys in turn on a new router for a load-aware distribution, or by
// routing keys. keys, generated ones such as SampleKeys' or a key file's, are
// used only by the last two.
func (p *Pool) Balance(keys iter.Seq[[]byte]) (*Balance, error) {
	if p.Entry.LoadAware {
		r, err := p.fresh()
		if err != nil {
			return nil, err
		}
		return Place(r, p.Nodes, p.hashKeys(keys))
	}
	return Measure(p.Router, p.Nodes, p.hashKeys(keys))
}

// Sample returns the balance of generated keys routed with the pool's
// Lookup, estimates of the key space's shares (Method MethodSample), whatever
// the distribution's method: a check on exact figures.
func (p *Pool) Sample(keys iter.Seq[[]byte]) (*Balance, error) {
	return Sample(p.Router, p.Nodes, p.hashKeys(keys))
}

// Count returns the balance of real keys, such as a key file's, routed with
// the pool's Lookup (Method MethodKeys).
func (p *Pool) Count(keys iter.Seq[[]byte]) (*Balance, error) {
	return Count(p.Router, p.Nodes, p.hashKeys(keys))
}

// Cluster routes groups of keys that differ only in their last character
// through the pool (see Cluster), against the shares of the pool's balance.
func (p *Pool) Cluster(shares *Balance, groups int) (*Clustering, error) {
	return Cluster(p.Router, shares, groups, p.Config.HashKey)
}

// Arcs returns the arcs of the pool's ring under its servers' names, or nil
// if its distribution has no ring.
func (p *Pool) Arcs() []Arc {
	r, ok := p.Router.(RingRouter)
	if !ok {
		return nil
	}
	return RouterArcs(r, p.Nodes)
}

// AlikeRings reports whether DiffPools measures old and new exactly from
// their rings' arcs (MethodArcs): both are rings, neither load-aware, that
// hash keys alike.
func AlikeRings(old, new *Pool) bool {
	if old.Entry.LoadAware || new.Entry.LoadAware {
		return false
	}
	_, _, ok := alikeRings(old.Router, new.Router)
	return ok
}

// DiffPools returns what moves from old to new, exactly where it can (see
// Compare), by placing keys in turn on new routers of both for a load-aware
// distribution (PlaceDiff), and otherwise by routing keys, passed through
// old's hash tag. The balances are in the order of each pool's servers, the
// flows sorted by source, then target, in that order, and ModuloMoved is
// modulo hashing over the servers as twemproxy's modula orders them
// (ModuloMovedNodes).
func DiffPools(old, new *Pool, keys iter.Seq[[]byte]) (*Diff, error) {
	d, err := diffPools(old, new, old.hashKeys(keys))
	if err != nil {
		return nil, err
	}
	d.ModuloMoved = ModuloMovedNodes(old.Nodes, new.Nodes)
	oldNames, newNames := old.Names(), new.Names()
	d.Old.reorder(oldNames)
	d.New.reorder(newNames)
	// Ranks from maps: a move to a fleet of thousands has thousands of flows
	// (a search of the names for each comparison took seconds).
	oldRank, newRank := rankOf(oldNames), rankOf(newNames)
	rank := func(ranks map[string]int, name string) int {
		if i, ok := ranks[name]; ok {
			return i
		}
		return -1
	}
	slices.SortStableFunc(d.Flows, func(a, b Flow) int {
		return cmp.Or(cmp.Compare(rank(oldRank, a.From), rank(oldRank, b.From)),
			cmp.Compare(rank(newRank, a.To), rank(newRank, b.To)))
	})
	return d, nil
}

func diffPools(old, new *Pool, keys iter.Seq[[]byte]) (*Diff, error) {
	if !old.Entry.LoadAware || !new.Entry.LoadAware {
		return Compare(old.Router, new.Router, old.Nodes, new.Nodes, keys)
	}
	a, err := old.fresh()
	if err != nil {
		return nil, err
	}
	b, err := new.fresh()
	if err != nil {
		return nil, err
	}
	return PlaceDiff(a, b, old.Nodes, new.Nodes, keys)
}

// HashClusters measures whether keys that differ only in their last
// character go to one server under p's distribution and hash over its
// servers (Cluster). A pool whose servers come from elsewhere (servers_from)
// is measured over three of weight 1: on a ring, clustering is the hash's,
// whatever the servers (under modula it depends on their number too:
// fnv1a_64 clusters over three, not over four). A distribution that routes
// at random, or places keys by load, has no clustering to measure: nil, nil.
func HashClusters(p *config.Pool) (*Clustering, error) {
	e, err := dist.EntryOf(p)
	if err != nil || e.Random || e.LoadAware {
		return nil, err
	}
	q := *p
	if len(q.Servers) == 0 {
		q.Servers = []config.Server{
			{Host: "10.0.0.1", Port: 11211, Weight: 1},
			{Host: "10.0.0.2", Port: 11211, Weight: 1},
			{Host: "10.0.0.3", Port: 11211, Weight: 1},
		}
	}
	pool, err := NewPool(&q, q.Servers)
	if err != nil {
		return nil, err
	}
	b, err := pool.Balance(SampleKeys(5000, 1)) // exact where it can be; shares to a few %, which Clustered needs only roughly
	if err != nil {
		return nil, err
	}
	return pool.Cluster(b, 1000)
}
