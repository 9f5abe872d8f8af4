package chash_test

import (
	"fmt"

	"github.com/chash-dev/chash"
)

func Example() {
	r, err := chash.New(nil, []chash.Node{
		{Name: "10.0.0.1:11211", Weight: 1},
		{Name: "10.0.0.2:11211", Weight: 1},
		{Name: "10.0.0.3:11211", Weight: 2},
	})
	if err != nil {
		panic(err)
	}
	owner, _ := r.LookupString("user:42")
	replicas, _ := r.AppendNString(nil, "user:42", 2)
	fmt.Println(owner, replicas)

	// Adding a node builds a new ring; keys only move to the new node.
	r2, _ := r.Add(chash.Node{Name: "10.0.0.4:11211", Weight: 1})
	owner2, _ := r2.LookupString("user:42")
	fmt.Println(owner2 == owner || owner2 == "10.0.0.4:11211")
	// Output:
	// 10.0.0.3:11211 [10.0.0.3:11211 10.0.0.1:11211]
	// true
}

func ExampleRing_Shares() {
	r, _ := chash.New(chash.Standard{Points: 160}, []chash.Node{
		{Name: "a", Weight: 1},
		{Name: "b", Weight: 1},
		{Name: "c", Weight: 2},
	})
	for i, share := range r.Shares() {
		fmt.Printf("%s %.3f\n", r.Nodes()[i].Name, float64(share)/(1<<32))
	}
	// Output:
	// a 0.262
	// b 0.260
	// c 0.478
}

func ExampleHolder() {
	var h chash.Holder // empty until a ring is stored
	if _, err := h.LookupString("k"); err != nil {
		fmt.Println(err)
	}
	r, _ := chash.New(nil, []chash.Node{{Name: "cache-1", Weight: 1}})
	h.Store(r)
	// Writers update by building a new ring; readers never lock.
	h.Update(func(r *chash.Ring) (*chash.Ring, error) {
		return r.Add(chash.Node{Name: "cache-2", Weight: 1})
	})
	fmt.Println(h.Load().Len())
	// Output:
	// chash: no nodes
	// 2
}
