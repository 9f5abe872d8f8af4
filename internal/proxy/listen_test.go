package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
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

// TestListenersApart: two listeners of one proxy never share an address,
// which SO_REUSEPORT would allow, the kernel spreading clients over both:
// two pools on one address written two ways, a pool on a wildcard and one on
// an address under it, a pool on the admin listener's address are refused,
// at Start and at Reload (the old configuration serving on); a pool renamed
// on its address, or two pools trading nothing, are not.
func TestListenersApart(t *testing.T) {
	s := memcachedtest.Start(t)
	_, port, _ := net.SplitHostPort(testprog.FreeAddr(t))
	_, port2, _ := net.SplitHostPort(testprog.FreeAddr(t))
	pool := func(name, listen string) string {
		return fmt.Sprintf("%s:\n  listen: %s\n  servers:\n   - %s:1\n", name, listen, s.Addr)
	}
	start := func(yaml, admin string) (*Proxy, error) {
		p := &Proxy{Admin: admin, Logger: slog.New(slog.DiscardHandler)}
		err := p.Start(parseConfig(t, yaml))
		if err == nil {
			t.Cleanup(func() { p.Close() })
		}
		return p, err
	}
	// Every bind of a TCP listener on port, to check that a refused
	// listener binds nothing (a bound one could take a live pool's client,
	// whose connection its close would reset).
	var binds []string
	control := listenConfig.Control
	listenConfig.Control = func(network, address string, c syscall.RawConn) error {
		if _, p, _ := net.SplitHostPort(address); p == port {
			binds = append(binds, address)
		}
		return control(network, address, c)
	}
	t.Cleanup(func() { listenConfig.Control = control })
	// Two pools of one file are refused by Validate (chash proxy -t too),
	// naming the line of each.
	for _, tc := range []struct{ yaml, admin, want string }{
		{pool("alpha", "127.0.0.1:"+port) + pool("beta", "localhost:"+port), "", `:6: pool "beta": listen 127.0.0.1:` + port + `: pool "alpha" (line 2) listens there too`},
		{pool("alpha", "0.0.0.0:"+port) + pool("beta", "127.0.0.1:"+port), "", `:6: pool "beta": listen 127.0.0.1:` + port + `: pool "alpha" (line 2) listens there too`},
		{pool("alpha", `"[::]:`+port+`"`) + pool("beta", "localhost:"+port), "", `:6: pool "beta": listen 127.0.0.1:` + port + `: pool "alpha" (line 2) listens there too`},
		{pool("alpha", `":`+port+`"`) + pool("beta", `"[::1]:`+port+`"`), "", `:6: pool "beta": listen [::1]:` + port + `: pool "alpha" (line 2) listens there too`},
		{pool("alpha", "127.0.0.1:"+port), "127.0.0.1:" + port, `proxy: admin listener: listen 127.0.0.1:` + port + `: pool "alpha" listens there too`},
		{pool("alpha", "127.0.0.1:"+port), "localhost:" + port, `proxy: admin listener: listen 127.0.0.1:` + port + `: pool "alpha" listens there too`},
	} {
		if _, err := start(tc.yaml, tc.admin); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start of\n%s(admin %q): %v; want an error with %q", tc.yaml, tc.admin, err, tc.want)
		}
		if tc.admin == "" {
			if err := Validate(parseConfig(t, tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate of\n%s: %v; want an error with %q", tc.yaml, err, tc.want)
			}
			if len(binds) > 0 {
				t.Errorf("Start of\n%s bound %q", tc.yaml, binds)
			}
		} else if len(binds) != 1 { // the pool's
			t.Errorf("Start of\n%s(admin %q) bound %q; want the pool's address only", tc.yaml, tc.admin, binds)
		}
		binds = nil
		// Nothing was left listening.
		if ln, err := net.Listen("tcp4", "127.0.0.1:"+port); err != nil {
			t.Errorf("after a refused Start: %v", err)
		} else {
			ln.Close()
		}
	}

	// In a reload, a pool on the admin listener's address is refused before
	// it binds, a pool moving onto it too.
	_, port3, _ := net.SplitHostPort(testprog.FreeAddr(t))
	p, err := start(pool("alpha", "127.0.0.1:"+port), "127.0.0.1:"+port3)
	if err != nil {
		t.Fatal(err)
	}
	alphaPort := port
	port = port3 // the binds recorded
	binds = nil
	for _, yaml := range []string{
		pool("alpha", "127.0.0.1:"+alphaPort) + pool("beta", "localhost:"+port3),
		pool("alpha", "0.0.0.0:"+port3),
	} {
		err = p.Reload(parseConfig(t, yaml))
		if want := `: listen `; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), ":"+port3+": the admin listener listens there too") {
			t.Errorf("Reload of\n%s: %v; want an error naming the admin listener", yaml, err)
		}
		if len(binds) > 0 {
			t.Errorf("the refused reload of\n%s bound %q", yaml, binds)
		}
	}
	port = alphaPort
	if got := dial(t, "127.0.0.1:"+port).mustDo("set k 0 0 1\r\nv\r\n"); got != "STORED\r\n" {
		t.Errorf("after the refused reloads, alpha answers %q", got)
	}
	// A new pool on the address of one that restarts there (new TLS files):
	// refused.
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeCert(t, certFile, keyFile)
	tlsAlpha := strings.Replace(pool("alpha", "127.0.0.1:"+port), "  servers:", "  tls_cert_file: "+certFile+"\n  tls_key_file: "+keyFile+"\n  servers:", 1)
	err = p.Reload(parseConfig(t, tlsAlpha+pool("beta", "localhost:"+port)))
	if want := `pool "beta": listen 127.0.0.1:` + port + `: pool "alpha" (line 2) listens there too`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Reload adding a pool on the address alpha restarts on: %v; want an error with %q", err, want)
	}
	// Renamed on its address, and a second pool on another port: accepted.
	if err := p.Reload(parseConfig(t, pool("gamma", "127.0.0.1:"+port)+pool("delta", "127.0.0.1:"+port2))); err != nil {
		t.Errorf("Reload renaming alpha on its address: %v", err)
	}
	if p.Addr("gamma") == nil || p.Addr("alpha") != nil {
		t.Errorf("after the rename: gamma at %v, alpha at %v; want gamma only", p.Addr("gamma"), p.Addr("alpha"))
	}
}

// TestOverlaps: which listener addresses share clients.
func TestOverlaps(t *testing.T) {
	tcp := func(s string) net.Addr {
		a, err := net.ResolveTCPAddr("tcp", s)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"127.0.0.1:1", "127.0.0.1:1", true},
		{"127.0.0.1:1", "127.0.0.1:2", false},
		{"127.0.0.1:1", "127.0.0.2:1", false},
		{"0.0.0.0:1", "127.0.0.1:1", true},
		{"0.0.0.0:1", "[::1]:1", false}, // 0.0.0.0 listens on IPv4 alone
		{"[::]:1", "127.0.0.1:1", true},
		{"[::]:1", "[::1]:1", true},
		{"[::1]:1", "127.0.0.1:1", false},
		{"[::ffff:127.0.0.1]:1", "127.0.0.1:1", true},
	} {
		if got := overlaps(tcp(tc.a), tcp(tc.b)); got != tc.want {
			t.Errorf("overlaps(%s, %s) = %v; want %v", tc.a, tc.b, got, tc.want)
		}
		if got := overlaps(tcp(tc.b), tcp(tc.a)); got != tc.want {
			t.Errorf("overlaps(%s, %s) = %v; want %v", tc.b, tc.a, got, tc.want)
		}
	}
}

// TestSharedAddressLogged starts a pool on an address another listener
// serves already, as a second proxy started by mistake, or the new process
// of a restart, does: it opens, as SO_REUSEPORT lets it, and says that the
// two share the new connections; a pool on an address of its own says
// nothing.
func TestSharedAddressLogged(t *testing.T) {
	s := memcachedtest.Start(t)
	other, err := listenTCP(context.Background(), "127.0.0.1:0") // the other process's
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	free := testprog.FreeAddr(t)
	const msg = "another process listens on this address too: new connections go to either until one stops; in a restart, stop the old process now"
	for _, tc := range []struct {
		addr string
		want int
	}{{free, 0}, {other.Addr().String(), 1}} {
		var logs testprog.Buffer
		p := &Proxy{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
		if err := p.Start(parseConfig(t, strings.Replace(poolYAML("", s), "127.0.0.1:22121", tc.addr, 1))); err != nil {
			t.Fatal(err)
		}
		p.Close()
		got := jsonLogs(t, &logs, msg)
		if len(got) != tc.want {
			t.Errorf("a pool on %s (another listener there: %v) logged %d lines %q; want %d", tc.addr, tc.want == 1, len(got), msg, tc.want)
		}
		for _, rec := range got {
			if rec["listener"] != `pool "alpha"` || rec["addr"] != tc.addr {
				t.Errorf("line %v; want listener pool \"alpha\", addr %s", rec, tc.addr)
			}
		}
	}
}

// TestRestartInPlaceRefusesNone: a reload that restarts a pool where it
// listens (here TLS turned on and off) opens its new listener beside the
// old one before that closes, so that clients connecting meanwhile are not
// refused (a review counted 74 refusals a restart in a tight loop), and it
// logs no other process on the address: the two listeners are its own.
func TestRestartInPlaceRefusesNone(t *testing.T) {
	s := memcachedtest.Start(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeCert(t, certFile, keyFile)
	var logs testprog.Buffer
	addr := testprog.FreeAddr(t)
	p := startProxy(t, poolYAML("", s), func(p *Proxy) {
		p.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		p.Listen = map[string]string{"alpha": addr} // the same at each restart
	})
	stop := make(chan struct{})
	var dials, refused, resets atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", addr, time.Second)
				dials.Add(1)
				if err != nil {
					// A reset is a handshake that ended in the instant the
					// old listener closed, as in a restart of the process
					// (tcp_migrate_req; see chash help proxy); a refusal
					// is a moment with no listener.
					if errors.Is(err, syscall.ECONNREFUSED) {
						refused.Add(1)
					} else {
						resets.Add(1)
					}
					time.Sleep(time.Millisecond)
					continue
				}
				c.Close()
				time.Sleep(time.Millisecond) // not to overflow the accept queue
			}
		}()
	}
	for i := range 12 {
		extra := ""
		if i%2 == 0 {
			extra = "tls_cert_file: " + certFile + "\ntls_key_file: " + keyFile
		}
		if err := p.Reload(parseConfig(t, poolYAML(extra, s))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d connections, %d refused, %d reset, over 12 restarts", dials.Load(), refused.Load(), resets.Load())
	if refused.Load() > 0 {
		t.Errorf("%d of %d connections refused while the pool restarted where it listens; want none", refused.Load(), dials.Load())
	}
	if got := jsonLogs(t, &logs, "another process listens on this address too: new connections go to either until one stops; in a restart, stop the old process now"); len(got) > 0 {
		t.Errorf("a restart in place logged another process on its address: %v", got)
	}
}
