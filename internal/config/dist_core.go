package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

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
// per unit of weight at the hash of the pool's Label (compat.DefaultSeedLabel if
// empty), or one point per server at the hash of its name, whatever its weight, if
// Points is zero; labels and keys hashed with java_fnv1_32 unless the pool's Hash
// names another function. compat.Seed.WithHash decides how the hash's values, as
// Java ints, are ordered.
func buildSeed(p *Pool, servers []Server) (Router, error) {
	per := p.Points
	if err := checkPoints(p, servers, max(per, 0)); err != nil {
		return nil, err
	}
	if err := checkLabel(p); err != nil {
		return nil, p.errorAt("label", err)
	}
	hash := p.Hash
	if hash == "" {
		hash = "java_fnv1_32"
	}
	if _, err := p.keyHash(hash); err != nil {
		return nil, err
	}
	s, err := compat.Seed{Points: per, Label: p.Label}.WithHash(hash)
	if err != nil {
		return nil, p.errorAt("hash", err)
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

// setLabel takes the seed distribution's label template; checkLabel checks it
// against the rest of the pool.
func setLabel(p *Pool, key string, v *yaml.Node) error {
	if v.Kind == yaml.MappingNode {
		return atf(v, "%s: a mapping; quote the template, as in %s: \"{name}#{i}\"", key, key)
	}
	s, err := scalar(key, v)
	if err != nil {
		return err
	}
	if s == "" {
		return atf(v, "%s is empty; leave it out for the default, %q", key, compat.DefaultSeedLabel)
	}
	p.Label = s
	return nil
}

// checkLabel reports what is wrong with the pool's Label, if anything: only the
// seed distribution takes one, only with points above zero, and it must contain
// {i}, or all of a server's points would fall on one position, and {name}, or
// every server would get the same points. Parse calls it for every pool.
func checkLabel(p *Pool) error {
	switch l := p.Label; {
	case l == "":
		return nil
	case p.Distribution != "seed":
		return fmt.Errorf("label is only used by distribution seed, not %s", p.Distribution)
	case p.Points == 0:
		return fmt.Errorf("label %q is not used with points 0, which puts each server at the hash of its name; set points or leave label out", l)
	case !strings.Contains(l, "{i}"):
		return fmt.Errorf("label %q has no {i}: all %d points of a server would fall on one position", l, p.Points)
	case !strings.Contains(l, "{name}"):
		return fmt.Errorf("label %q has no {name}: every server would get the same points", l)
	}
	return nil
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
