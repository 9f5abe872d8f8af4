package hashfn

import (
	"fmt"
	"testing"
)

var sink uint32

// BenchmarkHash measures every function on keys of typical lengths: 8 bytes, 20
// (a short memcached key), 64 and 512.
func BenchmarkHash(b *testing.B) {
	key := make([]byte, 512)
	for i := range key {
		key[i] = byte('a' + i%26)
	}
	for _, name := range Names() {
		f, _ := Lookup(name)
		b.Run(name, func(b *testing.B) {
			for _, n := range []int{8, 20, 64, 512} {
				k := key[:n]
				b.Run(fmt.Sprint(n), func(b *testing.B) {
					b.SetBytes(int64(n))
					for b.Loop() {
						sink = f(k)
					}
				})
			}
		})
	}
}
