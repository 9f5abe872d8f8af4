package chash_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash"
)

// TestPointsCap: a weight or Points that would give a ring more than
// MaxPoints points is an error from New, Add and Reweight, never a ring built
// at that size nor, overflowing, a node silently given no point.
func TestPointsCap(t *testing.T) {
	small := chash.Node{Name: "a", Weight: 1}
	for _, tt := range []struct {
		name   string
		scheme chash.Scheme
		weight int
	}{
		{"weight in megabytes", nil, 1 << 20},
		{"weight that overflows", nil, math.MaxInt/160 + 1},
		{"largest weight", nil, math.MaxInt},
		{"points that overflow", chash.Standard{Points: math.MaxInt / 2}, 3}, // a is over the cap already: the error names it
	} {
		big := chash.Node{Name: "b", Weight: tt.weight}
		name := `node "b"`
		if tt.scheme != nil {
			name = `node "a"`
		}
		if _, err := chash.New(tt.scheme, []chash.Node{small, big}); err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "more than 16777216 points") {
			t.Errorf("%s: New = %v; want the cap's error naming %s", tt.name, err, name)
		}
		if tt.scheme != nil {
			continue // a node of weight 1 is over the cap already
		}
		r, err := chash.New(nil, []chash.Node{small})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Add(big); err == nil {
			t.Errorf("%s: Add: no error", tt.name)
		}
		if _, err := r.Reweight(chash.Node{Name: "a", Weight: tt.weight}); err == nil {
			t.Errorf("%s: Reweight: no error", tt.name)
		}
	}
	if got := chash.MulPoints(160, math.MaxInt/100); got != math.MaxInt {
		t.Errorf("MulPoints overflowing = %d; want math.MaxInt", got)
	}
	// One point past the cap, with two nodes (the sum is what counts).
	two := []chash.Node{{Name: "a", Weight: chash.MaxPoints / 2}, {Name: "b", Weight: chash.MaxPoints/2 + 1}}
	if _, err := chash.New(chash.Standard{Points: 1}, two); err == nil {
		t.Errorf("a ring of MaxPoints+1 points: no error")
	}
}

// TestRemoveTwice checks that Remove and Reweight refuse a node named twice,
// as memento does, rather than act on it once; and that balanced's Remove
// does too.
func TestRemoveTwice(t *testing.T) {
	r, err := chash.New(nil, []chash.Node{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Remove("a", "a"); err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf(`Remove("a", "a") error %v; want one naming "a"`, err)
	}
	if _, err := r.Reweight(chash.Node{Name: "b", Weight: 2}, chash.Node{Name: "b", Weight: 3}); err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf(`Reweight(b, b) error %v; want one naming "b"`, err)
	}
}

// TestNegativePoints checks that New refuses Standard with negative Points
// instead of giving it the default, as multiprobe, balanced and bounded do.
func TestNegativePoints(t *testing.T) {
	_, err := chash.New(chash.Standard{Points: -1}, []chash.Node{{Name: "a", Weight: 1}})
	if err == nil || !strings.Contains(err.Error(), "-1") {
		t.Errorf("New(Standard{Points: -1}) error %v; want one naming -1", err)
	}
}

// shortScheme is a Scheme that breaks its contract: it says each node owns
// four points but gives node "b" none.
type shortScheme struct{ chash.Standard }

func (shortScheme) NumPoints(weight, total, n int) int { return 4 }

func (s shortScheme) AppendPoints(dst []uint32, name string, from, to int) []uint32 {
	if name == "b" {
		return dst
	}
	return s.Standard.AppendPoints(dst, name, from, to)
}

// TestShortScheme: a ring of a Scheme that gives a node fewer points than it
// says answers AppendN with the owners it has, where the walk for distinct
// owners went round the ring for ever.
func TestShortScheme(t *testing.T) {
	r, err := chash.New(shortScheme{}, []chash.Node{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []string)
	go func() {
		got, _ := r.AppendNString(nil, "k", 2)
		done <- got
	}()
	select {
	case got := <-done:
		if len(got) != 1 || got[0] != "a" {
			t.Errorf("AppendNString(k, 2) = %q; want [a], the one node with points", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("AppendNString(k, 2) did not return in 10 s")
	}
}
