// Package algotest holds what the tests of chash's routing algorithms share:
// node lists and keys named one way throughout, and the checks that every
// algorithm's routing must pass.
package algotest

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/chash-dev/chash"
)

// Nodes returns n nodes "node0" … "node<n-1>" of weight 1.
func Nodes(n int) []chash.Node {
	ns := make([]chash.Node, n)
	for i := range ns {
		ns[i] = chash.Node{Name: "node" + strconv.Itoa(i), Weight: 1}
	}
	return ns
}

// Key returns the key "key:<i>".
func Key(i int) []byte { return []byte("key:" + strconv.Itoa(i)) }

// A Router names the node of a key.
type Router interface {
	Lookup(key []byte) (string, error)
}

// OrderIndependent checks that build gives routers that agree on 2000 keys
// for the n nodes of Nodes in order and shuffled.
func OrderIndependent[R Router](t *testing.T, n int, build func([]chash.Node) (R, error)) {
	t.Helper()
	ns := Nodes(n)
	a, err := build(ns)
	if err != nil {
		t.Fatal(err)
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(ns), func(i, j int) { ns[i], ns[j] = ns[j], ns[i] })
	b, err := build(ns)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		x, _ := a.Lookup(Key(i))
		y, _ := b.Lookup(Key(i))
		if x != y {
			t.Fatalf("Lookup(%q) = %q and %q for two orders of the same nodes", Key(i), x, y)
		}
	}
}

// NoAllocs fails the test if f, named what in the message, allocates.
func NoAllocs(t *testing.T, what string, f func()) {
	t.Helper()
	if n := testing.AllocsPerRun(100, f); n != 0 {
		t.Errorf("%s allocates %v times; want 0", what, n)
	}
}
