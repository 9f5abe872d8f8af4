package chash

import (
	"encoding/binary"
	"hash/crc32"
	"sync/atomic"
)

// hkey returns a key that the test schemes below hash to h.
func hkey(h uint32) []byte { return binary.BigEndian.AppendUint32(nil, h) }

// keyHash is the test schemes' key hash: a 4-byte key is its own position, other
// keys hash with CRC-32.
func keyHash(key []byte) uint32 {
	if len(key) == 4 {
		return binary.BigEndian.Uint32(key)
	}
	return crc32.ChecksumIEEE(key)
}

// fixedScheme places each node at the listed positions.
type fixedScheme map[string][]uint32

func (s fixedScheme) NumPoints(w, total, n int) int { return 1 << 20 }
func (s fixedScheme) AppendPoints(dst []uint32, name string, from, to int) []uint32 {
	ps := s[name]
	return append(dst, ps[min(from, len(ps)):min(to, len(ps))]...)
}
func (s fixedScheme) Hash(key []byte) uint32 { return keyHash(key) }

// normScheme gives points like ketama: normalised by total weight and node count,
// so one node's change changes every node's count.
type normScheme struct{}

func (normScheme) NumPoints(w, total, n int) int { return 4 * (w * 10 * n / total) }
func (normScheme) AppendPoints(dst []uint32, name string, from, to int) []uint32 {
	return Standard{}.AppendPoints(dst, name, from, to)
}
func (normScheme) Hash(key []byte) uint32 { return keyHash(key) }

// clumpScheme puts every node's points on the same few positions.
type clumpScheme struct{}

func (clumpScheme) NumPoints(w, total, n int) int { return 3 * w }
func (clumpScheme) AppendPoints(dst []uint32, name string, from, to int) []uint32 {
	for i := from; i < to; i++ {
		dst = append(dst, uint32(i)*0x40000000+7)
	}
	return dst
}
func (clumpScheme) Hash(key []byte) uint32 { return keyHash(key) }

// clumpPartly mixes spread points with positions shared by every node.
type clumpPartly struct{}

func (clumpPartly) NumPoints(w, total, n int) int { return 12 * w }
func (clumpPartly) AppendPoints(dst []uint32, name string, from, to int) []uint32 {
	for i := from; i < to; i++ {
		if i%3 == 0 {
			dst = append(dst, uint32(i)*1000)
		} else {
			dst = Standard{}.AppendPoints(dst, name, i, i+1)
		}
	}
	return dst
}
func (clumpPartly) Hash(key []byte) uint32 { return keyHash(key) }

// pairScheme puts each node's points in pairs on one position, so a node can own
// the same point twice.
type pairScheme struct{}

func (pairScheme) NumPoints(w, total, n int) int { return 8 * w }
func (pairScheme) AppendPoints(dst []uint32, name string, from, to int) []uint32 {
	for i := from; i < to; i++ {
		dst = Standard{}.AppendPoints(dst, name, i/2, i/2+1)
	}
	return dst
}
func (pairScheme) Hash(key []byte) uint32 { return keyHash(key) }

// fickleScheme breaks the Scheme contract: its points change on every call, so
// the points a merge regenerates to drop are not on the ring. Updates must still
// give a valid ring, built afresh.
type fickleScheme struct{ calls *atomic.Uint32 }

func (fickleScheme) NumPoints(w, total, n int) int { return 10 * w }
func (f fickleScheme) AppendPoints(dst []uint32, name string, from, to int) []uint32 {
	c := int(f.calls.Add(1))
	return Standard{}.AppendPoints(dst, name, from+1000*c, to+1000*c)
}
func (fickleScheme) Hash(key []byte) uint32 { return keyHash(key) }
