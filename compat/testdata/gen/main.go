// Command gen writes compat's golden files: it runs the real programs that package
// compat copies on loopback addresses, routes random keys through each, and writes
// one file per case to compat/testdata/*.golden.
//
// Usage, from this directory, on a machine with the packages of .ci/apt-packages and
// .ci/setup.d/compat.sh installed:
//
//	go run . [-out ..] [-keys 500] [-seed 1] [-run REGEXP]
//
// Each golden file starts with comment lines naming the program, its version and how
// it was driven, then a chash config (nutcracker.yml syntax) whose single pool routes
// like the program, a line "---", and one line per key: the key as a Go quoted string,
// a tab, and the server the program chose, named as chash route prints it.
//
// The programs: nutcracker with one memcached per server (keys are set through
// nutcracker, then found with get on each memcached); libmemcached.c against the
// Debian library; Spy.java against the Debian spymemcached jar; nginx with
// "hash $http_x_key consistent" over virtual servers that answer with their own
// address; hashring.js with the npm package hashring; and, in this program, the Go
// modules groupcache/consistenthash and stathat.com/c/consistent.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"hash/fnv"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/golang/groupcache/consistenthash"
	"stathat.com/c/consistent"

	"github.com/chash-dev/chash/compat/internal/live"
	"github.com/chash-dev/chash/internal/testprog"
)

var (
	out   = flag.String("out", "..", "directory for the golden files")
	nkeys = flag.Int("keys", 500, "keys per case")
	seed  = flag.Uint64("seed", 1, "random seed for servers and keys")
	only  = flag.String("run", "", "only cases whose file name matches this regexp")
)

// A goldenCase is one golden file.
type goldenCase struct {
	file         string // base name without .golden
	title        string
	distribution string // chash config distribution
	hash         string
	hashTag      string
	servers      []live.Server
	utf8Only     bool
	keys         int // if zero, *nkeys
	// fixedKeys, if set, are the case's keys, chosen to hit a shared point,
	// followed by 200 random keys.
	fixedKeys [][]byte

	run runFunc
}

// A runFunc routes keys with the real program and returns the server index per key,
// the program line and the command line of the header.
type runFunc func(c *goldenCase, keys [][]byte) (where []int, program, command string, err error)

func main() {
	log.SetFlags(0)
	log.SetPrefix("gen: ")
	flag.Parse()
	var filter *regexp.Regexp
	if *only != "" {
		filter = regexp.MustCompile(*only)
	}
	tmp, err := os.MkdirTemp("", "chash-gen-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	fleet := &live.Fleet{}
	defer fleet.Stop()
	r := rand.New(rand.NewPCG(*seed, *seed^0x9e3779b97f4a7c15))
	tools := &tools{tmp: tmp, fleet: fleet}
	for _, c := range cases(r, tools) {
		if filter != nil && !filter.MatchString(c.file) {
			continue
		}
		n := c.keys
		if n == 0 {
			n = *nkeys
		}
		// Each case draws its keys from its own generator, so that -run
		// regenerates a case with the keys of a full run.
		h := fnv.New64a()
		h.Write([]byte(c.file))
		keys := live.Keys(rand.New(rand.NewPCG(*seed, h.Sum64())), n, c.utf8Only)
		if c.fixedKeys != nil {
			keys = append(c.fixedKeys, live.Keys(rand.New(rand.NewPCG(*seed, h.Sum64())), 200, c.utf8Only)...)
		}
		where, program, command, err := c.run(c, keys)
		if err != nil {
			fleet.Stop()
			log.Fatalf("%s: %v", c.file, err)
		}
		if err := write(c, keys, where, program, command); err != nil {
			log.Fatal(err)
		}
		log.Printf("%s: %d keys", c.file, len(keys))
	}
}

func write(c *goldenCase, keys [][]byte, where []int, program, command string) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n# program: %s\n# command: %s\n", c.title, program, command)
	fmt.Fprintf(&b, "# generator: compat/testdata/gen (go run . -seed %d -keys %d -run '^%s$'), %d keys\n", *seed, *nkeys, c.file, len(keys))
	fmt.Fprintf(&b, "pool:\n  distribution: %s\n", c.distribution)
	if c.hash != "" {
		fmt.Fprintf(&b, "  hash: %s\n", c.hash)
	}
	if c.hashTag != "" {
		fmt.Fprintf(&b, "  hash_tag: %q\n", c.hashTag)
	}
	b.WriteString("  servers:\n")
	for _, s := range c.servers {
		fmt.Fprintf(&b, "   - %s\n", s.Spec())
	}
	b.WriteString("---\n")
	for i, k := range keys {
		s := c.servers[where[i]]
		name := s.Alias
		if name == "" {
			name = s.Addr()
		}
		fmt.Fprintf(&b, "%s\t%s\n", strconv.Quote(string(k)), name)
	}
	return os.WriteFile(filepath.Join(*out, c.file+".golden"), b.Bytes(), 0o644)
}

// tools builds the client programs once.
type tools struct {
	tmp          string
	fleet        *live.Fleet
	libmemcached string
	spyDir       string
}

func (t *tools) libmemcachedBin() (string, error) {
	if t.libmemcached == "" {
		bin, err := live.BuildLibmemcached("clients", t.tmp)
		if err != nil {
			return "", err
		}
		t.libmemcached = bin
	}
	return t.libmemcached, nil
}

func (t *tools) spy() (string, error) {
	if t.spyDir == "" {
		dir := filepath.Join(t.tmp, "spy")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		if err := live.BuildSpymemcached("clients", dir); err != nil {
			return "", err
		}
		t.spyDir = dir
	}
	return t.spyDir, nil
}

func cmdOutput(name string, args ...string) string {
	b, err := exec.Command(name, args...).CombinedOutput()
	if err != nil && len(b) == 0 {
		return "unknown"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return line
}

func must[T any](v T, err error) T {
	if err != nil {
		log.Fatal(err)
	}
	return v
}

var twemproxyHashes = []string{"one_at_a_time", "md5", "crc16", "crc32", "crc32a", "fnv1_64", "fnv1a_64", "fnv1_32", "fnv1a_32", "hsieh", "murmur", "jenkins"}

// cases returns every golden case; r draws their servers.
func cases(r *rand.Rand, t *tools) []*goldenCase {
	var cs []*goldenCase
	servers := func(n int, o live.ServerOpts) []live.Server { return must(live.Servers(r, n, o)) }

	// twemproxy.
	nutcracker := func(c *goldenCase, keys [][]byte) ([]int, string, string, error) {
		p := live.Pool{Distribution: c.distribution, Hash: c.hash, HashTag: c.hashTag, Servers: c.servers}
		where, err := live.Twemproxy(t.tmp, t.fleet, p, keys)
		program := fmt.Sprintf("nutcracker %s (Debian nutcracker %s: %q), memcached %s", "0.5.0", live.DebVersion("nutcracker"), live.NutcrackerVersion(), live.DebVersion("memcached"))
		command := "nutcracker -c nutcracker.yml -s STATS_PORT -a 127.0.0.1 (the pool below, listening on a free loopback port, with auto_eject_hosts: false and no timeout); each key stored with set through nutcracker, then found with get on each memcached"
		return where, program, command, err
	}
	for i, h := range twemproxyHashes {
		tag := ""
		if i%2 == 0 {
			tag = "{}"
		}
		cs = append(cs,
			&goldenCase{file: "twemproxy-ketama-" + h + "-5", title: "twemproxy ketama, hash " + h + ": 5 servers, mixed weights, some on port 11211, no aliases", distribution: "ketama", hash: h, hashTag: tag,
				servers: servers(5, live.ServerOpts{Weights: true, Port11211: true}), run: nutcracker},
			&goldenCase{file: "twemproxy-ketama-" + h + "-31", title: "twemproxy ketama, hash " + h + ": 31 servers, mixed weights, some on port 11211, some aliased", distribution: "ketama", hash: h, hashTag: "{}",
				servers: servers(31, live.ServerOpts{Weights: true, Aliases: true, Port11211: true}), run: nutcracker},
			&goldenCase{file: "twemproxy-modula-" + h, title: "twemproxy modula, hash " + h + ": 5 servers, mixed weights, some aliased", distribution: "modula", hash: h, hashTag: tag,
				servers: servers(5, live.ServerOpts{Weights: true, Aliases: true, Port11211: true}), run: nutcracker},
		)
	}
	long := servers(3, live.ServerOpts{})
	long[0].Alias = strings.Repeat("a", 79)
	long[1].Alias = "b"
	cs = append(cs,
		&goldenCase{file: "twemproxy-ketama-1", title: "twemproxy ketama, default hash (fnv1a_64): 1 server", distribution: "ketama",
			servers: servers(1, live.ServerOpts{Port11211: true}), run: nutcracker, keys: 200},
		&goldenCase{file: "twemproxy-ketama-2", title: "twemproxy ketama, default hash (fnv1a_64): 2 servers, weights 1 and 3", distribution: "ketama",
			servers: weights(servers(2, live.ServerOpts{Port11211: true}), 1, 3), run: nutcracker, keys: 1000},
		&goldenCase{file: "twemproxy-ketama-25", title: "twemproxy ketama, hash md5: 25 servers of equal weight, where float32 rounding gives each 156 points, not 160", distribution: "ketama", hash: "md5",
			servers: servers(25, live.ServerOpts{Port11211: true}), run: nutcracker, keys: 1000},
		&goldenCase{file: "twemproxy-ketama-alias-lengths", title: "twemproxy ketama, hash fnv1a_64: aliases of 79 and 1 bytes", distribution: "ketama", hash: "fnv1a_64",
			servers: long, run: nutcracker, keys: 1000},
	)

	// libmemcached.
	lmc := func(mode, hash string) func(c *goldenCase, keys [][]byte) ([]int, string, string, error) {
		return func(c *goldenCase, keys [][]byte) ([]int, string, string, error) {
			bin, err := t.libmemcachedBin()
			if err != nil {
				return nil, "", "", err
			}
			where, err := live.Libmemcached(bin, t.fleet, mode, hash, c.servers, keys)
			program := fmt.Sprintf("libmemcached %s (Debian libmemcached11 %s), memcached %s", cmdOutput("pkg-config", "--modversion", "libmemcached"), live.DebVersion("libmemcached11"), live.DebVersion("memcached"))
			command := fmt.Sprintf("compat/testdata/gen/clients/libmemcached.c: libmemcached %s %s HOST:PORT:WEIGHT... (behaviours set before memcached_server_add_with_weight; each key stored with memcached_set and its memcached_server_by_key checked against the memcached that holds it)", mode, hash)
			return where, program, command, err
		}
	}
	lmcHashes := [][2]string{{"default", ""}, {"md5", "md5"}, {"crc", "crc32"}, {"fnv1_64", "fnv1_64"}, {"fnv1a_64", "fnv1a_64"}, {"fnv1_32", "fnv1_32"}, {"fnv1a_32", "fnv1a_32"}, {"murmur", "murmur"}, {"jenkins", "jenkins"}}
	for _, h := range lmcHashes {
		cs = append(cs, &goldenCase{file: "libmemcached-ketama-" + h[0], title: "libmemcached MEMCACHED_BEHAVIOR_KETAMA, HASH " + h[0] + ": 5 servers of weight 1, some on port 11211", distribution: "libmemcached", hash: h[1],
			servers: servers(5, live.ServerOpts{Port11211: true}), run: lmc("ketama", h[0])})
	}
	cs = append(cs,
		&goldenCase{file: "libmemcached-ketama-31", title: "libmemcached MEMCACHED_BEHAVIOR_KETAMA, default hash: 31 servers of weight 1", distribution: "libmemcached",
			servers: servers(31, live.ServerOpts{Port11211: true}), run: lmc("ketama", "default")},
		&goldenCase{file: "libmemcached-ketama-1", title: "libmemcached MEMCACHED_BEHAVIOR_KETAMA, default hash: 1 server", distribution: "libmemcached",
			servers: servers(1, live.ServerOpts{Port11211: true}), run: lmc("ketama", "default"), keys: 200},
		&goldenCase{file: "libmemcached-ketama-weights", title: "libmemcached MEMCACHED_BEHAVIOR_KETAMA, default hash, weights > 1: the weighted MD5 ring with one_at_a_time keys", distribution: "libmemcached",
			servers: servers(5, live.ServerOpts{Weights: true, Port11211: true}), run: lmc("ketama", "default")},
		&goldenCase{file: "libmemcached-ketama-weights-fnv1a_32", title: "libmemcached MEMCACHED_BEHAVIOR_KETAMA, HASH fnv1a_32, weights > 1", distribution: "libmemcached", hash: "fnv1a_32",
			servers: weights(servers(2, live.ServerOpts{Port11211: true}), 1, 2), run: lmc("ketama", "fnv1a_32")},
		&goldenCase{file: "libmemcached-ketama_weighted-5", title: "libmemcached MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED (MD5 keys): 5 servers, mixed weights; the same ring as twemproxy ketama with hash md5", distribution: "ketama", hash: "md5",
			servers: servers(5, live.ServerOpts{Weights: true, Port11211: true}), run: lmc("ketama_weighted", "-")},
		&goldenCase{file: "libmemcached-ketama_weighted-31", title: "libmemcached MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED (MD5 keys): 31 servers of weight 1", distribution: "ketama", hash: "md5",
			servers: servers(31, live.ServerOpts{Port11211: true}), run: lmc("ketama_weighted", "-")},
	)

	// spymemcached.
	spy := func(weighted bool) func(c *goldenCase, keys [][]byte) ([]int, string, string, error) {
		return func(c *goldenCase, keys [][]byte) ([]int, string, string, error) {
			dir, err := t.spy()
			if err != nil {
				return nil, "", "", err
			}
			where, err := live.Spymemcached(dir, t.fleet, weighted, c.servers, keys)
			program := fmt.Sprintf("spymemcached (Debian libspymemcached-java %s, %s), %s, memcached %s", live.DebVersion("libspymemcached-java"), live.SpymemcachedJar, cmdOutput("java", "-version"), live.DebVersion("memcached"))
			flag := ""
			if weighted {
				flag = "-weighted "
			}
			command := "java Spy " + flag + "HOST:PORT:WEIGHT... (KetamaConnectionFactory; each key stored with set and getNodeLocator().getPrimary(key) checked against the memcached that holds it)"
			return where, program, command, err
		}
	}
	cs = append(cs,
		&goldenCase{file: "spymemcached-1", title: "spymemcached KetamaConnectionFactory: 1 server", distribution: "spymemcached",
			servers: servers(1, live.ServerOpts{Port11211: true}), utf8Only: true, run: spy(false), keys: 200},
		&goldenCase{file: "spymemcached-5", title: "spymemcached KetamaConnectionFactory: 5 servers, some on port 11211", distribution: "spymemcached",
			servers: servers(5, live.ServerOpts{Port11211: true}), utf8Only: true, run: spy(false)},
		&goldenCase{file: "spymemcached-31", title: "spymemcached KetamaConnectionFactory: 31 servers", distribution: "spymemcached",
			servers: servers(31, live.ServerOpts{Port11211: true}), utf8Only: true, run: spy(false)},
		&goldenCase{file: "spymemcached-weighted-5", title: "spymemcached KetamaConnectionFactory with a weights map: 5 servers, mixed weights", distribution: "spymemcached",
			servers: servers(5, live.ServerOpts{Weights: true, Port11211: true}), utf8Only: true, run: spy(true)},
	)

	// nginx.
	ngx := func(c *goldenCase, keys [][]byte) ([]int, string, string, error) {
		dir := filepath.Join(t.tmp, "nginx-"+c.file)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, "", "", err
		}
		where, err := live.Nginx(dir, c.servers, keys)
		program := fmt.Sprintf("%s (Debian nginx %s)", live.NginxVersion(), live.DebVersion("nginx"))
		command := "nginx -p DIR -c nginx.conf: upstream { hash $http_x_key consistent; server HOST:PORT weight=W; ... } behind a proxy_pass front end, each server a virtual server answering with its address; one GET per key with header X-Key"
		return where, program, command, err
	}
	cs = append(cs,
		&goldenCase{file: "nginx-2", title: "nginx hash $http_x_key consistent: 2 servers, weights 1 and 2", distribution: "nginx",
			servers: weights(servers(2, live.ServerOpts{}), 1, 2), run: ngx, keys: 1000},
		&goldenCase{file: "nginx-5", title: "nginx hash $http_x_key consistent: 5 servers, mixed weights", distribution: "nginx",
			servers: servers(5, live.ServerOpts{Weights: true}), run: ngx, keys: 1000},
		&goldenCase{file: "nginx-31", title: "nginx hash $http_x_key consistent: 31 servers, mixed weights", distribution: "nginx",
			servers: servers(31, live.ServerOpts{Weights: true}), run: ngx, keys: 1000},
	)

	// npm hashring.
	hr := func(c *goldenCase, keys [][]byte) ([]int, string, string, error) {
		where, err := live.Hashring("clients", c.servers, keys)
		v, _ := live.HashringVersion()
		program := fmt.Sprintf("npm hashring %s, node %s", v, cmdOutput("node", "--version"))
		command := "node hashring.js HOST:PORT:WEIGHT... (new HashRing({'HOST:PORT': WEIGHT, ...}), ring.get(key))"
		return where, program, command, err
	}
	cs = append(cs,
		&goldenCase{file: "hashring-1", title: "npm hashring: 1 server", distribution: "libketama",
			servers: servers(1, live.ServerOpts{}), utf8Only: true, run: hr, keys: 200},
		&goldenCase{file: "hashring-2", title: "npm hashring: 2 servers, weights 1 and 3", distribution: "libketama",
			servers: weights(servers(2, live.ServerOpts{Port11211: true}), 1, 3), utf8Only: true, run: hr, keys: 1000},
		&goldenCase{file: "hashring-5", title: "npm hashring: 5 servers, mixed weights", distribution: "libketama",
			servers: servers(5, live.ServerOpts{Weights: true, Port11211: true}), utf8Only: true, run: hr, keys: 1000},
		&goldenCase{file: "hashring-7", title: "npm hashring: 7 servers of equal weight, where float64 rounding gives each 39 vnodes (156 points), not 40", distribution: "libketama",
			servers: servers(7, live.ServerOpts{}), utf8Only: true, run: hr, keys: 1000},
		&goldenCase{file: "hashring-31", title: "npm hashring: 31 servers, mixed weights", distribution: "libketama",
			servers: servers(31, live.ServerOpts{Weights: true, Port11211: true}), utf8Only: true, run: hr, keys: 1000},
	)

	// Go modules: groupcache and stathat, run in this program.
	peers := func(n int, url bool) []live.Server {
		s := servers(n, live.ServerOpts{})
		for i := range s {
			if url {
				s[i].Alias = "http://" + s[i].Addr()
			}
		}
		if !url && n >= 2 {
			// "a" and "1a" share the label "11a": a collision on purpose.
			s[0].Alias, s[1].Alias = "a", "1a"
		}
		return s
	}
	cs = append(cs,
		&goldenCase{file: "groupcache-5", title: "groupcache consistenthash.New(50, nil), HTTPPool's ring: 5 peers named by URL", distribution: "groupcache",
			servers: peers(5, true), run: groupcache, keys: 1000},
		&goldenCase{file: "groupcache-31-collision", title: "groupcache consistenthash.New(50, nil): 31 peers, two of which (\"a\", \"1a\") share a point", distribution: "groupcache",
			servers: peers(31, false), run: groupcache, keys: 1000},
		&goldenCase{file: "stathat-5", title: "stathat consistent.New() (20 replicas): 5 members", distribution: "stathat",
			servers: peers(5, true), run: stathat, keys: 1000},
		&goldenCase{file: "stathat-31-collision", title: "stathat consistent.New() (20 replicas): 31 members, two of which (\"a\", \"1a\") share a point", distribution: "stathat",
			servers: peers(31, false), run: stathat, keys: 1000},
	)
	unix := servers(2, live.ServerOpts{Weights: true})
	for i := range 3 {
		unix = append(unix, live.Server{Host: filepath.Join(t.tmp, fmt.Sprintf("mc%d.sock", i)), Weight: 1 + i})
	}
	unix[4].Alias = "unix-alias"
	cs = append(cs, &goldenCase{file: "twemproxy-ketama-unix", title: "twemproxy ketama, hash fnv1a_64: 2 TCP servers and 3 on Unix sockets, whose name without an alias is \"PATH:\"", distribution: "ketama", hash: "fnv1a_64",
		servers: unix, run: nutcracker, keys: 1000})
	xl := servers(6, live.ServerOpts{})
	for i, n := range []int{250, 262, 267, 268, 269, 270} {
		xl[i].Alias = strings.Repeat(string(rune('a'+i)), n)
	}
	cs = append(cs, &goldenCase{file: "twemproxy-ketama-long-aliases", title: "twemproxy ketama, hash fnv1a_64: aliases of 250 to 270 bytes, whose labels nutcracker cuts to 272 bytes", distribution: "ketama", hash: "fnv1a_64",
		servers: xl, run: nutcracker, keys: 1000})

	// Shared points, found by search (ties.go).
	cs = append(cs, tieCases(r, must(testprog.FreePortOn("127.0.0.1")), nutcracker, ngx, hr, spy(false))...)
	return cs
}

// weights sets the servers' weights.
func weights(s []live.Server, w ...int) []live.Server {
	for i := range s {
		s[i].Weight = w[i]
	}
	return s
}

func peerName(s live.Server) string {
	if s.Alias != "" {
		return s.Alias
	}
	return s.Addr()
}

func modVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "unknown"
}

func groupcache(c *goldenCase, keys [][]byte) ([]int, string, string, error) {
	m := consistenthash.New(50, nil)
	index := map[string]int{}
	for i, s := range c.servers {
		m.Add(peerName(s))
		index[peerName(s)] = i
	}
	where := make([]int, len(keys))
	for i, k := range keys {
		where[i] = index[m.Get(string(k))]
	}
	return where, "github.com/golang/groupcache " + modVersion("github.com/golang/groupcache"),
		"consistenthash.New(50, nil); Add(peer) for each peer in order; Get(key)", nil
}

func stathat(c *goldenCase, keys [][]byte) ([]int, string, string, error) {
	ch := consistent.New()
	index := map[string]int{}
	for i, s := range c.servers {
		ch.Add(peerName(s))
		index[peerName(s)] = i
	}
	where := make([]int, len(keys))
	for i, k := range keys {
		n, err := ch.Get(string(k))
		if err != nil {
			return nil, "", "", err
		}
		where[i] = index[n]
	}
	return where, "stathat.com/c/consistent " + modVersion("stathat.com/c/consistent"),
		"consistent.New(); Add(member) for each member in order; Get(key)", nil
}
