package compat

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/chash-dev/chash/hashfn"

	"github.com/chash-dev/chash"
)

// DefaultSeedLabel is the string the seed articles hash for virtual node i of a
// server: "192.168.0.0:111&&VN0", "192.168.0.0:111&&VN1", ...
const DefaultSeedLabel = "{name}&&VN{i}"

// Seed is the ring of the seed articles' Java code: a TreeMap<Integer, String> from
// getHash(label) to server, looked up with tailMap(getHash(key)).firstKey().
// SeedArticle000 ... SeedArticle004 return the Seed of each article's program.
//
// A server owns Points×weight points, point i at HashFunc(Label with {name} and {i}
// replaced); with Points zero it owns exactly one point, HashFunc(name), whatever its
// weight. Keys are hashed with HashFunc too.
//
// Java orders the TreeMap by signed int. The default hash, java_fnv1_32, returns a
// value in [0, 2^31) or, from Math.abs, exactly -2^31; Seed places v ≥ 0 at 2v+1 and
// -2^31 at 0. That keeps Java's order, so routing is exact, and spreads the 2^31
// possible values over the whole ring, so arc lengths are key fractions. With Signed
// set (for hashes whose values are any Java int, such as java_hashcode) the sign bit
// is flipped instead, which also keeps Java's order.
//
// Two differences from the Java programs, both on purpose: a key past the last point
// wraps to the first (one article's program throws NoSuchElementException there), and
// when two servers' points collide the ring's tie rule decides (chash.Node.Order, then
// name) where Java's TreeMap.put keeps the server added last. Giving each server a
// lower Order than the one before it, as the seed distribution of chash's
// configuration does, makes the two rules agree.
//
// The zero value is the first article's ring without virtual nodes.
type Seed struct {
	// Points is the number of virtual nodes per unit of weight. Zero means one point
	// per server, at the hash of its name; chash.New refuses a negative one.
	Points int
	// Label is the string hashed for virtual node {i} of server {name}: each {name}
	// is replaced by the server's name and each {i} by i in decimal; other text,
	// braces included, is kept. If empty, it defaults to DefaultSeedLabel. The
	// articles use "{name}&&VN{i}", "{i}:{name}", "{name}#{i}" and "{name}{i}".
	Label string
	// HashFunc hashes labels and keys. If nil, it defaults to hashfn.JavaFNV1_32.
	HashFunc hashfn.Func
	// Signed says HashFunc's values are Java ints of either sign; see the type's doc.
	Signed bool
}

// Validate refuses a negative Points (chash.Validator).
func (s Seed) Validate() error {
	if s.Points < 0 {
		return fmt.Errorf("compat: Seed.Points %d is negative", s.Points)
	}
	return nil
}

// NumPoints returns Points×weight, or 1 when Points is zero.
func (s Seed) NumPoints(weight, total, n int) int {
	if s.Points <= 0 {
		return 1
	}
	return chash.MulPoints(s.Points, weight)
}

// AppendPoints appends the positions of virtual nodes from..to-1 of name.
func (s Seed) AppendPoints(dst []uint32, name string, from, to int) []uint32 {
	if s.Points <= 0 {
		if from == 0 && to > 0 {
			dst = append(dst, s.pos(s.hash()([]byte(name))))
		}
		return dst
	}
	label := s.Label
	if label == "" {
		label = DefaultSeedLabel
	}
	h := s.hash()
	var b []byte
	for i := from; i < to; i++ {
		b = appendLabel(b[:0], label, name, i)
		dst = append(dst, s.pos(h(b)))
	}
	return dst
}

// appendLabel appends label with each {name} replaced by name and each {i} by i
// in decimal, in one pass, so that a name containing "{i}" is kept as it is.
func appendLabel(b []byte, label, name string, i int) []byte {
	for {
		j := strings.IndexByte(label, '{')
		if j < 0 {
			return append(b, label...)
		}
		b = append(b, label[:j]...)
		switch label = label[j:]; {
		case strings.HasPrefix(label, "{name}"):
			b = append(b, name...)
			label = label[len("{name}"):]
		case strings.HasPrefix(label, "{i}"):
			b = strconv.AppendInt(b, int64(i), 10)
			label = label[len("{i}"):]
		default:
			b = append(b, '{')
			label = label[1:]
		}
	}
}

// Hash returns key's ring position.
func (s Seed) Hash(key []byte) uint32 {
	return s.pos(s.hash()(key))
}

func (s Seed) hash() hashfn.Func {
	if s.HashFunc != nil {
		return s.HashFunc
	}
	return hashfn.JavaFNV1_32
}

// pos maps a Java int, given as its 32 bits, to a ring position in Java's order.
func (s Seed) pos(v uint32) uint32 {
	if s.Signed {
		return v ^ 1<<31
	}
	if v >= 1<<31 {
		return 0 // only -2^31, from Math.abs(Integer.MIN_VALUE)
	}
	return v<<1 | 1
}
