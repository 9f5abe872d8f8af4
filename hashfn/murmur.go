package hashfn

import "encoding/binary"

// Murmur is twemproxy's "murmur" (src/hashkit/nc_murmur.c, hash_murmur), Austin
// Appleby's 32-bit MurmurHash2 with the seed libmemcached chose: seed =
// 0xdeadbeef * len(key) (uint32 arithmetic), h = seed ^ len(key); key is read as
// little-endian 32-bit words, the 1 to 3 trailing bytes as unsigned bytes, then
// h ^= h>>13; h *= m; h ^= h>>15. The length-dependent seed is kept on purpose.
// The empty key hashes to 0.
func Murmur(key []byte) uint32 {
	const (
		m = 0x5bd1e995
		r = 24
	)
	n := uint32(len(key))
	h := 0xdeadbeef*n ^ n
	for len(key) >= 4 {
		k := binary.LittleEndian.Uint32(key)
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
		key = key[4:]
	}
	switch len(key) {
	case 3:
		h ^= uint32(key[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(key[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(key[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}
