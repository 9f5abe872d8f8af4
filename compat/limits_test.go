package compat_test

import (
	"errors"
	"math"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/compat"
)

// TestLimits: the zero Modula has no node (chash.ErrEmpty, not a division by
// zero), and nginx's 160 points per unit of weight over MaxPoints is an error.
func TestLimits(t *testing.T) {
	var m compat.Modula
	if _, err := m.LookupString("k"); !errors.Is(err, chash.ErrEmpty) {
		t.Errorf("zero Modula: %v; want chash.ErrEmpty", err)
	}
	for _, w := range []int{1 << 20, math.MaxInt} {
		if _, err := chash.New(compat.Nginx{}, []chash.Node{{Name: "10.0.0.1:80", Weight: w}}); err == nil {
			t.Errorf("nginx ring of weight %d: no error", w)
		}
	}
}
