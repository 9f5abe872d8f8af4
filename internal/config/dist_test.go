package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/hashfn"
)

func TestHashKey(t *testing.T) {
	tests := []struct {
		tag, key, want string
	}{
		{"", "{user1}:a", "{user1}:a"},
		{"{}", "{user1}:a", "user1"},
		{"{}", "x{user1}:a", "user1"},
		{"{}", "user1", "user1"},
		{"{}", "{}x", "{}x"}, // an empty tag hashes the whole key
		{"{}", "{user1", "{user1"},
		{"{}", "}user1{", "}user1{"},
		{"{}", "}a{b}c", "b"},
		{"{}", "{a}{b}", "a"},
		{"{}", "{{a}}", "{a"},
		{"{}", "", ""},
		{"$$", "$a$b$", "a"},
		{"$$", "$$a$", "$$a$"},
		{"$$", "x$abc", "x$abc"},
		{"()", "(é)", "é"},
	}
	for _, tt := range tests {
		p := &Pool{HashTag: tt.tag}
		if got := string(p.HashKey([]byte(tt.key))); got != tt.want {
			t.Errorf("HashKey(%q) with hash_tag %q = %q; want %q", tt.key, tt.tag, got, tt.want)
		}
	}
}

func TestDistributions(t *testing.T) {
	got := Distributions()
	for _, name := range []string{"chash", "seed"} {
		if !slices.Contains(got, name) {
			t.Errorf("Distributions() = %q; want it to contain %q", got, name)
		}
	}
	if !slices.IsSorted(got) {
		t.Errorf("Distributions() = %q; want them sorted", got)
	}
}

func mustPool(t *testing.T, conf string) *Pool {
	t.Helper()
	f, err := Parse("test.yml", []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	return f.Pools[0]
}

func route(t *testing.T, p *Pool, keys ...string) []string {
	t.Helper()
	r, err := p.Router()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range keys {
		s, err := r.Lookup(p.HashKey([]byte(k)))
		if err != nil {
			t.Fatalf("Lookup(%q): %v", k, err)
		}
		got = append(got, s)
	}
	return got
}

const seedServers = `  servers:
   - 192.168.0.0:111:1
   - 192.168.0.1:111:1
   - 192.168.0.2:111:1
   - 192.168.0.3:111:1
   - 192.168.0.4:111:1
`

// TestSeed checks the seed articles' printed answers.
func TestSeed(t *testing.T) {
	keys := []string{"127.0.0.1:1111", "221.226.0.1:2222", "10.211.0.1:3333"}
	tests := []struct {
		points string
		want   []string
	}{
		{"", []string{"192.168.0.0:111", "192.168.0.4:111", "192.168.0.4:111"}},
		{"  points: 0\n", []string{"192.168.0.0:111", "192.168.0.4:111", "192.168.0.4:111"}},
		{"  points: 5\n", []string{"192.168.0.0:111", "192.168.0.0:111", "192.168.0.2:111"}},
		// An explicit java_fnv1_32 is the default.
		{"  points: 5\n  hash: java_fnv1_32\n", []string{"192.168.0.0:111", "192.168.0.0:111", "192.168.0.2:111"}},
	}
	for _, tt := range tests {
		p := mustPool(t, "articles:\n  distribution: seed\n"+tt.points+seedServers)
		got := route(t, p, keys...)
		for i := range keys {
			if got[i] != tt.want[i] {
				t.Errorf("%q: Lookup(%q) = %q; want %q", tt.points, keys[i], got[i], tt.want[i])
			}
		}
	}
}

// TestSeedWeight checks that a seed server gets Points×weight virtual nodes, and
// one point whatever its weight when Points is zero.
func TestSeedWeight(t *testing.T) {
	for _, tt := range []struct {
		points, want int
	}{{0, 2}, {5, 15}} {
		p := mustPool(t, fmt.Sprintf("a:\n  distribution: seed\n  points: %d\n  servers:\n   - a:1:1\n   - b:1:2\n", tt.points))
		r, err := p.Router()
		if err != nil {
			t.Fatal(err)
		}
		if got := r.(*chash.Ring).NumPoints(); got != tt.want {
			t.Errorf("points %d: NumPoints() = %d; want %d", tt.points, got, tt.want)
		}
	}
}

func TestChash(t *testing.T) {
	const servers = `  servers:
   - 127.0.0.1:11211:1
   - 127.0.0.1:11212:2
   - 127.0.0.1:11213:1 c
`
	p := mustPool(t, "a:\n  distribution: chash\n"+servers)
	r, err := p.Router()
	if err != nil {
		t.Fatal(err)
	}
	ring := r.(*chash.Ring)
	if got, want := ring.NumPoints(), 4*chash.DefaultPoints; got != want {
		t.Errorf("NumPoints() = %d; want %d", got, want)
	}
	// The router is chash.Standard's ring of the servers' names and weights.
	want, err := chash.New(chash.Standard{}, []chash.Node{
		{Name: "127.0.0.1:11211", Weight: 1},
		{Name: "127.0.0.1:11212", Weight: 2},
		{Name: "c", Weight: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		key := fmt.Appendf(nil, "user:%d", i)
		g, _ := r.Lookup(key)
		w, _ := want.Lookup(key)
		if g != w {
			t.Fatalf("Lookup(%q) = %q; want %q", key, g, w)
		}
	}

	p = mustPool(t, "a:\n  distribution: chash\n  points: 7\n"+servers)
	if r, err := p.Router(); err != nil {
		t.Fatal(err)
	} else if got := r.(*chash.Ring).NumPoints(); got != 28 {
		t.Errorf("points 7: NumPoints() = %d; want 28", got)
	}

	// An explicit hash hashes keys: java_fnv1_32 sends these keys elsewhere than
	// xxh64 does, on the same points.
	p = mustPool(t, "a:\n  distribution: chash\n  hash: java_fnv1_32\n"+servers)
	r, err = p.Router()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.(*chash.Ring).Hash([]byte("user:1")), hashfn.JavaFNV1_32([]byte("user:1")); got != want {
		t.Errorf("hash: java_fnv1_32: Hash(user:1) = %d; want %d", got, want)
	}
}

// TestChashOrder checks that chash routing does not depend on the servers'
// order in the file.
func TestChashOrder(t *testing.T) {
	a := mustPool(t, "a:\n  distribution: chash\n  servers: [h:1:1, h:2:1, h:3:2, h:4:1]\n")
	b := mustPool(t, "a:\n  distribution: chash\n  servers: [h:4:1, h:3:2, h:1:1, h:2:1]\n")
	var keys []string
	for i := range 500 {
		keys = append(keys, fmt.Sprint("k", i))
	}
	if ga, gb := route(t, a, keys...), route(t, b, keys...); !slices.Equal(ga, gb) {
		t.Errorf("routing changes with the order of the servers")
	}
}

func TestHashTagRouting(t *testing.T) {
	p := mustPool(t, "a:\n  distribution: chash\n  hash_tag: \"{}\"\n  servers: [h:1:1, h:2:1, h:3:1, h:4:1]\n")
	for i := range 100 {
		tag := fmt.Sprint("user:", i)
		got := route(t, p, "{"+tag+"}:name", "{"+tag+"}:mail", tag)
		if got[0] != got[2] || got[1] != got[2] {
			t.Errorf("keys tagged %q go to %q; want one server", tag, got)
		}
	}
}

func TestRouterOf(t *testing.T) {
	p := mustPool(t, "a:\n  distribution: chash\n  servers: [h:1:1, h:2:1, h:3:1]\n")
	r, err := p.RouterOf(p.Servers[1:2])
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if got, _ := r.Lookup(fmt.Append(nil, i)); got != "h:2" {
			t.Errorf("Lookup(%d) = %q; want h:2, the only server", i, got)
		}
	}
	if _, err := p.RouterOf(nil); err == nil || !strings.Contains(err.Error(), "no servers") {
		t.Errorf("RouterOf(nil) error %v; want one saying no servers", err)
	}
}

// TestRouterErrors checks that pools Parse would refuse get errors, not panics.
func TestRouterErrors(t *testing.T) {
	srv := []Server{{Host: "h", Port: 1, Weight: 1}}
	tests := []struct {
		name string
		p    *Pool
		want string
	}{
		{"unknown distribution", &Pool{Name: "p", Distribution: "nope", Servers: srv}, `distribution "nope" is unknown`},
		{"zero distribution", &Pool{Name: "p", Servers: srv}, `distribution "" is unknown`},
		{"no servers", &Pool{Name: "p", Distribution: "chash"}, "no servers"},
		{"unknown hash", &Pool{Name: "p", Distribution: "chash", Hash: "nope", Servers: srv}, `hash "nope" is unknown`},
		{"seed unknown hash", &Pool{Name: "p", Distribution: "seed", Hash: "nope", Servers: srv}, `hash "nope" is unknown`},
		{"zero weight", &Pool{Name: "p", Distribution: "chash", Servers: []Server{{Host: "h", Port: 1}}}, `server "h:1": weight 0 is not positive`},
		{"negative points", &Pool{Name: "p", Distribution: "seed", Points: -1, Servers: srv}, "points -1 is negative"},
		{"duplicate", &Pool{Name: "p", Distribution: "chash", Servers: []Server{srv[0], srv[0]}}, `duplicate node "h:1"`},
		{"too many points", &Pool{Name: "p", Distribution: "chash", Servers: []Server{{Host: "h", Port: 1, Weight: 100000}}}, "more than 4194304 points"},
		{"points overflow", &Pool{Name: "p", Distribution: "seed", Points: 1 << 40, Servers: []Server{{Host: "h", Port: 1, Weight: 1 << 40}}}, "more than 4194304 points"},
	}
	for _, tt := range tests {
		r, err := tt.p.Router()
		var e *Error
		switch {
		case err == nil:
			t.Errorf("%s: Router() = %v, nil; want an error", tt.name, r)
		case !errors.As(err, &e) || e.Pool != "p":
			t.Errorf("%s: Router() error %v; want an *Error about pool p", tt.name, err)
		case !strings.Contains(err.Error(), tt.want):
			t.Errorf("%s: Router() error %q; want it to say %q", tt.name, err, tt.want)
		}
	}
}

// TestRouterErrorLine checks that an error found when building the ring names the
// file and the line of the key at fault.
func TestRouterErrorLine(t *testing.T) {
	p := mustPool(t, "a:\n  distribution: chash\n  points: 100000\n  servers: [h:1:1000]\n")
	_, err := p.Router()
	const want = `config: test.yml:3: pool "a": 100000 points per unit of weight give the chash ring more than 4194304 points`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Router() error\n %v\nwant\n %s...", err, want)
	}
}
