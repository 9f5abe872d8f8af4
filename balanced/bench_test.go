package balanced

import (
	"strconv"
	"testing"

	"github.com/chash-dev/chash/internal/algotest"
)

func BenchmarkNew(b *testing.B) {
	for _, points := range []int{16, 160} {
		for _, n := range []int{10, 100, 1000} {
			b.Run("points="+strconv.Itoa(points)+"/n="+strconv.Itoa(n), func(b *testing.B) {
				ns := algotest.Nodes(n)
				for b.Loop() {
					New(Config{Points: points}, ns)
				}
			})
		}
	}
}

func BenchmarkAdd(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			r, _ := New(Config{}, algotest.Nodes(n))
			extra := algotest.Nodes(n + 1)[n]
			for b.Loop() {
				r.Add(extra)
			}
		})
	}
}

func BenchmarkLookup(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			r, _ := New(Config{}, algotest.Nodes(n))
			keys := make([][]byte, 1024)
			for i := range keys {
				keys[i] = []byte("key:" + strconv.Itoa(i*7919))
			}
			i := 0
			for b.Loop() {
				r.Lookup(keys[i&1023])
				i++
			}
		})
	}
}
