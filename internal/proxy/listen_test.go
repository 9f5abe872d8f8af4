package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/testprog"
)

// TestListenerCloseTakesQueue checks that closing a listener takes the
// connections waiting in its queue, which Accept then returns, rather than
// have the kernel reset them; and that a listener that never served closes
// them.
func TestListenerCloseTakesQueue(t *testing.T) {
	for _, serving := range []bool{true, false} {
		ln, err := listenTCP(context.Background(), "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		rl := ln.(*reuseListener)
		if serving {
			rl.accepted.Store(true) // as a pool's accept loop, waiting elsewhere
		}
		var clients []net.Conn
		want := map[string]bool{}
		for range 5 {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			clients = append(clients, c)
			want[c.LocalAddr().String()] = true
		}
		time.Sleep(50 * time.Millisecond) // the handshakes end in the queue
		if err := ln.Close(); err != nil {
			t.Fatal(err)
		}
		if !serving {
			for i, c := range clients {
				c.SetReadDeadline(time.Now().Add(2 * time.Second))
				if _, err := c.Read(make([]byte, 1)); err != io.EOF {
					t.Errorf("client %d of a listener closed before it served: %v; want the end of the stream", i, err)
				}
			}
			if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
				t.Errorf("Accept after Close = %v; want net.ErrClosed", err)
			}
			continue
		}
		for range clients {
			c, err := ln.Accept()
			if err != nil {
				t.Fatalf("Accept after Close, with connections queued: %v", err)
			}
			if !want[c.RemoteAddr().String()] {
				t.Errorf("Accept after Close returned %v, not a queued client", c.RemoteAddr())
			}
			delete(want, c.RemoteAddr().String())
			io.WriteString(c, "hello\r\n")
			c.Close()
		}
		if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept once the queue is taken = %v; want net.ErrClosed", err)
		}
		for i, c := range clients {
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			if line, err := bufio.NewReader(c).ReadString('\n'); line != "hello\r\n" {
				t.Errorf("client %d queued at the close read %q, %v; want what the server wrote", i, line, err)
			}
		}
		if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			t.Error("a closed listener accepts connections")
		}
	}
}

// swapLoad is a steady load on a pool address across a restart: clients
// with persistent connections that send a set and a get without pause, and
// one that opens a connection for each request. A client whose connection
// ends cleanly before a reply sends the request again on a new connection
// (the proxy answers every request it reads, so one without a reply was not
// run); a refused or reset connection, an error reply or a wrong one is a
// failure.
type swapLoad struct {
	t        testing.TB
	addr     string
	stop     chan struct{}
	wg       sync.WaitGroup
	requests atomic.Int64
	resent   atomic.Int64
	dials    atomic.Int64
	failures atomic.Int64
}

func startSwapLoad(t testing.TB, addr string, persistent int) *swapLoad {
	l := &swapLoad{t: t, addr: addr, stop: make(chan struct{})}
	for i := range persistent {
		l.wg.Add(1)
		go l.client(i, false)
	}
	l.wg.Add(1)
	go l.client(persistent, true)
	return l
}

func (l *swapLoad) fail(format string, args ...any) {
	if l.failures.Add(1) <= 10 {
		l.t.Errorf(format, args...)
	}
}

func (l *swapLoad) client(id int, churn bool) {
	defer l.wg.Done()
	var c net.Conn
	var br *bufio.Reader
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for n := 0; ; n++ {
		select {
		case <-l.stop:
			return
		default:
		}
		key := fmt.Sprintf("swap:%d:%d", id, n%50)
		val := strconv.Itoa(n)
		req := fmt.Sprintf("set %s 0 0 %d\r\n%s\r\nget %s\r\n", key, len(val), val, key)
		want := fmt.Sprintf("STORED\r\nVALUE %s 0 %d\r\n%s\r\nEND\r\n", key, len(val), val)
		for attempt := 0; ; attempt++ {
			if attempt == 20 {
				l.fail("client %d: %q unanswered after 20 connections", id, req)
				return
			}
			if c == nil {
				var err error
				if c, err = net.DialTimeout("tcp", l.addr, 2*time.Second); err != nil {
					l.fail("client %d: dial: %v", id, err)
					c = nil
					time.Sleep(10 * time.Millisecond)
					continue
				}
				l.dials.Add(1)
				br = bufio.NewReader(c)
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			got, err := roundTrip(c, br, req, len(want))
			if err == nil && got == want {
				break
			}
			c.Close()
			c = nil
			if got == "" && (errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE)) {
				l.resent.Add(1) // closed cleanly before a reply: not run
				continue
			}
			l.fail("client %d: %q: %q, %v", id, req, got, err)
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

// roundTrip writes req and reads n bytes of reply.
func roundTrip(c net.Conn, br *bufio.Reader, req string, n int) (string, error) {
	if _, err := io.WriteString(c, req); err != nil {
		return "", err
	}
	buf := make([]byte, n)
	k, err := io.ReadFull(br, buf)
	return string(buf[:k]), err
}

func (l *swapLoad) finish() {
	close(l.stop)
	l.wg.Wait()
	l.t.Logf("%d requests over %d connections, %d sent again after a clean close, %d failed",
		l.requests.Load(), l.dials.Load(), l.resent.Load(), l.failures.Load())
}

// TestHitlessRestart runs two proxies of one configuration on one address,
// as a restart does: the new one starts while the old one serves, then the
// old one shuts down, under a steady load of persistent and short
// connections. No connection is refused or reset, and every request is
// answered, by one process or the other.
func TestHitlessRestart(t *testing.T) {
	s := memcachedtest.Start(t)
	addr := testprog.FreeAddr(t)
	yaml := poolYAML("timeout: 2000", s)
	start := func() *Proxy {
		f := parseConfig(t, yaml)
		p := &Proxy{Listen: map[string]string{"alpha": addr}, Admin: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)}
		if err := p.Start(f); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	old := start()
	load := startSwapLoad(t, addr, 6)
	time.Sleep(300 * time.Millisecond)
	next := start() // on the same address, while the old one serves
	time.Sleep(300 * time.Millisecond)
	if err := old.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown of the old proxy: %v", err)
	}
	served := load.requests.Load()
	time.Sleep(500 * time.Millisecond)
	load.finish()
	if load.requests.Load() <= served {
		t.Error("no request answered after the old proxy stopped")
	}
	if n := next.pools["alpha"].stats.clientTotal.Load(); n == 0 {
		t.Error("the new proxy took no client")
	}
}
