package maglev_test

import (
	"fmt"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/maglev"
)

func Example() {
	t, err := maglev.New(maglev.Config{}, []chash.Node{
		{Name: "backend-a", Weight: 1},
		{Name: "backend-b", Weight: 1},
		{Name: "backend-c", Weight: 2},
	})
	if err != nil {
		panic(err)
	}
	node, _ := t.LookupString("10.1.2.3:51234")
	fmt.Println(node)
	// Output:
	// backend-c
}
