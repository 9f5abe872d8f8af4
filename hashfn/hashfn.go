// Package hashfn provides the key and point hash functions used by consistent-hash
// rings, each a plain function from bytes to a 32-bit ring position.
//
// The functions are named as twemproxy spells them in its configuration (md5, crc32a,
// fnv1a_64, ...) and are byte-exact with the programs that define them, quirks
// included: several of twemproxy's hashes read key bytes as C's signed char, so keys
// with bytes >= 0x80 hash differently from a "clean" unsigned implementation, and
// twemproxy's fnv1a_64 is really a 32-bit FNV-1a with truncated 64-bit constants.
// Those quirks are kept on purpose: a ring that must route like a deployed program
// must hash like it.
//
// chash adds xxh64 and three hashes of Java programs, which hash a key's UTF-16
// code units as Java's new String(key, UTF_8) reads them: java_fnv1_32 (the seed
// articles' FNV1_32_HASH), java_hashcode (String.hashCode) and
// java_hashcode_spread (the 001 seed article's rehash of it).
//
// Every function is safe for concurrent use and allocates nothing.
package hashfn

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unsafe"
)

// Func hashes a key to a position on the 2^32 ring. It must not retain or modify key.
type Func func(key []byte) uint32

// funcs maps configuration names to functions.
var funcs = map[string]Func{
	// twemproxy's names (src/hashkit/nc_hashkit.h, HASH_CODEC).
	"one_at_a_time": OneAtATime,
	"md5":           MD5,
	"crc16":         CRC16,
	"crc32":         CRC32,
	"crc32a":        CRC32A,
	"fnv1_64":       FNV1_64,
	"fnv1a_64":      FNV1a_64,
	"fnv1_32":       FNV1_32,
	"fnv1a_32":      FNV1a_32,
	"hsieh":         Hsieh,
	"murmur":        Murmur,
	"jenkins":       Jenkins,

	// chash's own additions.
	"xxh64":                XXH64,
	"java_fnv1_32":         JavaFNV1_32,
	"java_hashcode":        JavaHashCode,
	"java_hashcode_spread": JavaHashCodeSpread,
}

// Lookup returns the function with the given configuration name (for example
// "fnv1a_64" or "md5"). Names are matched exactly; an unknown name is an error that
// lists the known ones.
func Lookup(name string) (Func, error) {
	if f, ok := funcs[name]; ok {
		return f, nil
	}
	return nil, fmt.Errorf("hashfn: unknown hash %q (known: %s)", name, strings.Join(Names(), ", "))
}

// maxes holds the largest value of the functions whose values do not cover all
// 32 bits.
var maxes = map[string]uint32{
	"crc32":                0x7fff,     // 15 bits of the CRC, as libmemcached keeps them
	"java_hashcode_spread": 0x7fffffff, // the sign bit cleared
	"java_fnv1_32":         0x80000000, // Math.abs: [0, 2^31-1], and -2^31 once in 2^32
}

// Max returns the largest value the function called name returns: 32767 for
// crc32, 2^31-1 for java_hashcode_spread, 2^31 for java_fnv1_32 and 2^32-1 for
// the others. A key's hash is in [0, Max], so on a ring of 2^32 positions keys
// land only on those positions, and the arcs beyond them own no keys: figures
// computed from arc lengths must count only [0, Max]. An unknown name is an
// error, as for Lookup.
func Max(name string) (uint32, error) {
	if _, err := Lookup(name); err != nil {
		return 0, err
	}
	if m, ok := maxes[name]; ok {
		return m, nil
	}
	return math.MaxUint32, nil
}

// Names returns the names Lookup accepts, sorted.
func Names() []string {
	names := make([]string, 0, len(funcs))
	for n := range funcs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// String hashes s with f without copying it.
func String(f Func, s string) uint32 {
	return f(unsafe.Slice(unsafe.StringData(s), len(s)))
}
