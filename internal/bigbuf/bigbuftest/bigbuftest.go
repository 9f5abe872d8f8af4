// Package bigbuftest measures what code that reuses bigbuf's buffers
// allocates, for tests.
package bigbuftest

import (
	"math"
	"runtime"
)

// BytesPerCall returns the bytes f allocates a call, in the whole process:
// the least of five rounds of 20 calls, since a garbage collection, which
// other tests running at the same time may cause, empties the pools bigbuf
// keeps buffers in, and the round it falls in allocates them again. Call f
// once before, so that the buffers it reuses exist.
func BytesPerCall(f func()) uint64 {
	least := uint64(math.MaxUint64)
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		const calls = 20
		for range calls {
			f()
		}
		runtime.ReadMemStats(&after)
		least = min(least, (after.TotalAlloc-before.TotalAlloc)/calls)
	}
	return least
}
