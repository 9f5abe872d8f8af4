package balanced_test

import (
	"fmt"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/balanced"
)

func Example() {
	r, err := balanced.New(balanced.Config{}, []chash.Node{
		{Name: "cache-a", Weight: 1},
		{Name: "cache-b", Weight: 1},
		{Name: "cache-c", Weight: 1},
	})
	if err != nil {
		panic(err)
	}
	// A fourth node joins at the end of the list and takes exactly a quarter.
	r, _ = r.Add(chash.Node{Name: "cache-d", Weight: 1})
	shares := r.Ring().Shares()
	for i, n := range r.Ring().Nodes() {
		fmt.Printf("%s %.4f\n", n.Name, float64(shares[i])/(1<<32))
	}
	// Output:
	// cache-a 0.2552
	// cache-b 0.2396
	// cache-c 0.2552
	// cache-d 0.2500
}
