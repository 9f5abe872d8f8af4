package compat

import (
	"crypto/md5"
	"hash/crc32"
	"slices"
	"sort"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/hashfn"
)

func TestKetamaPoints(t *testing.T) {
	tests := []struct{ w, total, n, want int }{
		{1, 1, 1, 160},
		{1, 3, 3, 160},
		{1, 9, 5, 88}, {2, 9, 5, 176}, {3, 9, 5, 264}, // compat.md's example: 1,2,3,1,2
		{1, 25, 25, 156}, // float32 rounding: 39.999998 labels
		{1, 47, 47, 156},
		{1, 31, 31, 160},
		{0, 1, 1, 0},
	}
	for _, tt := range tests {
		if got := KetamaPoints(tt.w, tt.total, tt.n); got != tt.want {
			t.Errorf("KetamaPoints(%d, %d, %d) = %d; want %d", tt.w, tt.total, tt.n, got, tt.want)
		}
	}
}

func TestLibketamaNumPoints(t *testing.T) {
	tests := []struct {
		count             LibketamaCount
		w, total, n, want int
	}{
		{LibketamaFloat64, 1, 5, 5, 160},
		{LibketamaFloat64, 1, 7, 7, 156}, // (1/7)*40*7 = 39.99999999999999
		{LibketamaFloat64, 1, 3, 3, 160},
		{LibketamaFloat64, 3, 4, 2, 240},
		{LibketamaFloat32, 1, 25, 25, 156},
		{LibketamaFloat32, 1, 7, 7, 160},
		{LibketamaFixed, 5, 9, 3, 160},
	}
	for _, tt := range tests {
		l := Libketama{Count: tt.count}
		if got := l.NumPoints(tt.w, tt.total, tt.n); got != tt.want {
			t.Errorf("Libketama{Count: %d}.NumPoints(%d, %d, %d) = %d; want %d", tt.count, tt.w, tt.total, tt.n, got, tt.want)
		}
	}
}

// TestKetamaWords checks the four points of a label against MD5, computed
// here byte by byte, and that they allocate nothing when dst has room.
func TestKetamaWords(t *testing.T) {
	for _, label := range []string{"", "10.0.0.1-0", "10.0.0.1:11212-159", "cache-1-39"} {
		d := md5.Sum([]byte(label))
		want := []uint32{7,
			uint32(d[0]) | uint32(d[1])<<8 | uint32(d[2])<<16 | uint32(d[3])<<24,
			uint32(d[4]) | uint32(d[5])<<8 | uint32(d[6])<<16 | uint32(d[7])<<24,
			uint32(d[8]) | uint32(d[9])<<8 | uint32(d[10])<<16 | uint32(d[11])<<24,
			uint32(d[12]) | uint32(d[13])<<8 | uint32(d[14])<<16 | uint32(d[15])<<24,
		}
		if got := ketamaWords([]uint32{7}, []byte(label)); !slices.Equal(got, want) {
			t.Errorf("ketamaWords([7], %q) = %#x; want %#x", label, got, want)
		}
		if got, want := hashfn.MD5([]byte(label)), want[1]; got != want {
			t.Errorf("MD5(%q) = %#08x; want the first ketama point %#08x", label, got, want)
		}
	}
	dst := make([]uint32, 0, 4)
	if a := testing.AllocsPerRun(100, func() { dst = ketamaWords(dst[:0], []byte("10.0.0.1-0")) }); a != 0 {
		t.Errorf("ketamaWords with room: %v allocations; want 0", a)
	}
}

// TestKetamaLabels checks the labels and the four words per label.
func TestKetamaLabels(t *testing.T) {
	all := Ketama{}.AppendPoints(nil, "10.0.0.1", 0, 12)
	var want []uint32
	for _, label := range []string{"10.0.0.1-0", "10.0.0.1-1", "10.0.0.1-2"} {
		want = ketamaWords(want, []byte(label))
	}
	if !slices.Equal(all, want) {
		t.Fatalf("AppendPoints(0, 12) = %x; want %x", all, want)
	}
	// Any sub-range is the same slice of the sequence.
	for from := range 12 {
		for to := from; to <= 12; to++ {
			if got := (Ketama{}).AppendPoints(nil, "10.0.0.1", from, to); !slices.Equal(got, all[from:to]) {
				t.Errorf("AppendPoints(%d, %d) = %x; want %x", from, to, got, all[from:to])
			}
		}
	}
}

func TestHashTagged(t *testing.T) {
	tests := []struct{ key, tag, want string }{
		{"{user1}:a", "{}", "user1"},
		{"a{user1}b{x}", "{}", "user1"},
		{"{}x", "{}", "{}x"},
		{"{x", "{}", "{x"},
		{"}x{", "{}", "}x{"},
		{"x{{a}}", "{}", "{a"},
		{"$a$b$", "$$", "a"},
		{"{a}", "", "{a}"},
		{"{a}", "{", "{a}"},
		{"", "{}", ""},
	}
	for _, tt := range tests {
		if got := string(HashTagged([]byte(tt.key), tt.tag)); got != tt.want {
			t.Errorf("HashTagged(%q, %q) = %q; want %q", tt.key, tt.tag, got, tt.want)
		}
	}
}

func TestKetamaHash(t *testing.T) {
	k := Ketama{HashTag: "{}"}
	if got, want := k.Hash([]byte("{user1}:a")), hashfn.FNV1a_64([]byte("user1")); got != want {
		t.Errorf("Hash({user1}:a) = %#x; want fnv1a_64(user1) = %#x", got, want)
	}
	if got := k.Hash(nil); got != 0 {
		t.Errorf("Hash(empty) = %#x; want 0", got)
	}
	if got, want := (Ketama{KeyHash: hashfn.MD5}).Hash([]byte("a")), hashfn.MD5([]byte("a")); got != want {
		t.Errorf("md5 Hash(a) = %#x; want %#x", got, want)
	}
}

func TestTwemproxyName(t *testing.T) {
	tests := []struct{ host, port, alias, want string }{
		{"10.0.0.1", "11211", "", "10.0.0.1"},
		{"10.0.0.1", "11212", "", "10.0.0.1:11212"},
		{"10.0.0.1", "11211", "cache1", "cache1"},
		{"cache.example.com", "11211", "", "cache.example.com"},
	}
	for _, tt := range tests {
		if got := TwemproxyName(tt.host, tt.port, tt.alias); got != tt.want {
			t.Errorf("TwemproxyName(%q, %q, %q) = %q; want %q", tt.host, tt.port, tt.alias, got, tt.want)
		}
	}
}

func TestLibmemcached(t *testing.T) {
	unweighted := Libmemcached{}
	if got := unweighted.NumPoints(1, 3, 3); got != 100 {
		t.Errorf("NumPoints = %d; want 100", got)
	}
	pts := unweighted.AppendPoints(nil, "10.0.0.1", 0, 3)
	for j, label := range []string{"10.0.0.1-0", "10.0.0.1-1", "10.0.0.1-2"} {
		if want := hashfn.OneAtATime([]byte(label)); pts[j] != want {
			t.Errorf("point %d = %#x; want one_at_a_time(%q) = %#x", j, pts[j], label, want)
		}
	}
	nodes := []chash.Node{{Name: "a", Weight: 1}, {Name: "b", Weight: 2}}
	if !unweighted.For(nodes).Weighted || unweighted.For(nodes[:1]).Weighted {
		t.Error("For: want Weighted exactly when a weight is above 1")
	}
	w := Libmemcached{Weighted: true}
	if got, want := w.AppendPoints(nil, "x", 0, 8), (Ketama{}).AppendPoints(nil, "x", 0, 8); !slices.Equal(got, want) {
		t.Errorf("weighted points %x; want ketama's %x", got, want)
	}
}

func TestNginxSplit(t *testing.T) {
	tests := []struct{ name, host, port string }{
		{"127.0.0.1:8080", "127.0.0.1", "8080"},
		{"backend.example.com:80", "backend.example.com", "80"},
		{"[::1]:80", "[::1]", "80"},
		{"unix:/tmp/s.sock", "/tmp/s.sock", ""},
		{"UNIX:/tmp/s.sock", "/tmp/s.sock", ""},
		{"host", "host", ""},
		{"host:http", "host:http", ""},
		{"a:", "a", ""},
	}
	for _, tt := range tests {
		if h, p := nginxSplit(tt.name); h != tt.host || p != tt.port {
			t.Errorf("nginxSplit(%q) = %q, %q; want %q, %q", tt.name, h, p, tt.host, tt.port)
		}
	}
}

func TestNginxPoints(t *testing.T) {
	pts := Nginx{}.AppendPoints(nil, "10.0.0.1:80", 0, 3)
	prev := []byte{0, 0, 0, 0}
	for j := range 3 {
		want := crc32.ChecksumIEEE(append([]byte("10.0.0.1\x0080"), prev...))
		if pts[j] != want {
			t.Errorf("point %d = %#x; want %#x", j, pts[j], want)
		}
		prev = []byte{byte(want), byte(want >> 8), byte(want >> 16), byte(want >> 24)}
	}
	if got := (Nginx{}).AppendPoints(nil, "10.0.0.1:80", 1, 3); !slices.Equal(got, pts[1:]) {
		t.Errorf("AppendPoints(1, 3) = %x; want %x", got, pts[1:])
	}
	if got := (Nginx{}).NumPoints(3, 10, 4); got != 480 {
		t.Errorf("NumPoints(3) = %d; want 480", got)
	}
}

// TestStathatSearch checks that Hash+1 and the ring's at-or-after search give
// stathat's strictly-after search, at every point, beside it, and at both ends of
// the hash space, including the wrap past 2^32-1.
func TestStathatSearch(t *testing.T) {
	nodes := []chash.Node{{Name: "a", Weight: 1}, {Name: "b", Weight: 1, Order: -1}, {Name: "c", Weight: 1, Order: -2}}
	r, err := chash.New(Stathat{}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	// The reference: stathat's search over its sorted, deduplicated points.
	var pos []uint32
	owner := map[uint32]string{}
	for _, n := range nodes { // added in this order: a later node overwrites
		for _, p := range (Stathat{}).AppendPoints(nil, n.Name, 0, StathatReplicas) {
			if _, ok := owner[p]; !ok {
				pos = append(pos, p)
			}
			owner[p] = n.Name
		}
	}
	slices.Sort(pos)
	ref := func(h uint32) string {
		i := sort.Search(len(pos), func(i int) bool { return pos[i] > h })
		if i == len(pos) {
			i = 0
		}
		return owner[pos[i]]
	}
	hs := []uint32{0, 1, 1<<32 - 2, 1<<32 - 1}
	for _, p := range pos {
		hs = append(hs, p-1, p, p+1)
	}
	// Ring positions are Hash(key) = crc+1; look up by position through Point.
	for _, h := range hs {
		got := lookupPos(r, h+1)
		if want := ref(h); got != want {
			t.Errorf("crc %#x: owner %q; want stathat's %q", h, got, want)
		}
	}
}

// lookupPos returns the owner of the first point at or after pos, wrapping.
func lookupPos(r *chash.Ring, pos uint32) string {
	n := r.NumPoints()
	i := sort.Search(n, func(i int) bool { p, _ := r.Point(i); return p >= pos })
	if i == n {
		i = 0
	}
	_, o := r.Point(i)
	return r.Nodes()[o].Name
}

func TestStathatHashWraps(t *testing.T) {
	// crc32("") is 0; the key whose CRC is 2^32-1 is forged in benchmarks/compat_test.go.
	if got := (Stathat{}).Hash(nil); got != 1 {
		t.Errorf("Hash(empty) = %d; want 1", got)
	}
}

// TestPrefixCollision checks the groupcache/stathat label collision: point 11 of
// "a" and point 1 of "1a" are both CRC-32("11a"), and the node with the lower
// Order (added later, by the convention of those types' docs) owns it.
func TestPrefixCollision(t *testing.T) {
	p := crc32.ChecksumIEEE([]byte("11a"))
	if got := (Groupcache{}).AppendPoints(nil, "a", 11, 12)[0]; got != p {
		t.Fatalf("point 11 of a = %#x; want %#x", got, p)
	}
	if got := (Groupcache{}).AppendPoints(nil, "1a", 1, 2)[0]; got != p {
		t.Fatalf("point 1 of 1a = %#x; want %#x", got, p)
	}
	r, err := chash.New(Groupcache{}, []chash.Node{{Name: "a", Weight: 1, Order: 0}, {Name: "1a", Weight: 1, Order: -1}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Lookup([]byte("11a")); got != "1a" {
		t.Errorf(`Lookup("11a") = %q; want "1a", added last`, got)
	}
}

func TestModula(t *testing.T) {
	// twemproxy sorts servers by name length, then bytes: "b", "aa", "10.0.0.1:1".
	nodes := []chash.Node{{Name: "10.0.0.1:1", Weight: 1}, {Name: "aa", Weight: 2}, {Name: "b", Weight: 1}}
	m, err := NewModula(nodes, hashfn.CRC32A, "")
	if err != nil {
		t.Fatal(err)
	}
	table := []string{"b", "aa", "aa", "10.0.0.1:1"}
	for _, k := range []string{"x", "y", "zz", "hello", "{t}a"} {
		want := table[hashfn.CRC32A([]byte(k))%4]
		if got, _ := m.LookupString(k); got != want {
			t.Errorf("Lookup(%q) = %q; want %q", k, got, want)
		}
	}
	if got, _ := m.Lookup(nil); got != "b" {
		t.Errorf("Lookup(empty) = %q; want %q (hash 0)", got, "b")
	}
	for _, bad := range [][]chash.Node{nil, {{Name: "", Weight: 1}}, {{Name: "a", Weight: 0}}, {{Name: "a", Weight: 1}, {Name: "a", Weight: 1}}} {
		if _, err := NewModula(bad, nil, ""); err == nil {
			t.Errorf("NewModula(%v): no error", bad)
		}
	}
}

// TestLookupAllocs checks that lookups on compat rings allocate nothing.
func TestLookupAllocs(t *testing.T) {
	nodes := []chash.Node{{Name: "a", Weight: 1}, {Name: "b", Weight: 2}, {Name: "c", Weight: 1}}
	key := []byte("{user1}:some-key")
	for _, s := range []chash.Scheme{Ketama{HashTag: "{}"}, Libketama{}, Libmemcached{}, Nginx{}, Groupcache{}, Stathat{}} {
		r, err := chash.New(s, nodes)
		if err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { r.Lookup(key) }); n != 0 {
			t.Errorf("%T: Lookup allocates %v times; want 0", s, n)
		}
	}
	m, _ := NewModula(nodes, nil, "{}")
	if n := testing.AllocsPerRun(100, func() { m.Lookup(key) }); n != 0 {
		t.Errorf("Modula: Lookup allocates %v times; want 0", n)
	}
}
