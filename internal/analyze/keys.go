package analyze

import (
	"iter"
	"math/rand/v2"
	"strconv"
)

// SampleKeys returns n keys that look like a cache's: "key:" followed by 16 hex
// digits drawn from a PCG generator seeded with seed, so the same arguments give
// the same keys. The slice yielded is reused; a consumer must not keep it.
func SampleKeys(n int, seed uint64) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		rng := rand.New(rand.NewPCG(seed, 0x636861736821)) // "chash!"
		buf := make([]byte, 0, 24)
		for range n {
			buf = append(buf[:0], "key:"...)
			v := rng.Uint64()
			for s := 60; s >= 0; s -= 4 {
				buf = append(buf, "0123456789abcdef"[v>>s&15])
			}
			if !yield(buf) {
				return
			}
		}
	}
}

// StringKeys returns the keys of a string slice as byte slices.
func StringKeys(keys []string) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for _, k := range keys {
			if !yield([]byte(k)) {
				return
			}
		}
	}
}

// SequentialKeys returns "prefix0", "prefix1", ... "prefix<n-1>": keys that
// differ only at their end, as many applications name theirs, and as a weak
// hash fails to spread. The slice yielded is reused.
func SequentialKeys(prefix string, n int) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		buf := []byte(prefix)
		for i := range n {
			if !yield(strconv.AppendInt(buf[:len(prefix)], int64(i), 10)) {
				return
			}
		}
	}
}
