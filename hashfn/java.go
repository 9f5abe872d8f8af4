package hashfn

// JavaFNV1_32 is the "FNV1_32_HASH" of the seed articles' Java rings (see
// compat.SeedArticle000): FNV-1a over the UTF-16 code units of the key
// as Java sees it, h = (h ^ c) * 16777619 from h = (int) 2166136261L, then five
// mixing steps on a signed 32-bit int with arithmetic right shifts, then Math.abs.
// Math.abs leaves math.MinInt32 negative, so the result, read as a Java int, is in
// [0, 2^31-1] or is exactly -2^31 (returned here as 0x80000000).
//
// key is read as new String(key, UTF_8) reads it in OpenJDK 17: valid UTF-8 gives
// its characters (a character above U+FFFF gives two surrogate units); each
// ill-formed sequence gives one U+FFFD, with Java's rules for how many bytes one
// U+FFFD replaces (an encoded surrogate is replaced as a whole, a sequence cut short
// by the end of the key counts once, and so on).
func JavaFNV1_32(key []byte) uint32 {
	const prime = 16777619
	h := int32(-2128831035) // (int) 2166136261L
	for len(key) > 0 {
		if c := key[0]; c < 0x80 {
			h = (h ^ int32(c)) * prime
			key = key[1:]
			continue
		}
		u1, u2, n := javaDecodeUTF8(key)
		h = (h ^ u1) * prime
		if u2 >= 0 {
			h = (h ^ u2) * prime
		}
		key = key[n:]
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

// javaRepl is U+FFFD, the replacement character.
const javaRepl = 0xfffd

// javaDecodeUTF8 decodes the character at the start of p, whose first byte is
// >= 0x80, as OpenJDK 17's String(byte[], UTF_8) does (java.lang.String,
// decodeUTF8_UTF16, with replacement). It returns the UTF-16 code units, u2 < 0
// when there is only one, and the number of bytes consumed, 1 <= n <= len(p).
func javaDecodeUTF8(p []byte) (u1, u2 int32, n int) {
	cont := func(b byte) bool { return b&0xc0 == 0x80 }
	b1 := p[0]
	switch {
	case b1 >= 0xc2 && b1 <= 0xdf:
		if len(p) >= 2 && cont(p[1]) {
			return int32(b1&0x1f)<<6 | int32(p[1]&0x3f), -1, 2
		}
		return javaRepl, -1, 1

	case b1 >= 0xe0 && b1 <= 0xef:
		// Java rejects E0 80..9F (overlong) by the second byte but an encoded
		// surrogate (ED A0..BF xx) only after decoding all three.
		badSecond := len(p) >= 2 && (!cont(p[1]) || b1 == 0xe0 && p[1] < 0xa0)
		if len(p) >= 3 {
			if badSecond {
				return javaRepl, -1, 1
			}
			if !cont(p[2]) {
				return javaRepl, -1, 2
			}
			c := int32(b1&0x0f)<<12 | int32(p[1]&0x3f)<<6 | int32(p[2]&0x3f)
			if c >= 0xd800 && c <= 0xdfff {
				return javaRepl, -1, 3
			}
			return c, -1, 3
		}
		if badSecond {
			return javaRepl, -1, 1
		}
		return javaRepl, -1, len(p) // cut short by the end: one U+FFFD for the rest

	case b1 >= 0xf0 && b1 <= 0xf7:
		badSecond := b1 > 0xf4 || len(p) >= 2 && (!cont(p[1]) ||
			b1 == 0xf0 && p[1] < 0x90 || b1 == 0xf4 && p[1] > 0x8f)
		if len(p) >= 4 {
			switch {
			case badSecond:
				return javaRepl, -1, 1
			case !cont(p[2]):
				return javaRepl, -1, 2
			case !cont(p[3]):
				return javaRepl, -1, 3
			}
			r := int32(b1&0x07)<<18 | int32(p[1]&0x3f)<<12 | int32(p[2]&0x3f)<<6 | int32(p[3]&0x3f)
			r -= 0x10000
			return 0xd800 + r>>10, 0xdc00 + r&0x3ff, 4
		}
		if badSecond {
			return javaRepl, -1, 1
		}
		if len(p) == 3 && !cont(p[2]) {
			return javaRepl, -1, 2
		}
		return javaRepl, -1, len(p) // cut short by the end: one U+FFFD for the rest
	}
	return javaRepl, -1, 1 // 80..C1, F8..FF
}
