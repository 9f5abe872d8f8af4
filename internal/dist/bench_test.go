package dist

import (
	"fmt"
	"testing"
)

// BenchmarkLookup times each distribution's lookup over 100 servers, from the
// key to the index of its server.
func BenchmarkLookup(b *testing.B) {
	ks := make([][]byte, 4096)
	for i := range ks {
		ks[i] = fmt.Appendf(nil, "key:%016d", i*7919)
	}
	sv := servers(100)
	for _, e := range All() {
		r := mustBuild(b, poolOf(e.Name, sv), sv)
		b.Run("dist="+e.Name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				r.Lookup(ks[i&4095])
			}
		})
	}
}

// BenchmarkAppendN times the replica sets of 3 servers of 100.
func BenchmarkAppendN(b *testing.B) {
	ks := make([][]byte, 4096)
	for i := range ks {
		ks[i] = fmt.Appendf(nil, "key:%016d", i*7919)
	}
	sv := servers(100)
	dst := make([]int, 0, 3)
	for _, e := range All() {
		if !e.Replicas {
			continue
		}
		r := mustBuild(b, poolOf(e.Name, sv), sv).(ReplicaRouter)
		b.Run("dist="+e.Name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				r.AppendN(dst[:0], ks[i&4095], 3)
			}
		})
	}
}
