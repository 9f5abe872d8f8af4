package multiprobe

import (
	"strconv"
	"testing"

	"github.com/chash-dev/chash/internal/algotest"
)

var sizes = []int{10, 100, 1000}

func BenchmarkLookup(b *testing.B) {
	for _, n := range sizes {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			r, _ := New(Config{}, algotest.Nodes(n))
			keys := make([][]byte, 1024)
			for i := range keys {
				keys[i] = algotest.Key(i * 7919)
			}
			i := 0
			for b.Loop() {
				r.Lookup(keys[i&1023])
				i++
			}
		})
	}
}
