package compat

import (
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/hashfn"
)

// BenchmarkKetamaWords times the four points of one label, the unit of every
// ketama-style ring's build.
func BenchmarkKetamaWords(b *testing.B) {
	label := []byte("10.0.0.1:11212-159")
	dst := make([]uint32, 0, 4)
	b.SetBytes(int64(len(label)))
	b.ReportAllocs()
	for b.Loop() {
		dst = ketamaWords(dst[:0], label)
	}
}

// BenchmarkHashTagged times the hash-tag rule on a tagged key, which every
// request of a pool with a hash_tag goes through.
func BenchmarkHashTagged(b *testing.B) {
	key := []byte("session:{user:1234567}:cart")
	b.ReportAllocs()
	for b.Loop() {
		HashTagged(key, "{}")
	}
}

// BenchmarkHash times each scheme's key hash, the part of a lookup that is
// the scheme's.
func BenchmarkHash(b *testing.B) {
	key := []byte("user:00000000000042")
	for _, tt := range []struct {
		name string
		s    chash.Scheme
	}{
		{"ketama", Ketama{}},
		{"ketama-tagged", Ketama{HashTag: "{}"}},
		{"libketama", Libketama{}},
		{"libmemcached", Libmemcached{}},
		{"nginx", Nginx{}},
		{"groupcache", Groupcache{}},
		{"stathat", Stathat{}},
		{"seed", Seed{}},
		{"seed-hashcode", Seed{HashFunc: hashfn.JavaHashCode, Signed: true}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tt.s.Hash(key)
			}
		})
	}
}

// BenchmarkAppendPoints times the 160 points of one server, what building a
// ring costs per server.
func BenchmarkAppendPoints(b *testing.B) {
	for _, tt := range []struct {
		name string
		s    chash.Scheme
	}{
		{"ketama", Ketama{}},
		{"libketama", Libketama{}},
		{"nginx", Nginx{}},
		{"groupcache", Groupcache{}},
		{"seed", Seed{Points: 160}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			dst := make([]uint32, 0, 160)
			b.ReportAllocs()
			for b.Loop() {
				dst = tt.s.AppendPoints(dst[:0], "10.0.0.1:11211", 0, 160)
			}
		})
	}
}
