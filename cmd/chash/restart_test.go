package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/testprog"
)

// TestHitlessRestartBinary restarts "chash proxy" as chash help proxy tells
// an operator to: a second process starts on the same pool address while
// the first serves, and once it listens the first gets SIGTERM and exits
// 0, leaving the pid file to the new one. A steady load of persistent and
// short connections runs throughout: no connection is refused or reset (but
// for one whose handshake completes as the old listener closes, where the
// kernel does not migrate it: AllowRestartReset) and every request is
// answered (a request on a connection closed before its reply is sent again,
// as the proxy answers every request it reads). The pool takes its servers
// from a file (servers_from), and both processes show one fingerprint in
// GET /ring.
func TestHitlessRestartBinary(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	bin := buildChash(t)
	dir := t.TempDir()
	list := filepath.Join(dir, "cache.servers")
	writeFile(t, list, servers[0].Addr+":1 a\n"+servers[1].Addr+":1 b\n")
	listen := testprog.FreeAddr(t)
	// Both processes on one stats port too, as on nutcracker's 22222.
	_, statsPort, _ := net.SplitHostPort(testprog.FreeAddr(t))
	conf := filepath.Join(dir, "nutcracker.yml")
	pidFile := filepath.Join(dir, "nutcracker.pid") // both processes', as an init script's
	writeFile(t, conf, fmt.Sprintf("alpha:\n  listen: %s\n  hash: fnv1a_64\n  distribution: ketama\n  timeout: 2000\n  servers_from: file:%s\n", listen, list))
	start := func() (*testprog.Proc, string) {
		t.Helper()
		admin := testprog.FreeAddr(t)
		return testprog.Start(t, testprog.Program{
			Name: bin,
			Args: []string{"proxy", "--config", conf, "--admin", admin, "--stats-port", statsPort, "--pid-file", pidFile},
			Env:  chashEnv(),
			// The admin listener opens after every pool's: once it accepts,
			// the process listens on the pool address too.
			Ready: testprog.Listening(admin),
		}), admin
	}

	old, oldAdmin := start()
	load := memcachedtest.StartLoad(t, listen, 6)
	load.AllowRestartReset() // the instant of the old listener's close (listen.go)
	time.Sleep(300 * time.Millisecond)
	next, nextAdmin := start() // on the same pool address, while the old one serves
	if a, b := ringFingerprint(t, oldAdmin), ringFingerprint(t, nextAdmin); a != b || a == "" {
		t.Errorf("GET /ring: the old proxy shows fingerprint %q, the new one %q; want one", a, b)
	}
	time.Sleep(300 * time.Millisecond)
	sendSignal(t, old, syscall.SIGTERM)
	waitExit(t, old, "SIGTERM")
	// The old process leaves the pid file the new one wrote.
	if b, err := os.ReadFile(pidFile); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(next.Pid()) {
		t.Errorf("pid file after the old proxy exited: %q, %v; want the new proxy's id %d", b, err, next.Pid())
	}
	served := load.Requests()
	time.Sleep(500 * time.Millisecond)
	load.Stop()
	if load.Requests() <= served {
		t.Errorf("no request answered after the old proxy exited\n%s", next.Output())
	}
	if n := load.Failures(); n != 0 {
		t.Errorf("%d requests failed across the restart\nold proxy:\n%s\nnew proxy:\n%s", n, old.Output(), next.Output())
	}
	if !strings.Contains(old.Output(), `msg="admin listening"`) || !strings.Contains(next.Output(), `msg="admin listening"`) {
		t.Errorf("a proxy's log lacks \"admin listening\", the line the restart procedure waits for:\n%s\n%s", old.Output(), next.Output())
	}
}

// ringFingerprint returns the fingerprint GET /ring on admin shows for pool
// alpha.
func ringFingerprint(t *testing.T, admin string) string {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + admin + "/ring")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ring struct {
		Pools map[string]struct {
			Fingerprint string
			Servers     []string
			Source      string
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&ring); err != nil {
		t.Fatalf("GET /ring: %v", err)
	}
	p := ring.Pools["alpha"]
	if want := []string{"a", "b"}; strings.Join(p.Servers, ",") != strings.Join(want, ",") || !strings.HasPrefix(p.Source, "file:") {
		t.Errorf("GET /ring of %s: pool alpha has servers %q from %q; want %q from the file", admin, p.Servers, p.Source, want)
	}
	return p.Fingerprint
}

// TestSecondSignalCuts stops a proxy whose client does not read its replies,
// so that the graceful shutdown waits: a second SIGTERM or SIGINT cuts what is
// in flight at once, where it went unheard until the 10s passed, and the
// proxy exits 0 saying why it cut.
func TestSecondSignalCuts(t *testing.T) {
	s := memcachedtest.Start(t, "-I", "2m")
	bin := buildChash(t)
	listen := testprog.FreeAddr(t)
	conf := filepath.Join(t.TempDir(), "nutcracker.yml")
	writeFile(t, conf, fmt.Sprintf("alpha:\n  listen: %s\n  timeout: 2000\n  servers:\n   - %s:1\n", listen, s.Addr))
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			p := startChashProxy(t, bin, conf, listen)
			c := dialText(t, listen)
			value := strings.Repeat("v", 1<<20)
			if got := c.roundTrip("set big 0 0 " + strconv.Itoa(len(value)) + "\r\n" + value + "\r\n"); got != "STORED\r\n" {
				t.Fatalf("set: %q", got)
			}
			// Twenty replies of a megabyte that the client does not read.
			c.c.Write([]byte(strings.Repeat("get big\r\n", 20)))
			time.Sleep(300 * time.Millisecond)
			sendSignal(t, p, sig)
			time.Sleep(300 * time.Millisecond)
			if p.Exited() {
				t.Fatalf("the proxy exited at the first %v though its client had not read its replies\n%s", sig, p.Output())
			}
			sendSignal(t, p, sig)
			if err := p.Wait(3 * time.Second); err != nil {
				t.Fatalf("after a second %v: %v\n%s", sig, err, p.Output())
			}
			if !strings.Contains(p.Output(), `msg="requests in flight were cut" why="a second signal`) {
				t.Errorf("the log does not say a second signal cut the requests in flight:\n%s", p.Output())
			}
		})
	}
}
