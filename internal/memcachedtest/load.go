package memcachedtest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A Load is a steady load of memcached requests on an address, for tests of
// what a proxy does while it restarts or its servers change: clients with
// persistent connections that send a set and a get of their own keys without
// pause, and one that opens a connection for each request. A client whose
// connection ends cleanly before a reply sends the request again on a new
// connection, as a proxy that answers every request it reads (chash proxy
// when it stops) runs none it leaves unanswered. A refused or reset
// connection, an error reply or a wrong one fails the test, but for what
// AllowRestartReset allows.
type Load struct {
	t        testing.TB
	addr     string
	stop     chan struct{}
	stopped  sync.Once
	wg       sync.WaitGroup
	requests atomic.Int64
	resent   atomic.Int64
	dials    atomic.Int64
	failures atomic.Int64
	resets   atomic.Int64 // new connections reset before any reply
	allowed  atomic.Int64 // of which the test allows
}

// migrateReq is Linux's net.ipv4.tcp_migrate_req: 1 if a closing listener's
// connections move to another listener of its address.
const migrateReq = "/proc/sys/net/ipv4/tcp_migrate_req"

// AllowRestartReset allows the load one new connection reset before any
// reply, sent again on another, unless the kernel hands a closing listener's
// connections to another listener (Linux 5.14 and later, with
// net.ipv4.tcp_migrate_req = 1): a proxy restarted over SO_REUSEPORT loses a
// connection whose handshake completes as the old listener closes, as
// internal/proxy's listen.go says. It returns the number allowed.
func (l *Load) AllowRestartReset() int {
	if b, err := os.ReadFile(migrateReq); err == nil && strings.TrimSpace(string(b)) == "1" {
		return 0
	}
	l.allowed.Store(1)
	return 1
}

// StartLoad starts persistent clients and one client of short connections
// on addr. Stop ends them; so does the end of the test.
func StartLoad(t testing.TB, addr string, persistent int) *Load {
	l := &Load{t: t, addr: addr, stop: make(chan struct{})}
	for i := range persistent {
		l.wg.Add(1)
		go l.client(i, false)
	}
	l.wg.Add(1)
	go l.client(persistent, true)
	t.Cleanup(l.Stop)
	return l
}

// Requests returns the number of requests answered so far.
func (l *Load) Requests() int64 { return l.requests.Load() }

// Failures returns the number of requests that failed so far.
func (l *Load) Failures() int64 { return l.failures.Load() }

// Stop ends the clients, waits for them and logs what they did.
func (l *Load) Stop() {
	l.stopped.Do(func() {
		close(l.stop)
		l.wg.Wait()
		l.t.Logf("%d requests over %d connections, %d sent again after a clean close, %d new connections reset (%d allowed), %d failed",
			l.requests.Load(), l.dials.Load(), l.resent.Load(), l.resets.Load(), l.allowed.Load(), l.failures.Load())
	})
}

func (l *Load) fail(format string, args ...any) {
	if l.failures.Add(1) <= 10 {
		l.t.Errorf(format, args...)
	}
}

func (l *Load) client(id int, churn bool) {
	defer l.wg.Done()
	var c net.Conn
	var br *bufio.Reader
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	fresh := false // c has answered no request yet
	for n := 0; ; n++ {
		select {
		case <-l.stop:
			return
		default:
		}
		key := fmt.Sprintf("load:%d:%d", id, n%50)
		val := strconv.Itoa(n)
		req := fmt.Sprintf("set %s 0 0 %d\r\n%s\r\nget %s\r\n", key, len(val), val, key)
		want := fmt.Sprintf("STORED\r\nVALUE %s 0 %d\r\n%s\r\nEND\r\n", key, len(val), val)
		for attempt := 0; ; attempt++ {
			if attempt == 20 {
				l.fail("memcachedtest: client %d: %q unanswered after 20 connections", id, req)
				return
			}
			if c == nil {
				var err error
				if c, err = net.DialTimeout("tcp", l.addr, 2*time.Second); err != nil {
					c = nil
					if !l.reset(err) {
						l.fail("memcachedtest: client %d: %v", id, err)
					}
					time.Sleep(10 * time.Millisecond)
					continue
				}
				l.dials.Add(1)
				br = bufio.NewReader(c)
				fresh = true
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			got, err := roundTrip(c, br, req, len(want))
			if err == nil && got == want {
				fresh = false
				break
			}
			c.Close()
			c = nil
			if got == "" && (errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE)) {
				l.resent.Add(1) // closed cleanly before a reply: not run
				continue
			}
			if got == "" && fresh && l.reset(err) {
				continue // reset before the proxy took it: not run
			}
			l.fail("memcachedtest: client %d: %q: %q, %v", id, req, got, err)
			break
		}
		l.requests.Add(1)
		if churn && c != nil {
			c.Close()
			c = nil
		}
		time.Sleep(200 * time.Microsecond) // steady, not a flood on a shared machine
	}
}

// reset reports whether err is a reset of a new connection that the test
// allows (AllowRestartReset), and counts it.
func (l *Load) reset(err error) bool {
	if !errors.Is(err, syscall.ECONNRESET) {
		return false
	}
	return l.resets.Add(1) <= l.allowed.Load()
}

// roundTrip writes req and reads n bytes of reply.
func roundTrip(c net.Conn, br *bufio.Reader, req string, n int) (string, error) {
	if _, err := io.WriteString(c, req); err != nil {
		return "", err
	}
	buf := make([]byte, n)
	k, err := io.ReadFull(br, buf)
	return string(buf[:k]), err
}
