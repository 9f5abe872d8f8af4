package compat_test

import (
	"fmt"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/compat"
	"github.com/chash-dev/chash/hashfn"
)

// ExampleKetama routes keys as nutcracker does for the pool
//
//	servers:
//	 - 10.0.0.1:11211:1
//	 - 10.0.0.2:11211:1
//	 - 10.0.0.3:11212:2 cache3
//
// with "hash: fnv1a_64" and "hash_tag: {}".
func ExampleKetama() {
	var nodes []chash.Node
	for _, s := range []struct{ host, port, alias string }{
		{"10.0.0.1", "11211", ""},
		{"10.0.0.2", "11211", ""},
		{"10.0.0.3", "11212", "cache3"},
	} {
		name := compat.TwemproxyName(s.host, s.port, s.alias) // "10.0.0.1", ..., "cache3"
		nodes = append(nodes, chash.Node{Name: name, Weight: 1, Order: len(name)})
	}
	nodes[2].Weight = 2
	r, err := chash.New(compat.Ketama{KeyHash: hashfn.FNV1a_64, HashTag: "{}"}, nodes)
	if err != nil {
		panic(err)
	}
	for _, k := range []string{"{user1}:name", "{user1}:mail", "alice", "bob", "carol", "dave", "erin"} {
		s, _ := r.LookupString(k)
		fmt.Println(k, s)
	}
	// Output:
	// {user1}:name 10.0.0.1
	// {user1}:mail 10.0.0.1
	// alice 10.0.0.1
	// bob 10.0.0.1
	// carol cache3
	// dave cache3
	// erin cache3
}

// ExampleNginx routes keys as "hash $key consistent" does in
//
//	upstream backend {
//	    hash $key consistent;
//	    server 10.0.0.1:8080;
//	    server 10.0.0.2:8080 weight=2;
//	}
func ExampleNginx() {
	r, err := chash.New(compat.Nginx{}, []chash.Node{
		{Name: "10.0.0.1:8080", Weight: 1, Order: 0},
		{Name: "10.0.0.2:8080", Weight: 2, Order: 1},
	})
	if err != nil {
		panic(err)
	}
	for _, k := range []string{"/index.html", "/img/logo.png"} {
		s, _ := r.LookupString(k)
		fmt.Println(k, s)
	}
	// Output:
	// /index.html 10.0.0.1:8080
	// /img/logo.png 10.0.0.2:8080
}

// ExampleNewModula routes keys as nutcracker does for the pool
//
//	distribution: modula
//	hash: fnv1a_64
//	servers:
//	 - 10.0.0.1:11211:1
//	 - 10.0.0.2:11211:2
//
// whose table has one slot per unit of weight: a key goes to slot hash mod 3.
func ExampleNewModula() {
	m, err := compat.NewModula([]chash.Node{
		{Name: compat.TwemproxyName("10.0.0.1", "11211", ""), Weight: 1},
		{Name: compat.TwemproxyName("10.0.0.2", "11211", ""), Weight: 2},
	}, hashfn.FNV1a_64, "")
	if err != nil {
		panic(err)
	}
	for _, k := range []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace"} {
		s, _ := m.LookupString(k)
		fmt.Println(k, s)
	}
	// Output:
	// alice 10.0.0.2
	// bob 10.0.0.2
	// carol 10.0.0.2
	// dave 10.0.0.2
	// erin 10.0.0.1
	// frank 10.0.0.1
	// grace 10.0.0.2
}

// ExampleLibmemcached_For routes keys as a libmemcached client does with
// MEMCACHED_BEHAVIOR_DISTRIBUTION set to KETAMA and a server of weight 2:
// For switches to the weighted ring, as libmemcached does when such a server
// is added.
func ExampleLibmemcached_For() {
	nodes := []chash.Node{
		{Name: "10.0.0.1:11211", Weight: 1, Order: 0},
		{Name: "10.0.0.2:11211", Weight: 2, Order: 1},
	}
	l := compat.Libmemcached{}.For(nodes)
	fmt.Println("weighted:", l.Weighted)
	r, err := chash.New(l, nodes)
	if err != nil {
		panic(err)
	}
	for _, k := range []string{"alice", "bob", "carol", "dave"} {
		s, _ := r.LookupString(k)
		fmt.Println(k, s)
	}
	// Output:
	// weighted: true
	// alice 10.0.0.2:11211
	// bob 10.0.0.2:11211
	// carol 10.0.0.1:11211
	// dave 10.0.0.2:11211
}

// ExampleLibketama routes keys as npm hashring does for
//
//	new HashRing({'10.0.0.1:11211': 1, '10.0.0.2:11211': 1, '10.0.0.3:11211': 1})
//
// where the server listed first wins a tie of points (Order: its index).
func ExampleLibketama() {
	var nodes []chash.Node
	for i, name := range []string{"10.0.0.1:11211", "10.0.0.2:11211", "10.0.0.3:11211"} {
		nodes = append(nodes, chash.Node{Name: name, Weight: 1, Order: i})
	}
	r, err := chash.New(compat.Libketama{}, nodes)
	if err != nil {
		panic(err)
	}
	for _, k := range []string{"alice", "bob", "carol", "dave"} {
		s, _ := r.LookupString(k)
		fmt.Println(k, s)
	}
	// Output:
	// alice 10.0.0.3:11211
	// bob 10.0.0.2:11211
	// carol 10.0.0.3:11211
	// dave 10.0.0.1:11211
}
