package compat_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/compat"
	"github.com/chash-dev/chash/compat/internal/live"
	"github.com/chash-dev/chash/hashfn"
	"github.com/chash-dev/chash/internal/testprog"
)

// The interop tests start the real programs on loopback addresses, route a fresh
// random case through each, and require chash — through the library and through
// a config, as chash route reads it — to agree on every key. Set CHASH_LIVE_SEED to
// replay a run; -short skips them. In CI (CI=true) a missing program fails them.

const liveKeys = 2000

func liveRand(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CHASH_LIVE_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("CHASH_LIVE_SEED=%q: %v", s, err)
		}
	}
	t.Logf("CHASH_LIVE_SEED=%d", seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

func skipShort(t *testing.T) {
	if testing.Short() {
		t.Skip("interop test: starts real programs")
	}
}

// randomServers returns live.Servers or fails the test.
func randomServers(t *testing.T, r *rand.Rand, n int, o live.ServerOpts) []live.Server {
	t.Helper()
	s, err := live.Servers(r, n, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// subset returns n of the servers in random order, with weights (1..5, or all 1)
// and aliases drawn afresh, so that cases share running memcached servers.
func subset(r *rand.Rand, servers []live.Server, n int, o live.ServerOpts) []live.Server {
	out := make([]live.Server, n)
	for i, j := range r.Perm(len(servers))[:n] {
		s := servers[j]
		s.Weight, s.Alias = 1, ""
		if o.Weights {
			s.Weight = 1 + r.IntN(5)
		}
		if o.Aliases && r.IntN(2) == 0 {
			s.Alias = fmt.Sprintf("%s%d", []string{"s", "cache-", "memcached-prod-east-", "x"}[r.IntN(4)], i)
		}
		out[i] = s
	}
	return out
}

// libraryRoute routes keys with package compat directly, building the ring the
// way the case's program builds it.
func libraryRoute(t *testing.T, c routeCase, keys [][]byte) []string {
	t.Helper()
	hash := func(def string) hashfn.Func {
		name := c.hash
		if name == "" {
			name = def
		}
		f, err := hashfn.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	nodes := make([]chash.Node, len(c.servers))
	display := map[string]string{}
	name := func(i int, n string, order int) {
		nodes[i] = chash.Node{Name: n, Weight: c.servers[i].Weight, Order: order}
		display[n] = displayName(c.servers[i])
	}
	var s chash.Scheme
	switch c.distribution {
	case "ketama":
		s = compat.Ketama{KeyHash: hash("fnv1a_64"), HashTag: c.hashTag}
		for i, sv := range c.servers {
			n := twemproxyName(sv)
			name(i, n, len(n))
		}
	case "modula":
		for i, sv := range c.servers {
			name(i, twemproxyName(sv), 0)
		}
		m, err := compat.NewModula(nodes, hash("fnv1a_64"), c.hashTag)
		if err != nil {
			t.Fatal(err)
		}
		return lookupAll(t, m.Lookup, keys, display)
	case "libmemcached":
		for i, sv := range c.servers {
			name(i, compat.TwemproxyName(sv.Host, strconv.Itoa(sv.Port), ""), i)
		}
		s = compat.Libmemcached{KeyHash: hash("one_at_a_time")}.For(nodes)
	case "libketama", "spymemcached":
		l := compat.Libketama{KeyHash: hash("md5")}
		order := 1
		if c.distribution == "spymemcached" {
			order = -1
			l.Count = compat.LibketamaFixed
			for _, sv := range c.servers {
				if sv.Weight > 1 {
					l.Count = compat.LibketamaFloat32
				}
			}
		}
		s = l
		for i, sv := range c.servers {
			name(i, sv.Addr(), order*i)
		}
	case "nginx":
		s = compat.Nginx{}
		for i, sv := range c.servers {
			name(i, sv.Addr(), i)
		}
	case "groupcache", "stathat":
		s = compat.Groupcache{}
		if c.distribution == "stathat" {
			s = compat.Stathat{}
		}
		for i, sv := range c.servers {
			name(i, displayName(sv), -i)
		}
	default:
		t.Fatalf("no library route for distribution %q", c.distribution)
	}
	r, err := chash.New(s, nodes)
	if err != nil {
		t.Fatal(err)
	}
	return lookupAll(t, r.Lookup, keys, display)
}

// twemproxyName is the name nutcracker hashes for sv; for a Unix socket without
// alias it is the path and a colon, as conf_add_server's length arithmetic leaves it.
func twemproxyName(sv live.Server) string {
	if sv.Port == 0 && sv.Alias == "" {
		return sv.Host + ":"
	}
	return compat.TwemproxyName(sv.Host, strconv.Itoa(sv.Port), sv.Alias)
}

func lookupAll(t *testing.T, lookup func([]byte) (string, error), keys [][]byte, display map[string]string) []string {
	t.Helper()
	got := make([]string, len(keys))
	for i, k := range keys {
		n, err := lookup(k)
		if err != nil {
			t.Fatalf("Lookup(%q): %v", k, err)
		}
		got[i] = display[n]
	}
	return got
}

// checkCase compares the program's routes (where: the index in c.servers of
// each key's server, or the error that running it gave) with chash's, through
// the library and through the case's config.
func checkCase(t *testing.T, c routeCase, keys [][]byte, where []int, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	want := names(c.servers, where)
	compareRoutes(t, "library", keys, libraryRoute(t, c, keys), want)
	got, err := routeConfig(c.name+".yml", c.pool(), keys)
	if err != nil {
		t.Fatal(err)
	}
	compareRoutes(t, "config", keys, got, want)
	if !t.Failed() {
		t.Logf("%s: %d of %d keys agree (%d servers)", c.name, len(keys), len(keys), len(c.servers))
	}
}

var twemproxyHashes = []string{"one_at_a_time", "md5", "crc16", "crc32", "crc32a", "fnv1_64", "fnv1a_64", "fnv1_32", "fnv1a_32", "hsieh", "murmur", "jenkins"}

func TestLiveTwemproxy(t *testing.T) {
	skipShort(t)
	testprog.LookPath(t, "nutcracker")
	testprog.LookPath(t, "memcached")
	r := liveRand(t)
	fleet := &live.Fleet{}
	t.Cleanup(fleet.Stop)
	sizes := []int{2, 5, 5, 31, 31} // 1 server: see the golden files
	all := randomServers(t, r, 31, live.ServerOpts{Port11211: true})
	for i, h := range twemproxyHashes {
		for _, dist := range []string{"ketama", "modula"} {
			if dist == "modula" && i%3 != 0 {
				continue // modula is a table lookup: a few hashes suffice
			}
			t.Run(dist+"/"+h, func(t *testing.T) {
				n := sizes[r.IntN(len(sizes))]
				c := routeCase{
					name:         "twemproxy-" + dist + "-" + h,
					distribution: dist,
					hash:         h,
					servers:      subset(r, all, n, live.ServerOpts{Weights: r.IntN(2) == 0, Aliases: r.IntN(2) == 0}),
				}
				if r.IntN(2) == 0 {
					c.hashTag = "{}"
				}
				keys := live.Keys(r, liveKeys, false)
				p := live.Pool{Distribution: dist, Hash: h, HashTag: c.hashTag, Servers: c.servers}
				where, err := live.Twemproxy(t.TempDir(), fleet, p, keys)
				checkCase(t, c, keys, where, err)
			})
		}
	}
}

// TestLiveTwemproxyUnix checks servers on Unix sockets, whose twemproxy name is
// "PATH:" without an alias.
func TestLiveTwemproxyUnix(t *testing.T) {
	skipShort(t)
	testprog.LookPath(t, "nutcracker")
	testprog.LookPath(t, "memcached")
	r := liveRand(t)
	fleet := &live.Fleet{}
	t.Cleanup(fleet.Stop)
	dir := t.TempDir()
	servers := randomServers(t, r, 2, live.ServerOpts{Weights: true})
	for i := range 3 {
		s := live.Server{Host: fmt.Sprintf("%s/mc%d.sock", dir, i), Weight: 1 + r.IntN(3)}
		if i == 2 {
			s.Alias = "unix-alias"
		}
		servers = append(servers, s)
	}
	for _, dist := range []string{"ketama", "modula"} {
		t.Run(dist, func(t *testing.T) {
			c := routeCase{name: "twemproxy-unix-" + dist, distribution: dist, hash: "fnv1a_64", servers: servers}
			keys := live.Keys(r, liveKeys, false)
			p := live.Pool{Distribution: dist, Hash: c.hash, Servers: c.servers}
			where, err := live.Twemproxy(t.TempDir(), fleet, p, keys)
			checkCase(t, c, keys, where, err)
		})
	}
}

func TestLiveLibmemcached(t *testing.T) {
	skipShort(t)
	testprog.LookPath(t, "memcached")
	bin, err := live.BuildLibmemcached("testdata/gen/clients", t.TempDir())
	testprog.Require(t, err)
	r := liveRand(t)
	fleet := &live.Fleet{}
	t.Cleanup(fleet.Stop)
	// libmemcached's HASH names and ours; hsieh is not built into Debian's library.
	hashes := [][2]string{{"default", ""}, {"md5", "md5"}, {"crc", "crc32"}, {"fnv1_64", "fnv1_64"}, {"fnv1a_64", "fnv1a_64"}, {"fnv1_32", "fnv1_32"}, {"fnv1a_32", "fnv1a_32"}, {"murmur", "murmur"}, {"jenkins", "jenkins"}}
	tests := []struct {
		name    string
		mode    string
		weights bool
	}{
		{"ketama", "ketama", false},
		{"ketama-weights", "ketama", true}, // a weight > 1 switches to the weighted ring
		{"ketama_weighted", "ketama_weighted", false},
	}
	all := randomServers(t, r, 31, live.ServerOpts{Port11211: true})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := hashes[r.IntN(len(hashes))]
			n := []int{2, 5, 31}[r.IntN(3)]
			c := routeCase{
				name:         "libmemcached-" + tt.name + "-" + h[0],
				distribution: "libmemcached",
				hash:         h[1],
				servers:      subset(r, all, n, live.ServerOpts{Weights: tt.weights}),
			}
			if tt.mode == "ketama_weighted" {
				// KETAMA_WEIGHTED: MD5 keys on the weighted MD5 ring, which is
				// twemproxy's ketama with hash md5 (servers have no aliases).
				h = [2]string{"-", "md5"}
				c.name = "libmemcached-ketama_weighted"
				c.distribution, c.hash = "ketama", "md5"
			}
			keys := live.Keys(r, liveKeys, false)
			where, err := live.Libmemcached(bin, fleet, tt.mode, h[0], c.servers, keys)
			t.Logf("HASH=%s", h[0])
			checkCase(t, c, keys, where, err)
		})
	}
}

func TestLiveSpymemcached(t *testing.T) {
	skipShort(t)
	testprog.LookPath(t, "memcached")
	dir := t.TempDir()
	testprog.Require(t, live.BuildSpymemcached("testdata/gen/clients", dir))
	r := liveRand(t)
	fleet := &live.Fleet{}
	t.Cleanup(fleet.Stop)
	all := randomServers(t, r, 31, live.ServerOpts{Port11211: true})
	for _, weighted := range []bool{false, true} {
		t.Run(fmt.Sprintf("weighted=%v", weighted), func(t *testing.T) {
			n := []int{2, 5, 31}[r.IntN(3)]
			c := routeCase{
				name:         "spymemcached",
				distribution: "spymemcached",
				servers:      subset(r, all, n, live.ServerOpts{Weights: weighted}),
			}
			keys := live.Keys(r, liveKeys, true)
			where, err := live.Spymemcached(dir, fleet, weighted, c.servers, keys)
			checkCase(t, c, keys, where, err)
		})
	}
}

func TestLiveNginx(t *testing.T) {
	skipShort(t)
	testprog.LookPath(t, "nginx")
	r := liveRand(t)
	for _, n := range []int{2, 5, 31} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			c := routeCase{
				name:         "nginx",
				distribution: "nginx",
				servers:      randomServers(t, r, n, live.ServerOpts{Weights: true}),
			}
			keys := live.Keys(r, liveKeys, false)
			where, err := live.Nginx(t.TempDir(), c.servers, keys)
			checkCase(t, c, keys, where, err)
		})
	}
}

func TestLiveHashring(t *testing.T) {
	skipShort(t)
	testprog.LookPath(t, "node")
	_, err := live.HashringVersion()
	testprog.Require(t, err)
	r := liveRand(t)
	for _, n := range []int{1, 2, 5, 7, 31} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			c := routeCase{
				name:         "hashring",
				distribution: "libketama",
				servers:      randomServers(t, r, n, live.ServerOpts{Weights: n != 7, Port11211: true}),
			}
			keys := live.Keys(r, liveKeys, true)
			where, err := live.Hashring("testdata/gen/clients", c.servers, keys)
			checkCase(t, c, keys, where, err)
		})
	}
}
