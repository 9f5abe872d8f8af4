package bigbuf

import (
	"bytes"
	"testing"
)

// raceEnabled is set under the race detector, whose sync.Pool drops some of
// what it is given on purpose.
var raceEnabled bool

func TestGrow(t *testing.T) {
	for _, tt := range []struct{ len, size, cap int }{
		{0, 10, 10},               // below the classes: as asked
		{5, Min - 1, Min - 1},     // likewise
		{5, Min, Min},             // a class
		{5, Min + 1, 2 * Min},     // rounded up to the next class
		{Min, 100_000, 128 << 10}, // 100 KB in 128 KiB
		{Min, Max, Max},
		{Min, Max + 1, Max + 1}, // above the classes: as asked
	} {
		dst := bytes.Repeat([]byte{'x'}, tt.len)
		got := Grow(dst, tt.size)
		if cap(got) != tt.cap || !bytes.Equal(got, bytes.Repeat([]byte{'x'}, tt.len)) {
			t.Errorf("Grow(%d bytes, %d): %d bytes of cap %d, intact %v; want cap %d", tt.len, tt.size, len(got), cap(got), bytes.Equal(got, dst), tt.cap)
		}
	}
	// Room enough: dst itself.
	dst := make([]byte, 3, 100)
	if got := Grow(dst, 50); &got[:1][0] != &dst[:1][0] {
		t.Error("Grow with room enough moved the buffer")
	}
}

func TestClass(t *testing.T) {
	for in, want := range map[int]int{0: 0, Min - 1: Min - 1, Min: Min, Min + 1: Min, 100_000: 64 << 10, Max: Max, Max + 1: Max + 1} {
		if got := Class(in); got != want {
			t.Errorf("Class(%d) = %d; want %d", in, got, want)
		}
	}
}

// TestGiveReuses grows buffers of a class and gives them back: after the
// first, they are the same memory, and nothing is allocated.
func TestGiveReuses(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops buffers on purpose")
	}
	once := func() {
		b := Grow(nil, 100_000)
		b = append(b, "value"...)
		Give(b)
	}
	once()
	if n := testing.AllocsPerRun(100, once); n != 0 {
		t.Errorf("Grow and Give of a 100 KB buffer allocate %v times; want 0", n)
	}
	// A buffer of no class is not kept: the next Grow does not return it.
	odd := make([]byte, 0, Min+5)
	Give(odd)
	if b := Grow(nil, Min+5); cap(b) == cap(odd) {
		t.Errorf("Grow returned a buffer of cap %d, not a class", cap(b))
	}
}
