package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/redistest"
	"github.com/chash-dev/chash/internal/testprog"
)

// startNutcracker runs twemproxy with the configuration yaml, its pool listening
// on a free port of 127.0.0.1 and its stats on another; it is stopped by PID when
// the test ends. It returns the pool's address.
func startNutcracker(t testing.TB, yaml string) string {
	t.Helper()
	addr := testprog.FreeAddr(t)
	yaml = strings.Replace(yaml, "listen: 127.0.0.1:22121", "listen: "+addr, 1)
	dir := t.TempDir()
	conf := filepath.Join(dir, "nutcracker.yml")
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	testprog.Start(t, testprog.Program{
		Name: "nutcracker",
		Args: []string{"-c", conf, "-s", strconv.Itoa(testprog.FreePort(t)), "-a", "127.0.0.1",
			"-o", filepath.Join(dir, "nutcracker.log"), "-p", filepath.Join(dir, "nutcracker.pid")},
		Ready: testprog.Listening(addr),
	})
	return addr
}

// TestPlacementMatchesNutcracker stores keys through chash proxy and reads them
// through nutcracker with the same configuration and servers: every key is
// found, so both put every key on the same server.
func TestPlacementMatchesNutcracker(t *testing.T) {
	for _, opts := range []string{
		"",
		"hash: md5\nhash_tag: \"{}\"",
		"hash: murmur\ndistribution: modula",
		"hash: crc32a",
	} {
		t.Run(strings.ReplaceAll(opts, "\n", ","), func(t *testing.T) {
			servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
			yaml := poolYAML(opts, servers...)
			p := startProxy(t, yaml)
			nc := dial(t, startNutcracker(t, yaml))
			c := dial(t, p.Addr("alpha").String())
			owner := ownerFunc(t, yaml)
			used := map[string]bool{}
			const n = 300
			for i := range n {
				key := fmt.Sprintf("user:%d", i)
				if i%3 == 0 {
					key = fmt.Sprintf("{tag%d}:%d", i%10, i)
				}
				used[owner(key)] = true
				if got := c.mustDo(fmt.Sprintf("set %s 0 0 1\r\nx\r\n", key)); got != "STORED\r\n" {
					t.Fatalf("set %s: %q", key, got)
				}
				got, err := nc.get(key)
				if want := "VALUE " + key + " 0 1\r\nx\r\nEND\r\n"; err != nil || got != want {
					t.Fatalf("nutcracker: get %s = %q, %v; want %q", key, got, err, want)
				}
			}
			if len(used) < 3 {
				t.Errorf("keys on %d servers of 4", len(used))
			}
		})
	}
}

// get sends "get key" and reads the reply up to END, for servers that do not
// know mn.
func (c *conn) get(key string) (string, error) {
	c.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(c.c, "get %s\r\n", key); err != nil {
		return "", err
	}
	var out strings.Builder
	for {
		line, err := c.br.ReadString('\n')
		out.WriteString(line)
		if err != nil || line == "END\r\n" || strings.Contains(line, "ERROR") {
			return out.String(), err
		}
	}
}

// TestFrozenAfterReplyTimesOutOnce: a server that answers a request, then
// stops answering (SIGSTOP), fails the next request on the connection a
// timeout after it was sent, as nutcracker does; chash waited a second timeout
// when the connection had replies read just before. The best of three tries
// is taken, so that a try slowed by the machine does not fail the test; the
// second timeout was in every try.
func TestFrozenAfterReplyTimesOutOnce(t *testing.T) {
	const timeout = 500 * time.Millisecond
	type freezer interface {
		Freeze()
		Thaw()
	}
	for _, codec := range []struct {
		name      string
		start     func(t *testing.T) (freezer, string)
		ok, req   string // a request answered before the freeze, the request timed
		okp, errp string // their replies' prefixes
	}{
		{"memcached", func(t *testing.T) (freezer, string) {
			s := memcachedtest.Start(t)
			return s, poolYAML("timeout: 500", s)
		}, "get a\r\n", "get b\r\n", "END", "SERVER_ERROR Connection timed out"},
		{"redis", func(t *testing.T) (freezer, string) {
			s := redistest.Start(t)
			return s, redisPoolYAML("timeout: 500", s)
		}, redistest.Request("GET", "a"), redistest.Request("GET", "b"), "$-1", "-ERR Connection timed out"},
	} {
		t.Run(codec.name, func(t *testing.T) {
			srv, yaml := codec.start(t)
			addrs := map[string]string{
				"chash":      startProxy(t, yaml).Addr("alpha").String(),
				"nutcracker": startNutcracker(t, yaml),
			}
			for who, addr := range addrs {
				best := time.Hour
				for try := 0; try < 3 && best > timeout*3/2; try++ {
					c, err := net.DialTimeout("tcp", addr, 2*time.Second)
					if err != nil {
						t.Fatal(err)
					}
					br := bufio.NewReader(c)
					exchange := func(req string) string {
						c.SetDeadline(time.Now().Add(5 * time.Second))
						if _, err := io.WriteString(c, req); err != nil {
							t.Fatalf("%s: %v", who, err)
						}
						line, err := br.ReadString('\n')
						if err != nil {
							t.Fatalf("%s: %q: %v", who, req, err)
						}
						return strings.TrimSuffix(line, "\r\n")
					}
					if got := exchange(codec.ok); got != codec.okp {
						t.Fatalf("%s: %q before the freeze: %q; want %q", who, codec.ok, got, codec.okp)
					}
					srv.Freeze()
					start := time.Now()
					got := exchange(codec.req)
					took := time.Since(start)
					srv.Thaw()
					c.Close()
					if got != codec.errp {
						t.Fatalf("%s: %q to the frozen server: %q; want %q", who, codec.req, got, codec.errp)
					}
					t.Logf("%s, try %d: timed out after %v", who, try+1, took.Round(time.Millisecond))
					best = min(best, took)
				}
				if best > timeout*3/2 {
					t.Errorf("%s: the request to the server frozen after a reply timed out after %v at best; want about the timeout, %v",
						who, best.Round(time.Millisecond), timeout)
				}
			}
		})
	}
}

// TestFailedConnectionAnswersAll pipelines three requests to a server that
// stops answering (SIGSTOP), then to one killed with the requests unread:
// every request gets the connection's failure, through chash as through
// nutcracker (Connection timed out, Connection reset by peer), not only the
// oldest, by which the timeout is measured.
func TestFailedConnectionAnswersAll(t *testing.T) {
	type server interface {
		Freeze()
		Signal(os.Signal)
	}
	for _, codec := range []struct {
		name  string
		start func(t *testing.T) (server, string) // t the subtest's: a missing server skips it
		req   string
		err   string // the reply's prefix
	}{
		{"memcached", func(t *testing.T) (server, string) {
			s := memcachedtest.Start(t)
			return s, poolYAML("timeout: 400", s)
		}, "get a\r\nget b\r\nget c\r\n", "SERVER_ERROR "},
		{"redis", func(t *testing.T) (server, string) {
			s := redistest.Start(t)
			return s, redisPoolYAML("timeout: 400", s)
		}, redistest.Request("GET", "a") + redistest.Request("GET", "b") + redistest.Request("GET", "c"), "-ERR "},
	} {
		for _, fail := range []struct {
			name, want string
			kill       bool
		}{
			{"frozen", "Connection timed out", false},
			{"killed", "Connection reset by peer", true},
		} {
			t.Run(codec.name+"/"+fail.name, func(t *testing.T) {
				srv, yaml := codec.start(t)
				if fail.kill {
					yaml = strings.Replace(yaml, "timeout: 400", "timeout: 5000", 1)
				}
				addrs := map[string]string{
					"chash":      startProxy(t, yaml).Addr("alpha").String(),
					"nutcracker": startNutcracker(t, yaml),
				}
				srv.Freeze()
				conns := map[string]net.Conn{}
				for who, addr := range addrs {
					c, err := net.DialTimeout("tcp", addr, 2*time.Second)
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					if _, err := io.WriteString(c, codec.req); err != nil {
						t.Fatal(err)
					}
					conns[who] = c
				}
				if fail.kill {
					time.Sleep(500 * time.Millisecond) // the requests reach the server's socket
					srv.Signal(os.Kill)
				}
				want := strings.Repeat(codec.err+fail.want+"\r\n", 3)
				for who, c := range conns {
					c.SetReadDeadline(time.Now().Add(5 * time.Second))
					br := bufio.NewReader(c)
					var got strings.Builder
					for range 3 {
						line, err := br.ReadString('\n')
						got.WriteString(line)
						if err != nil {
							break
						}
					}
					if got.String() != want {
						t.Errorf("%s: %q; want %q", who, got.String(), want)
					}
				}
			})
		}
	}
}
