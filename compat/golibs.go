package compat

import (
	"fmt"
	"hash/crc32"
	"strconv"

	"github.com/chash-dev/chash/hashfn"

	"github.com/chash-dev/chash"
)

// GroupcacheReplicas is the replica count groupcache's HTTPPool gives its
// consistenthash.Map (defaultReplicas in http.go).
const GroupcacheReplicas = 50

// StathatReplicas is the replica count of stathat.com/c/consistent's New.
const StathatReplicas = 20

// Groupcache is the ring of github.com/golang/groupcache/consistenthash.
//
// Point i of a node is HashFunc(itoa(i) + name) — the replica number is a prefix,
// with no separator, so labels of different nodes can coincide: point 11 of "a"
// and point 1 of "1a" are both the hash of "11a". Keys are hashed with HashFunc and belong to the
// first point at or after their hash, wrapping to the first point.
//
// groupcache's map from point to node is overwritten by each Add, so on a
// collision the node added last owns the position: set each Node's Order to minus
// its index in the order the nodes were added. HTTPPool.Set adds peers in the order
// given, and its peers are full base URLs ("http://10.0.0.1:8080").
//
// groupcache has no weights; a node of weight w here owns w·Replicas points, the
// sequence continued, which agrees with groupcache only for weight 1.
//
// The zero value is HTTPPool's ring.
type Groupcache struct {
	// Replicas is the number of points per node. If zero, it defaults to
	// GroupcacheReplicas (50), HTTPPool's value; chash.New refuses a
	// negative one.
	Replicas int
	// HashFunc hashes labels and keys. If nil, it defaults to CRC-32/IEEE
	// (crc32.ChecksumIEEE), consistenthash's default.
	HashFunc hashfn.Func
}

// Validate refuses a negative Replicas (chash.Validator).
func (g Groupcache) Validate() error {
	if g.Replicas < 0 {
		return fmt.Errorf("compat: Groupcache.Replicas %d is negative", g.Replicas)
	}
	return nil
}

// NumPoints returns Replicas·weight.
func (g Groupcache) NumPoints(weight, total, n int) int {
	return chash.MulPoints(replicas(g.Replicas, GroupcacheReplicas), weight)
}

// AppendPoints appends points from..to-1 of name: HashFunc(itoa(i) + name).
func (g Groupcache) AppendPoints(dst []uint32, name string, from, to int) []uint32 {
	return appendPrefixPoints(dst, g.hash(), name, from, to)
}

// Hash returns the ring position of key.
func (g Groupcache) Hash(key []byte) uint32 { return g.hash()(key) }

func (g Groupcache) hash() hashfn.Func {
	if g.HashFunc == nil {
		return crc32.ChecksumIEEE
	}
	return g.HashFunc
}

// Stathat is the ring of stathat.com/c/consistent (v1.0.0).
//
// Point i of a node is the CRC-32/IEEE of itoa(i) + name, as in Groupcache. Its map
// from point to node is overwritten by each Add, so on a collision the node added
// last owns the position: set each Node's Order to minus its index in the order the
// nodes were added (Set adds new members in the order given).
//
// stathat's search is for the first point strictly greater than the key's CRC-32,
// wrapping to the first point. Hash returns CRC-32 + 1 (mod 2^32) so that the
// ring's search, for the first point at or after the position, finds that point:
// for a CRC below 2^32-1 the two searches agree by definition, and for 2^32-1, which
// no point exceeds, stathat wraps to the first point, as position 0 does. Ring.Hash
// therefore reports CRC-32 + 1, not the CRC.
//
// Removing a node in stathat deletes its positions from the map even where another
// node had overwritten them, so that node loses points; chash keeps the other node's
// point. Rings built from a list agree.
//
// stathat has no weights; a node of weight w here owns w·Replicas points, the
// sequence continued, which agrees with stathat only for weight 1.
//
// The zero value is the ring of stathat's New.
type Stathat struct {
	// Replicas is the number of points per node (stathat's NumberOfReplicas). If
	// zero, it defaults to StathatReplicas (20); chash.New refuses a negative
	// one.
	Replicas int
}

// Validate refuses a negative Replicas (chash.Validator).
func (s Stathat) Validate() error {
	if s.Replicas < 0 {
		return fmt.Errorf("compat: Stathat.Replicas %d is negative", s.Replicas)
	}
	return nil
}

// NumPoints returns Replicas·weight.
func (s Stathat) NumPoints(weight, total, n int) int {
	return chash.MulPoints(replicas(s.Replicas, StathatReplicas), weight)
}

// AppendPoints appends points from..to-1 of name: CRC-32(itoa(i) + name).
func (s Stathat) AppendPoints(dst []uint32, name string, from, to int) []uint32 {
	return appendPrefixPoints(dst, crc32.ChecksumIEEE, name, from, to)
}

// Hash returns CRC-32(key) + 1, wrapping 2^32-1 to 0; see the type's doc.
func (s Stathat) Hash(key []byte) uint32 { return crc32.ChecksumIEEE(key) + 1 }

func replicas(r, def int) int {
	if r <= 0 {
		return def
	}
	return r
}

// appendPrefixPoints appends h(itoa(i) + name) for i in from..to-1.
func appendPrefixPoints(dst []uint32, h hashfn.Func, name string, from, to int) []uint32 {
	label := make([]byte, 0, len(name)+8)
	for i := from; i < to; i++ {
		label = append(strconv.AppendInt(label[:0], int64(i), 10), name...)
		dst = append(dst, h(label))
	}
	return dst
}
