package analyze_test

import (
	"fmt"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/compat"
	"github.com/chash-dev/chash/internal/analyze"
)

// The seed articles' ring of five servers with five virtual nodes each: its exact
// balance, and what moves when a sixth server joins.
func Example() {
	nodes := []chash.Node{
		{Name: "192.168.0.0:111", Weight: 1}, {Name: "192.168.0.1:111", Weight: 1},
		{Name: "192.168.0.2:111", Weight: 1}, {Name: "192.168.0.3:111", Weight: 1},
		{Name: "192.168.0.4:111", Weight: 1},
	}
	ring, err := chash.New(compat.Seed{Points: 5}, nodes)
	if err != nil {
		panic(err)
	}
	b, err := analyze.Ring(ring)
	if err != nil {
		panic(err)
	}
	for _, n := range b.Nodes {
		fmt.Printf("%s %6.2f%%\n", n.Name, 100*n.Share)
	}
	fmt.Printf("max/mean %.3f, std/mean %.3f\n", b.MaxOverMean, b.StdOverMean)

	grown, err := ring.Add(chash.Node{Name: "192.168.0.5:111", Weight: 1})
	if err != nil {
		panic(err)
	}
	d, err := analyze.Rings(ring, grown)
	if err != nil {
		panic(err)
	}
	fmt.Printf("moved %.2f%% in %d ranges; ideal %.2f%%, modulo %.2f%%\n",
		100*d.Moved, len(d.Ranges), 100*d.Ideal, 100*d.ModuloMoved)
	// Output:
	// 192.168.0.0:111  20.01%
	// 192.168.0.1:111  18.89%
	// 192.168.0.2:111  24.40%
	// 192.168.0.3:111  13.64%
	// 192.168.0.4:111  23.06%
	// max/mean 1.220, std/mean 0.188
	// moved 8.88% in 5 ranges; ideal 16.67%, modulo 83.33%
}

// ModuloMoved is exact for hashes uniform over 32 bits: adding a fourth server to
// three moves three quarters of the keys.
func ExampleModuloMoved() {
	fmt.Printf("%.6f\n", analyze.ModuloMoved([]string{"a", "b", "c"}, []string{"a", "b", "c", "d"}))
	// Output: 0.750000
}
