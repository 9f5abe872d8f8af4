package memento_test

import (
	"errors"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/memento"
)

// TestZeroBuckets: the zero Buckets has no node, as the other packages' zero
// values: chash.ErrEmpty, not a nil dereference; and nodes can be added to it,
// as to jump's zero Buckets, giving what New gives.
func TestZeroBuckets(t *testing.T) {
	var b memento.Buckets
	if _, err := b.LookupString("k"); !errors.Is(err, chash.ErrEmpty) {
		t.Errorf("zero Buckets: %v; want chash.ErrEmpty", err)
	}
	nodes := []chash.Node{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}, {Name: "c", Weight: 1}}
	got, err := b.Add(nodes...)
	if err != nil {
		t.Fatalf("zero Buckets: Add: %v", err)
	}
	want, err := memento.New(memento.Config{}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if got.Len() != 3 {
		t.Errorf("zero Buckets after Add: Len = %d; want 3", got.Len())
	}
	for _, k := range []string{"k", "user:1", "user:2", "user:3", "user:4"} {
		g, err := got.LookupString(k)
		w, _ := want.LookupString(k)
		if g != w || err != nil {
			t.Errorf("zero Buckets after Add: LookupString(%q) = %q, %v; want %q", k, g, err, w)
		}
	}
	if _, err := b.Add(chash.Node{Name: "a", Weight: 1}, chash.Node{Name: "a", Weight: 1}); err == nil {
		t.Errorf("zero Buckets: Add of a node twice: no error")
	}
}
