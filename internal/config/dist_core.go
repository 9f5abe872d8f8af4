package config

import (
	"fmt"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/compat"
)

// The distributions of package chash itself.
func init() {
	register("chash", buildChash)
	register("seed", buildSeed)
}

// maxPoints caps the points of a chash or seed ring, whose point count grows with
// the weights (ketama's does not): 2^22 points take 32 MiB and some 100 MiB while
// the ring is built.
const maxPoints = 1 << 22

// buildChash builds chash's own ring, chash.Standard: Points (160 if zero) points
// per unit of weight, keys hashed with the pool's Hash or, if it sets none, xxh64.
// Routing does not depend on the order of the servers.
func buildChash(p *Pool, servers []Server) (Router, error) {
	per := p.Points
	if per == 0 {
		per = chash.DefaultPoints
	}
	if err := checkPoints(p, servers, per); err != nil {
		return nil, err
	}
	s := chash.Standard{Points: per}
	if p.Hash != "" {
		f, err := p.keyHash("")
		if err != nil {
			return nil, err
		}
		s.KeyHash = f
	}
	nodes := make([]chash.Node, len(servers))
	for i, sv := range servers {
		nodes[i] = chash.Node{Name: sv.Name(), Weight: sv.Weight}
	}
	return newRing(p, s, nodes)
}

// buildSeed builds the seed articles' Java ring, compat.Seed: Points virtual nodes
// per unit of weight, or one point per server whatever its weight if Points is
// zero; labels and keys hashed with java_fnv1_32 unless the pool's Hash names
// another function.
func buildSeed(p *Pool, servers []Server) (Router, error) {
	per := p.Points
	if err := checkPoints(p, servers, max(per, 0)); err != nil {
		return nil, err
	}
	s := compat.Seed{Points: per}
	if p.Hash != "" {
		f, err := p.keyHash("")
		if err != nil {
			return nil, err
		}
		s.HashFunc = f
		// java_fnv1_32's values are never negative but for one; any other
		// function's are Java ints of either sign, ordered as Java orders them.
		s.Signed = p.Hash != "java_fnv1_32"
	}
	// The Java programs put servers into a TreeMap in list order, so when two
	// points collide the server listed last keeps the position. Giving later
	// servers lower Orders keeps that rule.
	nodes := make([]chash.Node, len(servers))
	for i, sv := range servers {
		nodes[i] = chash.Node{Name: sv.Name(), Weight: sv.Weight, Order: len(servers) - i}
	}
	return newRing(p, s, nodes)
}

// checkPoints reports an error if per points per unit of weight would give the
// ring more than maxPoints points. per zero means one point per server.
func checkPoints(p *Pool, servers []Server, per int) error {
	if p.Points < 0 {
		return p.errorAt("points", fmt.Errorf("points %d is negative", p.Points))
	}
	total := 0
	for _, s := range servers {
		if s.Weight < 1 {
			return p.errorAt("servers", fmt.Errorf("server %q: weight %d is not positive", s.Name(), s.Weight))
		}
		n := 1
		if per > 0 {
			n = min(s.Weight, maxPoints/per+1) * per // no overflow
		}
		if total += n; total > maxPoints {
			return p.errorAt("points", fmt.Errorf("%d points per unit of weight give the %s ring more than %d points; lower points or the weights", per, p.Distribution, maxPoints))
		}
	}
	return nil
}

func newRing(p *Pool, s chash.Scheme, nodes []chash.Node) (Router, error) {
	r, err := chash.New(s, nodes)
	if err != nil {
		return nil, p.errorAt("servers", err)
	}
	return r, nil
}

var _ Router = (*chash.Ring)(nil)
