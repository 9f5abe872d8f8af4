package multiprobe_test

import (
	"fmt"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/multiprobe"
)

func Example() {
	r, err := multiprobe.New(multiprobe.Config{}, []chash.Node{
		{Name: "cache-a", Weight: 1},
		{Name: "cache-b", Weight: 1},
		{Name: "cache-c", Weight: 1},
	})
	if err != nil {
		panic(err)
	}
	owner, _ := r.LookupString("user:1042")
	replicas, _ := r.AppendNString(nil, "user:1042", 2)
	fmt.Println(owner, replicas)
	// Output:
	// cache-c [cache-c cache-b]
}
