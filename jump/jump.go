// Package jump implements jump consistent hashing and JumpBackHash, which map a
// 64-bit key to one of n numbered buckets with no memory beyond n, and wraps
// them so that lookups return named nodes.
//
// Hash is the algorithm of John Lamping and Eric Veach, "A Fast, Minimal Memory,
// Consistent Hash Algorithm" (2014, arXiv:1406.2294). It takes O(ln n) steps, each
// with a floating-point division. Back is JumpBackHash, from Otmar Ertl,
// "JumpBackHash: Say Goodbye to the Modulo Operation to Distribute Keys Uniformly
// to Buckets" (2024, arXiv:2403.18682), in the SplitMix64 variant of its reference
// implementation (Dynatrace's hash4j): it walks the same kind of jump sequence
// backwards from the top bucket, in expected constant time with integer
// arithmetic only.
//
// Both are consistent: going from n to n+1 buckets moves a key only into the new
// bucket n, and each bucket gets 1/n of the keys. They are not the same function:
// a key generally lands in different buckets under Hash and Back.
//
// # Limits
//
// Buckets are numbered, not named, and only the last one can go away: removing
// bucket i < n-1 renumbers every bucket after it and moves most keys. Nodes have
// no weights. Buckets wraps the functions for named nodes within these limits: the
// node list order is the bucket order, Add appends, Remove accepts only the last
// node, and weights other than 1 are an error. For arbitrary removal at similar
// speed see package memento; for weights, rendezvous, maglev or the ring.
package jump

import (
	"math/bits"

	"github.com/chash-dev/chash/internal/splitmix"
)

// Hash returns the bucket in [0, n) of key under Lamping and Veach's jump
// consistent hash, or -1 if n < 1. It returns what the paper's C++ function
// JumpConsistentHash returns for the same key and bucket count.
func Hash(key uint64, n int) int {
	b, j := int64(-1), int64(0)
	for j < int64(n) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(1<<31) / float64(key>>33+1)))
	}
	return int(b)
}

// Back returns the bucket in [0, n) of key under JumpBackHash, or -1 if n < 1.
// n must fit in 31 bits, as in the reference implementation; larger n are
// treated as 2^31-1. It follows hash4j's jumpBackHashSplitMix64 step for step;
// its golden vectors come from a Java rendering of that code
// (testdata/JumpBackRef.java), not from hash4j itself, which needs a build
// system this repository does not use.
func Back(key uint64, n int) int {
	if n <= 1 {
		if n < 1 {
			return -1
		}
		return 0
	}
	if n > 1<<31-1 {
		n = 1<<31 - 1
	}
	nb := uint32(n)
	state := key + golden
	r0 := splitmix.Mix64(state)
	// Bit i of x is set when the key's jump sequence has a jump in [2^i, 2^(i+1)),
	// an event of probability 1/2; only intervals below n matter.
	x := uint32(r0^r0>>32) & (1<<bits.Len32(nb-1) - 1)
	for x != 0 {
		lo := uint32(1) << (bits.Len32(x) - 1) // the highest interval left, [lo, 2lo)
		// The interval's last jump is uniform in [lo, 2lo). Which half of r0
		// supplies it alternates with the number of intervals left, as in the
		// reference implementation (a Java long shift by 32·popcount, mod 64).
		shift := uint(bits.OnesCount32(x)<<5) & 63
		b := lo + uint32(r0>>shift)&(lo-1)
		if b < nb {
			return int(b)
		}
		// The last jump is at or past n: the last jump below it is uniform in
		// [0, b), with values under lo meaning none in this interval. Draw 32
		// bits at a time from further SplitMix64 outputs, rejecting values
		// past the interval.
		mask := lo<<1 - 1
		for {
			state += golden
			r1 := splitmix.Mix64(state)
			c := uint32(r1) & mask
			if c < lo {
				break
			}
			if c < nb {
				return int(c)
			}
			c = uint32(r1>>32) & mask
			if c < lo {
				break
			}
			if c < nb {
				return int(c)
			}
		}
		x ^= lo
	}
	return 0
}

const golden = 0x9E3779B97F4A7C15
