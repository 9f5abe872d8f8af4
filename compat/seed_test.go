package compat

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/hashfn"
)

func seedServers(n int) []chash.Node {
	ns := make([]chash.Node, n)
	for i := range ns {
		ns[i] = chash.Node{Name: fmt.Sprintf("192.168.0.%d:111", i), Weight: 1}
	}
	return ns
}

// The seed articles print these routes for their two programs.
func TestSeedArticleVectors(t *testing.T) {
	tests := []struct {
		points int
		key    string
		want   string
	}{
		{0, "127.0.0.1:1111", "192.168.0.0:111"},
		{0, "221.226.0.1:2222", "192.168.0.4:111"},
		{0, "10.211.0.1:3333", "192.168.0.4:111"},
		{5, "127.0.0.1:1111", "192.168.0.0:111"},
		{5, "221.226.0.1:2222", "192.168.0.0:111"},
		{5, "10.211.0.1:3333", "192.168.0.2:111"},
	}
	for _, tt := range tests {
		r, err := chash.New(Seed{Points: tt.points}, seedServers(5))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := r.LookupString(tt.key); got != tt.want || err != nil {
			t.Errorf("points %d: Lookup(%q) = %q, %v; want %q", tt.points, tt.key, got, err, tt.want)
		}
	}
}

// TestSeedGolden routes the keys of files written by testdata/seed/gen.sh, which
// runs the articles' Java ring, and requires every route to agree.
func TestSeedGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/seed/*-*.tsv")
	if len(files) < 5 {
		t.Fatalf("found %d golden files in testdata/seed; want 5", len(files))
	}
	for _, file := range files {
		base := strings.TrimSuffix(filepath.Base(file), ".tsv")
		set, vn, _ := strings.Cut(base, "-")
		points, err := strconv.Atoi(vn)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		servers, err := os.ReadFile(filepath.Join("testdata/seed", "servers-"+set+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		var ns []chash.Node
		for _, s := range strings.Fields(string(servers)) {
			ns = append(ns, chash.Node{Name: s, Weight: 1})
		}
		s := Seed{Points: points}
		r, err := chash.New(s, ns)
		if err != nil {
			t.Fatal(err)
		}
		maxPos := uint32(0)
		for i := range r.NumPoints() {
			p, _ := r.Point(i)
			maxPos = max(maxPos, p)
		}
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		n, wrapped, nonASCII := 0, 0, 0
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "#") {
				continue
			}
			fields := strings.Split(line, "\t")
			if len(fields) != 3 {
				t.Fatalf("%s: malformed line %q", file, line)
			}
			key, javaHash, want := fields[0], fields[1], fields[2]
			jh, err := strconv.ParseInt(javaHash, 10, 32)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if got := hashfn.JavaFNV1_32([]byte(key)); int32(got) != int32(jh) {
				t.Errorf("%s: JavaFNV1_32(%q) = %d; want %d", file, key, int32(got), jh)
			}
			if got, err := r.LookupString(key); got != want || err != nil {
				t.Errorf("%s: Lookup(%q) = %q, %v; want %q", file, key, got, err, want)
			}
			if s.Hash([]byte(key)) > maxPos {
				wrapped++
			}
			if strings.ContainsFunc(key, func(c rune) bool { return c > 127 }) {
				nonASCII++
			}
			n++
		}
		f.Close()
		if n < 2000 || nonASCII < 6 {
			t.Errorf("%s: %d keys, %d non-ASCII; want at least 2000 and 6", file, n, nonASCII)
		}
		if points == 0 && wrapped == 0 {
			t.Errorf("%s: no key hashes past the last point; the wrap is untested", file)
		}
	}
}

func TestSeedPositions(t *testing.T) {
	s := Seed{}
	// Java's order: Math.abs's one negative result sorts first.
	tests := []struct{ v, want uint32 }{{0x80000000, 0}, {0, 1}, {1, 3}, {0x7FFFFFFF, 0xFFFFFFFF}}
	for _, tt := range tests {
		if got := s.pos(tt.v); got != tt.want {
			t.Errorf("pos(%#x) = %#x; want %#x", tt.v, got, tt.want)
		}
	}
	signed := Seed{Signed: true}
	if a, b := signed.pos(0xFFFFFFFF), signed.pos(0); a >= b {
		t.Errorf("signed: pos(-1) = %#x not below pos(0) = %#x", a, b)
	}
}

func ExampleSeed() {
	servers := []chash.Node{
		{Name: "192.168.0.0:111", Weight: 1}, {Name: "192.168.0.1:111", Weight: 1},
		{Name: "192.168.0.2:111", Weight: 1}, {Name: "192.168.0.3:111", Weight: 1},
		{Name: "192.168.0.4:111", Weight: 1},
	}
	r, _ := chash.New(Seed{Points: 5}, servers) // "192.168.0.0:111&&VN0" ... "&&VN4"
	for _, key := range []string{"127.0.0.1:1111", "221.226.0.1:2222", "10.211.0.1:3333"} {
		server, _ := r.LookupString(key)
		fmt.Println(key, "->", server)
	}
	// Output:
	// 127.0.0.1:1111 -> 192.168.0.0:111
	// 221.226.0.1:2222 -> 192.168.0.0:111
	// 10.211.0.1:3333 -> 192.168.0.2:111
}
