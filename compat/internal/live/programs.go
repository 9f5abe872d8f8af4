package live

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/testprog"
)

// Server is one server of a case: where it listens, its weight and, for
// twemproxy, an optional alias.
type Server struct {
	Host   string // an IP literal in 127.0.0.0/8, or the path of a Unix socket
	Port   int    // zero for a Unix socket
	Weight int
	Alias  string
}

// Addr returns "host:port", or the socket's path.
func (s Server) Addr() string {
	if s.Port == 0 {
		return s.Host
	}
	return net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
}

// Spec returns the server as a twemproxy server line: "host:port:weight [alias]".
func (s Server) Spec() string { return s.Config().String() }

// Config returns the server as a chash config's server.
func (s Server) Config() config.Server {
	return config.Server{Host: s.Host, Port: s.Port, Weight: s.Weight, Alias: s.Alias}
}

func addrs(servers []Server) []string {
	a := make([]string, len(servers))
	for i, s := range servers {
		a[i] = s.Addr()
	}
	return a
}

// Fleet keeps memcached servers running across cases, one per address.
type Fleet struct {
	servers map[string]*Memcached
}

// Ensure starts memcached on every server's address that has none yet and empties
// all of them.
func (f *Fleet) Ensure(servers []Server) error {
	if f.servers == nil {
		f.servers = make(map[string]*Memcached)
	}
	for _, s := range servers {
		if _, ok := f.servers[s.Addr()]; ok {
			continue
		}
		m, err := StartMemcached(s.Addr())
		if err != nil {
			return err
		}
		f.servers[s.Addr()] = m
	}
	return FlushAll(addrs(servers))
}

// Stop stops every memcached the fleet started.
func (f *Fleet) Stop() {
	for _, m := range f.servers {
		m.Stop()
	}
	f.servers = nil
}

// Pool is a twemproxy pool: its distribution, key hash, hash tag and servers.
type Pool struct {
	Distribution string // ketama, modula
	Hash         string // a twemproxy hash name, "" for the default
	HashTag      string // "" or two characters
	Servers      []Server
}

// Config returns the pool as a chash config's pool called "pool", listening on
// listen (which may be empty).
func (p Pool) Config(listen string) *config.Pool {
	c := config.NewPool("pool")
	c.Listen, c.Distribution, c.Hash, c.HashTag = listen, p.Distribution, p.Hash, p.HashTag
	for _, s := range p.Servers {
		c.Servers = append(c.Servers, s.Config())
	}
	return c
}

// NutcrackerVersion returns nutcracker's version line.
func NutcrackerVersion() string {
	bin, err := testprog.Find("nutcracker")
	if err != nil {
		return "unknown"
	}
	return Version(bin, "-V")
}

// Twemproxy starts nutcracker with pool p in dir, stores every key through it, and
// returns the index in p.Servers of the memcached that holds each key. The fleet
// must run p's servers.
func Twemproxy(dir string, f *Fleet, p Pool, keys [][]byte) ([]int, error) {
	if _, err := testprog.Find("nutcracker"); err != nil {
		return nil, err
	}
	if err := f.Ensure(p.Servers); err != nil {
		return nil, err
	}
	port, err := testprog.FreePortOn("127.0.0.1")
	if err != nil {
		return nil, err
	}
	stats, err := testprog.FreePortOn("127.0.0.1")
	if err != nil {
		return nil, err
	}
	listen := "127.0.0.1:" + strconv.Itoa(port)
	yaml, err := config.Marshal(&config.File{Pools: []*config.Pool{p.Config(listen)}})
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	conf := filepath.Join(dir, "nutcracker.yml")
	if err := os.WriteFile(conf, yaml, 0o644); err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	proc, err := start(testprog.Program{
		Name:  "nutcracker",
		Args:  []string{"-c", conf, "-s", strconv.Itoa(stats), "-a", "127.0.0.1", "-v", "4"},
		Ready: testprog.Listening(listen),
	})
	if err != nil {
		return nil, err
	}
	defer proc.Stop()
	if err := SetAll(listen, keys); err != nil {
		return nil, fmt.Errorf("%w (nutcracker: %s)", err, tail(proc.Output()))
	}
	return Holders(addrs(p.Servers), keys)
}

// BuildLibmemcached compiles libmemcached.c from srcDir into dir and returns the
// program's path.
func BuildLibmemcached(srcDir, dir string) (string, error) {
	if _, err := os.Stat("/usr/include/libmemcached/memcached.h"); err != nil {
		return "", testprog.Missing("libmemcached-dev")
	}
	cc, err := testprog.Find("cc")
	if err != nil {
		return "", err
	}
	pc, err := testprog.Find("pkg-config")
	if err != nil {
		return "", err
	}
	flags, err := exec.Command(pc, "--cflags", "--libs", "libmemcached").Output()
	if err != nil {
		return "", fmt.Errorf("live: pkg-config libmemcached: %w", err)
	}
	bin := filepath.Join(dir, "libmemcached")
	args := append([]string{"-O1", "-o", bin, filepath.Join(srcDir, "libmemcached.c")}, strings.Fields(string(flags))...)
	if _, err := run(context.Background(), nil, nil, cc, args...); err != nil {
		return "", err
	}
	return bin, nil
}

// Libmemcached runs the program BuildLibmemcached made in mode ("ketama" or
// "ketama_weighted") with the given MEMCACHED_BEHAVIOR_HASH name ("-" for none)
// over servers, which the fleet runs, and returns per key the index of the server
// libmemcached chose, after checking that the key was stored there.
func Libmemcached(bin string, f *Fleet, mode, hash string, servers []Server, keys [][]byte) ([]int, error) {
	if err := f.Ensure(servers); err != nil {
		return nil, err
	}
	args := []string{mode, hash}
	for _, s := range servers {
		args = append(args, s.Addr()+":"+strconv.Itoa(s.Weight))
	}
	out, err := run(context.Background(), nil, lines(keys), bin, args...)
	if err != nil {
		return nil, err
	}
	return checkStored(out, servers, keys)
}

// SpymemcachedJar is the Debian package's jar.
const SpymemcachedJar = "/usr/share/java/spymemcached.jar"

// BuildSpymemcached compiles Spy.java from srcDir into dir.
func BuildSpymemcached(srcDir, dir string) error {
	if _, err := os.Stat(SpymemcachedJar); err != nil {
		return testprog.Missing("libspymemcached-java (" + SpymemcachedJar + ")")
	}
	javac, err := testprog.Find("javac")
	if err != nil {
		return err
	}
	_, err = run(context.Background(), nil, nil, javac, "-d", dir, "-cp", SpymemcachedJar, filepath.Join(srcDir, "Spy.java"))
	return err
}

// Spymemcached runs Spy (compiled into dir) over servers, which the fleet runs,
// passing weights when weighted, and returns per key the index of the server
// spymemcached chose, after checking that the key was stored there. Keys must be
// UTF-8.
func Spymemcached(dir string, f *Fleet, weighted bool, servers []Server, keys [][]byte) ([]int, error) {
	java, err := testprog.Find("java")
	if err != nil {
		return nil, err
	}
	if err := f.Ensure(servers); err != nil {
		return nil, err
	}
	args := []string{"-cp", SpymemcachedJar + string(os.PathListSeparator) + dir, "Spy"}
	if weighted {
		args = append(args, "-weighted")
	}
	for _, s := range servers {
		args = append(args, s.Addr()+":"+strconv.Itoa(s.Weight))
	}
	out, err := run(context.Background(), nil, lines(keys), java, args...)
	if err != nil {
		return nil, err
	}
	return checkStored(out, servers, keys)
}

// checkStored maps the program's answers (one host:port per key) to server
// indexes and checks that each key is stored on its server.
func checkStored(out []byte, servers []Server, keys [][]byte) ([]int, error) {
	said, err := answers(out, servers, len(keys), Server.Addr)
	if err != nil {
		return nil, err
	}
	held, err := Holders(addrs(servers), keys)
	if err != nil {
		return nil, err
	}
	for i := range keys {
		if said[i] != held[i] {
			return nil, fmt.Errorf("live: key %q: the client said %s but stored it on %s", keys[i], servers[said[i]].Addr(), servers[held[i]].Addr())
		}
	}
	return said, nil
}

// answers maps n output lines, each a server's name(s), to indexes in servers.
func answers(out []byte, servers []Server, n int, name func(Server) string) ([]int, error) {
	index := make(map[string]int, len(servers))
	for i, s := range servers {
		index[name(s)] = i
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if n == 0 {
		got = nil
	}
	if len(got) != n {
		return nil, fmt.Errorf("live: %d answers for %d keys", len(got), n)
	}
	where := make([]int, n)
	for i, g := range got {
		j, ok := index[g]
		if !ok {
			return nil, fmt.Errorf("live: answer %q names no server", g)
		}
		where[i] = j
	}
	return where, nil
}

func lines(keys [][]byte) []byte {
	var b bytes.Buffer
	for _, k := range keys {
		b.Write(k)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// NPMDir returns the directory holding node_modules/hashring: $CHASH_NPM_DIR, or
// chash/npm in the user's cache directory (chash-npm in the temporary directory
// if there is none), where .ci/setup.d/compat.sh installs it.
func NPMDir() string {
	if d := os.Getenv("CHASH_NPM_DIR"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "chash-npm")
	}
	return filepath.Join(d, "chash", "npm")
}

// HashringVersion returns the installed version of the npm package hashring.
func HashringVersion() (string, error) {
	b, err := os.ReadFile(filepath.Join(NPMDir(), "node_modules", "hashring", "package.json"))
	if err != nil {
		return "", testprog.Missing("npm package hashring (in " + NPMDir() + ")")
	}
	const field = `"version":`
	_, v, ok := bytes.Cut(b, []byte(field))
	if !ok {
		return "unknown", nil
	}
	v, _, _ = bytes.Cut(v, []byte(","))
	return strings.Trim(strings.TrimSpace(string(v)), `"`), nil
}

// Hashring runs hashring.js from srcDir with node over servers and returns per key
// the index of the server the npm package hashring chose. Keys must be UTF-8.
func Hashring(srcDir string, servers []Server, keys [][]byte) ([]int, error) {
	node, err := testprog.Find("node")
	if err != nil {
		return nil, err
	}
	if _, err := HashringVersion(); err != nil {
		return nil, err
	}
	args := []string{filepath.Join(srcDir, "hashring.js")}
	for _, s := range servers {
		args = append(args, s.Addr()+":"+strconv.Itoa(s.Weight))
	}
	out, err := run(context.Background(), []string{"CHASH_NPM_DIR=" + NPMDir()}, lines(keys), node, args...)
	if err != nil {
		return nil, err
	}
	return answers(out, servers, len(keys), Server.Addr)
}
