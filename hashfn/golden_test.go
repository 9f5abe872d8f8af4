package hashfn

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// goldenVector is one line of testdata/golden.tsv.
type goldenVector struct {
	line int
	name string
	col  string // the key as written in the file
	key  []byte
	want uint32
}

// readGolden parses testdata/golden.tsv, written by testdata/gen/gen.sh: lines of
// name TAB key TAB value, where key is Go-quoted or hex:<bytes>; # starts a comment.
func readGolden(t *testing.T) []goldenVector {
	t.Helper()
	f, err := os.Open("testdata/golden.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var vs []goldenVector
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := parseGolden(line)
		if err != nil {
			t.Fatalf("golden.tsv:%d: %v", n, err)
		}
		v.line = n
		vs = append(vs, v)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return vs
}

func parseGolden(line string) (goldenVector, error) {
	fields := strings.Split(line, "\t")
	if len(fields) != 3 {
		return goldenVector{}, fmt.Errorf("%d fields, want 3: %q", len(fields), line)
	}
	v := goldenVector{name: fields[0], col: fields[1]}
	var err error
	if h, ok := strings.CutPrefix(v.col, "hex:"); ok {
		v.key, err = hex.DecodeString(h)
	} else {
		var s string
		s, err = strconv.Unquote(v.col)
		v.key = []byte(s)
	}
	if err != nil {
		return goldenVector{}, fmt.Errorf("bad key %q: %v", v.col, err)
	}
	want, err := strconv.ParseUint(fields[2], 0, 32)
	if err != nil {
		return goldenVector{}, fmt.Errorf("bad value %q: %v", fields[2], err)
	}
	v.want = uint32(want)
	return v, nil
}

func TestGolden(t *testing.T) {
	vs := readGolden(t)
	for _, v := range vs {
		f, err := Lookup(v.name)
		if err != nil {
			t.Errorf("golden.tsv:%d: %v", v.line, err)
			continue
		}
		if got := f(v.key); got != v.want {
			t.Errorf("%s(%s) = %#08x; want %#08x (golden.tsv:%d)", v.name, v.col, got, v.want, v.line)
		}
	}
}

// TestGoldenCoversEveryName checks that every registered function has vectors, each
// for the same keys, among them the empty key, every length from 1 to 16, bytes
// >= 0x80 and a long key.
func TestGoldenCoversEveryName(t *testing.T) {
	keys := make(map[string]map[string]bool) // name -> key -> seen
	for _, v := range readGolden(t) {
		if keys[v.name] == nil {
			keys[v.name] = make(map[string]bool)
		}
		keys[v.name][string(v.key)] = true
	}
	var all map[string]bool
	for _, name := range Names() {
		ks := keys[name]
		if len(ks) == 0 {
			t.Errorf("golden.tsv has no vectors for %q", name)
			continue
		}
		if all == nil {
			all = ks
		} else if len(ks) != len(all) {
			t.Errorf("golden.tsv has %d keys for %q, %d for %q", len(ks), name, len(all), Names()[0])
		}
	}
	lengths := make(map[int]bool)
	var high, long bool
	for k := range all {
		lengths[len(k)] = true
		high = high || strings.ContainsFunc(k, func(r rune) bool { return r >= 0x80 })
		long = long || len(k) >= 256
	}
	for n := 0; n <= 16; n++ {
		if !lengths[n] {
			t.Errorf("golden.tsv has no key of length %d", n)
		}
	}
	if !high || !long {
		t.Errorf("golden.tsv keys: bytes >= 0x80 %v, long key %v; want both", high, long)
	}
}
