package compat

import (
	"math"

	"github.com/chash-dev/chash/hashfn"
)

// Libketama is the original ketama ring (last.fm's libketama) as the clients that
// kept its naming implement it: the npm package hashring (3rd-Eden/node-hashring),
// Python's uhashring and spymemcached's KetamaNodeLocator (Java). Unlike twemproxy
// and libmemcached, a server is always named by its "host:port" as written, port
// 11211 included, and there are no aliases.
//
// A server owns a number of labels "NAME-i" (i = 0, 1, ...) set by Count, and each
// label gives 4 points: bytes 4a..4a+3 of its MD5, read little-endian, a = 0..3 —
// the same points as Ketama for the same name. Keys are hashed with KeyHash, MD5
// (bytes 0..3, little-endian) by default, and belong to the first point at or after
// their hash, wrapping to the first point.
//
// The programs differ in two ways a caller must choose:
//   - the point count, Count: hashring and uhashring use LibketamaFloat64 (the zero
//     value), spymemcached LibketamaFixed without weights and LibketamaFloat32 with a
//     weights map;
//   - ties between servers' points: hashring sorts stably (the server listed first
//     wins: Node.Order = index), spymemcached puts points into a TreeMap, where the
//     server added last overwrites (Node.Order = -index).
//
// spymemcached names a node by its InetSocketAddress's text without the leading
// "/": "127.0.0.1:11211" for an address given as an IP literal, but
// "cache1/10.0.0.1:11211" for one given as a host name. Its KETAMA_HASH hashes a
// key's UTF-8 bytes, as hashring does; both see keys as strings, so keys that are not
// valid UTF-8 cannot reach them unchanged.
type Libketama struct {
	// KeyHash hashes keys. If nil, it defaults to hashfn.MD5, the only key hash of
	// hashring and spymemcached's KETAMA_HASH.
	KeyHash hashfn.Func
	// Count says how weights become points. The zero value is LibketamaFloat64.
	Count LibketamaCount
}

// LibketamaCount is a rule turning a server's weight into ketama points.
type LibketamaCount int

const (
	// LibketamaFloat64 gives floor(w/total·40·n) labels of 4 points, computed in
	// float64 from left to right, as hashring's continuum() and uhashring do.
	// Rounding costs a label even with equal weights: 7, 14, 28, 49, 56 or 98
	// servers of equal weight own 156 points each, not 160.
	LibketamaFloat64 LibketamaCount = iota
	// LibketamaFloat32 gives KetamaPoints(w, total, n), the float32 formula of
	// twemproxy, libmemcached and spymemcached's weighted KetamaNodeLocator.
	LibketamaFloat32
	// LibketamaFixed gives every server 160 points whatever its weight, as
	// spymemcached's KetamaNodeLocator without weights does (numReps = 160).
	LibketamaFixed
)

// NumPoints returns the points of a server of the given weight under l.Count.
func (l Libketama) NumPoints(weight, total, n int) int {
	switch l.Count {
	case LibketamaFloat32:
		return KetamaPoints(weight, total, n)
	case LibketamaFixed:
		return KetamaPointsPerServer
	}
	if weight <= 0 || total <= 0 || n <= 0 {
		return 0
	}
	// As JavaScript evaluates weight / total * vnodes * servers.length.
	return int(math.Floor(float64(weight)/float64(total)*40*float64(n))) * 4
}

// AppendPoints appends points from..to-1 of name: point j is word j%4 of the MD5 of
// label "name-(j/4)".
func (l Libketama) AppendPoints(dst []uint32, name string, from, to int) []uint32 {
	return appendKetamaPoints(dst, name, "-", from, to, 0)
}

// Hash returns the ring position of key.
func (l Libketama) Hash(key []byte) uint32 {
	if l.KeyHash == nil {
		return hashfn.MD5(key)
	}
	return l.KeyHash(key)
}
