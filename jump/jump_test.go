package jump

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/internal/splitmix"
)

type vector struct {
	key       uint64
	n, bucket int
}

// readGolden reads a testdata file of "key(hex) buckets bucket" lines.
func readGolden(t *testing.T, name string) []vector {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var gs []vector
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		var g vector
		if _, err := fmt.Sscanf(line, "%x %d %d", &g.key, &g.n, &g.bucket); err != nil {
			t.Fatalf("%s: bad line %q: %v", name, line, err)
		}
		gs = append(gs, g)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(gs) == 0 {
		t.Fatalf("%s: no vectors", name)
	}
	return gs
}

func TestHashGolden(t *testing.T) {
	for _, g := range readGolden(t, "hash.golden") {
		if got := Hash(g.key, g.n); got != g.bucket {
			t.Errorf("Hash(%#x, %d) = %d; want %d", g.key, g.n, got, g.bucket)
		}
	}
}

func TestBackGolden(t *testing.T) {
	for _, g := range readGolden(t, "back.golden") {
		if got := Back(g.key, g.n); got != g.bucket {
			t.Errorf("Back(%#x, %d) = %d; want %d", g.key, g.n, got, g.bucket)
		}
	}
}

var funcs = []struct {
	name string
	f    func(uint64, int) int
}{{"Hash", Hash}, {"Back", Back}}

func TestBadN(t *testing.T) {
	for _, fn := range funcs {
		for _, n := range []int{0, -1} {
			if got := fn.f(42, n); got != -1 {
				t.Errorf("%s(42, %d) = %d; want -1", fn.name, n, got)
			}
		}
	}
}

// TestMonotone checks the defining property: growing from n to n+1 buckets
// moves a key only into bucket n.
func TestMonotone(t *testing.T) {
	for _, fn := range funcs {
		s := uint64(1)
		for range 2000 {
			s += golden
			key := splitmix.Mix64(s)
			prev := fn.f(key, 1)
			if prev != 0 {
				t.Fatalf("%s(%#x, 1) = %d; want 0", fn.name, key, prev)
			}
			for n := 2; n <= 1500; n++ {
				b := fn.f(key, n)
				if b != prev && b != n-1 {
					t.Fatalf("%s(%#x, %d) = %d, from %d at n-1: moved to an old bucket", fn.name, key, n, b, prev)
				}
				prev = b
			}
		}
	}
}

// TestUniform checks each bucket's count against the binomial spread: every
// count within 5 standard deviations of the mean.
func TestUniform(t *testing.T) {
	const keys = 400_000
	for _, fn := range funcs {
		for _, n := range []int{2, 3, 10, 100, 1000} {
			counts := make([]int, n)
			s := uint64(7)
			for range keys {
				s += golden
				counts[fn.f(splitmix.Mix64(s), n)]++
			}
			mean := float64(keys) / float64(n)
			sd := math.Sqrt(mean * (1 - 1/float64(n)))
			for b, c := range counts {
				if math.Abs(float64(c)-mean) > 5*sd {
					t.Errorf("%s, n=%d: bucket %d has %d keys; want %.0f ± %.0f", fn.name, n, b, c, mean, 5*sd)
				}
			}
		}
	}
}

func names(n int) []chash.Node {
	ns := make([]chash.Node, n)
	for i := range ns {
		ns[i] = chash.Node{Name: "node" + strconv.Itoa(i), Weight: 1}
	}
	return ns
}

func TestBucketsLookup(t *testing.T) {
	for _, back := range []bool{false, true} {
		b, err := New(Config{Back: back}, names(10))
		if err != nil {
			t.Fatal(err)
		}
		f := Hash
		if back {
			f = Back
		}
		for i := range 1000 {
			key := "key" + strconv.Itoa(i)
			got, err := b.LookupString(key)
			want := fmt.Sprintf("node%d", f(xxhashSum(key), 10))
			if err != nil || got != want {
				t.Errorf("Back=%v: Lookup(%q) = %q, %v; want %q", back, key, got, err, want)
			}
		}
	}
}

func TestBucketsAddRemove(t *testing.T) {
	b10, _ := New(Config{}, names(10))
	b11, err := b10.Add(chash.Node{Name: "node10", Weight: 1})
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	const keys = 100_000
	for i := range keys {
		key := []byte("k" + strconv.Itoa(i))
		a, _ := b10.Lookup(key)
		c, _ := b11.Lookup(key)
		if a != c {
			moved++
			if c != "node10" {
				t.Fatalf("Lookup(%q) moved %q -> %q; want only moves to node10", key, a, c)
			}
		}
	}
	if ideal := keys / 11; math.Abs(float64(moved-ideal)) > 0.05*float64(ideal) {
		t.Errorf("adding an 11th node moved %d keys; want about %d", moved, ideal)
	}
	back, err := b11.Remove("node10")
	if err != nil {
		t.Fatal(err)
	}
	if back.Len() != 10 || b11.Len() != 11 {
		t.Errorf("after Remove: Len() = %d, original %d; want 10, 11", back.Len(), b11.Len())
	}
	if _, err := b11.Remove("node3"); err == nil {
		t.Error("Remove(node3) of a middle node succeeded; want an error")
	}
	if _, err := b11.Remove("nope"); err == nil {
		t.Error("Remove(nope) succeeded; want an error")
	}
}

func TestBucketsErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []chash.Node
	}{
		{"empty name", []chash.Node{{Name: "", Weight: 1}}},
		{"weight 2", []chash.Node{{Name: "a", Weight: 2}}},
		{"weight 0", []chash.Node{{Name: "a"}}},
		{"duplicate", []chash.Node{{Name: "a", Weight: 1}, {Name: "a", Weight: 1}}},
	} {
		if _, err := New(Config{}, tc.nodes); err == nil {
			t.Errorf("New(%s) succeeded; want an error", tc.name)
		}
	}
	b, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.LookupString("x"); !errors.Is(err, chash.ErrEmpty) {
		t.Errorf("Lookup on no nodes: err = %v; want chash.ErrEmpty", err)
	}
}

func TestLookupAllocs(t *testing.T) {
	for _, back := range []bool{false, true} {
		b, _ := New(Config{Back: back}, names(1000))
		key := []byte("some:key:12345")
		if n := testing.AllocsPerRun(100, func() { b.Lookup(key) }); n != 0 {
			t.Errorf("Back=%v: Lookup allocates %v times; want 0", back, n)
		}
	}
}
