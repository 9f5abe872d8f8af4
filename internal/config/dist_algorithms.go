package config

import (
	"fmt"
	"slices"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/balanced"
	"github.com/chash-dev/chash/bounded"
	"github.com/chash-dev/chash/jump"
	"github.com/chash-dev/chash/maglev"
	"github.com/chash-dev/chash/memento"
	"github.com/chash-dev/chash/multiprobe"
	"github.com/chash-dev/chash/rendezvous"
)

// The alternative algorithms, one package each. Keys are hashed with the pool's
// Hash if it names one, else with 64-bit XXH64 (xxh64 for the ring-based ones).
func init() {
	register("jump", buildJump(false))
	register("jumpback", buildJump(true))
	register("rendezvous", buildRendezvous)
	register("maglev", buildMaglev)
	register("multiprobe", buildMultiprobe)
	register("bounded", buildBounded)
	register("memento", buildMemento)
	register("balanced", buildBalanced)
}

// algoNodes returns servers as chash nodes, in list order.
func algoNodes(servers []Server) []chash.Node {
	nodes := make([]chash.Node, len(servers))
	for i, s := range servers {
		nodes[i] = chash.Node{Name: s.Name(), Weight: s.Weight}
	}
	return nodes
}

// keyHash64 returns the pool's Hash widened to 64 bits, or nil, which the
// packages take as XXH64, if the pool sets none.
func (p *Pool) keyHash64() (func([]byte) uint64, error) {
	if p.Hash == "" {
		return nil, nil
	}
	f, err := p.keyHash("")
	if err != nil {
		return nil, err
	}
	return func(key []byte) uint64 { return uint64(f(key)) }, nil
}

// checkNoPoints rejects "points:" for a distribution that has no points.
func checkNoPoints(p *Pool) error {
	if p.Points != 0 {
		return p.errorAt("points", fmt.Errorf("distribution %s has no points", p.Distribution))
	}
	return nil
}

// buildJump builds jump consistent hashing (back: JumpBackHash) over the servers
// in list order: servers may only be appended or removed from the end without
// moving more than the fair share, and weights must be 1.
func buildJump(back bool) builder {
	return func(p *Pool, servers []Server) (Router, error) {
		if err := checkNoPoints(p); err != nil {
			return nil, err
		}
		h, err := p.keyHash64()
		if err != nil {
			return nil, err
		}
		b, err := jump.New(jump.Config{Back: back, KeyHash: h}, algoNodes(servers))
		if err != nil {
			return nil, p.errorAt("servers", err)
		}
		return b, nil
	}
}

// buildRendezvous builds weighted rendezvous hashing; server order does not
// matter.
func buildRendezvous(p *Pool, servers []Server) (Router, error) {
	if err := checkNoPoints(p); err != nil {
		return nil, err
	}
	h, err := p.keyHash64()
	if err != nil {
		return nil, err
	}
	s, err := rendezvous.New(rendezvous.Config{KeyHash: h}, algoNodes(servers))
	if err != nil {
		return nil, p.errorAt("servers", err)
	}
	return s, nil
}

// buildMaglev builds a Maglev table of the default size, 65537 entries, which
// must be at least the total weight; server order does not matter.
func buildMaglev(p *Pool, servers []Server) (Router, error) {
	if err := checkNoPoints(p); err != nil {
		return nil, err
	}
	h, err := p.keyHash64()
	if err != nil {
		return nil, err
	}
	t, err := maglev.New(maglev.Config{KeyHash: h}, algoNodes(servers))
	if err != nil {
		return nil, p.errorAt("servers", err)
	}
	return t, nil
}

// buildMultiprobe builds a multi-probe ring with 21 probes and Points points per
// unit of weight (1 if zero); server order does not matter.
func buildMultiprobe(p *Pool, servers []Server) (Router, error) {
	if err := checkPoints(p, servers, max(p.Points, 1)); err != nil {
		return nil, err
	}
	h, err := p.keyHash64()
	if err != nil {
		return nil, err
	}
	r, err := multiprobe.New(multiprobe.Config{Points: p.Points, KeyHash: h}, algoNodes(servers))
	if err != nil {
		return nil, p.errorAt("servers", err)
	}
	return r, nil
}

// buildBounded builds consistent hashing with bounded loads, capacity factor
// 1.25, over chash's ring with Points points per unit of weight (160 if zero).
// The Router's Lookup places no load; a proxy that balances requests uses the
// *bounded.Balancer's Acquire and Release, and chash route places each key it
// reads with Acquire.
func buildBounded(p *Pool, servers []Server) (Router, error) {
	per := p.Points
	if per == 0 {
		per = chash.DefaultPoints
	}
	if err := checkPoints(p, servers, per); err != nil {
		return nil, err
	}
	var cfg bounded.Config
	cfg.Points = per
	if p.Hash != "" {
		f, err := p.keyHash("")
		if err != nil {
			return nil, err
		}
		cfg.KeyHash = f
	}
	b, err := bounded.New(cfg, algoNodes(servers))
	if err != nil {
		return nil, p.errorAt("servers", err)
	}
	return b, nil
}

// buildMemento builds MementoHash over the pool's servers in list order with
// those not in servers (the ejected ones) removed, in list order: ejecting one
// more server moves only its keys when it follows the others in the list, and
// few more otherwise. Weights must be 1.
func buildMemento(p *Pool, servers []Server) (Router, error) {
	if err := checkNoPoints(p); err != nil {
		return nil, err
	}
	h, err := p.keyHash64()
	if err != nil {
		return nil, err
	}
	all := p.Servers
	live := make(map[string]bool, len(servers))
	for _, s := range servers {
		live[s.Name()] = true
	}
	var gone []string
	for _, s := range all {
		if !live[s.Name()] {
			gone = append(gone, s.Name())
		}
	}
	// A caller's subset that is not drawn from p.Servers gets buckets of its own.
	if len(all)-len(gone) != len(servers) || slices.ContainsFunc(servers, func(s Server) bool {
		return !slices.ContainsFunc(all, func(a Server) bool { return a.Name() == s.Name() })
	}) {
		all, gone = servers, nil
	}
	b, err := memento.New(memento.Config{KeyHash: h}, algoNodes(all))
	if err != nil {
		return nil, p.errorAt("servers", err)
	}
	if b, err = b.Remove(gone...); err != nil {
		return nil, p.errorAt("servers", err)
	}
	return b, nil
}

// buildBalanced builds a ring with balanced tokens, Points per unit of weight
// (16 if zero), the servers joining in list order: add servers at the end of the
// list.
func buildBalanced(p *Pool, servers []Server) (Router, error) {
	per := p.Points
	if per == 0 {
		per = balanced.DefaultPoints
	}
	if err := checkPoints(p, servers, per); err != nil {
		return nil, err
	}
	cfg := balanced.Config{Points: per}
	if p.Hash != "" {
		f, err := p.keyHash("")
		if err != nil {
			return nil, err
		}
		cfg.KeyHash = f
	}
	r, err := balanced.New(cfg, algoNodes(servers))
	if err != nil {
		return nil, p.errorAt("servers", err)
	}
	return r, nil
}

var (
	_ Router = (*jump.Buckets)(nil)
	_ Router = (*rendezvous.Set)(nil)
	_ Router = (*maglev.Table)(nil)
	_ Router = (*multiprobe.Ring)(nil)
	_ Router = (*bounded.Balancer)(nil)
	_ Router = (*memento.Buckets)(nil)
	_ Router = (*balanced.Ring)(nil)
)
