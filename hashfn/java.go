package hashfn

import (
	"unicode/utf16"
	"unicode/utf8"
)

// JavaFNV1_32 is the "FNV1_32_HASH" of the seed articles' Java rings: FNV-1a over the
// UTF-16 code units of the key (read as UTF-8 text), then five mixing steps on a
// signed 32-bit int with arithmetic right shifts, then Math.abs. Math.abs leaves
// math.MinInt32 negative, so the result, read as a Java int, is in [0, 2^31-1] or is
// exactly -2^31 (returned here as 0x80000000).
//
// Invalid UTF-8 bytes count as U+FFFD, as Java's decoder replaces them.
func JavaFNV1_32(key []byte) uint32 {
	h := int32(-2128831035) // (int) 2166136261L
	for len(key) > 0 {
		c := key[0]
		if c < utf8.RuneSelf {
			h = (h ^ int32(c)) * 16777619
			key = key[1:]
			continue
		}
		r, n := utf8.DecodeRune(key)
		key = key[n:]
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = (h ^ hi) * 16777619
			h = (h ^ lo) * 16777619
			continue
		}
		h = (h ^ r) * 16777619
	}
	h += h << 13
	h ^= h >> 7
	h += h << 3
	h ^= h >> 17
	h += h << 5
	if h < 0 {
		h = -h // Math.abs: -MinInt32 wraps to MinInt32, as in Java
	}
	return uint32(h)
}
