package splitmix

import "testing"

// TestMix64 checks the first outputs of SplitMix64 seeded with 0, the
// reference implementation's: Mix64 of the state after each step of the
// golden gamma.
func TestMix64(t *testing.T) {
	const gamma = 0x9E3779B97F4A7C15
	want := []uint64{0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F}
	var state uint64
	for i, w := range want {
		state += gamma
		if got := Mix64(state); got != w {
			t.Errorf("output %d: Mix64(%#x) = %#x; want %#x", i, state, got, w)
		}
	}
	var sink uint64
	if n := testing.AllocsPerRun(100, func() { sink = Mix64(sink + state) }); n != 0 {
		t.Errorf("Mix64 allocates %v times; want 0", n)
	}
}

func BenchmarkMix64(b *testing.B) {
	var z uint64
	for b.Loop() {
		z = Mix64(z)
	}
}
