package hashfn

// JavaHashCode is Java's String.hashCode of the key read as new String(key, UTF_8)
// reads it (see JavaFNV1_32 for how ill-formed UTF-8 is read): h = 31*h + c over
// the string's UTF-16 code units, from h = 0, on a wrapping 32-bit int. The Java int
// is returned as its 32 bits, so Java's negative values are 2^31 and above.
//
// It is spymemcached's NATIVE_HASH (which takes the absolute value afterwards) and
// the hash behind the seed articles' first warning: "192.168.0.0:1111" ...
// "192.168.0.4:1111" hash to values 28629151 apart, a sliver of the ring.
func JavaHashCode(key []byte) uint32 {
	var h uint32 // the same bits as Java's int arithmetic
	for len(key) > 0 {
		if c := key[0]; c < 0x80 {
			h = 31*h + uint32(c)
			key = key[1:]
			continue
		}
		u1, u2, n := javaDecodeUTF8(key)
		h = 31*h + uint32(u1)
		if u2 >= 0 {
			h = 31*h + uint32(u2)
		}
		key = key[n:]
	}
	return h
}

// JavaHashCodeSpread is the rehash of seed article 001's ConsistentHash
// (Utils.rehash; see compat.SeedArticle001), HashMap's spreading step with the
// sign bit cleared: (h ^ (h >>> 16)) & 0x7fffffff with h = JavaHashCode(key).
// Its values are in [0, 2^31).
func JavaHashCodeSpread(key []byte) uint32 {
	h := JavaHashCode(key)
	return (h ^ h>>16) & 0x7fffffff
}
