package proxy

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/testprog"
)

// TestOutOfFilesNotServersFault runs the proxy out of file descriptors, as
// more clients than its open files limit do: the request that needs a server
// connection is answered "SERVER_ERROR Too many open files", the proxy logs
// that it is out of them (when dialing and when accepting), and the server,
// which did nothing wrong, is neither logged down nor ejected, so that its
// keys stay where they are once descriptors are free again.
func TestOutOfFilesNotServersFault(t *testing.T) {
	server := memcachedtest.Start(t)
	var logs testprog.Buffer
	p := startProxy(t, poolYAML("auto_eject_hosts: true\nserver_failure_limit: 1\nserver_retry_timeout: 30000\ntimeout: 1000", server),
		func(p *Proxy) { p.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
	c := dial(t, p.Addr("alpha").String()) // no server connection yet: it is dialed for the first get

	files := fillFiles(t)

	if got, want := c.mustDo("get k\r\n"), "SERVER_ERROR Too many open files\r\n"; got != want {
		t.Errorf("get out of file descriptors = %q; want %q", got, want)
	}
	// A client the proxy cannot accept: one descriptor for its side.
	files.free(1)
	waiting := dial(t, p.Addr("alpha").String())
	time.Sleep(50 * time.Millisecond) // a few accepts that fail
	files.release()

	if p.ejected("alpha", server.Addr) {
		t.Errorf("server %s ejected for the proxy's lack of file descriptors", server.Addr)
	}
	for _, msg := range []string{"server down", "server failing", "server ejected"} {
		if got := jsonLogs(t, &logs, msg); len(got) != 0 {
			t.Errorf("logged %q %v; want nothing of the server", msg, got)
		}
	}
	got := jsonLogs(t, &logs, "out of file descriptors: raise the open files limit (ulimit -n, LimitNOFILE)")
	if len(got) != 1 {
		t.Errorf("logged out of file descriptors %d times; want once (at most once in 10 s):\n%s", len(got), logs.String())
	}
	if got, want := c.mustDo("get k\r\n"), "END\r\n"; got != want {
		t.Errorf("get once descriptors are free = %q; want %q", got, want)
	}
	if got, want := waiting.mustDo("get k\r\n"), "END\r\n"; got != want {
		t.Errorf("get of the client that waited = %q; want %q", got, want)
	}
}

// TestClientLimitOpenFiles: the proxy takes as many clients, in all its pools
// together, as its open files limit leaves room for beside the connections
// its servers may open (here 2 + 1) and the descriptors it keeps; a client
// past that is closed at once, counted and logged, instead of waiting in the
// listen queue while accept fails, and one that leaves makes room.
func TestClientLimitOpenFiles(t *testing.T) {
	server := memcachedtest.Start(t)
	var logs testprog.Buffer
	limit := openFilesLimit()
	if limit == 0 {
		t.Fatal("openFilesLimit cannot read the open files limit on Linux")
	}
	p := startProxy(t, poolsYAML(map[string]string{
		"alpha": poolYAML("server_connections: 2", server),
		"beta":  poolYAML("", server),
	}), func(p *Proxy) {
		p.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		p.filesKept = limit - 3 - 3 // room for three clients
	})
	if got := p.clientLimit(); got != 3 {
		t.Fatalf("clientLimit() = %d; want 3 (open files limit %d, less %d kept and 3 server connections)", got, limit, p.filesKept)
	}
	alpha, beta := p.Addr("alpha").String(), p.Addr("beta").String()
	a := dial(t, alpha)
	clients := []*conn{a, dial(t, beta), dial(t, alpha)}
	for i, c := range clients {
		if got := c.mustDo("get k\r\n"); got != "END\r\n" {
			t.Fatalf("client %d of 3: %q", i+1, got)
		}
	}
	d := dial(t, beta)
	if got, err := d.do("get k\r\n"); err == nil {
		t.Errorf("fourth client of three served: %q", got)
	}
	if got := p.pools["beta"].stats.clientErr.Load(); got != 1 {
		t.Errorf("beta's client_err = %d; want 1", got)
	}
	refused := jsonLogs(t, &logs, "requests refused")
	if len(refused) != 1 || refused[0]["class"] != "open_files" || refused[0]["pool"] != "beta" {
		t.Errorf("refusal logged as %v; want one line of class open_files, pool beta", refused)
	}
	if got := jsonLogs(t, &logs, "out of file descriptors: raise the open files limit (ulimit -n, LimitNOFILE)"); len(got) != 1 ||
		!strings.Contains(fmt.Sprint(got[0]["err"]), "3 clients are open") {
		t.Errorf("out of file descriptors logged as %v; want once, saying 3 clients are open", got)
	}

	a.c.Close()
	waitFor(2*time.Second, func() bool { return p.clients.Load() < 3 })
	if got := dial(t, beta).mustDo("get k\r\n"); got != "END\r\n" {
		t.Errorf("client after one left: %q", got)
	}
	// A reload that adds a server takes its connections from the clients'
	// room.
	if err := p.Reload(parseConfig(t, poolsYAML(map[string]string{
		"alpha": poolYAML("server_connections: 2", server),
		"beta":  poolYAML("server_connections: 2", server),
	}))); err != nil {
		t.Fatal(err)
	}
	waitFor(2*time.Second, func() bool { return p.clientLimit() == 2 })
	if got := p.clientLimit(); got != 2 {
		t.Errorf("clientLimit() after beta's server takes 2 connections = %d; want 2", got)
	}
}

// openFiles holds the file descriptors that run the process out of them, under
// a limit lowered to at most 1024.
type openFiles struct {
	files []*os.File
	lim   syscall.Rlimit // the limit before
}

// fillFiles lowers the process's open files limit to at most 1024 and opens
// /dev/null until no descriptor is left; the test's end releases them.
func fillFiles(t *testing.T) *openFiles {
	t.Helper()
	o := &openFiles{}
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &o.lim); err != nil {
		t.Fatal(err)
	}
	low := o.lim
	low.Cur = min(o.lim.Cur, 1024)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.release)
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				t.Fatal(err)
			}
			return o
		}
		o.files = append(o.files, f)
	}
}

// free closes n of the descriptors.
func (o *openFiles) free(n int) {
	for _, f := range o.files[len(o.files)-n:] {
		f.Close()
	}
	o.files = o.files[:len(o.files)-n]
}

// release closes every descriptor and restores the limit.
func (o *openFiles) release() {
	o.free(len(o.files))
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &o.lim)
}

// TestParkerStartRetries checks that a parker that could not make its epoll
// set, out of file descriptors, makes it at a later park: one failure does
// not leave idle clients in goroutines for the life of the process.
func TestParkerStartRetries(t *testing.T) {
	var pk parker
	files := fillFiles(t)
	pk.mu.Lock()
	ok := pk.start()
	pk.mu.Unlock()
	if ok {
		t.Fatal("the parker made its set with no file descriptor left")
	}
	files.release()
	pk.mu.Lock()
	ok = pk.start()
	pk.mu.Unlock()
	if !ok || !pk.started {
		t.Fatal("the parker did not make its set once descriptors were free")
	}
}
