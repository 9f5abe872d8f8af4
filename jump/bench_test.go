package jump

import (
	"strconv"
	"testing"
)

var sizes = []int{10, 100, 1000, 10000}

var sink int

func BenchmarkHash(b *testing.B) {
	for _, n := range sizes {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			k := uint64(1)
			for b.Loop() {
				k += golden
				sink += Hash(k, n)
			}
		})
	}
}

func BenchmarkBack(b *testing.B) {
	for _, n := range sizes {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			k := uint64(1)
			for b.Loop() {
				k += golden
				sink += Back(k, n)
			}
		})
	}
}

func BenchmarkLookup(b *testing.B) {
	for _, back := range []bool{false, true} {
		for _, n := range sizes {
			name := "Hash/n=" + strconv.Itoa(n)
			if back {
				name = "Back/n=" + strconv.Itoa(n)
			}
			b.Run(name, func(b *testing.B) {
				bk, _ := New(Config{Back: back}, names(n))
				keys := make([][]byte, 1024)
				for i := range keys {
					keys[i] = []byte("key:" + strconv.Itoa(i*7919))
				}
				i := 0
				for b.Loop() {
					bk.Lookup(keys[i&1023])
					i++
				}
			})
		}
	}
}
