package maglev_test

import (
	"math"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/maglev"
)

// TestWeightsOverflow: weights whose sum overflows are over any table, not a
// negative total that passes the check and leaves nodes without entries.
func TestWeightsOverflow(t *testing.T) {
	nodes := []chash.Node{{Name: "a", Weight: math.MaxInt}, {Name: "b", Weight: math.MaxInt}, {Name: "c", Weight: 3}}
	if tb, err := maglev.New(maglev.Config{}, nodes); err == nil {
		t.Fatalf("New = %v, nil; want an error", tb)
	}
}
