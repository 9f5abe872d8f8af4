package hashfn

import "encoding/binary"

// Hsieh is twemproxy's "hsieh" (src/hashkit/nc_hsieh.c, hash_hsieh), Paul Hsieh's
// SuperFastHash with initial value 0: key is read as little-endian unsigned 16-bit
// halves, four bytes per round, then the 1 to 3 trailing bytes and the final
// avalanche. When 3 bytes trail, the third is sign-extended (C's signed char, see
// sx) before the shift by 18, while a single trailing byte is read unsigned; both
// are kept on purpose. The empty key hashes to 0 (it is not mixed).
//
// libmemcached builds may leave this function out (then their hsieh returns 0);
// twemproxy always has it.
func Hsieh(key []byte) uint32 {
	if len(key) == 0 {
		return 0
	}
	var h uint32
	for len(key) >= 4 {
		h += uint32(binary.LittleEndian.Uint16(key[0:2]))
		tmp := uint32(binary.LittleEndian.Uint16(key[2:4]))<<11 ^ h
		h = h<<16 ^ tmp
		h += h >> 11
		key = key[4:]
	}
	switch len(key) {
	case 3:
		h += uint32(binary.LittleEndian.Uint16(key[0:2]))
		h ^= h << 16
		h ^= sx(key[2]) << 18
		h += h >> 11
	case 2:
		h += uint32(binary.LittleEndian.Uint16(key[0:2]))
		h ^= h << 11
		h += h >> 17
	case 1:
		h += uint32(key[0])
		h ^= h << 10
		h += h >> 1
	}
	h ^= h << 3
	h += h >> 5
	h ^= h << 4
	h += h >> 17
	h ^= h << 25
	h += h >> 6
	return h
}
