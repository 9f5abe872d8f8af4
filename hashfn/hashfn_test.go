package hashfn

import (
	"hash/crc32"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// allNames is every name Lookup must accept: twemproxy's twelve and chash's four.
var allNames = []string{
	"crc16", "crc32", "crc32a", "fnv1_32", "fnv1_64", "fnv1a_32", "fnv1a_64", "hsieh",
	"java_fnv1_32", "java_hashcode", "java_hashcode_spread", "jenkins", "md5", "murmur",
	"one_at_a_time", "xxh64",
}

func TestNames(t *testing.T) {
	if got := Names(); !slices.Equal(got, allNames) {
		t.Errorf("Names() = %q; want %q", got, allNames)
	}
}

func TestLookup(t *testing.T) {
	for _, name := range allNames {
		f, err := Lookup(name)
		if err != nil || f == nil {
			t.Errorf("Lookup(%q) = %v, %v; want a function", name, f != nil, err)
		}
	}
}

func TestLookupUnknown(t *testing.T) {
	tests := []string{
		"",
		"MD5",       // names are case-sensitive, as in twemproxy
		"fnv1a-64",  // a dash, not an underscore
		" md5",      // no trimming
		"crc32 ",    //
		"ketama",    // a distribution, not a hash
		"murmur3",   // libhashkit has it, twemproxy does not
		"md5\x00",   //
		"fnv1a_64a", //
	}
	for _, name := range tests {
		f, err := Lookup(name)
		if err == nil || f != nil {
			t.Errorf("Lookup(%q) = %v, %v; want nil, an error", name, f != nil, err)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "hashfn: ") || !strings.Contains(msg, strconv.Quote(name)) {
			t.Errorf("Lookup(%q) error = %q; want it prefixed %q and naming %s", name, msg, "hashfn: ", strconv.Quote(name))
		}
		if !strings.Contains(msg, "fnv1a_64") {
			t.Errorf("Lookup(%q) error = %q; want it to list the known names", name, msg)
		}
	}
}

func TestString(t *testing.T) {
	for _, name := range allNames {
		f, _ := Lookup(name)
		for _, s := range []string{"", "a", "user:1000", "caf\xc3\xa9"} {
			if got, want := String(f, s), f([]byte(s)); got != want {
				t.Errorf("String(%s, %q) = %#08x; want %#08x", name, s, got, want)
			}
		}
	}
}

// TestAllocs checks that no function allocates, whatever the key length.
func TestAllocs(t *testing.T) {
	key := []byte(strings.Repeat("caf\xc3\xa9 0123456789", 20))
	for _, name := range allNames {
		f, _ := Lookup(name)
		for _, n := range []int{0, 1, 7, 20, 64, len(key)} {
			k := key[:n]
			if a := testing.AllocsPerRun(100, func() { f(k) }); a != 0 {
				t.Errorf("%s on %d bytes: %v allocations; want 0", name, n, a)
			}
		}
	}
	if a := testing.AllocsPerRun(100, func() { String(FNV1a_64, "user:1000") }); a != 0 {
		t.Errorf("String: %v allocations; want 0", a)
	}
}

// specKeys are keys for the checks against independent definitions below.
var specKeys = []string{
	"", "a", "ab", "abc", "abcd", "123456789", "foobar", "user:1000",
	"The quick brown fox jumps over the lazy dog",
	"\x00", "\x7f\x80", "ab\xff", "caf\xc3\xa9", "\xff\xfe\xfd\xfc\xfb",
	strings.Repeat("\x80\x81\xfe\xffxyz", 40),
}

func isASCII(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r >= 0x80 })
}

// TestKnownVectors checks published check values, independent of any program run
// here: the CRC catalogue's "123456789" checks and the FNV reference vectors.
func TestKnownVectors(t *testing.T) {
	crc16Low := func(k []byte) uint32 { return CRC16(k) & 0xffff }
	tests := []struct {
		name string
		f    Func
		in   string
		want uint32
	}{
		{"CRC32A", CRC32A, "123456789", 0xcbf43926},                       // CRC-32/ISO-HDLC check
		{"CRC32", CRC32, "123456789", 0xcbf43926 >> 16 & 0x7fff},          //
		{"CRC16&0xffff", crc16Low, "123456789", 0x31c3},                   // CRC-16/XMODEM check
		{"FNV1_32", FNV1_32, "", 0x811c9dc5},                              // FNV offset basis
		{"FNV1_32", FNV1_32, "a", 0x050c5d7e},                             // FNV-1 32
		{"FNV1a_32", FNV1a_32, "a", 0xe40c292c},                           // FNV-1a 32
		{"FNV1a_32", FNV1a_32, "foobar", 0xbf9cf968},                      //
		{"FNV1_64", FNV1_64, "a", 0xaf63bd4c8601b7be & 0xffffffff},        // low half of FNV-1 64
		{"FNV1a_64", FNV1a_64, "a", 0xaf63dc4c8601ec8c & 0xffffffff},      // low half of FNV-1a 64
		{"FNV1a_64", FNV1a_64, "foobar", 0x85944171f73967e8 & 0xffffffff}, //
		{"Jenkins", Jenkins, "", 0xdeadbeef + 13},                         // lookup3: length 0 is not mixed
		{"Murmur", Murmur, "", 0},
		{"Hsieh", Hsieh, "", 0},
		{"OneAtATime", OneAtATime, "", 0},
	}
	for _, tt := range tests {
		if got := tt.f([]byte(tt.in)); got != tt.want {
			t.Errorf("%s(%q) = %#08x; want %#08x", tt.name, tt.in, got, tt.want)
		}
	}
}

// TestSpecEquivalences checks each function against a second, literal reading of
// its definition (compat.md 1.4) or against the standard library.
func TestSpecEquivalences(t *testing.T) {
	for _, s := range specKeys {
		k := []byte(s)
		check := func(name string, got, want uint32) {
			t.Helper()
			if got != want {
				t.Errorf("%s(%q) = %#08x; want %#08x", name, s, got, want)
			}
		}
		check("CRC32A", CRC32A(k), crc32.ChecksumIEEE(k))
		check("CRC16&0xffff", CRC16(k)&0xffff, xmodemBitwise(k))
		check("FNV1_64", FNV1_64(k), fnv1_64Literal(k))
		check("FNV1a_64", FNV1a_64(k), fnv1a_64Literal(k))
		if isASCII(s) {
			check("FNV1_32", FNV1_32(k), sum32(fnv.New32(), k))
			check("FNV1a_32", FNV1a_32(k), sum32(fnv.New32a(), k))
			check("FNV1_64", FNV1_64(k), uint32(sum64(fnv.New64(), k)))
			check("FNV1a_64", FNV1a_64(k), uint32(sum64(fnv.New64a(), k)))
		} else {
			// The sign extension must show: a clean uint8 implementation differs.
			if FNV1a_32(k) == sum32(fnv.New32a(), k) {
				t.Errorf("FNV1a_32(%q) = %#08x, as hash/fnv; want the sign-extended value", s, FNV1a_32(k))
			}
		}
	}
}

type hash32 interface {
	Write([]byte) (int, error)
	Sum32() uint32
}

type hash64 interface {
	Write([]byte) (int, error)
	Sum64() uint64
}

func sum32(h hash32, p []byte) uint32 { h.Write(p); return h.Sum32() }
func sum64(h hash64, p []byte) uint64 { h.Write(p); return h.Sum64() }

// fnv1_64Literal is nc_fnv.c's hash_fnv1_64 read literally: 64-bit state, each
// byte sign-extended to 64 bits, the low 32 bits returned.
func fnv1_64Literal(p []byte) uint32 {
	h := uint64(0xcbf29ce484222325)
	for _, b := range p {
		h *= 0x100000001b3
		h ^= uint64(int64(int8(b)))
	}
	return uint32(h)
}

// fnv1a_64Literal is nc_fnv.c's hash_fnv1a_64 read literally.
func fnv1a_64Literal(p []byte) uint32 {
	h := uint32(0xcbf29ce484222325 & 0xffffffff)
	for _, b := range p {
		h ^= uint32(int32(int8(b)))
		h *= uint32(0x100000001b3 & 0xffffffff)
	}
	return h
}

// xmodemBitwise is CRC-16/XMODEM computed bit by bit, without a table.
func xmodemBitwise(p []byte) uint32 {
	var crc uint16
	for _, b := range p {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return uint32(crc)
}
