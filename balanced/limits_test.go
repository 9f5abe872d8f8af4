package balanced_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/balanced"
)

// TestLimits: Points that overflow with a weight are refused, not a ring of
// nodes without tokens; the zero Ring takes nodes as New's does.
func TestLimits(t *testing.T) {
	nodes := []chash.Node{{Name: "a", Weight: 4}, {Name: "b", Weight: 4}}
	if r, err := balanced.New(balanced.Config{Points: 1 << 62}, nodes); err == nil {
		t.Errorf("New with Points 2^62 = %v, nil; want an error", r)
	}
	var zero balanced.Ring
	r, err := zero.Add(nodes...)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := balanced.New(balanced.Config{}, nodes)
	for _, k := range []string{"x", "y", "z", "w"} {
		got, err := r.LookupString(k)
		if w, _ := want.LookupString(k); err != nil || got != w {
			t.Errorf("zero Ring after Add: %s -> %q, %v; want %q as New's", k, got, err, w)
		}
	}
	if _, err := new(balanced.Ring).LookupString("x"); !errors.Is(err, chash.ErrEmpty) {
		t.Errorf("zero Ring lookup: %v; want chash.ErrEmpty", err)
	}
}

// TestRemoveTwice checks that Remove refuses a node named twice.
func TestRemoveTwice(t *testing.T) {
	r, err := balanced.New(balanced.Config{}, []chash.Node{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Remove("a", "a"); err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf(`Remove("a", "a") error %v; want one naming "a"`, err)
	}
}
