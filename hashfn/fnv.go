package hashfn

// FNV constants. The 64-bit ones are used truncated to 32 bits, as twemproxy does.
const (
	fnv32Init  = 2166136261
	fnv32Prime = 16777619
	fnv64Init  = 0xcbf29ce484222325
	fnv64Prime = 0x100000001b3
)

// FNV1_32 is twemproxy's "fnv1_32" (src/hashkit/nc_fnv.c, hash_fnv1_32): 32-bit
// FNV-1, h = 2166136261, then per byte h *= 16777619; h ^= sx(b). Bytes >= 0x80 are
// sign-extended (C's signed char, see sx), so keys containing them differ from the
// textbook FNV-1 (hash/fnv's New32); the quirk is kept on purpose. The empty key
// hashes to 2166136261.
func FNV1_32(key []byte) uint32 {
	h := uint32(fnv32Init)
	for _, b := range key {
		h *= fnv32Prime
		h ^= sx(b)
	}
	return h
}

// FNV1a_32 is twemproxy's "fnv1a_32" (src/hashkit/nc_fnv.c, hash_fnv1a_32): 32-bit
// FNV-1a, h = 2166136261, then per byte h ^= sx(b); h *= 16777619, with the same
// sign extension of bytes >= 0x80 as FNV1_32 (kept on purpose). For ASCII keys it
// equals hash/fnv's New32a.
func FNV1a_32(key []byte) uint32 {
	h := uint32(fnv32Init)
	for _, b := range key {
		h ^= sx(b)
		h *= fnv32Prime
	}
	return h
}

// FNV1_64 is twemproxy's "fnv1_64" (src/hashkit/nc_fnv.c, hash_fnv1_64): the low
// 32 bits of 64-bit FNV-1 (h = 0xcbf29ce484222325, per byte h *= 0x100000001b3;
// h ^= (uint64_t)(char)b, the byte sign-extended to 64 bits). The low 32 bits of a
// product depend only on the low 32 bits of its factors, so this computes the same
// value in 32-bit arithmetic with the constants truncated (0x84222325, 0x1b3) and
// sx. For ASCII keys it equals uint32 of hash/fnv's New64; bytes >= 0x80 differ
// (kept on purpose).
func FNV1_64(key []byte) uint32 {
	h := uint32(fnv64Init & 0xffffffff)
	for _, b := range key {
		h *= fnv64Prime & 0xffffffff
		h ^= sx(b)
	}
	return h
}

// FNV1a_64 is twemproxy's "fnv1a_64" (src/hashkit/nc_fnv.c, hash_fnv1a_64), its
// default hash. Despite the name it is a 32-bit FNV-1a with the 64-bit constants
// truncated: h = 0x84222325, per byte h ^= sx(b); h *= 0x1b3, in uint32 arithmetic.
// That happens to equal the low 32 bits of the real 64-bit FNV-1a for ASCII keys;
// bytes >= 0x80 are sign-extended (see sx). Both quirks are kept on purpose.
func FNV1a_64(key []byte) uint32 {
	h := uint32(fnv64Init & 0xffffffff)
	for _, b := range key {
		h ^= sx(b)
		h *= fnv64Prime & 0xffffffff
	}
	return h
}
