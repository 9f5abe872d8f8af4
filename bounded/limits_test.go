package bounded_test

import (
	"errors"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/bounded"
)

// TestZeroBalancer: the zero Balancer has no node, and answers as one built
// over no nodes does, Ring included: chash.ErrEmpty, never a nil dereference.
func TestZeroBalancer(t *testing.T) {
	var b bounded.Balancer
	if _, err := b.AcquireString("k"); !errors.Is(err, chash.ErrEmpty) {
		t.Errorf("zero Balancer: Acquire: %v; want chash.ErrEmpty", err)
	}
	if _, err := b.LookupString("k"); !errors.Is(err, chash.ErrEmpty) {
		t.Errorf("zero Balancer: Lookup: %v; want chash.ErrEmpty", err)
	}
	if err := b.Release("a"); err == nil {
		t.Errorf("zero Balancer: Release of an unknown node: no error")
	}
	r := b.Ring()
	if r == nil {
		t.Fatal("zero Balancer: Ring() = nil; want an empty ring")
	}
	if _, err := r.LookupString("k"); !errors.Is(err, chash.ErrEmpty) {
		t.Errorf("zero Balancer: Ring().Lookup: %v; want chash.ErrEmpty", err)
	}
	if r.Len() != 0 || r.NumPoints() != 0 {
		t.Errorf("zero Balancer: Ring() has %d nodes, %d points; want none", r.Len(), r.NumPoints())
	}
}
