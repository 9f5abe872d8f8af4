package memento_test

import (
	"errors"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/memento"
)

// TestZeroBuckets: the zero Buckets has no node, as the other packages' zero
// values: chash.ErrEmpty, not a nil dereference.
func TestZeroBuckets(t *testing.T) {
	var b memento.Buckets
	if _, err := b.LookupString("k"); !errors.Is(err, chash.ErrEmpty) {
		t.Errorf("zero Buckets: %v; want chash.ErrEmpty", err)
	}
}
