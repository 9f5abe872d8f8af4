package memento_test

import (
	"fmt"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/memento"
)

func Example() {
	b, err := memento.New(memento.Config{}, []chash.Node{
		{Name: "cache-a", Weight: 1},
		{Name: "cache-b", Weight: 1},
		{Name: "cache-c", Weight: 1},
		{Name: "cache-d", Weight: 1},
	})
	if err != nil {
		panic(err)
	}
	before, _ := b.LookupString("user:1042")
	// Any node can go, not only the last; only its keys move.
	b2, _ := b.Remove(before)
	after, _ := b2.LookupString("user:1042")
	fmt.Println(before, "->", after)
	// Output:
	// cache-a -> cache-c
}
