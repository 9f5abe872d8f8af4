package hashfn

import (
	"encoding/binary"
	"math"
	"testing"
)

// TestMax checks that no function returns more than Max says and, for those
// whose range is narrower than 32 bits, that random keys reach the top of it.
func TestMax(t *testing.T) {
	for _, name := range Names() {
		f, _ := Lookup(name)
		m, err := Max(name)
		if err != nil {
			t.Fatalf("Max(%q): %v", name, err)
		}
		var top uint32
		key := make([]byte, 12)
		for i := range 200000 {
			binary.LittleEndian.PutUint64(key, uint64(i)*0x9E3779B97F4A7C15)
			binary.LittleEndian.PutUint32(key[8:], uint32(i))
			h := f(key)
			if h > m && !(name == "java_fnv1_32" && h == 0x80000000) {
				t.Fatalf("%s(%x) = %#x, above Max %#x", name, key, h, m)
			}
			top = max(top, h)
		}
		// 200000 random values come within 2^-14 of the top of their range.
		if m != math.MaxUint32 && m != 0x80000000 && float64(m-top) > float64(m)/(1<<14)+1 {
			t.Errorf("%s: largest of 200000 hashes %#x, far below Max %#x", name, top, m)
		}
		if m == math.MaxUint32 && top < 1<<31 {
			t.Errorf("%s: largest of 200000 hashes %#x, but Max says 32 bits", name, top)
		}
	}
	if _, err := Max("nope"); err == nil {
		t.Error(`Max("nope") succeeded`)
	}
}
