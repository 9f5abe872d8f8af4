package multiprobe_test

import (
	"math"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/multiprobe"
)

// TestWeightOverflow: a weight whose points overflow is an error (it gave the
// node no point, and AppendN then looked for it forever).
func TestWeightOverflow(t *testing.T) {
	nodes := []chash.Node{{Name: "a", Weight: 1}, {Name: "b", Weight: math.MaxInt/2 + 1}}
	if r, err := multiprobe.New(multiprobe.Config{Points: 2}, nodes); err == nil {
		t.Fatalf("New = %v, nil; want an error for b", r)
	}
}
