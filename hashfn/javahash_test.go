package hashfn

import (
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// The 000 seed article prints these String.hashCode values, for keys it labels
// "192.168.0.0:111" ... but hashes with a fourth 1.
func TestJavaHashCodeSeed(t *testing.T) {
	tests := []struct {
		in   string
		want uint32
	}{
		{"192.168.0.0:1111", 1845870087},
		{"192.168.0.1:1111", 1874499238},
		{"192.168.0.2:1111", 1903128389},
		{"192.168.0.3:1111", 1931757540},
		{"192.168.0.4:1111", 1960386691},
	}
	for _, tt := range tests {
		if got := JavaHashCode([]byte(tt.in)); got != tt.want {
			t.Errorf("JavaHashCode(%q) = %d; want %d", tt.in, got, tt.want)
		}
	}
	// "String的hashCode()方法卻會產生負數（不信用"192.168.1.0:1111"試試看就知道了）"
	if got := int32(JavaHashCode([]byte("192.168.1.0:1111"))); got >= 0 {
		t.Errorf("JavaHashCode(%q) = %d as a Java int; the article says it is negative", "192.168.1.0:1111", got)
	}
}

// Values printed by OpenJDK 17 for "s".hashCode() and the 001 article's rehash.
func TestJavaHashCodeJava(t *testing.T) {
	tests := []struct {
		in           string
		code, spread uint32
	}{
		{"", 0, 0},
		{"zs", 3897, 3897},
		{"999999", 1686256992, 1686264290},
		{"233333", 1480127105, 1480108729},
		{"0:192.168.2.106", 0x8b2dbf92, 187511999},   // -1959936110
		{"192.168.1.0:1111", 0xd5e6eae6, 1441152768}, // -706286874
		{"中文", 646394, 646387},
		{"emoji😀key", 1935486358, 1935498955},
		{"\xff", 0xfffd, 0xfffd}, // one U+FFFD
	}
	for _, tt := range tests {
		if got := JavaHashCode([]byte(tt.in)); got != tt.code {
			t.Errorf("JavaHashCode(%q) = %#08x; want %#08x", tt.in, got, tt.code)
		}
		if got := JavaHashCodeSpread([]byte(tt.in)); got != tt.spread {
			t.Errorf("JavaHashCodeSpread(%q) = %d; want %d", tt.in, got, tt.spread)
		}
	}
}

// javaHashCodeUTF16 is String.hashCode over the UTF-16 encoding of valid UTF-8 s,
// a definition independent of javaDecodeUTF8.
func javaHashCodeUTF16(s string) uint32 {
	var h uint32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + uint32(u)
	}
	return h
}

// FuzzJavaHashCode checks JavaHashCode against javaHashCodeUTF16 on valid UTF-8,
// and that JavaHashCodeSpread is the spread of JavaHashCode on any key. The golden
// vectors check ill-formed UTF-8 against Java itself.
func FuzzJavaHashCode(f *testing.F) {
	for _, s := range []string{"", "a", "中文", "emoji😀key", "\xed\xa0\x80", "\xf0\x9f\x98"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h := JavaHashCode([]byte(s))
		if utf8.ValidString(s) {
			if want := javaHashCodeUTF16(s); h != want {
				t.Errorf("JavaHashCode(%q) = %#08x; want %#08x", s, h, want)
			}
		}
		if got, want := JavaHashCodeSpread([]byte(s)), (h^h>>16)&0x7fffffff; got != want {
			t.Errorf("JavaHashCodeSpread(%q) = %#08x; want %#08x", s, got, want)
		}
	})
}
