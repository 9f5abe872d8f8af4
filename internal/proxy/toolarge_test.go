package proxy

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
)

// TestTooLargeSetDropsStale checks the proxy against memcached, directly, and
// nutcracker, each with a memcached of its own: a set or ms whose value is too
// large leaves the key's old value nowhere (memcached drops it, so that a
// failed set leaves nothing stale to read), an add, append or cas leaves it,
// and so does a set cut by the end of the input (memcached drops the item at
// the set's line and answers nothing).
func TestTooLargeSetDropsStale(t *testing.T) {
	big := strings.Repeat("x", 2<<20) // over memcached's and the proxy's 1 MiB
	refused := "SERVER_ERROR object too large for cache\r\n"
	const had = "VALUE k 0 2\r\nva\r\nEND\r\n"
	tests := []struct {
		name, req, reply, after string
		meta                    bool // nutcracker does not read meta commands
	}{
		{"set", "set k 0 0 2097152\r\n" + big + "\r\n", refused, "END\r\n", false},
		{"set noreply", "set k 1 0 2097152 noreply\r\n" + big + "\r\n", "", "END\r\n", false},
		{"add", "add k 0 0 2097152\r\n" + big + "\r\n", refused, had, false},
		{"append", "append k 0 0 2097152\r\n" + big + "\r\n", refused, had, false},
		{"cas", "cas k 0 0 2097152 1\r\n" + big + "\r\n", refused, had, false},
		{"ms", "ms k 2097152 T0\r\n" + big + "\r\n", refused, "END\r\n", true},
		{"ms append", "ms k 2097152 MA\r\n" + big + "\r\n", refused, "END\r\n", true},
		{"ms base64 quiet", "ms aw== 2097152 b q\r\n" + big + "\r\n", refused, "END\r\n", true},
	}
	direct := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("", memcachedtest.Start(t)))
	targets := map[string]string{"memcached": direct.Addr, "chash proxy": p.Addr("alpha").String()}
	nc := startNutcracker(t, poolYAML("", memcachedtest.Start(t)))
	for _, tt := range tests {
		for name, addr := range targets {
			want := "STORED\r\n" + tt.reply + tt.after
			got, err := sendAll(addr, []byte("set k 0 0 2\r\nva\r\n"+tt.req+"get k\r\n"))
			if got != want || err != nil {
				t.Errorf("%s, %s: answers %.200q, %v; want %q", tt.name, name, got, err, want)
			}
		}
		if !tt.meta {
			want := "STORED\r\n" + tt.reply + tt.after
			if got, err := sendAll(nc, []byte("set k 0 0 2\r\nva\r\n"+tt.req+"get k\r\n")); got != want || err != nil {
				t.Errorf("%s, nutcracker: answers %.200q, %v; want %q", tt.name, got, err, want)
			}
		}
	}

	// A set whose value the input cuts: no answer, and the old value gone.
	for name, addr := range targets {
		if _, err := sendAll(addr, []byte("set k 0 0 2\r\nva\r\n")); err != nil {
			t.Fatal(err)
		}
		if got, err := sendAll(addr, []byte("set k 0 0 2097152\r\n"+big[:1000])); got != "" || err != nil {
			t.Errorf("%s: a set of a value too large, cut: answers %.100q, %v; want nothing", name, got, err)
		}
		if got, err := sendAll(addr, []byte("get k\r\n")); got != "END\r\n" || err != nil {
			t.Errorf("%s: after a set of a value too large, cut: get answers %q, %v; want END", name, got, err)
		}
	}

	// With replicas, the key's old value goes from each.
	reps := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	rp := startProxy(t, poolYAML("distribution: chash\nreplicas: 2", reps...))
	if got, err := sendAll(rp.Addr("alpha").String(), []byte("set k 0 0 2\r\nva\r\n")); got != "STORED\r\n" || err != nil {
		t.Fatalf("replicas: set: %q, %v", got, err)
	}
	for _, srv := range reps {
		if got, err := sendAll(srv.Addr, []byte("get k\r\n")); got != had || err != nil {
			t.Fatalf("replica %s after a set: get answers %q, %v; want %q", srv.Addr, got, err, had)
		}
	}
	if got, err := sendAll(rp.Addr("alpha").String(), []byte("set k 0 0 2097152\r\n"+big+"\r\n")); got != refused || err != nil {
		t.Errorf("replicas: a set of a value too large: %q, %v; want %q", got, err, refused)
	}
	for _, srv := range reps {
		if got, err := sendAll(srv.Addr, []byte("get k\r\n")); got != "END\r\n" || err != nil {
			t.Errorf("replica %s after a set of a value too large: get answers %q, %v; want END", srv.Addr, got, err)
		}
	}

	// Each refusal is counted as one, not as the delete sent in its place.
	stats, err := sendAll(p.Addr("alpha").String(), []byte("stats\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := memcachedtest.ParseStats(stats)
	if err != nil {
		t.Fatal(err)
	}
	if got := s["refused_object_too_large_for_cache"]; got != "9" {
		t.Errorf("refused_object_too_large_for_cache %q; want 9 (stats %q)", got, stats)
	}
	if got := s["requests_delete"]; got != "0" && got != "" {
		t.Errorf("requests_delete %q; want none", got)
	}
}

// sendAll sends in on a new connection to addr, closes its writing side, and
// returns all that comes back until the connection closes (10 s at most).
func sendAll(addr string, in []byte) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() {
		c.Write(in) // the other end may close before it reads it all
		c.(*net.TCPConn).CloseWrite()
	}()
	out, err := io.ReadAll(c)
	if errors.Is(err, syscall.ECONNRESET) {
		err = nil
	}
	return string(out), err
}
