package membership

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/testprog"
)

// count returns how many times s occurs in the logs.
func count(logs *testprog.Buffer, s string) int {
	return strings.Count(logs.String(), s)
}

// quick returns a Config with short heartbeats and backoffs, so that tests
// of outages take seconds, and a logger into logs. Its Timeout stays ample
// for a loaded machine running -race: the only outages are the tests'.
func quick(logs io.Writer) Config {
	return Config{
		Logger:       slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Timeout:      1500 * time.Millisecond,
		Heartbeat:    200 * time.Millisecond,
		MinBackoff:   50 * time.Millisecond,
		MaxBackoff:   400 * time.Millisecond,
		PollInterval: 300 * time.Millisecond,
		Settle:       20 * time.Millisecond,
	}
}

// wait bounds every wait of these tests for something that should happen
// within a second or two: generous, for a loaded machine running -race.
const wait = 15 * time.Second

// watcher runs a source and collects the lists it applies.
type watcher struct {
	t     *testing.T
	s     *Source
	lists chan List
	logs  *testprog.Buffer
	// refuse, if set, is the apply function's answer.
	mu     sync.Mutex
	refuse error
}

// open opens rawURL with quick settings and runs it until the test ends.
func open(t *testing.T, rawURL string) *watcher {
	t.Helper()
	return openWith(t, rawURL, nil)
}

// openWith is open with the quick settings changed by set.
func openWith(t *testing.T, rawURL string, set func(*Config)) *watcher {
	t.Helper()
	w := openOnly(t, rawURL, set)
	w.run()
	return w
}

// openOnly is openWith without Run: the test calls w.run.
func openOnly(t *testing.T, rawURL string, set func(*Config)) *watcher {
	t.Helper()
	w := &watcher{t: t, lists: make(chan List, 1000), logs: new(testprog.Buffer)}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cfg := quick(w.logs)
	if set != nil {
		set(&cfg)
	}
	s, err := Open(ctx, rawURL, cfg)
	if err != nil {
		t.Fatalf("Open(%q): %v", rawURL, err)
	}
	w.s = s
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return w
}

// run runs the source until the test ends.
func (w *watcher) run() {
	done := make(chan error, 1)
	go func() { done <- w.s.Run(context.Background(), w.apply) }()
	w.t.Cleanup(func() {
		// Cleanups run last first: Close has not run yet.
		if err := w.s.Close(); err != nil {
			w.t.Errorf("Close: %v", err)
		}
		if err := <-done; err != nil {
			w.t.Errorf("Run: %v", err)
		}
	})
}

func (w *watcher) apply(l List) error {
	w.mu.Lock()
	err := w.refuse
	w.mu.Unlock()
	if err == nil {
		w.lists <- l
	}
	return err
}

// next returns the next list applied, failing the test if none comes.
func (w *watcher) next() List {
	w.t.Helper()
	select {
	case l := <-w.lists:
		return l
	case <-time.After(wait):
		w.t.Fatalf("no list applied in %v; status %+v; logs:\n%s", wait, w.s.Status(), w.logs)
		return List{}
	}
}

// expect fails the test unless the next list applied has the servers want
// (as names() gives them) and, if rev is not zero, the revision rev.
func (w *watcher) expect(want string, rev int64) List {
	w.t.Helper()
	l := w.next()
	if got := names(l.Servers); got != want || rev != 0 && l.Revision != rev {
		w.t.Fatalf("list applied: %q at revision %d; want %q at revision %d", got, l.Revision, want, rev)
	}
	return l
}

// none fails the test if a list is applied within d.
func (w *watcher) none(d time.Duration) {
	w.t.Helper()
	select {
	case l := <-w.lists:
		w.t.Fatalf("list applied: %q at revision %d; want none", names(l.Servers), l.Revision)
	case <-time.After(d):
	}
}

// until waits for cond on the source's status, failing the test if it does
// not hold within wait.
func (w *watcher) until(what string, cond func(Status) bool) Status {
	w.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		st := w.s.Status()
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("not %s after %v: status %+v; logs:\n%s", what, wait, st, w.logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// forwarder is a TCP proxy between a source and etcd that the test can cut,
// as a network partition cuts a proxy off from etcd while others write.
type forwarder struct {
	t      *testing.T
	addr   string // where clients connect
	target string

	mu    sync.Mutex
	ln    net.Listener
	conns []net.Conn
	// While reject is set, connections are accepted and closed at once,
	// their times kept in rejected: an etcd whose port answers and whose
	// connections fail.
	reject   bool
	rejected []time.Time
}

// rejectAll closes every connection and, until heal, closes each new one as
// it comes, noting when.
func (f *forwarder) rejectAll() {
	f.mu.Lock()
	f.reject = true
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
	f.mu.Unlock()
}

// attempts returns the times of the connections rejected so far.
func (f *forwarder) attempts() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.rejected)
}

func newForwarder(t *testing.T, target string) *forwarder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &forwarder{t: t, addr: ln.Addr().String(), target: target}
	f.serve(ln)
	t.Cleanup(f.cut)
	return f
}

func (f *forwarder) serve(ln net.Listener) {
	f.mu.Lock()
	f.ln = ln
	f.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // cut
			}
			f.mu.Lock()
			reject := f.reject
			if reject {
				f.rejected = append(f.rejected, time.Now())
			}
			f.mu.Unlock()
			if reject {
				c.Close()
				continue
			}
			u, err := net.Dial("tcp", f.target)
			if err != nil {
				c.Close()
				continue
			}
			f.mu.Lock()
			f.conns = append(f.conns, c, u)
			f.mu.Unlock()
			go func() { io.Copy(u, c); u.Close() }()
			go func() { io.Copy(c, u); c.Close() }()
		}
	}()
}

// cut closes every connection and refuses new ones.
func (f *forwarder) cut() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ln != nil {
		f.ln.Close()
		f.ln = nil
	}
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}

// heal accepts connections again, on the same address.
func (f *forwarder) heal() {
	f.t.Helper()
	f.mu.Lock()
	wasRejecting := f.reject
	f.reject = false
	f.mu.Unlock()
	if wasRejecting {
		return // still listening
	}
	var ln net.Listener
	var err error
	for i := 0; ; i++ {
		ln, err = net.Listen("tcp", f.addr)
		if err == nil || !errors.Is(err, syscall.EADDRINUSE) || i == 100 {
			break
		}
		time.Sleep(10 * time.Millisecond) // the closed port may linger a moment
	}
	if err != nil {
		f.t.Fatalf("forwarder: listen again on %s: %v", f.addr, err)
	}
	f.serve(ln)
}
