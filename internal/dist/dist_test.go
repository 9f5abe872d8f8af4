package dist

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/hashfn"
	"github.com/chash-dev/chash/internal/config"
)

func mustPool(t testing.TB, conf string) *config.Pool {
	t.Helper()
	f, err := config.Parse("test.yml", []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	return f.Pools[0]
}

func mustBuild(t testing.TB, p *config.Pool, servers []config.Server) Router {
	t.Helper()
	r, err := Build(p, servers)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// route returns the names of the servers of p that keys go to, each key
// passed through the pool's hash tag.
func route(t testing.TB, p *config.Pool, keys ...string) []string {
	t.Helper()
	return routeOver(t, p, p.Servers, keys...)
}

// routeOver is route over servers rather than all of p.Servers.
func routeOver(t testing.TB, p *config.Pool, servers []config.Server, keys ...string) []string {
	t.Helper()
	r := mustBuild(t, p, servers)
	var got []string
	for _, k := range keys {
		i, err := r.Lookup(p.HashKey([]byte(k)))
		if err != nil {
			t.Fatalf("Lookup(%q): %v", k, err)
		}
		if i < 0 || i >= len(servers) {
			t.Fatalf("Lookup(%q) = %d; want an index of %d servers", k, i, len(servers))
		}
		got = append(got, servers[i].Name())
	}
	return got
}

// servers returns n servers 10.0.x.y:11211 of weight 1, named by address.
func servers(n int) []config.Server {
	s := make([]config.Server, n)
	for i := range s {
		s[i] = config.Server{Host: fmt.Sprintf("10.0.%d.%d", i/256, i%256), Port: 11211, Weight: 1}
	}
	return s
}

// poolOf returns a pool of the distribution over servers, as a caller makes
// one in code.
func poolOf(dist string, servers []config.Server) *config.Pool {
	return &config.Pool{Name: "p", Distribution: dist, Servers: servers}
}

func someKeys(n int) []string {
	keys := []string{"", "a", "{tag}x", "中文", "\xff\x00"}
	for i := range n {
		keys = append(keys, fmt.Sprint("user:", i))
	}
	return keys
}

func TestCatalogue(t *testing.T) {
	names := Names()
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("Names() = %q; want them sorted and distinct", names)
	}
	all := All()
	if len(all) != len(names) || all[0].Name != "chash" {
		t.Errorf("All() has %d entries, the first %q; want %d, chash first", len(all), all[0].Name, len(names))
	}
	for _, name := range []string{"chash", "seed", "ketama", "modula", "random", "libketama", "spymemcached",
		"libmemcached", "nginx", "groupcache", "stathat", "jump", "jumpback", "rendezvous", "maglev",
		"multiprobe", "bounded", "memento", "balanced"} {
		e, err := Lookup(name)
		if err != nil || e.Name != name || e.Summary == "" || e.build == nil || e.Method == "" {
			t.Errorf("Lookup(%q) = %+v, %v; want its entry, with a summary, a method and a builder", name, e, err)
		}
	}
	_, err := Lookup("ring")
	if err == nil || !strings.HasPrefix(err.Error(), "dist: ") || !strings.Contains(err.Error(), `"ring" is unknown (known: balanced, bounded, chash,`) {
		t.Errorf("Lookup(ring) error %v; want one listing the known names", err)
	}
	// All returns a copy: changing it changes nothing.
	all[0].Name = "changed"
	if All()[0].Name != "chash" {
		t.Error("All() returned the catalogue itself")
	}
}

// TestCapabilities checks each entry's capabilities against what its routers
// do, over 12 servers.
func TestCapabilities(t *testing.T) {
	keys := someKeys(3000)
	for _, e := range All() {
		t.Run(e.Name, func(t *testing.T) {
			sv := servers(12)
			p := poolOf(e.Name, sv)
			r := mustBuild(t, p, sv)
			if _, ok := r.(ReplicaRouter); ok != e.Replicas {
				t.Errorf("router %T is a ReplicaRouter: %v; Replicas says %v", r, ok, e.Replicas)
			}
			if _, ok := r.(Placer); ok != e.LoadAware {
				t.Errorf("router %T is a Placer: %v; LoadAware says %v", r, ok, e.LoadAware)
			}
			got := routeOver(t, p, sv, keys...)
			hit := map[string]int{}
			for _, s := range got {
				hit[s]++
			}
			if len(hit) != len(sv) {
				t.Errorf("%d keys went to %d of %d servers", len(keys), len(hit), len(sv))
			}
			if again := routeOver(t, p, sv, keys...); slices.Equal(got, again) == e.Random {
				t.Errorf("routing the keys twice gives the same servers: %v; Random says %v", !e.Random, e.Random)
			}
			if e.Random {
				return
			}
			// The order of the servers: reversed, do keys go elsewhere?
			rev := slices.Clone(sv)
			slices.Reverse(rev)
			if moved := !slices.Equal(got, routeOver(t, poolOf(e.Name, rev), rev, keys...)); moved != (e.Order == OrderMatters) {
				t.Errorf("reversing the servers moves keys: %v; Order says %v", moved, e.Order)
			}
			// Weights: a server of weight 2 is taken, or refused.
			heavy := slices.Clone(sv)
			heavy[0].Weight = 2
			_, err := Build(poolOf(e.Name, heavy), heavy)
			if (err == nil) != e.Weights {
				t.Errorf("a server of weight 2: error %v; Weights says %v", err, e.Weights)
			}
			// Points: the default is what 0 means; points are refused where not taken.
			withPoints := poolOf(e.Name, sv)
			withPoints.Points = max(e.DefaultPoints, 1)
			r2, err := Build(withPoints, sv)
			switch {
			case !e.Points && err == nil:
				t.Errorf("points %d accepted; Points says it takes none", withPoints.Points)
			case e.Points && err != nil:
				t.Errorf("points %d: %v", withPoints.Points, err)
			case e.Points && e.DefaultPoints > 0 && !slices.Equal(got, routeWith(t, p, r2, keys)):
				t.Errorf("points %d routes otherwise than points 0; DefaultPoints says they are the same", e.DefaultPoints)
			}
			// Hashes: another hash is refused where the distribution has only one.
			other := poolOf(e.Name, sv)
			other.Hash = "murmur"
			if _, err := Build(other, sv); (err != nil) != (e.Hashes != nil) {
				t.Errorf("hash murmur: error %v; Hashes is %q", err, e.Hashes)
			}
			if e.DefaultHash != "" {
				// The default hash named is the one used without a hash:.
				named := poolOf(e.Name, sv)
				named.Hash = e.DefaultHash
				if r, err := Build(named, sv); err != nil || !slices.Equal(got, routeWith(t, p, r, keys)) {
					t.Errorf("hash %s (%v) routes otherwise than no hash; DefaultHash says they are the same", e.DefaultHash, err)
				}
			}
			if e.Sweep != nil {
				if _, ok := r.(interface{ Ring() (*chash.Ring, []int) }); !ok || e.Method != Arcs {
					t.Errorf("a Sweep scheme for a router %T measured by %s; want a ring", r, e.Method)
				}
			}
		})
	}
}

// routeWith routes keys with r, a router of p's servers, and names them.
func routeWith(t *testing.T, p *config.Pool, r Router, keys []string) []string {
	t.Helper()
	var got []string
	for _, k := range keys {
		i, err := r.Lookup(p.HashKey([]byte(k)))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Servers[i].Name())
	}
	return got
}

// TestReplicas checks AppendN of the distributions with replica sets: the
// owner first, distinct servers, all of them when n is at least their number,
// and dst kept.
func TestReplicas(t *testing.T) {
	sv := servers(7)
	for _, e := range All() {
		if !e.Replicas {
			continue
		}
		r := mustBuild(t, poolOf(e.Name, sv), sv).(ReplicaRouter)
		for _, k := range someKeys(500) {
			owner, _ := r.Lookup([]byte(k))
			for _, n := range []int{0, 1, 3, 7, 20} {
				got, err := r.AppendN([]int{-1}, []byte(k), n)
				if err != nil || got[0] != -1 || len(got) != 1+min(n, len(sv)) {
					t.Fatalf("%s: AppendN([-1], %q, %d) = %v, %v; want -1 and %d servers", e.Name, k, n, got, err, min(n, len(sv)))
				}
				got = got[1:]
				if n > 0 && got[0] != owner {
					t.Fatalf("%s: AppendN(%q, %d)[0] = %d; want the owner %d", e.Name, k, n, got[0], owner)
				}
				if len(slices.Compact(slices.Sorted(slices.Values(got)))) != len(got) {
					t.Fatalf("%s: AppendN(%q, %d) = %v repeats a server", e.Name, k, n, got)
				}
			}
		}
	}
}

func TestSeed(t *testing.T) {
	const seedServers = "  servers:\n   - 192.168.0.0:111:1\n   - 192.168.0.1:111:1\n   - 192.168.0.2:111:1\n   - 192.168.0.3:111:1\n   - 192.168.0.4:111:1\n"
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

// ringOf returns the ring of a router that has one.
func ringOf(t *testing.T, r Router) *chash.Ring {
	t.Helper()
	rr, ok := r.(interface{ Ring() (*chash.Ring, []int) })
	if !ok {
		t.Fatalf("router %T has no ring", r)
	}
	ring, _ := rr.Ring()
	return ring
}

// TestSeedWeight checks that a seed server gets Points×weight virtual nodes, and
// one point whatever its weight when Points is zero.
func TestSeedWeight(t *testing.T) {
	for _, tt := range []struct {
		points, want int
	}{{0, 2}, {5, 15}} {
		p := mustPool(t, fmt.Sprintf("a:\n  distribution: seed\n  points: %d\n  servers:\n   - a:1:1\n   - b:1:2\n", tt.points))
		if got := ringOf(t, mustBuild(t, p, p.Servers)).NumPoints(); got != tt.want {
			t.Errorf("points %d: NumPoints() = %d; want %d", tt.points, got, tt.want)
		}
	}
}

func TestChash(t *testing.T) {
	const list = "  servers:\n   - 127.0.0.1:11211:1\n   - 127.0.0.1:11212:2\n   - 127.0.0.1:11213:1 c\n"
	p := mustPool(t, "a:\n  distribution: chash\n"+list)
	ring := ringOf(t, mustBuild(t, p, p.Servers))
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
	keys := someKeys(1000)
	got := route(t, p, keys...)
	for i, k := range keys {
		if w, _ := want.LookupString(k); got[i] != w {
			t.Fatalf("Lookup(%q) = %q; want %q", k, got[i], w)
		}
	}

	p = mustPool(t, "a:\n  distribution: chash\n  points: 7\n"+list)
	if got := ringOf(t, mustBuild(t, p, p.Servers)).NumPoints(); got != 28 {
		t.Errorf("points 7: NumPoints() = %d; want 28", got)
	}

	// An explicit hash hashes keys: java_fnv1_32 sends these keys elsewhere than
	// xxh64 does, on the same points.
	p = mustPool(t, "a:\n  distribution: chash\n  hash: java_fnv1_32\n"+list)
	if got, want := ringOf(t, mustBuild(t, p, p.Servers)).Hash([]byte("user:1")), hashfn.JavaFNV1_32([]byte("user:1")); got != want {
		t.Errorf("hash: java_fnv1_32: Hash(user:1) = %d; want %d", got, want)
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

// TestSubset checks a router over some of the pool's servers: indexes are of
// that list.
func TestSubset(t *testing.T) {
	p := mustPool(t, "a:\n  distribution: chash\n  servers: [h:1:1, h:2:1, h:3:1]\n")
	r := mustBuild(t, p, p.Servers[1:2])
	for i := range 50 {
		if got, err := r.Lookup(fmt.Append(nil, i)); got != 0 || err != nil {
			t.Errorf("Lookup(%d) = %d, %v; want 0, the only server", i, got, err)
		}
	}
	if _, err := Build(p, nil); err == nil || !strings.Contains(err.Error(), `test.yml:3: pool "a": no servers`) {
		t.Errorf("Build(p, nil) error %v; want one saying no servers", err)
	}
}

// TestBuildErrors checks that pools Parse would refuse, or that their
// distributions refuse, get errors that name the pool, not panics.
func TestBuildErrors(t *testing.T) {
	srv := []config.Server{{Host: "h", Port: 1, Weight: 1}}
	tests := []struct {
		name string
		p    *config.Pool
		want string
	}{
		{"unknown distribution", &config.Pool{Name: "p", Distribution: "nope", Servers: srv}, `distribution "nope" is unknown (known: balanced, bounded, chash`},
		{"zero distribution", &config.Pool{Name: "p", Servers: srv}, `distribution "" is unknown`},
		{"unknown hash", &config.Pool{Name: "p", Distribution: "chash", Hash: "nope", Servers: srv}, `hash "nope" is unknown`},
		{"seed unknown hash", &config.Pool{Name: "p", Distribution: "seed", Hash: "nope", Servers: srv}, `hash "nope" is unknown`},
		{"zero weight", &config.Pool{Name: "p", Distribution: "chash", Servers: []config.Server{{Host: "h", Port: 1}}}, `server "h:1": weight 0 is not positive`},
		{"negative points", &config.Pool{Name: "p", Distribution: "seed", Points: -1, Servers: srv}, "points -1 is negative"},
		{"duplicate", &config.Pool{Name: "p", Distribution: "chash", Servers: []config.Server{srv[0], srv[0]}}, `duplicate node "h:1"`},
		{"too many points", &config.Pool{Name: "p", Distribution: "chash", Servers: []config.Server{{Host: "h", Port: 1, Weight: 100000}}}, "more than 4194304 points"},
		{"points overflow", &config.Pool{Name: "p", Distribution: "seed", Points: 1 << 40, Servers: []config.Server{{Host: "h", Port: 1, Weight: 1 << 40}}}, "more than 4194304 points"},
		{"too many slots", &config.Pool{Name: "p", Distribution: "modula", Servers: []config.Server{{Host: "h", Port: 1, Weight: 1<<31 - 1}}}, "the weights add up to more than 4194304, the slots of the modula table"},
		{"slots overflow", &config.Pool{Name: "p", Distribution: "modula", Servers: []config.Server{{Host: "h", Port: 1, Weight: 1 << 62}, {Host: "h", Port: 2, Weight: 1 << 62}}}, "more than 4194304"},
		{"points not taken", &config.Pool{Name: "p", Distribution: "ketama", Points: 3, Servers: srv}, "points is not used by distribution ketama (only by chash, groupcache, stathat, seed, multiprobe, bounded and balanced)"},
		{"label not taken", &config.Pool{Name: "p", Distribution: "chash", Label: "{name}{i}", Servers: srv}, "label is only used by distribution seed, not chash"},
		{"replicas not taken", &config.Pool{Name: "p", Distribution: "ketama", Replicas: 2, Servers: srv}, "replicas 2: distribution ketama has no replica sets (those with: chash, rendezvous, multiprobe and balanced)"},
		{"seed label without {i}", &config.Pool{Name: "p", Distribution: "seed", Points: 3, Label: "{name}", Servers: srv}, `label "{name}" has no {i}`},
	}
	for _, tt := range tests {
		r, err := Build(tt.p, tt.p.Servers)
		var e *config.Error
		switch {
		case err == nil:
			t.Errorf("%s: Build = %v, nil; want an error", tt.name, r)
		case !errors.As(err, &e) || e.Pool != "p":
			t.Errorf("%s: Build error %v; want a *config.Error about pool p", tt.name, err)
		case !strings.Contains(err.Error(), tt.want):
			t.Errorf("%s: Build error %q; want it to say %q", tt.name, err, tt.want)
		}
	}
}

// TestBuildErrorLine checks that an error found when building the router names
// the file and the line of the key at fault.
func TestBuildErrorLine(t *testing.T) {
	tests := []struct{ conf, want string }{
		{"a:\n  distribution: chash\n  points: 100000\n  servers: [h:1:1000]\n",
			`config: test.yml:3: pool "a": 100000 points per unit of weight give the chash ring more than 4194304 points`},
		{"a:\n  distribution: nginx\n  servers: [h:1:1, h:2:100000]\n",
			`config: test.yml:3: pool "a": the weights give the nginx ring more than 4194304 points (160 per unit of weight); lower the weights`},
		{"a:\n  distribution: ring\n  servers: [h:1:1]\n",
			`config: test.yml:2: pool "a": distribution "ring" is unknown (known: balanced, bounded, chash,`},
		{"a:\n  servers: [h:1:1]\n  points: 3\n",
			`config: test.yml:3: pool "a": points is not used by distribution ketama`},
		{"a:\n  servers: [h:1:1]\n  replicas: 2\n",
			`config: test.yml:3: pool "a": replicas 2: distribution ketama has no replica sets (those with: chash, rendezvous, multiprobe and balanced)`},
		{"a:\n  distribution: nginx\n  hash: md5\n  servers: [h:1:1]\n",
			`config: test.yml:3: pool "a": distribution nginx hashes keys with crc32a only, not "md5"`},
	}
	for _, tt := range tests {
		p := mustPool(t, tt.conf)
		_, err := Build(p, p.Servers)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Build of\n%s error\n %v\nwant\n %s...", tt.conf, err, tt.want)
		}
	}
}

// TestExamples builds every pool of the example configurations and of
// config's test files, but those whose servers live elsewhere (servers_from).
func TestExamples(t *testing.T) {
	for _, path := range []string{"../../examples/nutcracker.yml", "../../examples/seed.yml",
		"../../examples/seed-articles.yml", "../config/testdata/twemproxy.yml", "../config/testdata/full.yml"} {
		f, err := config.Load(path)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, p := range f.Pools {
			if p.ServersFrom != "" {
				continue
			}
			if _, err := Build(p, p.Servers); err != nil {
				t.Errorf("%s: pool %q: %v", path, p.Name, err)
			}
		}
	}
}

// TestAllocs checks that a lookup allocates nothing, nor a replica set's
// AppendN within dst's capacity.
func TestAllocs(t *testing.T) {
	sv := servers(100)
	key := []byte("user:42")
	dst := make([]int, 0, 3)
	for _, e := range All() {
		r := mustBuild(t, poolOf(e.Name, sv), sv)
		if n := testing.AllocsPerRun(100, func() { r.Lookup(key) }); n != 0 {
			t.Errorf("%s: Lookup allocates %v times; want 0", e.Name, n)
		}
		if rr, ok := r.(ReplicaRouter); ok {
			if n := testing.AllocsPerRun(100, func() { rr.AppendN(dst[:0], key, 3) }); n != 0 {
				t.Errorf("%s: AppendN allocates %v times; want 0", e.Name, n)
			}
		}
	}
}
