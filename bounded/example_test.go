package bounded_test

import (
	"fmt"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/bounded"
)

func Example() {
	b, err := bounded.New(bounded.Config{C: 1.25}, []chash.Node{
		{Name: "backend-a", Weight: 1},
		{Name: "backend-b", Weight: 1},
		{Name: "backend-c", Weight: 1},
		{Name: "backend-d", Weight: 1},
	})
	if err != nil {
		panic(err)
	}
	// The same hot key, eight times: no backend takes more than ⌈1.25·m/4⌉.
	for range 8 {
		node, _ := b.AcquireString("hot-key")
		fmt.Println(node)
	}
	fmt.Println(b.Loads())
	// Output:
	// backend-c
	// backend-d
	// backend-b
	// backend-c
	// backend-d
	// backend-b
	// backend-c
	// backend-d
	// [0 2 3 3]
}
