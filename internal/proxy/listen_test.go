package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
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

// TestHitlessRestart runs two proxies of one configuration on one address,
// as a restart does: the new one starts while the old one serves, then the
// old one shuts down, under a steady load of persistent and short
// connections. No connection is refused or reset, but for one that completes
// its handshake as the old listener closes where the kernel does not migrate
// it (AllowRestartReset), and every request is answered, by one process or
// the other.
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
	load := memcachedtest.StartLoad(t, addr, 6)
	load.AllowRestartReset() // the instant of the old listener's close (listen.go)
	time.Sleep(300 * time.Millisecond)
	next := start() // on the same address, while the old one serves
	time.Sleep(300 * time.Millisecond)
	if err := old.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown of the old proxy: %v", err)
	}
	served := load.Requests()
	time.Sleep(500 * time.Millisecond)
	load.Stop()
	if load.Requests() <= served {
		t.Error("no request answered after the old proxy stopped")
	}
	if n := next.pools["alpha"].stats.clientTotal.Load(); n == 0 {
		t.Error("the new proxy took no client")
	}
}

// TestListenNetwork: a listener on an IPv4 address, 0.0.0.0 included, is
// IPv4's alone (Go's "tcp" would make 0.0.0.0 a dual-stack socket that
// takes IPv6 clients too); other addresses keep "tcp".
func TestListenNetwork(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"0.0.0.0:22121", "tcp4"},
		{"127.0.0.1:0", "tcp4"},
		{"10.0.0.7:11211", "tcp4"},
		{"[::]:22121", "tcp"},
		{"[::1]:22121", "tcp"},
		{"[::ffff:10.0.0.7]:22121", "tcp"},
		{":22121", "tcp"},
		{"localhost:22121", "tcp"},
		{"no port", "tcp"},
	} {
		if got := listenNetwork(tc.addr); got != tc.want {
			t.Errorf("listenNetwork(%q) = %q; want %q", tc.addr, got, tc.want)
		}
	}
}
