package proxy

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/testprog"
)

// TestMain runs the tests, or in a process a test starts, a server of the
// test (readServerMain).
func TestMain(m *testing.M) {
	if os.Getenv(readServerEnv) != "" {
		readServerMain()
		return
	}
	os.Exit(m.Run())
}

// poolYAML returns a one-pool configuration over the servers.
func poolYAML(extra string, servers ...*memcachedtest.Server) string {
	lines := make([]string, len(servers))
	for i, s := range servers {
		lines[i] = s.Addr + ":1"
	}
	return poolOf(extra, lines)
}

// poolOf returns the configuration of pool alpha, listening on
// 127.0.0.1:22121, with the settings of extra (one a line) and the server
// lines.
func poolOf(extra string, servers []string) string {
	var b strings.Builder
	b.WriteString("alpha:\n  listen: 127.0.0.1:22121\n")
	for _, l := range strings.Split(strings.TrimSpace(extra), "\n") {
		if l != "" {
			b.WriteString("  " + strings.TrimSpace(l) + "\n")
		}
	}
	b.WriteString("  servers:\n")
	for _, s := range servers {
		b.WriteString("   - " + s + "\n")
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

// reloadAlpha reloads p with the one-pool configuration yaml, pool alpha
// keeping the address it listens at.
func reloadAlpha(t testing.TB, p *Proxy, yaml string) {
	t.Helper()
	f := parseConfig(t, yaml)
	f.Pools[0].Listen = p.Addr("alpha").String()
	if err := p.Reload(f); err != nil {
		t.Fatal(err)
	}
}

// conn is a test client: it sends raw requests and reads replies.
type conn struct {
	t  testing.TB
	c  net.Conn
	br *bufio.Reader
}

// dial connects to addr: a TCP address, or the path of a Unix socket.
func dial(t testing.TB, addr string) *conn {
	t.Helper()
	network := "tcp"
	if strings.HasPrefix(addr, "/") {
		network = "unix"
	}
	c, err := net.DialTimeout(network, addr, 2*time.Second)
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

// logged waits up to 5s for logs to hold want, as the moved key space, which
// the proxy measures in the background after a change, and reports whether
// they do.
func logged(logs *testprog.Buffer, want string) bool {
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
