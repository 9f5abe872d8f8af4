package bounded

import (
	"strconv"
	"testing"

	"github.com/chash-dev/chash/internal/algotest"
)

// BenchmarkAcquireRelease measures a load balancer's cycle with about a
// thousand requests in flight.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			bl, _ := New(Config{}, algotest.Nodes(n))
			keys := make([][]byte, 1024)
			names := make([]string, 1024)
			for i := range keys {
				keys[i] = algotest.Key(i * 7919)
				names[i], _ = bl.Acquire(keys[i])
			}
			i := 0
			for b.Loop() {
				j := i & 1023
				bl.Release(names[j])
				names[j], _ = bl.Acquire(keys[j])
				i++
			}
		})
	}
}
