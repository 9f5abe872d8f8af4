package jump_test

import (
	"fmt"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/jump"
)

func Example() {
	b, err := jump.New(jump.Config{}, []chash.Node{
		{Name: "cache-a", Weight: 1},
		{Name: "cache-b", Weight: 1},
		{Name: "cache-c", Weight: 1},
	})
	if err != nil {
		panic(err)
	}
	node, _ := b.LookupString("user:1042")
	fmt.Println(node)
	fmt.Println(jump.Hash(1042, 3), jump.Back(1042, 3))
	// Output:
	// cache-a
	// 1 0
}
