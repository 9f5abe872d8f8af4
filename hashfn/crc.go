package hashfn

import "hash/crc32"

// CRC32A is twemproxy's "crc32a" (src/hashkit/nc_crc32.c, hash_crc32a): the
// standard CRC-32/IEEE of key (reflected polynomial 0xEDB88320, initial value and
// final xor 0xFFFFFFFF), the same value as crc32.ChecksumIEEE, zlib's crc32 and
// nginx's ngx_crc32_long. CRC32A("123456789") is 0xCBF43926. Bytes are read
// unsigned.
func CRC32A(key []byte) uint32 {
	return crc32.ChecksumIEEE(key)
}

// CRC32 is twemproxy's "crc32" (src/hashkit/nc_crc32.c, hash_crc32), copied from
// libmemcached's hashkit_crc32: bits 16-30 of the standard CRC-32/IEEE of key,
// (crc >> 16) & 0x7fff, so a value in [0, 32767]. The truncation is kept on purpose
// for compatibility ("this implementation does not return CRC-32 as per spec",
// says twemproxy); under ketama it sends every key to the ring's first point. Use
// CRC32A for the full CRC.
func CRC32(key []byte) uint32 {
	return crc32.ChecksumIEEE(key) >> 16 & 0x7fff
}

// crc16Table is the CRC-16 table for the non-reflected polynomial 0x1021
// (CRC-16/XMODEM), as in twemproxy 0.5.0's crc16tab.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// CRC16 is twemproxy's "crc16" (0.5.0 src/hashkit/nc_crc16.c, hash_crc16): the
// table-driven CRC-16/XMODEM update (polynomial 0x1021, initial value 0, no
// reflection), but run on an unmasked 32-bit register: per byte
// crc = crc<<8 ^ table[(crc>>8 ^ b) & 0xff]. The low 16 bits of the result are the
// CRC-16/XMODEM of key (0x31C3 for "123456789"); the high 16 bits are bits that a
// 16-bit register would have shifted out, and they are kept on purpose, because
// twemproxy hashes with all 32 bits. Keys of up to one byte hash below 2^16. The
// sign of the key bytes does not matter (the index is masked to 8 bits).
//
// Other twemproxy versions had a different crc16 (the reflected table of the Linux
// kernel in a uint16_t); this is the one that nutcracker 0.5.0 ships.
func CRC16(key []byte) uint32 {
	var crc uint32
	for _, b := range key {
		crc = crc<<8 ^ uint32(crc16Table[byte(crc>>8)^b])
	}
	return crc
}
