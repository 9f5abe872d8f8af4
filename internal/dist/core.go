package dist

import (
	"fmt"
	"strings"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/compat"
	"github.com/chash-dev/chash/internal/config"
)

// buildChash builds chash's own ring, chash.Standard: Points (160 if zero) points
// per unit of weight, keys hashed with the pool's Hash or, if it sets none, xxh64.
// Routing does not depend on the order of the servers.
func buildChash(p *config.Pool, servers []config.Server, prev Router) (Router, error) {
	per, err := perWeight(p, servers, chash.DefaultPoints)
	if err != nil {
		return nil, err
	}
	h, err := ringHash(p)
	if err != nil {
		return nil, err
	}
	s := chash.Standard{Points: per, KeyHash: h}
	nodes := make([]chash.Node, len(servers))
	for i, sv := range servers {
		nodes[i] = chash.Node{Name: sv.Name(), Weight: sv.Weight}
	}
	r, err := newRingRouter(p, s, nodes, prev)
	if err != nil {
		return nil, err
	}
	return replicaRing{r}, nil
}

// buildSeed builds the seed articles' Java ring, compat.Seed: Points virtual nodes
// per unit of weight at the hash of the pool's Label (compat.DefaultSeedLabel if
// empty), or one point per server at the hash of its name, whatever its weight, if
// Points is zero; labels and keys hashed with java_fnv1_32 unless the pool's Hash
// names another function. compat.Seed.WithHash decides how the hash's values, as
// Java ints, are ordered.
func buildSeed(p *config.Pool, servers []config.Server, prev Router) (Router, error) {
	if err := checkPoints(p, servers, p.Points); err != nil {
		return nil, err
	}
	if err := checkLabel(p); err != nil {
		return nil, p.ErrorAt("label", err)
	}
	hash := p.Hash
	if hash == "" {
		hash = "java_fnv1_32"
	}
	if _, err := keyHash(p, hash); err != nil {
		return nil, err
	}
	s, err := compat.Seed{Points: p.Points, Label: p.Label}.WithHash(hash)
	if err != nil {
		return nil, p.ErrorAt("hash", err)
	}
	// The Java programs put servers into a TreeMap in list order, so when two
	// points collide the server listed last keeps the position. Giving later
	// servers lower Orders keeps that rule; -i rather than a count down to 1
	// leaves the Orders of the servers listed first alone when one is
	// appended, so that Update merges the ring.
	nodes := make([]chash.Node, len(servers))
	for i, sv := range servers {
		nodes[i] = chash.Node{Name: sv.Name(), Weight: sv.Weight, Order: -i}
	}
	return newRingRouter(p, s, nodes, prev)
}

// checkLabel reports what is wrong with a seed pool's Label, if anything: it
// is used only with points above zero, and it must contain {i}, or all of a
// server's points would fall on one position, and {name}, or every server
// would get the same points.
func checkLabel(p *config.Pool) error {
	switch l := p.Label; {
	case l == "":
		return nil
	case p.Points == 0:
		return fmt.Errorf("label %q is not used with points 0, which puts each server at the hash of its name; set points or leave label out", l)
	case !strings.Contains(l, "{i}"):
		return fmt.Errorf("label %q has no {i}: all %d points of a server would fall on one position", l, p.Points)
	case !strings.Contains(l, "{name}"):
		return fmt.Errorf("label %q has no {name}: every server would get the same points", l)
	}
	return nil
}
