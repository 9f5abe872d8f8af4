package proxy

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/redistest"
)

// TestShutdownCutsFrozenServer: with no timeout (twemproxy's default), a
// redis-server frozen with SIGSTOP holds its requests unanswered for ever.
// Shutdown must still return soon after its context ends, cutting what is in
// flight, as the SIGTERM it serves promises (10 s, or at once at a second
// signal). It waited for the clients to be answered before it closed the
// servers that were to answer them, and so never returned: with more
// requests in flight than a server connection takes (maxInflight), a sender
// waiting for room on it; and with redis_auth, with the proxy's first
// connection to the frozen server waiting for its AUTH reply.
func TestShutdownCutsFrozenServer(t *testing.T) {
	for _, tt := range []struct {
		name      string
		args      []string
		extra     string
		connected bool // the proxy is connected before the freeze
		clients   int  // each sends a GET and more GETs
		more      int
		wantSent  uint64
	}{
		// The SET, and the GETs the connection holds.
		{name: "inflight", connected: true, clients: 20, more: 300, wantSent: maxInflight + 1},
		{name: "handshake", args: []string{"--requirepass", "sesame"}, extra: "redis_auth: sesame", clients: 20, more: 300},
		// One GET, its client served within a raw read of its socket,
		// whose Close waited for the read to end (a review: SIGTERM, and
		// a second one, left the proxy running while the server hung).
		{name: "lone", connected: true, clients: 1, wantSent: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := redistest.Start(t, tt.args...)
			p := startProxy(t, redisPoolYAML(tt.extra, s))
			addr := p.Addr("alpha").String()
			if tt.connected {
				if got := redistest.Dial(t, addr).Do("SET", "k", "v"); got != "+OK\r\n" {
					t.Fatalf("SET = %q", got)
				}
			}
			s.Freeze()
			defer s.Thaw()
			// Twenty clients of 64 requests in flight each (a new
			// client's first requests count as values of 1 MiB, a
			// sixteenth of the memory budget): more than the 1024 one
			// server connection holds; or one request.
			for range tt.clients {
				c, err := net.DialTimeout("tcp", addr, time.Second)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				req := redistest.Request("GET", "k")
				if tt.extra != "" {
					req = redistest.Request("AUTH", "sesame") + req
				}
				if _, err := c.Write([]byte(req + strings.Repeat(redistest.Request("GET", "k"), tt.more))); err != nil {
					t.Fatal(err)
				}
			}
			p.mu.Lock()
			srv := p.pools["alpha"].state.Load().list[0]
			p.mu.Unlock()
			if !waitFor(5*time.Second, func() bool { return srv.stats.requests.Load() == tt.wantSent }) {
				t.Fatalf("requests sent to the frozen server: %d; want %d", srv.stats.requests.Load(), tt.wantSent)
			}
			time.Sleep(100 * time.Millisecond) // the clients wait
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- p.Shutdown(ctx) }()
			select {
			case err := <-done:
				if err == nil {
					t.Error("Shutdown = nil with requests unanswered; want the context's error")
				}
				if d := time.Since(start); d > 3*time.Second {
					t.Errorf("Shutdown took %v after its context ended at 200ms", d)
				}
			case <-time.After(5 * time.Second):
				t.Error("Shutdown did not return 5s after its context ended at 200ms")
				s.Thaw()
				<-done
			}
		})
	}
}

// TestRedisSplitFailsWhole: an MGET whose keys are on two servers, one of
// them down, fails whole with the server's error, through chash as through
// nutcracker, rather than answering nil for the keys it could not read,
// which would say that they are not there.
func TestRedisSplitFailsWhole(t *testing.T) {
	servers := startRedisServers(t, 2)
	yaml := redisPoolYAML("auto_eject_hosts: false\ntimeout: 1000", servers...)
	owner := redisOwner(t, yaml)
	var on1, on2 string
	for i := 0; on1 == "" || on2 == ""; i++ {
		k := fmt.Sprint("split:", i)
		if owner(k) == "s1" {
			on1 = k
		} else {
			on2 = k
		}
	}
	addrs := map[string]string{"chash": startProxy(t, yaml).Addr("alpha").String(), "nutcracker": startNutcracker(t, yaml)}
	for who, addr := range addrs {
		if got := redistest.Dial(t, addr).Do("SET", on1, "v1"); got != "+OK\r\n" {
			t.Fatalf("%s: SET %s = %q", who, on1, got)
		}
	}
	servers[1].Stop()
	for who, addr := range addrs {
		got := redistest.Dial(t, addr).Do("MGET", on1, on2)
		if !strings.HasPrefix(got, "-ERR Connection refused") && !strings.HasPrefix(got, "-ERR Connection reset") {
			t.Errorf("%s: MGET of a key of a live server and one of a stopped one = %q; want the stopped server's error", who, got)
		}
	}
}
