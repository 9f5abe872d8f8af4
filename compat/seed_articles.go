package compat

import (
	"fmt"

	"github.com/chash-dev/chash/hashfn"
)

// The seed articles are five blog posts, four in Chinese and one in English,
// that explain consistent hashing with a small Java ring each: servers placed at
// the hashes of their names (or of numbered virtual nodes), a key served by the
// first server at or after its hash. chash began as a study of them. Each
// function below returns the Seed that routes every key as one article's ring
// does, given its servers in the order the Java program adds them; the articles
// are numbered 000 to 004, in the order chash studied them. Their tests run the
// articles' programs, rebuilt in compat/testdata/seed, on thousands of keys.

// SeedArticle000 is the ring of article 000, a Chinese post that first places five
// servers on a ring without virtual nodes and then, to even out their shares, with
// them: its ConsistentHashingWithVirtualNode gives 5 virtual nodes per server,
// "192.168.0.0:111&&VN0" ... "192.168.0.0:111&&VN4", hashed with the article's
// FNV1_32_HASH getHash (java_fnv1_32), as are keys. For another VIRTUAL_NODES set
// Points. The article's first program, ConsistentHashingWithoutVirtualNode, is
// SeedArticle003's ring. (Its getServer cuts a server's name at its first "&&";
// chash returns the whole name, so give no server a name with "&&" in it.)
func SeedArticle000() Seed {
	return Seed{Points: 5}
}

// SeedArticle001 is the ring of article 001, a Chinese post on data skew that
// writes a generic ConsistentHash<T> class; built with its no-argument constructor,
// it puts 3 replicas per server at rehash(i + ":" + node), "0:192.168.2.106" ...
// "2:192.168.2.106", and keys at rehash(key), where rehash is String.hashCode
// spread and made non-negative (java_hashcode_spread). Its lookup, the first point
// ≥ the key's hash with the index taken modulo the number of points, is Seed's. For
// ConsistentHash(replicas, Utils::rehash) set Points.
func SeedArticle001() Seed {
	return Seed{Points: 3, Label: "{i}:{name}", HashFunc: hashfn.JavaHashCodeSpread}
}

// SeedArticle002 is the ring of article 002, a Chinese post on consistent hashing
// for distributed storage, whose new ConsistentHash(replicas, nodes) places virtual
// nodes node + "#" + i, "192.168.0.1:8888#0" ..., and keys, hashed with the
// FNV1_32_HASH getHash (java_fnv1_32). It is an error if replicas is below 1: the
// Java ring would then be empty.
func SeedArticle002(replicas int) (Seed, error) {
	if replicas < 1 {
		return Seed{}, fmt.Errorf("compat: seed article 002: %d replicas; want at least 1", replicas)
	}
	return Seed{Points: replicas, Label: "{name}#{i}"}, nil
}

// SeedArticle003 is the ring of article 003, a Chinese post that walks through
// adding and removing a server, with its ConsistentHashingWithoutVirtualNode: no
// virtual nodes, one point per server at getHash(server), keys at getHash(key),
// with the FNV1_32_HASH getHash (java_fnv1_32). It is also the first program of
// SeedArticle000's article, except that that one throws NoSuchElementException for
// a key past the last point where this one, like the 003 program, wraps to the
// first.
func SeedArticle003() Seed {
	return Seed{}
}

// SeedArticle004 is the ring of article 004, an English post on laying out servers
// with a hash function, whose new ConsistentHash<T>(hashFunction, replicas, nodes)
// places virtual nodes at hashFunction.hash(node.toString() + i),
// "192.168.0.1:88880", "192.168.0.1:88881", ..., and keys at
// hashFunction.hash(key), where hashFunction is the function called hash (see
// Seed.WithHash; java_hashcode is key.hashCode()). It is an error if replicas is
// below 1 or the hash is unknown.
func SeedArticle004(replicas int, hash string) (Seed, error) {
	if replicas < 1 {
		return Seed{}, fmt.Errorf("compat: seed article 004: %d replicas; want at least 1", replicas)
	}
	return Seed{Points: replicas, Label: "{name}{i}"}.WithHash(hash)
}

// WithHash returns s hashing labels and keys with the function called name (see
// hashfn.Lookup), with Signed set as that function's values need. It is false for
// java_fnv1_32 and java_hashcode_spread, whose values as Java ints are never
// negative (but for java_fnv1_32's one -2^31), so that their positions spread over
// the whole ring; it is true for every other function, whose 32 bits are read as a
// Java int of either sign, as a Java ring of Integer positions orders them.
func (s Seed) WithHash(name string) (Seed, error) {
	f, err := hashfn.Lookup(name)
	if err != nil {
		return Seed{}, fmt.Errorf("compat: %w", err)
	}
	s.HashFunc = f
	s.Signed = name != "java_fnv1_32" && name != "java_hashcode_spread"
	return s, nil
}
