// Package dist is the catalogue of distributions: the ways a pool of a
// configuration spreads its keys over its servers. The catalogue is one list
// (see All); each entry has a name, as a pool's "distribution:" gives it, a
// one-line summary, what the distribution can do, and a builder that makes a
// Router from a pool and its servers.
//
// Everything that routes or analyses a pool (chash route, analyze, diff, sweep,
// compare and the proxy) reads this catalogue and asks an entry's capabilities
// rather than its name, so that adding a distribution is adding one entry.
//
// A Router maps a key, already through the pool's hash tag
// (config.Pool.HashKey), to the index of its server in the slice of servers
// the router was built over. Routers are immutable, except for the loads of a
// load-aware one, and safe for concurrent use.
//
// Build checks a pool against its distribution (whether it takes points:,
// label: and its hash) and reports problems as config errors that name the
// file, the line and the pool.
package dist

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/balanced"
	"github.com/chash-dev/chash/compat"
	"github.com/chash-dev/chash/hashfn"
	"github.com/chash-dev/chash/internal/config"
)

// A Router maps a key, already through the pool's hash tag, to the index of
// the server that owns it in the slice of servers the router was built over.
type Router interface {
	Lookup(key []byte) (int, error)
}

// A ReplicaRouter is the Router of a distribution with replica sets
// (Entry.Replicas).
type ReplicaRouter interface {
	Router
	// AppendN appends to dst the indexes of the first n distinct servers of
	// key's replica set, the owner first; fewer when there are fewer servers.
	// It allocates only if dst lacks capacity or n is large.
	AppendN(dst []int, key []byte, n int) ([]int, error)
}

// A Placer is the Router of a load-aware distribution (Entry.LoadAware). Its
// Lookup names the server a key would go to under the present loads, which it
// leaves alone; Acquire places the key there and counts one unit of load on
// that server until Release takes it away.
type Placer interface {
	Router
	Acquire(key []byte) (int, error)
	Release(server int) error
}

// Method is how a distribution's balance and movement are measured.
type Method string

// The methods of measurement.
const (
	// Arcs: exactly, from the arcs of its ring of 2^32 positions.
	Arcs Method = "arcs"
	// Table: exactly, from the entries of its lookup table.
	Table Method = "table"
	// Sample: by routing generated keys and counting; an estimate.
	Sample Method = "sample"
	// Placed: by placing keys in turn, each counting as load; a key's server
	// depends on the keys before it.
	Placed Method = "placed"
	// None: keys are not routed by what they are (Entry.Random).
	None Method = "none"
)

// Removal is which servers can leave without moving more keys than theirs.
type Removal int

const (
	// RemoveAny: any server (for modula, any server, at the price of moving
	// most keys).
	RemoveAny Removal = iota
	// RemoveLast: only the last server of the list.
	RemoveLast
)

// Order is whether the order of a pool's servers changes where keys go.
type Order int

const (
	// OrderFree: the order does not matter; the distribution sorts servers by
	// name or hashes only their names.
	OrderFree Order = iota
	// OrderTies: the order only breaks ties, when points of two servers fall
	// on the same ring position: rare, but every proxy of a pool must list its
	// servers in one order to agree on every key.
	OrderTies
	// OrderMatters: the order places the keys, as in jump hashing, where
	// servers are buckets numbered in list order.
	OrderMatters
)

// Entry is one distribution of the catalogue.
type Entry struct {
	// Name is the distribution's name, as a pool's "distribution:" gives it.
	Name string
	// Summary is a one-line description.
	Summary string

	// Weights says that servers' weights shape the distribution. Where it is
	// false, a weight other than 1 is an error, except for random, which
	// ignores weights as twemproxy does.
	Weights bool
	// Removal is which servers can leave without moving other servers' keys.
	Removal Removal
	// Replicas says the distribution has replica sets: its routers are
	// ReplicaRouters.
	Replicas bool
	// Method is how chash analyze, diff and compare measure the distribution.
	Method Method
	// Random says keys are not routed by what they are: each request goes to a
	// server chosen at random, so a key has no server to report offline. The
	// Router picks a server at random on each Lookup.
	Random bool
	// LoadAware says a key's server depends on the servers' loads: the routers
	// are Placers.
	LoadAware bool
	// Order is whether the order of the servers changes where keys go.
	Order Order

	// Points says a pool may set "points:", the number of ring points (or
	// tokens, or probes' points) per unit of weight.
	Points bool
	// DefaultPoints is what points: 0 (or no points:) means for a
	// distribution that takes points; 0 for seed, which then gives each
	// server one point at the hash of its name, whatever its weight.
	DefaultPoints int
	// Label says a pool may set "label:", the template of the strings hashed
	// for a server's points.
	Label bool
	// DefaultHash is the hash of keys (a hashfn name) when a pool sets no
	// "hash:". It is empty for the algorithms that then hash keys with all 64
	// bits of XXH64 (jump, jumpback, rendezvous, maglev, multiprobe, memento),
	// where a pool's hash: gives them 32.
	DefaultHash string
	// Hashes, if not nil, are the only key hashes the distribution takes.
	Hashes []string

	// Sweep, if not nil, is the ring scheme chash sweep uses for the
	// distribution: each node of weight 1 gets one point of the node's own
	// sequence of points, and a sweep wrapping it gives a node the first V
	// points of that sequence, so that rings of V points per node are the
	// distribution's own, or what it would be with V points.
	Sweep chash.Scheme

	// build makes the router over servers, which Build has checked to be a
	// non-empty list. It must return an error rather than panic on any pool,
	// even one made in code, and make its errors with the pool's ErrorAt.
	// prev, if not nil, is a router that build made for a pool with the same
	// routing settings (see Update): a ring's builder merges the new ring from
	// prev's, when it can, rather than build it afresh.
	build func(p *config.Pool, servers []config.Server, prev Router) (Router, error)
}

// catalogue is the list of distributions: chash's own ring first, then the
// deployed programs' (compat.go), then the alternative algorithms
// (algorithms.go). Adding a distribution is adding an entry here.
var catalogue = []Entry{
	{Name: "chash", Summary: "chash's own ring: keys hashed with XXH64, points with SplitMix64, 160 per unit of weight",
		Weights: true, Replicas: true, Method: Arcs, Points: true, DefaultPoints: chash.DefaultPoints,
		DefaultHash: "xxh64", Sweep: chash.Standard{Points: 1}, build: buildChash},
	{Name: "ketama", Summary: "twemproxy's ketama ring (its default): 160 MD5 points per server of average weight",
		Weights: true, Method: Arcs, DefaultHash: config.DefaultHash, Sweep: compat.Ketama{}, build: buildKetama},
	{Name: "modula", Summary: "twemproxy's modula: hash mod the total weight, servers in a table sorted by name",
		Weights: true, Method: Sample, DefaultHash: config.DefaultHash, build: buildModula},
	{Name: "random", Summary: "twemproxy's random: each request to a server chosen at random, whatever its key",
		Method: None, Random: true, DefaultHash: config.DefaultHash, build: buildRandom},
	{Name: "libketama", Summary: "libketama's ring, as npm hashring and Python's uhashring build it",
		Weights: true, Method: Arcs, Order: OrderTies, DefaultHash: "md5", Sweep: compat.Libketama{}, build: buildLibketama},
	{Name: "spymemcached", Summary: "spymemcached's KetamaNodeLocator (Java)",
		Weights: true, Method: Arcs, Order: OrderTies, DefaultHash: "md5", Sweep: compat.Libketama{}, build: buildSpymemcached},
	{Name: "libmemcached", Summary: "libmemcached's ketama continuum, and its weighted MD5 ring when a weight is above 1",
		Weights: true, Method: Arcs, Order: OrderTies, DefaultHash: "one_at_a_time", Sweep: compat.Libmemcached{}, build: buildLibmemcached},
	{Name: "nginx", Summary: `nginx's "hash $key consistent": 160 CRC32 points per unit of weight`,
		Weights: true, Method: Arcs, Order: OrderTies, DefaultHash: "crc32a", Hashes: []string{"crc32a"},
		Sweep: compat.Nginx{}, build: buildNginx},
	{Name: "groupcache", Summary: "groupcache's consistenthash ring (Go): 50 CRC32 replicas per server, no weights",
		Method: Arcs, Order: OrderTies, Points: true, DefaultPoints: compat.GroupcacheReplicas,
		DefaultHash: "crc32a", Sweep: compat.Groupcache{Replicas: 1}, build: buildGroupcache},
	{Name: "stathat", Summary: "stathat.com/c/consistent's ring (Go): 20 CRC32 replicas per server, no weights",
		Method: Arcs, Order: OrderTies, Points: true, DefaultPoints: compat.StathatReplicas,
		DefaultHash: "crc32a", Hashes: []string{"crc32a"}, Sweep: compat.Stathat{Replicas: 1}, build: buildStathat},
	{Name: "seed", Summary: "the seed articles' Java ring: one point per server, or points: virtual nodes per unit of weight",
		Weights: true, Method: Arcs, Order: OrderTies, Points: true, Label: true,
		DefaultHash: "java_fnv1_32", Sweep: compat.Seed{Points: 1}, build: buildSeed},
	{Name: "jump", Summary: "jump consistent hashing (Lamping and Veach): servers are buckets in list order, no weights",
		Removal: RemoveLast, Method: Sample, Order: OrderMatters, build: buildJump(false)},
	{Name: "jumpback", Summary: "JumpBackHash: jump hashing's buckets in constant time",
		Removal: RemoveLast, Method: Sample, Order: OrderMatters, build: buildJump(true)},
	{Name: "rendezvous", Summary: "weighted rendezvous (highest random weight) hashing",
		Weights: true, Replicas: true, Method: Sample, build: buildRendezvous},
	{Name: "maglev", Summary: "Maglev's lookup table of 65537 entries",
		Weights: true, Method: Table, build: buildMaglev},
	{Name: "multiprobe", Summary: "multi-probe consistent hashing: 21 probes, one point per unit of weight",
		Weights: true, Replicas: true, Method: Sample, Points: true, DefaultPoints: 1, build: buildMultiprobe},
	{Name: "bounded", Summary: "consistent hashing with bounded loads (capacity factor 1.25) over chash's ring",
		Weights: true, Method: Placed, LoadAware: true, Points: true, DefaultPoints: chash.DefaultPoints,
		DefaultHash: "xxh64", build: buildBounded},
	{Name: "memento", Summary: "MementoHash: jump hashing that removes any server, no weights",
		Method: Sample, Order: OrderMatters, build: buildMemento},
	{Name: "balanced", Summary: "a ring whose joining servers choose tokens that even out ownership, 16 per unit of weight",
		Weights: true, Replicas: true, Method: Arcs, Order: OrderMatters, Points: true, DefaultPoints: balanced.DefaultPoints,
		DefaultHash: "xxh64", build: buildBalanced},
}

// All returns the catalogue: chash's own ring, the deployed programs', then
// the alternative algorithms.
func All() []Entry { return slices.Clone(catalogue) }

// Names returns the distributions' names, sorted.
func Names() []string {
	names := make([]string, len(catalogue))
	for i, e := range catalogue {
		names[i] = e.Name
	}
	slices.Sort(names)
	return names
}

// Lookup returns the distribution called name. An unknown name is an error
// that lists the known ones.
func Lookup(name string) (Entry, error) {
	for _, e := range catalogue {
		if e.Name == name {
			return e, nil
		}
	}
	return Entry{}, fmt.Errorf("dist: distribution %q is unknown (known: %s)", name, strings.Join(Names(), ", "))
}

// ErrRandom is why a pool whose distribution is Random cannot be routed or
// measured offline. Tools wrap it with the pool's ErrorAt("distribution").
var ErrRandom = errors.New("distribution random cannot be routed offline: twemproxy sends each request to a server chosen at random, whatever the key; use ketama or modula to route by key")

// EntryOf returns the entry of the pool's distribution, or an error at the
// pool's distribution: line that lists the known names.
func EntryOf(p *config.Pool) (Entry, error) {
	for _, e := range catalogue {
		if e.Name == p.Distribution {
			return e, nil
		}
	}
	return Entry{}, p.ErrorAt("distribution", fmt.Errorf("distribution %q is unknown (known: %s)", p.Distribution, strings.Join(Names(), ", ")))
}

// Build builds the router of the pool's distribution over servers: p.Servers,
// or a subset of them such as the servers that are not ejected, or another
// list. It checks the pool against the distribution first. Its errors are
// *config.Error values that name the file, the line and the pool.
func Build(p *config.Pool, servers []config.Server) (Router, error) {
	e, err := buildable(p, servers)
	if err != nil {
		return nil, err
	}
	return e.buildSpanned(p, servers, nil)
}

// buildable returns the entry of the pool's distribution if a router of it
// can be built over servers, as far as the entry can tell before its builder
// runs: the pool sets nothing the distribution does not take, and servers is
// not empty.
func buildable(p *config.Pool, servers []config.Server) (Entry, error) {
	e, err := EntryOf(p)
	if err != nil {
		return Entry{}, err
	}
	if err := e.check(p); err != nil {
		return Entry{}, err
	}
	if len(servers) == 0 {
		return Entry{}, p.ErrorAt("servers", errors.New("no servers"))
	}
	return e, nil
}

// check reports what the pool sets that the distribution does not take.
func (e Entry) check(p *config.Pool) error {
	switch {
	case p.Points < 0:
		return p.ErrorAt("points", fmt.Errorf("points %d is negative", p.Points))
	case p.Points != 0 && !e.Points:
		return p.ErrorAt("points", fmt.Errorf("points is not used by distribution %s (only by %s)", e.Name, takers(func(e Entry) bool { return e.Points })))
	case p.Label != "" && !e.Label:
		return p.ErrorAt("label", fmt.Errorf("label is only used by distribution %s, not %s", takers(func(e Entry) bool { return e.Label }), e.Name))
	case p.Replicas > 1 && !e.Replicas:
		return p.ErrorAt("replicas", fmt.Errorf("replicas %d: distribution %s has no replica sets (those with: %s)", p.Replicas, e.Name, takers(func(e Entry) bool { return e.Replicas })))
	case p.Hash != "" && e.Hashes != nil && !slices.Contains(e.Hashes, p.Hash):
		return p.ErrorAt("hash", fmt.Errorf("distribution %s hashes keys with %s only, not %q", e.Name, strings.Join(e.Hashes, " or "), p.Hash))
	}
	return nil
}

// takers names the distributions for which f is true, as "a, b and c".
func takers(f func(Entry) bool) string {
	var names []string
	for _, e := range catalogue {
		if f(e) {
			names = append(names, e.Name)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// keyHash returns the function the pool's Hash names, or def's if the pool
// sets none.
func keyHash(p *config.Pool, def string) (hashfn.Func, error) {
	name := p.Hash
	if name == "" {
		name = def
	}
	f, err := hashfn.Lookup(name)
	if err != nil {
		return nil, p.ErrorAt("hash", fmt.Errorf("hash %q is unknown (known: %s)", name, strings.Join(hashfn.Names(), ", ")))
	}
	return f, nil
}

// maxPoints caps the points of a ring whose point count grows with the
// weights (ketama's does not): 2^22 points take 32 MiB and some 100 MiB while
// the ring is built.
const maxPoints = 1 << 22

// perWeight returns the pool's points per unit of weight, def if it sets none,
// once checkPoints has found the ring of servers not too large.
func perWeight(p *config.Pool, servers []config.Server, def int) (int, error) {
	per := p.Points
	if per == 0 {
		per = def
	}
	return per, checkPoints(p, servers, per)
}

// checkPoints reports an error if per points per unit of weight would give the
// ring more than maxPoints points. per zero means one point per server.
func checkPoints(p *config.Pool, servers []config.Server, per int) error {
	total := 0
	// Blame the weights, or, when every weight is 1, the number of servers.
	who, fix, fixOr := "the weights", "lower the weights", "the weights"
	if unitWeights(servers) {
		who, fix, fixOr = fmt.Sprintf("%d servers of weight 1", len(servers)), "use fewer servers", "use fewer servers"
	}
	for _, s := range servers {
		if s.Weight < 1 {
			return p.ErrorAt("servers", fmt.Errorf("server %q: weight %d is not positive", s.Name(), s.Weight))
		}
		n := 1
		if per > 0 {
			n = min(s.Weight, maxPoints/per+1) * per // no overflow
		}
		if total += n; total > maxPoints {
			if p.Points == 0 { // the distribution's own count: blame the weights
				return p.ErrorAt("servers", fmt.Errorf("%s give the %s ring more than %d points (%d per unit of weight); %s", who, p.Distribution, maxPoints, max(per, 1), fix))
			}
			return p.ErrorAt("points", fmt.Errorf("%d points per unit of weight give the %s ring more than %d points; lower points or %s", per, p.Distribution, maxPoints, fixOr))
		}
	}
	return nil
}

// checkSlots reports an error if the weights add up to more than maxPoints,
// the slots of a table with one per unit of weight (modula's).
func checkSlots(p *config.Pool, servers []config.Server) error {
	total := 0
	lower := "lower the weights"
	if unitWeights(servers) {
		lower = fmt.Sprintf("%d servers of weight 1: use fewer", len(servers))
	}
	for _, s := range servers {
		if s.Weight < 1 {
			return p.ErrorAt("servers", fmt.Errorf("server %q: weight %d is not positive", s.Name(), s.Weight))
		}
		if total += min(s.Weight, maxPoints+1); total > maxPoints {
			return p.ErrorAt("servers", fmt.Errorf("the weights add up to more than %d, the slots of the %s table (one per unit of weight); %s", maxPoints, p.Distribution, lower))
		}
	}
	return nil
}

// unitWeights reports whether every server has weight 1, so that a ring or
// table too large is the servers' count, not their weights.
func unitWeights(servers []config.Server) bool {
	for _, s := range servers {
		if s.Weight != 1 {
			return false
		}
	}
	return true
}

// unweighted reports an error for a server whose weight is not 1.
func unweighted(p *config.Pool, servers []config.Server) error {
	for _, s := range servers {
		if s.Weight != 1 {
			return p.ErrorAt("servers", fmt.Errorf("server %q: weight %d: distribution %s has no weights, give every server weight 1", s.Name(), s.Weight, p.Distribution))
		}
	}
	return nil
}
