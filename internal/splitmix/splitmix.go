// Package splitmix holds SplitMix64's output function, which chash's ring and
// several algorithm packages use to spread hashes and seeds: one copy, out of
// the packages' exported API.
package splitmix

// Mix64 is SplitMix64's output function (Steele, Lea, Flood: "Fast splittable
// pseudorandom number generators", OOPSLA 2014): a bijection of 64-bit values
// whose every output bit depends on every input bit. chash's own ring, jump's
// JumpBackHash, maglev, memento, multiprobe and rendezvous spread their hashes
// and seeds with it.
func Mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}
