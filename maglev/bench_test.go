package maglev

import (
	"strconv"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/chash-dev/chash/internal/algotest"
)

var sizes = []int{10, 100, 1000}

// benchKeys returns 2^16 distinct keys laid out in one buffer, so that reading
// them in turn costs little and the table lookups are what varies.
func benchKeys() [][]byte {
	keys := make([][]byte, 1<<16)
	var buf []byte
	for i := range keys {
		buf = strconv.AppendInt(append(buf, "key:"...), int64(i*7919), 10)
	}
	for i, off := 0, 0; i < len(keys); i++ {
		n := len("key:") + len(strconv.Itoa(i*7919))
		keys[i] = buf[off : off+n : off+n]
		off += n
	}
	return keys
}

var sink uint64

// BenchmarkHashOnly is the baseline for Lookup: hashing the same keys.
func BenchmarkHashOnly(b *testing.B) {
	keys := benchKeys()
	i := 0
	for b.Loop() {
		sink += xxhash.Sum64(keys[i&(1<<16-1)])
		i++
	}
}

func BenchmarkLookup(b *testing.B) {
	for _, n := range sizes {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			t, _ := New(Config{}, algotest.Nodes(n))
			keys := benchKeys()
			i := 0
			for b.Loop() {
				t.Lookup(keys[i&(1<<16-1)])
				i++
			}
		})
	}
}

func BenchmarkNew(b *testing.B) {
	for _, n := range sizes {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			ns := algotest.Nodes(n)
			for b.Loop() {
				New(Config{}, ns)
			}
		})
	}
}
