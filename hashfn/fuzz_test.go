package hashfn

import (
	"bytes"
	"hash/crc32"
	"testing"
)

// FuzzHashes checks that every function accepts any key without panicking, gives
// the same value twice, leaves the key unchanged, and agrees with the independent
// definitions of TestSpecEquivalences. Seeds are in testdata/fuzz/FuzzHashes.
func FuzzHashes(f *testing.F) {
	f.Add([]byte("user:1000"))
	names := Names()
	f.Fuzz(func(t *testing.T, key []byte) {
		orig := bytes.Clone(key)
		for _, name := range names {
			fn, err := Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			h1 := fn(key)
			if !bytes.Equal(key, orig) {
				t.Fatalf("%s modified its key: %q, was %q", name, key, orig)
			}
			if h2 := fn(bytes.Clone(key)); h2 != h1 {
				t.Errorf("%s(%q) = %#08x, then %#08x", name, key, h1, h2)
			}
		}
		if got, want := CRC32A(key), crc32.ChecksumIEEE(key); got != want {
			t.Errorf("CRC32A(%q) = %#08x; want %#08x", key, got, want)
		}
		if got, want := CRC16(key)&0xffff, xmodemBitwise(key); got != want {
			t.Errorf("CRC16(%q)&0xffff = %#04x; want %#04x", key, got, want)
		}
		if got, want := FNV1_64(key), fnv1_64Literal(key); got != want {
			t.Errorf("FNV1_64(%q) = %#08x; want %#08x", key, got, want)
		}
		if got, want := FNV1a_64(key), fnv1a_64Literal(key); got != want {
			t.Errorf("FNV1a_64(%q) = %#08x; want %#08x", key, got, want)
		}
	})
}
