package hashfn

import "github.com/cespare/xxhash/v2"

// XXH64 returns the low 32 bits of XXH64 (seed 0) of key. It is the fastest
// well-mixed function here and the key hash of chash's own ring.
func XXH64(key []byte) uint32 {
	return uint32(xxhash.Sum64(key))
}
