package chash

import (
	"fmt"
	"testing"

	"github.com/chash-dev/chash/hashfn"
)

var sizes = []int{10, 100, 1000}

func benchKeys() [][]byte {
	ks := make([][]byte, 4096)
	for i := range ks {
		ks[i] = fmt.Appendf(nil, "key:%016d", i*7919) // 20 bytes
	}
	return ks
}

func BenchmarkHashOnly(b *testing.B) {
	ks := benchKeys()
	b.ReportAllocs()
	var sink uint32
	for i := 0; b.Loop(); i++ {
		sink += hashfn.XXH64(ks[i&4095])
	}
	_ = sink
}

// The lookup benchmarks below repeat their loops rather than share one that
// takes a function: an indirect call would be part of what they time.

func BenchmarkLookup(b *testing.B) {
	ks := benchKeys()
	for _, n := range sizes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			r := mustNew(b, nil, nodes(n))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				r.Lookup(ks[i&4095])
			}
		})
	}
}

func BenchmarkLookupIndex(b *testing.B) {
	ks := benchKeys()
	for _, n := range sizes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			r := mustNew(b, nil, nodes(n))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				r.LookupIndex(ks[i&4095])
			}
		})
	}
}

func BenchmarkLookupParallel(b *testing.B) {
	ks := benchKeys()
	r := mustNew(b, nil, nodes(1000))
	var h Holder
	h.Store(r)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			h.Lookup(ks[i&4095])
			i++
		}
	})
}

func BenchmarkAppendN(b *testing.B) {
	ks := benchKeys()
	for _, n := range sizes {
		b.Run(fmt.Sprintf("nodes=%d/n=3", n), func(b *testing.B) {
			r := mustNew(b, nil, nodes(n))
			dst := make([]string, 0, 3)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				r.AppendN(dst[:0], ks[i&4095], 3)
			}
		})
	}
}

func BenchmarkAppendIndexN(b *testing.B) {
	ks := benchKeys()
	for _, n := range sizes {
		b.Run(fmt.Sprintf("nodes=%d/n=3", n), func(b *testing.B) {
			r := mustNew(b, nil, nodes(n))
			dst := make([]int, 0, 3)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				r.AppendIndexN(dst[:0], ks[i&4095], 3)
			}
		})
	}
}

func BenchmarkNew(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			ns := nodes(n)
			b.ReportAllocs()
			for b.Loop() {
				mustNew(b, nil, ns)
			}
		})
	}
}

func BenchmarkAdd(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			r := mustNew(b, nil, nodes(n))
			nd := Node{Name: "joining:11211", Weight: 1}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Add(nd); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkRemove(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			r := mustNew(b, nil, nodes(n))
			name := r.nodes[n/2].Name
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Remove(name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
