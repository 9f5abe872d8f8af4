package dist

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strconv"

	"github.com/chash-dev/chash/compat"
	"github.com/chash-dev/chash/internal/config"
)

// routing is what of a pool, besides its servers, decides where its keys go:
// each setting as the distribution reads it, its default filled in where the
// pool leaves it out, so that a pool that names the default routes, and
// fingerprints, as one that does not.
type routing struct {
	dist    string
	hash    string // the key hash; "" for the algorithms' 64-bit XXH64
	hashTag string
	points  int
	label   string
}

// HashOf returns the name of the hash of p's keys: its hash, or its
// distribution's default.
func HashOf(p *config.Pool) string { return routingOf(p).hash }

// routingOf returns the pool's routing settings. An unknown distribution
// keeps its name and the pool's own settings.
func routingOf(p *config.Pool) routing {
	r := routing{dist: p.Distribution, hash: p.Hash, hashTag: p.HashTag, points: p.Points, label: p.Label}
	e, err := Lookup(p.Distribution)
	if err != nil {
		return r
	}
	if r.hash == "" {
		r.hash = e.DefaultHash
	}
	if e.Points && r.points == 0 {
		r.points = e.DefaultPoints
	}
	if e.Label && r.label == "" {
		r.label = compat.DefaultSeedLabel
	}
	return r
}

// RoutingChanges lists the routing settings, besides the servers, that differ
// from old to p, each "name:old->new" (distribution, hash, hash_tag, points,
// label), defaults filled in as Fingerprint fills them: a pool that comes to
// name its distribution's default hash changes nothing.
func RoutingChanges(old, p *config.Pool) []string {
	a, b := routingOf(old), routingOf(p)
	changes := []string{}
	add := func(name, from, to string) {
		if from != to {
			changes = append(changes, name+":"+from+"->"+to)
		}
	}
	add("distribution", a.dist, b.dist)
	add("hash", a.hash, b.hash)
	add("hash_tag", a.hashTag, b.hashTag)
	add("points", strconv.Itoa(a.points), strconv.Itoa(b.points))
	add("label", a.label, b.label)
	return changes
}

// fingerprintVersion begins what Fingerprint hashes; a new way of hashing
// would begin with another, so that no two versions of chash mistake each
// other's fingerprints for their own.
const fingerprintVersion = "chash ring fingerprint 1\n"

// Fingerprint returns the fingerprint of the pool's ring over servers: 16 hex
// digits, a pure function of what decides where the pool's keys go. Proxies
// that route a pool with the same settings over the same servers show the same
// fingerprint, and a change that can move a key changes it, so that
// fingerprints compared across proxies tell at once whether they agree.
//
// It covers the distribution, its key hash, the hash tag, points and label,
// each with its default filled in where the pool leaves it out (a pool that
// says "hash: fnv1a_64" fingerprints as one that says nothing, since ketama
// hashes with fnv1a_64 by default); each server's name, address and weight;
// and the pool's replicas, above 1, since proxies that write a key's copies
// to different servers disagree too. Addresses count, as well as the names
// that most distributions hash, since two proxies that send one name to two
// addresses disagree. The servers are taken in list order, or in name order
// for a distribution whose routing does not depend on their order
// (Entry.Order OrderFree); where the order only breaks ties it counts, since
// proxies that list the servers in different orders may disagree on a key.
// Weights count only for a distribution that has them. What the pool does not
// route by (its listen address, timeouts, ...) does not count.
//
// The value is the first 8 bytes of a SHA-256 of those settings in a fixed
// encoding, the same in every version of chash that writes
// fingerprintVersion (testdata/fingerprints.golden pins it), but for pools
// of more than one replica, whose replicas count since 2026-12-05: proxies
// of an earlier version show another fingerprint for such a pool. The error
// is EntryOf's, for an unknown distribution.
func Fingerprint(p *config.Pool, servers []config.Server) (string, error) {
	e, err := EntryOf(p)
	if err != nil {
		return "", err
	}
	r := routingOf(p)
	type member struct {
		name, addr string
		weight     int
	}
	ms := make([]member, len(servers))
	for i, s := range servers {
		ms[i] = member{addr: s.Host, weight: s.Weight}
		if s.Port != 0 {
			ms[i].addr = s.Host + ":" + strconv.Itoa(s.Port)
		}
		ms[i].name = cmp.Or(s.Alias, ms[i].addr) // s.Name(), made once
		if !e.Weights {
			ms[i].weight = 1 // random ignores weights; the others take only 1
		}
	}
	if e.Order == OrderFree {
		slices.SortStableFunc(ms, func(a, b member) int { return cmp.Compare(a.name, b.name) })
	}
	// Each string is preceded by its length, so that no two lists of fields
	// encode alike.
	b := make([]byte, 0, 64+len(servers)*48)
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	num := func(n int) { b = binary.AppendVarint(b, int64(n)) }
	b = append(b, fingerprintVersion...)
	str(r.dist)
	str(r.hash)
	str(r.hashTag)
	num(r.points)
	str(r.label)
	num(len(ms))
	for _, m := range ms {
		str(m.name)
		str(m.addr)
		num(m.weight)
	}
	if p.Replicas > 1 {
		// After the servers, whose count ends them: a pool of one replica
		// fingerprints as before replicas counted.
		str("replicas")
		num(p.Replicas)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}
