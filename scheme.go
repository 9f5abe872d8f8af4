package chash

import (
	"fmt"
	"math"

	"github.com/cespare/xxhash/v2"

	"github.com/chash-dev/chash/hashfn"
	"github.com/chash-dev/chash/internal/splitmix"
)

// A Scheme decides where a node's points go and where a key lands. A node's points
// form a sequence fixed by its name; a ring gives each node a prefix of its sequence,
// as long as NumPoints says. Keeping the sequence independent of the other nodes is
// what lets a ring change one node without re-hashing the rest.
//
// Implementations must be deterministic and safe for concurrent use.
type Scheme interface {
	// NumPoints returns how many points a node of the given weight owns in a ring of
	// n nodes whose weights sum to total.
	NumPoints(weight, total, n int) int
	// AppendPoints appends the positions of points from..to-1 of the sequence of the
	// node called name.
	AppendPoints(dst []uint32, name string, from, to int) []uint32
	// Hash returns the ring position of key. It must not retain key.
	Hash(key []byte) uint32
}

// A Validator is a Scheme whose settings can be wrong (a negative count, say).
// New calls Validate before it builds a ring, and returns its error, so that a
// setting out of range is refused rather than read as its default.
type Validator interface {
	Validate() error
}

// DefaultPoints is the number of points per unit of weight Standard gives when its
// Points field is zero, as in ketama and nginx.
const DefaultPoints = 160

// Standard is chash's own scheme, the default for new rings: fast to build, fast to
// look up and well spread.
//
// Point j of a node is the top 32 bits of SplitMix64's output function applied to
// XXH64(name) + (j+1)·0x9E3779B97F4A7C15, so building a node hashes its name once and
// then spends a few multiplications per point. Keys are hashed with KeyHash, XXH64
// by default.
//
// The zero value is ready to use.
type Standard struct {
	// Points is the number of points per unit of weight. If zero, it defaults to
	// DefaultPoints (160). New refuses a negative Points.
	Points int
	// KeyHash hashes keys. If nil, it defaults to hashfn.XXH64.
	KeyHash hashfn.Func
}

// Validate refuses a negative Points.
func (s Standard) Validate() error {
	if s.Points < 0 {
		return fmt.Errorf("chash: Standard.Points %d is negative", s.Points)
	}
	return nil
}

// NumPoints returns Points (or DefaultPoints) times weight (see MulPoints).
func (s Standard) NumPoints(weight, total, n int) int {
	p := s.Points
	if p <= 0 {
		p = DefaultPoints
	}
	return MulPoints(p, weight)
}

// MulPoints returns per·weight, the points of a node of weight for per points
// per unit of weight, or math.MaxInt if that overflows, which a ring refuses as
// more than MaxPoints. Schemes whose points grow with the weight use it.
func MulPoints(per, weight int) int {
	if per > 0 && weight > math.MaxInt/per {
		return math.MaxInt
	}
	return per * weight
}

const golden64 = 0x9E3779B97F4A7C15

// AppendPoints appends points from..to-1 of name's sequence.
func (s Standard) AppendPoints(dst []uint32, name string, from, to int) []uint32 {
	seed := xxhash.Sum64String(name)
	for j := from; j < to; j++ {
		dst = append(dst, uint32(splitmix.Mix64(seed+uint64(j+1)*golden64)>>32))
	}
	return dst
}

// Hash returns the key's ring position.
func (s Standard) Hash(key []byte) uint32 {
	if s.KeyHash != nil {
		return s.KeyHash(key)
	}
	return uint32(xxhash.Sum64(key))
}
