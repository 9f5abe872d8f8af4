package compat_test

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/compat"
	"github.com/chash-dev/chash/hashfn"
	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/testprog"
)

// The seed articles' Java rings are in testdata/seed (Article000.java ...), with
// gen.sh, which runs them to write golden files. TestSeedArticleGolden checks the
// golden files; TestSeedArticleJava runs the programs itself on fresh keys and
// server lists. Both require every key to be routed as Java routes it, by the
// compat preset and by a chash config as chash route reads it.

// A seedCommand is one run of an article program: "java CLASS SERVERS ARGS...".
type seedCommand struct {
	class   string   // "Article001"
	servers string   // the server list's path
	args    []string // the arguments after it
}

// parseSeedCommand parses the "# command: java ..." line of a golden file.
func parseSeedCommand(line string) (seedCommand, error) {
	rest, ok := strings.CutPrefix(line, "# command: java ")
	if !ok {
		return seedCommand{}, fmt.Errorf("not a command line: %q", line)
	}
	rest, _, _ = strings.Cut(rest, " <")
	f := strings.Fields(rest)
	if len(f) < 2 {
		return seedCommand{}, fmt.Errorf("short command: %q", line)
	}
	return seedCommand{class: f[0], servers: filepath.Join("testdata/seed", f[1]), args: f[2:]}, nil
}

func (c seedCommand) String() string {
	return strings.Join(append([]string{"java", c.class, filepath.Base(c.servers)}, c.args...), " ")
}

// seedRing is what must route as a seedCommand: the compat preset and the
// settings of a chash config's seed pool.
type seedRing struct {
	preset compat.Seed
	config func(p *config.Pool) // sets the pool's points, label and hash
	hash   hashfn.Func
	bytes  bool // the Java hash reads the key's UTF-8 bytes, so keys must be valid UTF-8
}

// ring returns the preset and config that route as c does.
func (c seedCommand) ring() (seedRing, error) {
	var r seedRing
	want := map[string]int{"Article000": 1, "Article001": 1, "Article002": 1, "Article003": 0, "Article004": 2}
	nargs, ok := want[c.class]
	if !ok {
		return r, fmt.Errorf("unknown program %q", c.class)
	}
	if len(c.args) != nargs {
		return r, fmt.Errorf("%v: %d arguments after the servers; want %d", c, len(c.args), nargs)
	}
	n := 0
	if nargs > 0 {
		var err error
		if n, err = strconv.Atoi(c.args[0]); err != nil {
			return r, fmt.Errorf("%v: %v", c, err)
		}
	}
	var err error
	switch c.class {
	case "Article000":
		r.preset = compat.SeedArticle000()
		r.preset.Points = n
		if n == 0 {
			r.preset = compat.SeedArticle003() // the article's first program
		}
		r.config = func(p *config.Pool) { p.Points = n } // the default label and hash
	case "Article001":
		r.preset = compat.SeedArticle001()
		r.preset.Points = n
		r.config = func(p *config.Pool) { p.Points, p.Label, p.Hash = n, "{i}:{name}", "java_hashcode_spread" }
	case "Article002":
		r.preset, err = compat.SeedArticle002(n)
		r.config = func(p *config.Pool) { p.Points, p.Label, p.Hash = n, "{name}#{i}", "java_fnv1_32" }
	case "Article003":
		r.preset = compat.SeedArticle003()
	case "Article004":
		r.preset, err = compat.SeedArticle004(n, c.args[1])
		r.config = func(p *config.Pool) { p.Points, p.Label, p.Hash = n, "{name}{i}", c.args[1] }
		r.bytes = c.args[1] == "md5"
	}
	r.hash = r.preset.HashFunc
	if r.hash == nil {
		r.hash = hashfn.JavaFNV1_32
	}
	return r, err
}

// seedServerList reads a server list as SeedIO.java does.
func seedServerList(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for line := range strings.Lines(string(b)) {
		if line = strings.TrimSuffix(line, "\n"); line != "" {
			s = append(s, line)
		}
	}
	return s
}

// seedConfig returns a chash config's seed pool over servers, named by
// aliases, in the order the Java program adds them.
func seedConfig(r seedRing, servers []string) *config.Pool {
	p := config.NewPool("pool")
	p.Distribution = "seed"
	if r.config != nil {
		r.config(p)
	}
	for i, s := range servers {
		p.Servers = append(p.Servers, config.Server{Host: "127.0.0.1", Port: 10000 + i, Weight: 1, Alias: s})
	}
	return p
}

// seedJavaRoute is what an article program printed for one key.
type seedJavaRoute struct {
	hash   int32
	server string
	throws bool // the Java program throws; server is the first point's
}

func parseSeedJavaRoute(line string) (seedJavaRoute, error) {
	f := strings.Split(line, "\t")
	if len(f) < 2 || len(f) > 3 || len(f) == 3 && f[2] != "throws" {
		return seedJavaRoute{}, fmt.Errorf("malformed line %q", line)
	}
	h, err := strconv.ParseInt(f[0], 10, 32)
	if err != nil {
		return seedJavaRoute{}, fmt.Errorf("line %q: %v", line, err)
	}
	return seedJavaRoute{hash: int32(h), server: f[1], throws: len(f) == 3}, nil
}

// checkSeedRoutes requires that the preset and the config route keys as Java
// does (want), and that the preset's hash gives Java's hashes. It returns the
// number of keys the Java program could only route by throwing.
func checkSeedRoutes(t *testing.T, c seedCommand, servers []string, keys [][]byte, want []seedJavaRoute) (throws int) {
	t.Helper()
	r, err := c.ring()
	if err != nil {
		t.Fatal(err)
	}
	wantServers := make([]string, len(want))
	badHash := 0
	for i, w := range want {
		wantServers[i] = w.server
		if w.throws {
			throws++
		}
		if got := int32(r.hash(keys[i])); got != w.hash {
			if badHash++; badHash <= 5 {
				t.Errorf("%v: hash(%q) = %d; Java's is %d", c, keys[i], got, w.hash)
			}
		}
	}
	if badHash > 0 {
		t.Errorf("%v: %d of %d keys hashed differently", c, badHash, len(keys))
	}

	nodes := make([]chash.Node, len(servers))
	for i, s := range servers {
		nodes[i] = chash.Node{Name: s, Weight: 1, Order: len(servers) - i} // Java: the last put wins
	}
	ring, err := chash.New(r.preset, nodes)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(keys))
	for i, k := range keys {
		if got[i], err = ring.Lookup(k); err != nil {
			t.Fatal(err)
		}
	}
	compareRoutes(t, c.String()+": preset", keys, got, wantServers)

	got, err = routeConfig("seed.yml", seedConfig(r, servers), keys)
	if err != nil {
		t.Fatalf("%v: %v", c, err)
	}
	compareRoutes(t, c.String()+": chash route", keys, got, wantServers)
	return throws
}

func seedGoldenFiles(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob("testdata/seed/[0-9][0-9][0-9]-*.tsv")
	if len(files) < 20 {
		t.Fatalf("found %d golden files in testdata/seed; want 20 (run testdata/seed/gen.sh)", len(files))
	}
	return files
}

// readSeedGolden reads a golden file of testdata/seed/gen.sh.
func readSeedGolden(t *testing.T, path string) (seedCommand, [][]byte, []seedJavaRoute) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c seedCommand
	var keys [][]byte
	var want []seedJavaRoute
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(line, "# command: ") {
			if c, err = parseSeedCommand(line); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		key, rest, _ := strings.Cut(line, "\t")
		w, err := parseSeedJavaRoute(rest)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		keys = append(keys, []byte(key))
		want = append(want, w)
	}
	if c.class == "" {
		t.Fatalf("%s: no command line", path)
	}
	return c, keys, want
}

// TestSeedArticleGolden routes the keys of the golden files with the presets and
// with chash configs; see gen.sh.
func TestSeedArticleGolden(t *testing.T) {
	total, throws, wraps := 0, 0, 0
	for _, file := range seedGoldenFiles(t) {
		c, keys, want := readSeedGolden(t, file)
		if len(keys) < 1000 || !hasNonASCII(keys) {
			t.Errorf("%s: %d keys, non-ASCII %v; want at least 1000 and some non-ASCII", file, len(keys), hasNonASCII(keys))
		}
		throws += checkSeedRoutes(t, c, seedServerList(t, c.servers), keys, want)
		if c.class == "Article003" {
			wraps += countSeedWraps(t, c, keys)
		}
		total += len(keys)
	}
	if throws == 0 || wraps == 0 {
		t.Errorf("%d keys past the last point of 000's rings, %d of 003's; want some of each", throws, wraps)
	}
	t.Logf("%d keys routed as Java did, %d of them where the 000 article's program throws", total, throws)
}

// countSeedWraps returns the number of keys past the last point of c's ring.
func countSeedWraps(t *testing.T, c seedCommand, keys [][]byte) int {
	t.Helper()
	r, err := c.ring()
	if err != nil {
		t.Fatal(err)
	}
	var last uint32
	for _, s := range seedServerList(t, c.servers) {
		last = max(last, r.preset.AppendPoints(nil, s, 0, 1)[0])
	}
	n := 0
	for _, k := range keys {
		if r.preset.Hash(k) > last {
			n++
		}
	}
	return n
}

// The articles print these routes.
func TestSeedArticlePrinted(t *testing.T) {
	a001 := compat.SeedArticle001()
	tests := []struct {
		name    string
		s       compat.Seed
		servers []string
		key     string
		want    string
	}{
		// 000: ConsistentHashingWithVirtualNode; its first program is 003's ring.
		{"000", compat.SeedArticle000(), seedFive, "127.0.0.1:1111", "192.168.0.0:111"},
		{"000", compat.SeedArticle000(), seedFive, "221.226.0.1:2222", "192.168.0.0:111"},
		{"000", compat.SeedArticle000(), seedFive, "10.211.0.1:3333", "192.168.0.2:111"},
		{"000 first", compat.SeedArticle003(), seedFive, "127.0.0.1:1111", "192.168.0.0:111"},
		{"000 first", compat.SeedArticle003(), seedFive, "221.226.0.1:2222", "192.168.0.4:111"},
		{"000 first", compat.SeedArticle003(), seedFive, "10.211.0.1:3333", "192.168.0.4:111"},
		// 001's main, before and after add("192.168.2.109").
		{"001", a001, seedIPs[:3], "zs", "192.168.2.108"},
		{"001", a001, seedIPs[:3], "999999", "192.168.2.106"},
		{"001", a001, seedIPs[:3], "233333", "192.168.2.106"},
		{"001 +109", a001, seedIPs, "zs", "192.168.2.109"},
		{"001 +109", a001, seedIPs, "999999", "192.168.2.106"},
		{"001 +109", a001, seedIPs, "233333", "192.168.2.106"},
		// 003's main.
		{"003", compat.SeedArticle003(), seedThree, "semlinker", "192.168.0.3:8888"},
		{"003", compat.SeedArticle003(), seedThree, "kakuqo", "192.168.0.2:8888"},
		{"003", compat.SeedArticle003(), seedThree, "fer", "192.168.0.3:8888"},
	}
	for _, tt := range tests {
		nodes := make([]chash.Node, len(tt.servers))
		for i, s := range tt.servers {
			nodes[i] = chash.Node{Name: s, Weight: 1, Order: len(tt.servers) - i}
		}
		r, err := chash.New(tt.s, nodes)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := r.LookupString(tt.key); got != tt.want || err != nil {
			t.Errorf("%s: Lookup(%q) = %q, %v; want %q", tt.name, tt.key, got, err, tt.want)
		}
	}
	// The hashes 003 prints for its servers and keys.
	for key, want := range map[string]uint32{
		"192.168.0.1:8888": 1326271016, "192.168.0.2:8888": 1132535844, "192.168.0.3:8888": 115798597,
		"semlinker": 1549041406, "kakuqo": 463104755, "fer": 1677150790,
	} {
		if got := hashfn.JavaFNV1_32([]byte(key)); got != want {
			t.Errorf("JavaFNV1_32(%q) = %d; want %d (003)", key, got, want)
		}
	}
}

var (
	seedFive  = []string{"192.168.0.0:111", "192.168.0.1:111", "192.168.0.2:111", "192.168.0.3:111", "192.168.0.4:111"}
	seedIPs   = []string{"192.168.2.106", "192.168.2.107", "192.168.2.108", "192.168.2.109"}
	seedThree = []string{"192.168.0.1:8888", "192.168.0.2:8888", "192.168.0.3:8888"}
)

// TestSeedArticleJava compiles the article programs of testdata/seed and runs
// each command of the golden files, and one random case per program, on fresh
// keys: ASCII, non-ASCII and ill-formed UTF-8. Java's routes must all be chash's.
// It needs javac and java; without them it skips, except in CI (CI=true), where
// it fails. -short skips it. Set CHASH_LIVE_SEED to replay a run.
func TestSeedArticleJava(t *testing.T) {
	if testing.Short() && !testprog.CI() {
		t.Skip("runs the Java programs of testdata/seed")
	}
	javac := testprog.LookPath(t, "javac")
	java := testprog.LookPath(t, "java")
	classes := t.TempDir()
	sources, _ := filepath.Glob("testdata/seed/*.java")
	if out, err := exec.Command(javac, append([]string{"-d", classes}, sources...)...).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}

	rnd := liveRand(t)
	keys := seedJavaKeys(rnd, 5000)
	var cmds []seedCommand
	for _, file := range seedGoldenFiles(t) {
		c, _, _ := readSeedGolden(t, file)
		cmds = append(cmds, c)
	}
	for _, class := range []string{"Article000", "Article001", "Article002", "Article003", "Article004"} {
		cmds = append(cmds, randomSeedCommand(t, rnd, class))
	}

	total, throws := 0, 0
	lists := make(map[string]bool)
	for _, c := range cmds {
		r, err := c.ring()
		if err != nil {
			t.Fatal(err)
		}
		ks := keys
		if r.bytes {
			ks = slices.DeleteFunc(slices.Clone(keys), func(k []byte) bool { return !utf8.Valid(k) })
		}
		want := runSeedJava(t, java, classes, c, ks)
		servers := seedServerList(t, c.servers)
		throws += checkSeedRoutes(t, c, servers, ks, want)
		total += len(ks)
		lists[strings.Join(servers, "\n")] = true
		t.Logf("%v: %d keys over %d servers agree", c, len(ks), len(servers))
	}
	t.Logf("%d commands, %d server lists, %d keys: all routed as Java routes them (%d where the 000 article's program throws)",
		len(cmds), len(lists), total, throws)
}

// runSeedJava runs c's program with keys on standard input, one per line.
func runSeedJava(t *testing.T, java, classes string, c seedCommand, keys [][]byte) []seedJavaRoute {
	t.Helper()
	// The programs run for well under a second: a JVM without its optimizing
	// compiler and with one GC thread starts faster and competes less.
	args := []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", classes, c.class, c.servers}
	cmd := exec.Command(java, append(args, c.args...)...)
	var in, stderr bytes.Buffer
	for _, k := range keys {
		in.Write(k)
		in.WriteByte('\n')
	}
	cmd.Stdin, cmd.Stderr = &in, &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v\n%s", c, err, stderr.Bytes())
	}
	var routes []seedJavaRoute
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		r, err := parseSeedJavaRoute(sc.Text())
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		routes = append(routes, r)
	}
	if len(routes) != len(keys) {
		t.Fatalf("%v: %d lines for %d keys", c, len(routes), len(keys))
	}
	return routes
}

// seedJavaKeys returns the articles' keys and n random ones, none with a
// newline: a quarter each ASCII "user:N", printable ASCII, non-ASCII text (BMP
// and beyond), and random bytes, mostly ill-formed UTF-8.
func seedJavaKeys(r *rand.Rand, n int) [][]byte {
	keys := [][]byte{}
	for _, k := range []string{"127.0.0.1:1111", "221.226.0.1:2222", "10.211.0.1:3333", "zs", "999999",
		"233333", "semlinker", "kakuqo", "fer", "", "Aa", "BB", "中文", "emoji😀key", "\xed\xa0\x80", "\xff"} {
		keys = append(keys, []byte(k))
	}
	ranges := [][2]rune{{0xa0, 0x24f}, {0x400, 0x4ff}, {0x4e00, 0x9fff}, {0xe000, 0xfffd}, {0x1f300, 0x1f64f}, {0x10000, 0x10ffff}}
	for i := range n {
		var k []byte
		switch i % 4 {
		case 0:
			k = fmt.Appendf(nil, "user:%d", r.IntN(1_000_000))
		case 1:
			for range r.IntN(24) {
				k = append(k, byte(' '+r.IntN(95)))
			}
		case 2:
			for range 1 + r.IntN(8) {
				if r.IntN(3) == 0 {
					k = append(k, byte('a'+r.IntN(26)))
					continue
				}
				rg := ranges[r.IntN(len(ranges))]
				k = utf8.AppendRune(k, rg[0]+r.Int32N(rg[1]-rg[0]+1))
			}
		case 3:
			for range r.IntN(12) {
				b := byte(r.IntN(256))
				if b == '\n' {
					b = 0x80
				}
				k = append(k, b)
			}
		}
		keys = append(keys, k)
	}
	return keys
}

// randomSeedCommand writes a random server list for class and returns a command
// with random arguments. Names are unique, non-empty, free of white space and of
// "&" (the 000 program cuts a name at "&&"), and may be non-ASCII.
func randomSeedCommand(t *testing.T, r *rand.Rand, class string) seedCommand {
	alphabet := []rune("abcxyz0189.:-_#{}éß中文кэш😀𝄞")
	seen := make(map[string]bool)
	var names []string
	for len(names) < 1+r.IntN(40) {
		var b []rune
		for range 1 + r.IntN(12) {
			b = append(b, alphabet[r.IntN(len(alphabet))])
		}
		if s := string(b); !seen[s] {
			seen[s] = true
			names = append(names, s)
		}
	}
	path := filepath.Join(t.TempDir(), "servers-random.txt")
	if err := os.WriteFile(path, []byte(strings.Join(names, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := seedCommand{class: class, servers: path}
	switch class {
	case "Article000":
		c.args = []string{strconv.Itoa(r.IntN(200))}
	case "Article001", "Article002":
		c.args = []string{strconv.Itoa(1 + r.IntN(200))}
	case "Article004":
		hashes := []string{"java_hashcode", "java_hashcode_spread", "java_fnv1_32", "md5"}
		c.args = []string{strconv.Itoa(1 + r.IntN(200)), hashes[r.IntN(len(hashes))]}
	}
	return c
}
