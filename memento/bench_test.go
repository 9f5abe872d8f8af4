package memento

import (
	"strconv"
	"testing"

	"github.com/chash-dev/chash/internal/algotest"
)

// BenchmarkLookup measures lookups with none, a tenth and half of the nodes
// removed (from the middle of the list, the case jump cannot do).
func BenchmarkLookup(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		for _, pct := range []int{0, 10, 50} {
			b.Run("n="+strconv.Itoa(n)+"/removed="+strconv.Itoa(pct)+"%", func(b *testing.B) {
				bk, _ := New(Config{}, algotest.Nodes(n))
				for i := range n * pct / 100 {
					bk, _ = bk.Remove("node" + strconv.Itoa(i*100/pct))
				}
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
