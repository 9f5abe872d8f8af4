package dist

import (
	"math/bits"
	"slices"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/balanced"
	"github.com/chash-dev/chash/bounded"
	"github.com/chash-dev/chash/hashfn"
	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/jump"
	"github.com/chash-dev/chash/maglev"
	"github.com/chash-dev/chash/memento"
	"github.com/chash-dev/chash/multiprobe"
	"github.com/chash-dev/chash/rendezvous"
)

// The alternative algorithms, one package each. Keys are hashed with the pool's
// Hash if it names one, else with 64-bit XXH64 (xxh64 for the ring-based ones).

// algoNodes returns servers as chash nodes, in list order, named by their Name.
func algoNodes(servers []config.Server) []chash.Node {
	nodes := make([]chash.Node, len(servers))
	for i, s := range servers {
		nodes[i] = chash.Node{Name: s.Name(), Weight: s.Weight}
	}
	return nodes
}

// keyHash64 returns the pool's Hash widened to 64 bits, or nil, which the
// packages take as XXH64, if the pool sets none.
func keyHash64(p *config.Pool) (func([]byte) uint64, error) {
	if p.Hash == "" {
		return nil, nil
	}
	f, err := keyHash(p, "")
	if err != nil {
		return nil, err
	}
	return func(key []byte) uint64 { return uint64(f(key)) }, nil
}

// ringHash returns the pool's Hash, or nil, which the ring-based packages take
// as xxh64, if the pool sets none.
func ringHash(p *config.Pool) (func([]byte) uint32, error) {
	if p.Hash == "" {
		return nil, nil
	}
	return keyHash(p, "")
}

// buildJump builds jump consistent hashing (back: JumpBackHash) over the servers
// in list order: servers may only be appended or removed from the end without
// moving more than the fair share, and weights must be 1.
func buildJump(back bool) func(p *config.Pool, servers []config.Server, _ Router) (Router, error) {
	return func(p *config.Pool, servers []config.Server, _ Router) (Router, error) {
		h, err := keyHash64(p)
		if err != nil {
			return nil, err
		}
		nodes := algoNodes(servers)
		b, err := jump.New(jump.Config{Back: back, KeyHash: h}, nodes)
		if err != nil {
			return nil, p.ErrorAt("servers", err)
		}
		return &named{r: b, names: namesOf(nodes)}, nil
	}
}

// buildRendezvous builds weighted rendezvous hashing; server order does not
// matter.
func buildRendezvous(p *config.Pool, servers []config.Server, _ Router) (Router, error) {
	h, err := keyHash64(p)
	if err != nil {
		return nil, err
	}
	nodes := algoNodes(servers)
	s, err := rendezvous.New(rendezvous.Config{KeyHash: h}, nodes)
	if err != nil {
		return nil, p.ErrorAt("servers", err)
	}
	return &rendezvousRouter{s: s, names: namesOf(nodes)}, nil
}

// buildMaglev builds a Maglev table of the default size, 65537 entries, which
// must be at least the total weight; server order does not matter.
//
// Maglev maps a 64-bit hash onto the table by multiplication, ⌊h·size/2^64⌋,
// so a pool's hash, of 32 bits or fewer, is shifted to the top of the 64 bits:
// zero-extended, every key would land on entry 0. Its values then reach the
// entries unevenly (2^32 values over 65537 entries, or 32768 for crc32), so
// the router is no Table and analysis routes keys.
func buildMaglev(p *config.Pool, servers []config.Server, _ Router) (Router, error) {
	var h func([]byte) uint64
	if p.Hash != "" {
		f, err := keyHash(p, "")
		if err != nil {
			return nil, err
		}
		// m-1: java_fnv1_32's Max, 2^31, is one value in 2^32; its others fit 31 bits.
		m, _ := hashfn.Max(p.Hash)
		shift := 64 - bits.Len32(m-1)
		h = func(key []byte) uint64 { return uint64(f(key)) << shift }
	}
	nodes := algoNodes(servers)
	t, err := maglev.New(maglev.Config{KeyHash: h}, nodes)
	if err != nil {
		return nil, p.ErrorAt("servers", err)
	}
	names := namesOf(nodes)
	if h != nil {
		return &named{r: t, names: names}, nil
	}
	r := &tableRouter{t: t, names: names}
	for _, n := range t.Nodes() {
		r.index = append(r.index, names[n.Name])
	}
	return r, nil
}

// buildMultiprobe builds a multi-probe ring with 21 probes and Points points per
// unit of weight (1 if zero); server order does not matter.
func buildMultiprobe(p *config.Pool, servers []config.Server, _ Router) (Router, error) {
	if err := checkPoints(p, servers, max(p.Points, 1)); err != nil {
		return nil, err
	}
	h, err := keyHash64(p)
	if err != nil {
		return nil, err
	}
	nodes := algoNodes(servers)
	r, err := multiprobe.New(multiprobe.Config{Points: p.Points, KeyHash: h}, nodes)
	if err != nil {
		return nil, p.ErrorAt("servers", err)
	}
	return &multiprobeRouter{r: r, names: namesOf(nodes)}, nil
}

// buildBounded builds consistent hashing with bounded loads, capacity factor
// 1.25, over chash's ring with Points points per unit of weight (160 if zero).
// Its Lookup places no load; Acquire places a key and counts it, as chash route
// does with each key it reads.
func buildBounded(p *config.Pool, servers []config.Server, _ Router) (Router, error) {
	per, err := perWeight(p, servers, chash.DefaultPoints)
	if err != nil {
		return nil, err
	}
	h, err := ringHash(p)
	if err != nil {
		return nil, err
	}
	nodes := algoNodes(servers)
	b, err := bounded.New(bounded.Config{Points: per, KeyHash: h}, nodes)
	if err != nil {
		return nil, p.ErrorAt("servers", err)
	}
	r := &placer{b: b, names: namesOf(nodes), servers: make([]string, len(nodes))}
	for i, n := range nodes {
		r.servers[i] = n.Name
	}
	return r, nil
}

// buildMemento builds MementoHash over the pool's servers in list order with
// those not in servers (the ejected ones) removed, in list order: ejecting one
// more server moves only its keys when it follows the others in the list, and
// few more otherwise. Weights must be 1.
func buildMemento(p *config.Pool, servers []config.Server, _ Router) (Router, error) {
	h, err := keyHash64(p)
	if err != nil {
		return nil, err
	}
	all, gone := withRemoved(p, servers)
	b, err := memento.New(memento.Config{KeyHash: h}, algoNodes(all))
	if err != nil {
		return nil, p.ErrorAt("servers", err)
	}
	if b, err = b.Remove(gone...); err != nil {
		return nil, p.ErrorAt("servers", err)
	}
	return &named{r: b, names: namesOf(algoNodes(servers))}, nil
}

// buildBalanced builds a ring with balanced tokens, Points per unit of weight
// (16 if zero), over the pool's servers joining in list order, then removes
// those not in servers (the ejected ones), which keeps every other server's
// tokens. Add servers at the end of the list.
func buildBalanced(p *config.Pool, servers []config.Server, _ Router) (Router, error) {
	all, gone := withRemoved(p, servers)
	per, err := perWeight(p, all, balanced.DefaultPoints)
	if err != nil {
		return nil, err
	}
	h, err := ringHash(p)
	if err != nil {
		return nil, err
	}
	r, err := balanced.New(balanced.Config{Points: per, KeyHash: h}, algoNodes(all))
	if err != nil {
		return nil, p.ErrorAt("servers", err)
	}
	if r, err = r.Remove(gone...); err != nil {
		return nil, p.ErrorAt("servers", err)
	}
	return replicaRing{ringOver(r.Ring(), algoNodes(servers))}, nil
}

// withRemoved returns the servers a distribution that remembers removals
// (memento, balanced) is built from, all, and those of all to remove, gone:
// p.Servers and those of them not in servers, if servers is drawn from
// p.Servers; otherwise servers itself, a list of its own, and none.
func withRemoved(p *config.Pool, servers []config.Server) (all []config.Server, gone []string) {
	live := make(map[string]bool, len(servers))
	for _, s := range servers {
		live[s.Name()] = true
	}
	for _, s := range p.Servers {
		if !live[s.Name()] {
			gone = append(gone, s.Name())
		}
	}
	if len(p.Servers)-len(gone) != len(servers) || slices.ContainsFunc(servers, func(s config.Server) bool {
		return !slices.ContainsFunc(p.Servers, func(a config.Server) bool { return a.Name() == s.Name() })
	}) {
		return servers, nil
	}
	return p.Servers, gone
}
