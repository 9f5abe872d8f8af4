package hashfn

import (
	"encoding/binary"
	"math/bits"
)

// OneAtATime is twemproxy's "one_at_a_time" (src/hashkit/nc_one_at_a_time.c,
// hash_one_at_a_time), Bob Jenkins's one-at-a-time hash as libmemcached has it (its
// default key hash): h = 0, per byte h += sx(b); h += h<<10; h ^= h>>6, then
// h += h<<3; h ^= h>>11; h += h<<15. Bytes >= 0x80 are sign-extended (C's signed
// char, see sx), unlike Jenkins's original on unsigned bytes; the quirk is kept on
// purpose. The empty key hashes to 0.
func OneAtATime(key []byte) uint32 {
	var h uint32
	for _, b := range key {
		h += sx(b)
		h += h << 10
		h ^= h >> 6
	}
	h += h << 3
	h ^= h >> 11
	h += h << 15
	return h
}

// jenkinsInitval is twemproxy's JENKINS_INITVAL.
const jenkinsInitval = 13

// Jenkins is twemproxy's "jenkins" (src/hashkit/nc_jenkins.c, hash_jenkins), Bob
// Jenkins's lookup3 hashlittle with initval 13, as libmemcached has it: the
// internal state starts at a = b = c = 0xdeadbeef + len(key) + 13, key is read as
// little-endian 32-bit words in blocks of 12 bytes (the last block, of 1 to 12
// bytes, zero-padded, goes through lookup3's final mix, not mix), and the result is
// c. Bytes are read unsigned. The empty key is not mixed at all: it hashes to
// 0xdeadbefc (0xdeadbeef + 13), as in lookup3. The C code reads the key word-,
// half-word- or byte-wise depending on its alignment; all three give this value on
// little-endian machines, which is what twemproxy runs on.
func Jenkins(key []byte) uint32 {
	a := 0xdeadbeef + uint32(len(key)) + jenkinsInitval
	b, c := a, a
	for len(key) > 12 {
		a += binary.LittleEndian.Uint32(key[0:4])
		b += binary.LittleEndian.Uint32(key[4:8])
		c += binary.LittleEndian.Uint32(key[8:12])
		a, b, c = lookup3Mix(a, b, c)
		key = key[12:]
	}
	if len(key) == 0 {
		return c
	}
	var tail [12]byte
	copy(tail[:], key)
	a += binary.LittleEndian.Uint32(tail[0:4])
	b += binary.LittleEndian.Uint32(tail[4:8])
	c += binary.LittleEndian.Uint32(tail[8:12])
	return lookup3Final(a, b, c)
}

// lookup3Mix is lookup3's mix(a, b, c).
func lookup3Mix(a, b, c uint32) (uint32, uint32, uint32) {
	a -= c
	a ^= bits.RotateLeft32(c, 4)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 6)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 8)
	b += a
	a -= c
	a ^= bits.RotateLeft32(c, 16)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 19)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 4)
	b += a
	return a, b, c
}

// lookup3Final is lookup3's final(a, b, c); it returns c.
func lookup3Final(a, b, c uint32) uint32 {
	c ^= b
	c -= bits.RotateLeft32(b, 14)
	a ^= c
	a -= bits.RotateLeft32(c, 11)
	b ^= a
	b -= bits.RotateLeft32(a, 25)
	c ^= b
	c -= bits.RotateLeft32(b, 16)
	a ^= c
	a -= bits.RotateLeft32(c, 4)
	b ^= a
	b -= bits.RotateLeft32(a, 14)
	c ^= b
	c -= bits.RotateLeft32(b, 24)
	return c
}
