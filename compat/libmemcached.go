package compat

import (
	"strconv"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/hashfn"
)

// LibmemcachedPointsPerServer is the points each server owns in libmemcached's
// unweighted ketama ring (MEMCACHED_POINTS_PER_SERVER).
const LibmemcachedPointsPerServer = 100

// Libmemcached is libmemcached's (1.x) ketama continuum, MEMCACHED_BEHAVIOR_KETAMA
// (src/libmemcached/hosts.cc, update_continuum; hash.cc for keys).
//
// Node names are the strings libmemcached formats for a server: the host alone when
// the port is 11211, else "host:port" — TwemproxyName(host, port, "") — with the
// host as passed to memcached_server_add, never resolved. Set each Node's Order to
// its index in the server list: continuum_item_cmp breaks ties by server index.
//
// Unweighted (the KETAMA behaviour alone), each server owns 100 points, one per
// label "NAME-i" (i = 0..99), at KeyHash(label): the points are hashed with the key
// hash, one_at_a_time unless MEMCACHED_BEHAVIOR_HASH says otherwise. Weighted, the
// ring is the MD5 ring of Ketama (KetamaPoints points, 4 per label) while keys are
// still hashed with KeyHash. A key belongs to the first point at or after its hash,
// wrapping to the first point.
//
// Quirks kept on purpose (Weighted is how a caller copies the first):
//   - Adding any server of weight > 1 while the distribution is consistent silently
//     switches libmemcached to the weighted ring (server_add, memcached_server_push);
//     For sets Weighted the way libmemcached would.
//   - MEMCACHED_BEHAVIOR_HASH set after the servers does not rebuild the continuum:
//     points stay hashed with the hash in force when the last server was added. A
//     program that sets HASH first, then adds servers, gets this ring.
//   - MEMCACHED_BEHAVIOR_KETAMA_HASH has no effect on placement in 1.x.
//
// KETAMA_WEIGHTED (key hash MD5, weighted ring) is Libmemcached{KeyHash: hashfn.MD5,
// Weighted: true}, which places every key as Ketama{KeyHash: hashfn.MD5} does.
type Libmemcached struct {
	// KeyHash hashes keys, and the points of the unweighted ring. If nil, it
	// defaults to hashfn.OneAtATime, libmemcached's default hash.
	KeyHash hashfn.Func
	// Weighted selects the weighted (MD5, 160 points on average) ring.
	Weighted bool
}

// For returns l with Weighted set when any node's weight is above 1, as
// libmemcached switches rings when such a server is added.
func (l Libmemcached) For(nodes []chash.Node) Libmemcached {
	for _, n := range nodes {
		if n.Weight > 1 {
			l.Weighted = true
		}
	}
	return l
}

// NumPoints returns 100, or KetamaPoints(weight, total, n) when Weighted.
func (l Libmemcached) NumPoints(weight, total, n int) int {
	if l.Weighted {
		return KetamaPoints(weight, total, n)
	}
	return LibmemcachedPointsPerServer
}

// AppendPoints appends points from..to-1 of name: KeyHash("name-j") unweighted,
// word j%4 of MD5("name-(j/4)") weighted.
func (l Libmemcached) AppendPoints(dst []uint32, name string, from, to int) []uint32 {
	if l.Weighted {
		return appendKetamaPoints(dst, name, "-", from, to, 0)
	}
	h := l.hash()
	label := make([]byte, 0, len(name)+8)
	for j := from; j < to; j++ {
		label = strconv.AppendInt(append(append(label[:0], name...), '-'), int64(j), 10)
		dst = append(dst, h(label))
	}
	return dst
}

// Hash returns the ring position of key.
func (l Libmemcached) Hash(key []byte) uint32 { return l.hash()(key) }

func (l Libmemcached) hash() hashfn.Func {
	if l.KeyHash == nil {
		return hashfn.OneAtATime
	}
	return l.KeyHash
}
