package compat

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
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

// TestSeedLabels checks the strings Seed hashes for a server's points.
func TestSeedLabels(t *testing.T) {
	tests := []struct {
		label, name string
		i           int
		want        string
	}{
		{"{name}&&VN{i}", "192.168.0.0:111", 4, "192.168.0.0:111&&VN4"},
		{"{i}:{name}", "192.168.2.106", 2, "2:192.168.2.106"},
		{"{name}#{i}", "a", 10, "a#10"},
		{"{name}{i}", "a1", 0, "a10"},
		{"{name}{i}", "a", 10, "a10"},
		{"{name}-{i}-{name}-{i}", "x", 7, "x-7-x-7"},
		{"{i}:{name}", "n{i}{name}", 3, "3:n{i}{name}"}, // a name is not a template
		{"{{name}}{i", "中文", 1, "{中文}{i"},
		{"{nam{i}", "x", 5, "{nam5"},
		{"{", "x", 0, "{"},
	}
	for _, tt := range tests {
		if got := string(appendLabel(nil, tt.label, tt.name, tt.i)); got != tt.want {
			t.Errorf("appendLabel(%q, %q, %d) = %q; want %q", tt.label, tt.name, tt.i, got, tt.want)
		}
		s := Seed{Points: tt.i + 1, Label: tt.label, HashFunc: hashfn.JavaHashCode, Signed: true}
		want := s.pos(hashfn.JavaHashCode([]byte(tt.want)))
		if got := s.AppendPoints(nil, tt.name, tt.i, tt.i+1); len(got) != 1 || got[0] != want {
			t.Errorf("Seed{Label: %q}.AppendPoints(%q, %d) = %#x; want [%#x]", tt.label, tt.name, tt.i, got, want)
		}
	}
	if a, b := (Seed{Points: 3}).AppendPoints(nil, "x", 0, 3), (Seed{Points: 3, Label: DefaultSeedLabel}).AppendPoints(nil, "x", 0, 3); !slices.Equal(a, b) {
		t.Errorf("empty Label gives %#x; want DefaultSeedLabel's %#x", a, b)
	}
}

// TestSeedWithHash checks that WithHash leaves Signed unset only for functions
// whose values, as Java ints, are never negative but for -2^31: the positions
// of the others would collapse to 0.
func TestSeedWithHash(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, 50000)
	for i := range keys {
		keys[i] = make([]byte, r.IntN(20))
		for j := range keys[i] {
			keys[i][j] = byte(r.Uint32())
		}
	}
	unsigned := 0
	for _, name := range hashfn.Names() {
		s, err := Seed{Points: 3}.WithHash(name)
		if err != nil || s.HashFunc == nil || s.Points != 3 {
			t.Errorf("WithHash(%q) = %+v, %v; want the function, Points kept", name, s, err)
			continue
		}
		if s.Signed {
			continue
		}
		unsigned++
		for _, k := range keys {
			if v := s.HashFunc(k); v > 1<<31 {
				t.Errorf("WithHash(%q): Signed false, but the hash of %q is %#x, a negative Java int", name, k, v)
				break
			}
		}
	}
	if unsigned != 2 {
		t.Errorf("%d functions with Signed false; want 2 (java_fnv1_32, java_hashcode_spread)", unsigned)
	}
	if s, err := (Seed{}).WithHash("nope"); err == nil || !strings.HasPrefix(err.Error(), "compat: ") {
		t.Errorf("WithHash(%q) = %+v, %v; want an error", "nope", s, err)
	}
}

// javaTreeMapRing routes like the articles' Java rings, the slow way: a map from
// Java int to server where the server put last keeps a position, searched in
// Java's signed order for the first position ≥ the key's hash, else the first.
func javaTreeMapRing(s Seed, servers []string) func(key []byte) string {
	h := s.hash()
	owner := make(map[int32]string)
	for _, name := range servers {
		n := max(s.Points, 1)
		for i := range n {
			label := []byte(name)
			if s.Points > 0 {
				label = appendLabel(nil, cmp.Or(s.Label, DefaultSeedLabel), name, i)
			}
			owner[int32(h(label))] = name
		}
	}
	keys := slices.Sorted(maps.Keys(owner))
	return func(key []byte) string {
		k := int32(h(key))
		i, _ := slices.BinarySearch(keys, k)
		return owner[keys[i%len(keys)]]
	}
}

// TestSeedJavaOrder checks, for every hash function and the articles' labels,
// that WithHash's Seed routes as a Java TreeMap<Integer, String> ring does, with
// collisions: "Aa" and "BB" have the same String.hashCode, and "a" and "a1"
// share the labels "a10" and "a11" of "{name}{i}".
func TestSeedJavaOrder(t *testing.T) {
	servers := []string{"a1", "Aa", "192.168.0.1:111", "BB", "a", "中文", "😀"}
	nodes := make([]chash.Node, len(servers))
	for i, s := range servers {
		nodes[i] = chash.Node{Name: s, Weight: 1, Order: len(servers) - i}
	}
	r := rand.New(rand.NewPCG(3, 4))
	keys := make([][]byte, 5000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "%x", r.Uint64()>>r.IntN(64))
	}
	for _, name := range hashfn.Names() {
		for _, label := range []string{"", "{i}:{name}", "{name}#{i}", "{name}{i}"} {
			for _, points := range []int{0, 12} {
				if points == 0 && label != "" {
					continue // one point per server, at the hash of its name
				}
				s, _ := Seed{Points: points, Label: label}.WithHash(name)
				ring, err := chash.New(s, nodes)
				if err != nil {
					t.Fatal(err)
				}
				java := javaTreeMapRing(s, servers)
				bad := 0
				for _, k := range keys {
					got, _ := ring.Lookup(k)
					if want := java(k); got != want && bad < 3 {
						t.Errorf("%s, label %q, points %d: Lookup(%q) = %q; Java's ring says %q", name, label, points, k, got, want)
						bad++
					}
				}
			}
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

func ExampleSeedArticle001() {
	// The 001 article's main: three servers, then a fourth, added last.
	servers := []chash.Node{
		{Name: "192.168.2.106", Weight: 1, Order: 4}, {Name: "192.168.2.107", Weight: 1, Order: 3},
		{Name: "192.168.2.108", Weight: 1, Order: 2},
	}
	for _, add := range []bool{false, true} {
		if add {
			servers = append(servers, chash.Node{Name: "192.168.2.109", Weight: 1, Order: 1})
		}
		r, _ := chash.New(SeedArticle001(), servers) // "0:192.168.2.106", "1:192.168.2.106", ...
		var routes []string
		for _, key := range []string{"zs", "999999", "233333"} {
			server, _ := r.LookupString(key)
			routes = append(routes, key+" -> "+server)
		}
		fmt.Println(strings.Join(routes, ", "))
	}
	// Output:
	// zs -> 192.168.2.108, 999999 -> 192.168.2.106, 233333 -> 192.168.2.106
	// zs -> 192.168.2.109, 999999 -> 192.168.2.106, 233333 -> 192.168.2.106
}
