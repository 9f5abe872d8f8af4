package rendezvous

import (
	"strconv"
	"testing"

	"github.com/chash-dev/chash/internal/algotest"
)

var sizes = []int{10, 100, 1000}

func benchKeys() [][]byte {
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = []byte("key:" + strconv.Itoa(i*7919))
	}
	return keys
}

func BenchmarkLookup(b *testing.B) {
	for _, weighted := range []bool{false, true} {
		for _, n := range sizes {
			name := "equal/n=" + strconv.Itoa(n)
			ns := algotest.Nodes(n)
			if weighted {
				name = "weighted/n=" + strconv.Itoa(n)
				ns[0].Weight = 2
			}
			b.Run(name, func(b *testing.B) {
				s, _ := New(Config{}, ns)
				keys := benchKeys()
				i := 0
				for b.Loop() {
					s.Lookup(keys[i&1023])
					i++
				}
			})
		}
	}
}

func BenchmarkAppendN3(b *testing.B) {
	for _, n := range sizes {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			s, _ := New(Config{}, algotest.Nodes(n))
			keys := benchKeys()
			dst := make([]string, 0, 3)
			i := 0
			for b.Loop() {
				s.AppendN(dst[:0], keys[i&1023], 3)
				i++
			}
		})
	}
}
