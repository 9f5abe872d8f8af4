package rendezvous_test

import (
	"fmt"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/rendezvous"
)

func Example() {
	s, err := rendezvous.New(rendezvous.Config{}, []chash.Node{
		{Name: "cache-a", Weight: 1},
		{Name: "cache-b", Weight: 2}, // wins twice as many keys
		{Name: "cache-c", Weight: 1},
	})
	if err != nil {
		panic(err)
	}
	owner, _ := s.LookupString("user:1042")
	replicas, _ := s.AppendNString(nil, "user:1042", 2)
	fmt.Println(owner, replicas)
	// Output:
	// cache-b [cache-b cache-a]
}
