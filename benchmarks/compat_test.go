package benchmarks

import (
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/golang/groupcache/consistenthash"
	"stathat.com/c/consistent"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/compat"
)

// The tests in this file check compat.Groupcache and compat.Stathat against the
// real Go modules: random rings, random keys, and keys forged to hash exactly onto,
// just before and just after every point, and onto 0 and 2^32-1, where the
// libraries' searches (at-or-after for groupcache, strictly-after for stathat) and
// their collision rule (the member added last owns a shared point) show.

// compatForge returns prefix followed by four bytes chosen so that the CRC-32/IEEE
// of the result is target (CRC-32 is linear, so four free bytes reach any value).
func compatForge(prefix []byte, target uint32) []byte {
	tab := crc32.IEEETable
	var inv [256]byte // the table index whose entry has a given top byte
	for i := range 256 {
		inv[tab[i]>>24] = byte(i)
	}
	var idx [4]byte
	r := ^target
	for k := 3; k >= 0; k-- {
		idx[k] = inv[r>>24]
		r = (r ^ tab[idx[k]]) << 8
	}
	reg := ^crc32.ChecksumIEEE(prefix)
	out := append([]byte(nil), prefix...)
	for k := range 4 {
		b := byte(reg) ^ idx[k]
		out = append(out, b)
		reg = tab[byte(reg)^b] ^ reg>>8
	}
	return out
}

// compatKeys returns random keys plus keys whose CRC-32 is each point's position,
// one less and one more, and 0 and 2^32-1.
func compatKeys(r *rand.Rand, ring *chash.Ring, n int) [][]byte {
	var keys [][]byte
	for range n {
		keys = append(keys, fmt.Appendf(nil, "key-%d", r.Uint64()))
	}
	targets := []uint32{0, 1, 1<<32 - 1, 1<<32 - 2}
	for i := range ring.NumPoints() {
		p, _ := ring.Point(i)
		targets = append(targets, p-1, p, p+1)
	}
	for _, t := range targets {
		k := compatForge([]byte("k"), t)
		if crc32.ChecksumIEEE(k) != t {
			panic("compatForge is wrong")
		}
		keys = append(keys, k)
	}
	return keys
}

// compatNames returns n distinct peer names; with collide, the first two are "a"
// and "1a", whose labels "11a" coincide.
func compatNames(r *rand.Rand, n int, collide bool) []string {
	var names []string
	seen := map[string]bool{}
	if collide && n >= 2 {
		names = append(names, "a", "1a")
		seen["a"], seen["1a"] = true, true
	}
	for len(names) < n {
		s := fmt.Sprintf("http://10.%d.%d.%d:%d", r.IntN(256), r.IntN(256), r.IntN(256), 1+r.IntN(65535))
		if r.IntN(3) == 0 {
			s = strconv.Itoa(r.IntN(1000)) // short names collide more
		}
		if !seen[s] {
			seen[s] = true
			names = append(names, s)
		}
	}
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	return names
}

// compatRing builds a compat ring of names in insertion order: the last added
// wins a collision, so Order = -index.
func compatRing(t *testing.T, s chash.Scheme, names []string) *chash.Ring {
	t.Helper()
	nodes := make([]chash.Node, len(names))
	for i, n := range names {
		nodes[i] = chash.Node{Name: n, Weight: 1, Order: -i}
	}
	ring, err := chash.New(s, nodes)
	if err != nil {
		t.Fatal(err)
	}
	return ring
}

func TestCompatGroupcache(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	total := 0
	for trial := range 60 {
		n := 1 + r.IntN(40)
		replicas := []int{0, 1, 3, 50, 1 + r.IntN(200)}[trial%5]
		names := compatNames(r, n, trial%2 == 0)
		ring := compatRing(t, compat.Groupcache{Replicas: replicas}, names)
		if replicas == 0 {
			replicas = compat.GroupcacheReplicas
		}
		m := consistenthash.New(replicas, nil)
		m.Add(names...)
		for _, k := range compatKeys(r, ring, 200) {
			got, err := ring.Lookup(k)
			if err != nil {
				t.Fatal(err)
			}
			if want := m.Get(string(k)); got != want {
				t.Fatalf("replicas %d, peers %q: Lookup(%q) = %q; want %q (groupcache)", replicas, names, k, got, want)
			}
			total++
		}
	}
	t.Logf("%d keys agree with github.com/golang/groupcache/consistenthash", total)
}

func TestCompatStathat(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	total := 0
	for trial := range 60 {
		n := 1 + r.IntN(40)
		replicas := []int{0, 1, 3, 20, 1 + r.IntN(200)}[trial%5]
		names := compatNames(r, n, trial%2 == 0)
		ring := compatRing(t, compat.Stathat{Replicas: replicas}, names)
		c := consistent.New()
		if replicas != 0 {
			c.NumberOfReplicas = replicas
		}
		for _, name := range names {
			c.Add(name)
		}
		for _, k := range compatKeys(r, ring, 200) {
			got, err := ring.Lookup(k)
			if err != nil {
				t.Fatal(err)
			}
			want, err := c.Get(string(k))
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("replicas %d, members %q: Lookup(%q) = %q; want %q (stathat)", replicas, names, k, got, want)
			}
			total++
		}
	}
	t.Logf("%d keys agree with stathat.com/c/consistent", total)
}
