package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/testprog"
)

// TestProxyBinary runs the chash binary as an operator does: "chash proxy" in
// front of real memcached servers, reloaded with SIGHUP and stopped with
// SIGTERM. It checks that keys land where "chash route" says, that a reload
// adding a server moves keys to it and logs the key space that moved, that an
// invalid file is refused while the old one keeps serving, and that SIGTERM
// answers every request already sent and exits 0.
func TestProxyBinary(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	bin := buildChash(t)
	listen := testprog.FreeAddr(t)
	conf := filepath.Join(t.TempDir(), "nutcracker.yml")
	yaml := func(servers ...*memcachedtest.Server) string {
		p := config.NewPool("alpha")
		p.Listen, p.Hash = listen, "md5"
		p.Timeout = 5 * time.Second // requests wait for a frozen server at shutdown
		for _, s := range servers {
			host, port, _ := net.SplitHostPort(s.Addr)
			n, _ := strconv.Atoi(port)
			p.Servers = append(p.Servers, config.Server{Host: host, Port: n, Weight: 1})
		}
		y, err := config.Marshal(&config.File{Pools: []*config.Pool{p}})
		if err != nil {
			t.Fatal(err)
		}
		return string(y)
	}
	writeFile(t, conf, yaml(servers[0], servers[1]))
	p := startChashProxy(t, bin, conf, listen)
	c := dialText(t, listen)
	direct := map[string]*textConn{}
	for _, s := range servers {
		direct[s.Addr] = dialText(t, s.Addr)
	}
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = fmt.Sprintf("user:%d", i)
	}

	// Each key is stored on the server chash route names, and only there.
	check := func(phase string, owners map[string]string) {
		t.Helper()
		for _, k := range keys {
			v := phase + "-" + k
			if got := c.roundTrip(fmt.Sprintf("set %s 0 0 %d\r\n%s\r\n", k, len(v), v)); got != "STORED\r\n" {
				t.Fatalf("%s: set %s through the proxy: %q", phase, k, got)
			}
			if got, want := c.roundTrip("get "+k+"\r\n"), fmt.Sprintf("VALUE %s 0 %d\r\n%s\r\nEND\r\n", k, len(v), v); got != want {
				t.Fatalf("%s: get %s through the proxy: %q; want %q", phase, k, got, want)
			}
			for addr, dc := range direct {
				has := strings.Contains(dc.roundTrip("get "+k+"\r\n"), "\r\n"+v+"\r\n")
				if has != (addr == owners[k]) {
					t.Errorf("%s: key %s holds the new value on %s: %v; chash route names %s", phase, k, addr, has, owners[k])
				}
			}
		}
	}
	owners2 := route(t, bin, conf, keys)
	check("two servers", owners2)

	// SIGHUP with a third server: keys move to it, and the log says how much
	// of the key space moved.
	writeFile(t, conf, yaml(servers...))
	owners3 := route(t, bin, conf, keys)
	var moved string
	for _, k := range keys {
		if owners3[k] == servers[2].Addr {
			moved = k
			break
		}
	}
	if moved == "" {
		t.Fatalf("no key of %d routes to the third server", len(keys))
	}
	sendSignal(t, p, syscall.SIGHUP)
	if !poll(10*time.Second, func() bool {
		c.roundTrip("set " + moved + " 0 0 3\r\nhup\r\n")
		return strings.Contains(direct[servers[2].Addr].roundTrip("get "+moved+"\r\n"), "\r\nhup\r\n")
	}) {
		t.Fatalf("10s after SIGHUP, %s is not stored on the new server %s\n%s", moved, servers[2].Addr, p.Output())
	}
	check("three servers", owners3)
	wantLog := `msg="reload: key space moved" pool=alpha moved=0.`
	if logs := p.Output(); !strings.Contains(logs, wantLog) || !strings.Contains(logs, "added=["+servers[2].Addr+"]") {
		t.Errorf("the reload's log lacks %s ... added=[%s]:\n%s", wantLog, servers[2].Addr, logs)
	}

	// SIGHUP with an invalid file: refused, and the three servers keep serving.
	writeFile(t, conf, strings.Replace(yaml(servers[0]), "  servers:", "  bogus: 1\n  servers:", 1))
	sendSignal(t, p, syscall.SIGHUP)
	if !poll(10*time.Second, func() bool { return strings.Contains(p.Output(), "reload refused") }) {
		t.Fatalf("10s after SIGHUP with an invalid file, no refusal logged:\n%s", p.Output())
	}
	if logs := p.Output(); !strings.Contains(logs, conf+":5") || !strings.Contains(logs, "bogus") {
		t.Errorf("the refusal does not name the file, line and key:\n%s", logs)
	}
	check("after a refused reload", owners3)

	// SIGTERM with requests in flight: they wait on a frozen server, and are
	// all answered once it thaws; then the proxy exits 0.
	frozen := servers[0]
	frozen.Freeze()
	var burst bytes.Buffer
	waiting := 0
	for _, k := range keys {
		fmt.Fprintf(&burst, "set %s 0 0 4\r\nterm\r\n", k)
		if owners3[k] == frozen.Addr {
			waiting++
		}
	}
	if waiting == 0 {
		t.Fatalf("no key of %d routes to %s", len(keys), frozen.Addr)
	}
	c.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.c.Write(burst.Bytes()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the proxy reads the burst; some of it waits for the frozen server
	sendSignal(t, p, syscall.SIGTERM)
	time.Sleep(200 * time.Millisecond)
	if nc, err := net.DialTimeout("tcp", listen, time.Second); err == nil {
		nc.Close()
		t.Error("after SIGTERM, the proxy accepts clients")
	}
	frozen.Thaw()
	for i, k := range keys {
		line, err := c.br.ReadString('\n')
		if err != nil || line != "STORED\r\n" {
			t.Fatalf("after SIGTERM, reply %d of %d (set %s): %q, %v; want STORED", i+1, len(keys), k, line, err)
		}
	}
	if line, err := c.br.ReadString('\n'); err == nil {
		t.Errorf("after SIGTERM and every reply, read %q; want the connection closed", line)
	}
	waitExit(t, p, "SIGTERM")
}

// builds holds the chash binaries that buildChash has made, by their build
// flags, in a directory TestMain removes: each is built once per test binary.
var builds struct {
	sync.Mutex
	dir  string
	bins map[string]string
}

// TestMain runs the tests and removes the binaries they built.
func TestMain(m *testing.M) {
	code := m.Run()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	os.Exit(code)
}

// buildChash builds the chash command with the go build flags given, once per
// test binary, and returns its path. Under -race, the command is built with
// -race too: the build reuses the packages compiled for the test, and a data
// race in the proxy makes it exit with an error.
func buildChash(t *testing.T, flags ...string) string {
	t.Helper()
	builds.Lock()
	defer builds.Unlock()
	key := strings.Join(flags, " ")
	if bin, ok := builds.bins[key]; ok {
		return bin
	}
	// go test puts the go command of its GOROOT first in PATH.
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to build chash: %v", err)
	}
	if builds.dir == "" {
		if builds.dir, err = os.MkdirTemp("", "chash-test"); err != nil {
			t.Fatal(err)
		}
		builds.bins = map[string]string{}
	}
	bin := filepath.Join(builds.dir, strconv.Itoa(len(builds.bins)), "chash")
	args := append([]string{"build", "-o", bin}, flags...)
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "-race" && s.Value == "true" {
				args = append(args, "-race")
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, gocmd, append(args, ".")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	builds.bins[key] = bin
	return bin
}

// chashEnv returns the environment of the chash binary: the test's, and a race
// detector that does not wait a second before exiting.
func chashEnv() []string {
	return append(os.Environ(), "GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")
}

// route returns the server "chash route" names for each key, with more of
// its flags ("--pool", "P") if any.
func route(t *testing.T, bin, conf string, keys []string, flags ...string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"route", "--config", conf}, flags...)...)
	cmd.Env = chashEnv()
	cmd.Stdin = strings.NewReader(strings.Join(keys, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chash route: %v", err)
	}
	owners := map[string]string{}
	for line := range strings.Lines(string(out)) {
		k, s, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		if !ok {
			t.Fatalf("chash route printed %q", line)
		}
		owners[k] = s
	}
	if len(owners) != len(keys) {
		t.Fatalf("chash route routed %d keys of %d", len(owners), len(keys))
	}
	return owners
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sendSignal sends sig to p, failing the test if it has exited.
func sendSignal(t *testing.T, p *testprog.Proc, sig os.Signal) {
	t.Helper()
	if err := p.Signal(sig); err != nil {
		t.Fatalf("%v\n%s", err, p.Output())
	}
}

// poll calls cond until it holds or d passes, and returns its last value.
func poll(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// startChashProxy starts "chash proxy" with the configuration conf and waits
// until it accepts clients on listen.
func startChashProxy(t *testing.T, bin, conf, listen string) *testprog.Proc {
	t.Helper()
	return testprog.Start(t, testprog.Program{
		Name:  bin,
		Args:  []string{"proxy", "--config", conf, "--admin", testprog.FreeAddr(t), "--stats-port", "0"},
		Env:   chashEnv(),
		Ready: testprog.Listening(listen),
	})
}

// textConn is a memcached text-protocol client connection.
type textConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialText(t *testing.T, addr string) *textConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &textConn{t: t, c: c, br: bufio.NewReader(c)}
}

// roundTrip sends one request, a set or a get, and returns its reply: one line,
// or for a get every line up to END.
func (c *textConn) roundTrip(req string) string {
	c.t.Helper()
	c.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.c.Write([]byte(req)); err != nil {
		c.t.Fatalf("%q: %v", req, err)
	}
	var out strings.Builder
	for {
		line, err := c.br.ReadString('\n')
		out.WriteString(line)
		if err != nil {
			c.t.Fatalf("%q: %v (read %q)", req, err, out.String())
		}
		if !strings.HasPrefix(req, "get ") || line == "END\r\n" || strings.Contains(line, "ERROR") {
			return out.String()
		}
	}
}

// TestProxyEmbeddedDefault runs "chash proxy" without a configuration, as the
// README's first try does: it serves 127.0.0.1:22121 in front of three
// in-process stores, says so in its log, spreads keys over the three, and exits
// 0 on SIGTERM.
func TestProxyEmbeddedDefault(t *testing.T) {
	const listen = "127.0.0.1:22121"
	if c, err := net.DialTimeout("tcp", listen, time.Second); err == nil {
		c.Close()
		if testprog.CI() {
			t.Fatalf("%s is taken; the embedded default needs it", listen)
		}
		t.Skipf("%s is taken; the embedded default needs it", listen)
	}
	bin := buildChash(t)
	admin := testprog.FreeAddr(t)
	p := testprog.Start(t, testprog.Program{
		Name:  bin,
		Args:  []string{"proxy", "--admin", admin, "--stats-port", "0"},
		Env:   chashEnv(),
		Ready: testprog.Listening(listen),
	})
	c := dialText(t, listen)
	for i := range 30 {
		k, v := fmt.Sprintf("try:%d", i), fmt.Sprintf("v%d", i)
		if got := c.roundTrip(fmt.Sprintf("set %s 0 0 %d\r\n%s\r\n", k, len(v), v)); got != "STORED\r\n" {
			t.Fatalf("set %s: %q", k, got)
		}
		if got, want := c.roundTrip("get "+k+"\r\n"), fmt.Sprintf("VALUE %s 0 %d\r\n%s\r\nEND\r\n", k, len(v), v); got != want {
			t.Fatalf("get %s = %q; want %q", k, got, want)
		}
	}
	if logs := p.Output(); !strings.Contains(logs, "embedded in-process stores") {
		t.Errorf("the log does not say the stores are embedded:\n%s", logs)
	}
	// Each of the three stores got some of the 30 keys.
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		prefix := fmt.Sprintf(`chash_proxy_server_requests_total{pool="embedded",server="embedded-%d"} `, i)
		n := 0
		for _, line := range strings.Split(string(metrics), "\n") {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				n, _ = strconv.Atoi(rest)
			}
		}
		if n == 0 {
			t.Errorf("no set reached embedded-%d; /metrics:\n%s", i, metrics)
		}
	}
	sendSignal(t, p, syscall.SIGTERM)
	waitExit(t, p, "SIGTERM")
}

// waitExit fails the test unless the process exits with status 0 within 5s of
// what the caller did (after, in the messages).
func waitExit(t *testing.T, p *testprog.Proc, after string) {
	t.Helper()
	if err := p.Wait(5 * time.Second); err != nil {
		t.Errorf("after %s, chash proxy: %v\n%s", after, err, p.Output())
	}
}

// TestProxyAsNutcracker runs chash through a link named nutcracker with the
// command line of nutcracker's init scripts: it serves the pool, writes its
// pid file, logs to the --output file (saying that -m and -i mean nothing)
// and to a new one after logrotate's rename and SIGHUP, changes its log level
// at SIGTTIN and SIGTTOU and lives through SIGUSR1 and SIGUSR2, serves
// nutcracker's stats document on the stats port, and removes the pid file at
// SIGTERM.
func TestProxyAsNutcracker(t *testing.T) {
	s := memcachedtest.Start(t)
	dir := t.TempDir()
	link := filepath.Join(dir, "nutcracker")
	if err := os.Symlink(buildChash(t), link); err != nil {
		t.Fatal(err)
	}
	listen, stats := testprog.FreeAddr(t), testprog.FreeAddr(t)
	_, statsPort, _ := net.SplitHostPort(stats)
	conf := filepath.Join(dir, "nutcracker.yml")
	yaml := fmt.Sprintf("alpha:\n  listen: %s\n  servers:\n   - %s:1 one\n", listen, s.Addr)
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile, pidFile := filepath.Join(dir, "nutcracker.log"), filepath.Join(dir, "nutcracker.pid")
	p := testprog.Start(t, testprog.Program{
		Name: link,
		Args: []string{"-c", conf, "-s", statsPort, "-a", "127.0.0.1", "-o", logFile, "-p", pidFile,
			"-v", "6", "-i", "100", "-m", "512", "--admin", testprog.FreeAddr(t)},
		Env:   chashEnv(),
		Ready: testprog.Listening(listen, stats),
	})
	c := dialText(t, listen)
	if got := c.roundTrip("set k 0 0 1\r\nv\r\n"); got != "STORED\r\n" {
		t.Fatalf("set = %q", got)
	}
	var pid []byte
	if !poll(5*time.Second, func() bool { pid, _ = os.ReadFile(pidFile); return len(pid) > 0 }) {
		t.Fatalf("no pid file %s", pidFile)
	}
	if got, want := strings.TrimSpace(string(pid)), strconv.Itoa(p.Pid()); got != want {
		t.Errorf("pid file holds %q; want %q", got, want)
	}

	sc, err := net.DialTimeout("tcp", stats, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sc.SetDeadline(time.Now().Add(5 * time.Second))
	doc, err := io.ReadAll(sc)
	sc.Close()
	var st struct {
		Service string
		Alpha   map[string]json.RawMessage
	}
	if err != nil || json.Unmarshal(doc, &st) != nil || st.Service != "nutcracker" || st.Alpha["one"] == nil {
		t.Errorf("stats port: %s, %v; want nutcracker's document with pool alpha and server one", doc, err)
	}

	checkNutcrackerSignals(t, p, logFile)
	if got := c.roundTrip("get k\r\n"); got != "VALUE k 0 1\r\nv\r\nEND\r\n" {
		t.Fatalf("get after the signals = %q", got)
	}

	// Rotated as Debian's /etc/logrotate.d/nutcracker does: renamed, an
	// empty file created, then SIGHUP (a reload): the log goes on in the
	// new file.
	rotated := logFile + ".1"
	if err := os.Rename(logFile, rotated); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logFile, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	sendSignal(t, p, syscall.SIGHUP)
	if !poll(10*time.Second, func() bool {
		b, _ := os.ReadFile(logFile)
		return strings.Contains(string(b), "configuration reloaded")
	}) {
		b, _ := os.ReadFile(logFile)
		t.Errorf("10s after SIGHUP, the new log file has no reload:\n%s", b)
	}

	sendSignal(t, p, syscall.SIGTERM)
	waitExit(t, p, "SIGTERM")
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("pid file after exit: %v; want it removed", err)
	}
	for file, wants := range map[string][]string{
		rotated: {"stats port listening", "--mbuf-size is accepted", "--stats-interval is accepted"},
		logFile: {"configuration reloaded", "shutting down"},
	} {
		logs, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range wants {
			if !strings.Contains(string(logs), want) {
				t.Errorf("%s has no %q:\n%s", filepath.Base(file), want, logs)
			}
		}
		if file == logFile && strings.Contains(string(logs), "stats port listening") {
			t.Errorf("%s has lines from before the rotation:\n%s", filepath.Base(file), logs)
		}
	}
	if out := p.Output(); strings.Contains(out, "level=") {
		t.Errorf("with --output, standard error has log lines:\n%s", out)
	}
}

// TestProxyLogPipeClosed runs chash proxy with its log going to a pipe whose
// reader is gone, as when a log shipper dies: the proxy's writes to it fail,
// and it serves on, reloads and exits 0 at SIGTERM, as nutcracker, which
// ignores SIGPIPE, does. (Go ends a program whose write to standard error
// meets a closed pipe.)
func TestProxyLogPipeClosed(t *testing.T) {
	s := memcachedtest.Start(t)
	listen := testprog.FreeAddr(t)
	conf := filepath.Join(t.TempDir(), "nutcracker.yml")
	yaml := fmt.Sprintf("alpha:\n  listen: %s\n  servers:\n   - %s:1 one\n", listen, s.Addr)
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	p := testprog.Start(t, testprog.Program{
		Name:   buildChash(t),
		Args:   []string{"proxy", "--config", conf, "--admin", "", "--stats-port", "0"},
		Env:    chashEnv(),
		Output: w,
		Ready:  testprog.Listening(listen),
	})
	w.Close()
	sendSignal(t, p, syscall.SIGHUP) // a reload, and its log lines
	for i := range 3 {
		time.Sleep(100 * time.Millisecond)
		if p.Exited() {
			t.Fatalf("chash proxy exited with its log's reader gone: %v", p.Err())
		}
		c := dialText(t, listen)
		k := fmt.Sprintf("k%d", i)
		if got := c.roundTrip("set " + k + " 0 0 1\r\nv\r\n"); got != "STORED\r\n" {
			t.Fatalf("set = %q", got)
		}
		if got := c.roundTrip("get " + k + "\r\n"); got != "VALUE "+k+" 0 1\r\nv\r\nEND\r\n" {
			t.Fatalf("get = %q", got)
		}
	}
	sendSignal(t, p, syscall.SIGTERM)
	waitExit(t, p, "SIGTERM")
}
