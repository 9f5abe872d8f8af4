package proxy

import (
	"errors"
	"log/slog"
	"os"
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

	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	low := lim
	low.Cur = min(lim.Cur, 1024)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	var fill []*os.File
	release := func() {
		for _, f := range fill {
			f.Close()
		}
		fill = nil
	}
	defer release()
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				t.Fatal(err)
			}
			break
		}
		fill = append(fill, f)
	}

	if got, want := c.mustDo("get k\r\n"), "SERVER_ERROR Too many open files\r\n"; got != want {
		t.Errorf("get out of file descriptors = %q; want %q", got, want)
	}
	// A client the proxy cannot accept: one descriptor for its side.
	fill[len(fill)-1].Close()
	fill = fill[:len(fill)-1]
	waiting := dial(t, p.Addr("alpha").String())
	time.Sleep(50 * time.Millisecond) // a few accepts that fail
	release()

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
