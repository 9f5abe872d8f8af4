package analyze

import (
	"math"
	"strconv"

	"github.com/chash-dev/chash/internal/dist"
)

// Clustering is how often keys that differ only in their last character all
// go to one node: rarely under a hash that mixes every byte into every bit of
// the position, often under one that does not (a last character changing only
// the low bits puts the keys on neighbouring positions, on one arc).
type Clustering struct {
	// Groups is the number of groups of keys routed, each of GroupSize keys
	// "key<g>0" … "key<g>9".
	Groups    int `json:"groups"`
	GroupSize int `json:"group_size"`
	// Together is the number of groups whose keys all went to one node.
	Together int `json:"together"`
	// Expected is the number of such groups expected had each key gone to a
	// node at random with the node's share: Groups·Σ share^GroupSize.
	Expected float64 `json:"expected"`
	// Z is how far Together is above Expected, in standard deviations.
	Z float64 `json:"z"`
}

// Clustered reports whether the keys cluster: Together is more than six
// standard deviations above Expected and beyond it by at least 1% of the
// groups.
func (c *Clustering) Clustered() bool {
	return c.Z > 6 && float64(c.Together)-c.Expected >= 0.01*float64(c.Groups)
}

// Cluster routes groups of keys that differ only in their last character
// through r and counts the groups whose keys all reach one node, against what
// shares (the router's shares of the key space) would give random keys. key,
// if not nil, maps a key to what is routed (a pool's hash tag).
func Cluster(r dist.Router, shares *Balance, groups int, key func([]byte) []byte) (*Clustering, error) {
	const size = 10
	c := &Clustering{Groups: groups, GroupSize: size}
	q := 0.0 // the chance that a group of random keys goes to one node
	for _, n := range shares.Nodes {
		q += math.Pow(n.Share, size)
	}
	buf := make([]byte, 0, 32)
	for g := range groups {
		first := -1
		together := true
		for d := range size {
			buf = strconv.AppendInt(append(buf[:0], "key"...), int64(g), 10)
			buf = append(buf, byte('0'+d))
			k := buf
			if key != nil {
				k = key(k)
			}
			i, err := r.Lookup(k)
			if err != nil {
				return nil, err
			}
			if d == 0 {
				first = i
			} else if i != first {
				together = false
				break
			}
		}
		if together {
			c.Together++
		}
	}
	c.Expected = float64(groups) * q
	// Binomial spread, floored at one group so that a handful of groups
	// together where almost none are expected does not count as certain.
	sd := math.Sqrt(max(c.Expected*(1-q), 1))
	c.Z = (float64(c.Together) - c.Expected) / sd
	return c, nil
}
