package analyze

import (
	"fmt"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/internal/config"
)

func benchRing(b *testing.B, n int) *chash.Ring {
	ns := make([]chash.Node, n)
	for i := range ns {
		ns[i] = chash.Node{Name: fmt.Sprintf("10.0.%d.%d:11211", i/256, i%256), Weight: 1}
	}
	return mustRing(b, nil, ns...)
}

// BenchmarkRing measures exact shares and the summary of rings of 160 points per
// node (the budget: 1000 nodes in 5 ms).
func BenchmarkRing(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		r := benchRing(b, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if _, err := Ring(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRings measures an exact diff when one node joins (the budget:
// 1000 nodes in 20 ms).
func BenchmarkRings(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		old := benchRing(b, n)
		new, err := old.Add(chash.Node{Name: "joining", Weight: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if _, err := Rings(old, new); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkModuloMoved(b *testing.B) {
	for _, n := range []int{10, 1000} {
		old := make([]string, n)
		for i := range old {
			old[i] = fmt.Sprint(i)
		}
		new := append(old[:n:n], "new")
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				ModuloMoved(old, new)
			}
		})
	}
}

// BenchmarkModuloMovedNodes: three servers of weight 65536 (a weight in MB of
// memory) and a fourth joining; counted along the hashes, as the pairs of
// slots number 3·2^32.
func BenchmarkModuloMovedNodes(b *testing.B) {
	var old []chash.Node
	for i := range 4 {
		old = append(old, chash.Node{Name: fmt.Sprintf("10.0.0.%d:11211", i+1), Weight: 65536})
	}
	for b.Loop() {
		ModuloMovedNodes(old[:3], old)
	}
}

// BenchmarkSweep measures the default grid (5, 10, 50 and 100 nodes, 1 to 500
// points), which chash sweep runs.
func BenchmarkSweep(b *testing.B) {
	for b.Loop() {
		if _, err := Sweep(SweepConfig{Scheme: standard}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiffPools measures the diff of ketama pools when one server joins:
// the share of every server changes, so that there is a flow from each.
func BenchmarkDiffPools(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		servers := make([]config.Server, n+1)
		for i := range servers {
			servers[i] = config.Server{Host: fmt.Sprintf("10.0.%d.%d", i/256, i%256), Port: 11211, Weight: 1}
		}
		pool := func(servers []config.Server) *Pool {
			p, err := NewPool(&config.Pool{Name: "bench", Distribution: "ketama", Servers: servers}, servers)
			if err != nil {
				b.Fatal(err)
			}
			return p
		}
		old, new := pool(servers[:n]), pool(servers)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				d, err := DiffPools(old, new, nil)
				if err != nil {
					b.Fatal(err)
				}
				if len(d.Flows) < n/2 {
					b.Fatalf("%d flows; want one from most servers", len(d.Flows))
				}
			}
		})
	}
}
