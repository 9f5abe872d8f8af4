package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/config"
)

// need returns the path of a program the test needs. Without it the test is
// skipped, except in CI (CI=true), where a missing program is a failure.
func need(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not installed (CI must install it: .ci/apt-packages)", name)
		}
		t.Skipf("%s not installed", name)
	}
	return path
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// memcached is a memcached process the test started.
type memcached struct {
	t    testing.TB
	port int
	cmd  *exec.Cmd
}

func (m *memcached) addr() string { return "127.0.0.1:" + strconv.Itoa(m.port) }

// startMemcached starts memcached on a free port of 127.0.0.1, stopped (by its
// PID) when the test ends.
func startMemcached(t testing.TB) *memcached {
	t.Helper()
	m := &memcached{t: t, port: freePort(t)}
	m.start()
	t.Cleanup(m.stop)
	return m
}

func (m *memcached) start() {
	m.t.Helper()
	bin := need(m.t, "memcached")
	args := []string{"-l", "127.0.0.1", "-p", strconv.Itoa(m.port), "-U", "0", "-m", "64"}
	if os.Geteuid() == 0 {
		args = append(args, "-u", "nobody")
	}
	m.cmd = exec.Command(bin, args...)
	if err := m.cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", m.addr(), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if i == 200 {
			m.t.Fatalf("memcached on %s does not answer: %v", m.addr(), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (m *memcached) signal(sig syscall.Signal) {
	if m.cmd != nil && m.cmd.Process != nil {
		m.cmd.Process.Signal(sig)
	}
}

func (m *memcached) stop() {
	if m.cmd == nil {
		return
	}
	m.cmd.Process.Signal(syscall.SIGCONT)
	m.cmd.Process.Kill()
	m.cmd.Wait()
	m.cmd = nil
}

// poolYAML returns a one-pool configuration over the servers.
func poolYAML(extra string, servers ...*memcached) string {
	var b strings.Builder
	b.WriteString("alpha:\n  listen: 127.0.0.1:22121\n")
	for _, l := range strings.Split(strings.TrimSpace(extra), "\n") {
		if l != "" {
			b.WriteString("  " + strings.TrimSpace(l) + "\n")
		}
	}
	b.WriteString("  servers:\n")
	for _, s := range servers {
		fmt.Fprintf(&b, "   - %s:1\n", s.addr())
	}
	return b.String()
}

// poolsYAML returns one configuration of the pools of poolYAML, each renamed as
// the key of its yaml and given its own listen address.
func poolsYAML(pools map[string]string) string {
	var b strings.Builder
	for i, name := range slices.Sorted(maps.Keys(pools)) {
		y := strings.Replace(pools[name], "alpha:", name+":", 1)
		b.WriteString(strings.Replace(y, "127.0.0.1:22121", "127.0.0.1:"+strconv.Itoa(22121+i), 1))
	}
	return b.String()
}

func parseConfig(t testing.TB, yaml string) *config.File {
	t.Helper()
	f, err := config.Parse("test.yml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// startProxy starts a proxy of the configuration on a free port, closed when the
// test ends.
func startProxy(t testing.TB, yaml string, setup ...func(*Proxy)) *Proxy {
	t.Helper()
	f := parseConfig(t, yaml)
	listen := map[string]string{}
	for _, p := range f.Pools {
		listen[p.Name] = "127.0.0.1:0"
	}
	p := &Proxy{Listen: listen, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if testing.Verbose() {
		p.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	for _, f := range setup {
		f(p)
	}
	if err := p.Start(f); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// conn is a test client: it sends raw requests and reads replies.
type conn struct {
	t  testing.TB
	c  net.Conn
	br *bufio.Reader
}

func dial(t testing.TB, addr string) *conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &conn{t: t, c: c, br: bufio.NewReader(c)}
}

// do sends req and then "mn", and returns what came back before "MN\r\n".
func (c *conn) do(req string) (string, error) {
	c.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c.c, req+"mn\r\n"); err != nil {
		return "", err
	}
	var out bytes.Buffer
	for {
		line, err := c.br.ReadBytes('\n')
		if err != nil {
			return out.String(), err
		}
		if string(line) == "MN\r\n" {
			return out.String(), nil
		}
		out.Write(line)
	}
}

func (c *conn) mustDo(req string) string {
	c.t.Helper()
	out, err := c.do(req)
	if err != nil {
		c.t.Fatalf("%q: %v (read %q)", req, err, out)
	}
	return out
}
