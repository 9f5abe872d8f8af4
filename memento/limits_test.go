package memento_test

import (
	"errors"
	"strings"
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

// TestRemoveTwice: a node named twice in one Remove is refused as such, as
// chash's and balanced's Remove refuse it, not reported as absent.
func TestRemoveTwice(t *testing.T) {
	b, err := memento.New(memento.Config{}, []chash.Node{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Remove("a", "a"); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf(`Remove("a", "a") error %v; want one saying "a" is named twice`, err)
	}
	if _, err := b.Remove("c"); err == nil || !strings.Contains(err.Error(), "no such node") {
		t.Errorf(`Remove("c") error %v; want "no such node"`, err)
	}
}
