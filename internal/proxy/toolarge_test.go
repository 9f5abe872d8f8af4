package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/testprog"
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
	send := func(addr, in string) string { return testprog.Exchange(t, addr, in, 10*time.Second) }
	for _, tt := range tests {
		want := "STORED\r\n" + tt.reply + tt.after
		for name, addr := range targets {
			if got := send(addr, "set k 0 0 2\r\nva\r\n"+tt.req+"get k\r\n"); got != want {
				t.Errorf("%s, %s: answers %.200q; want %q", tt.name, name, got, want)
			}
		}
		if tt.meta {
			continue
		}
		if got := send(nc, "set k 0 0 2\r\nva\r\n"+tt.req+"get k\r\n"); got != want {
			t.Errorf("%s, nutcracker: answers %.200q; want %q", tt.name, got, want)
		}
	}

	// A set whose value the input cuts: no answer, and the old value gone.
	for name, addr := range targets {
		send(addr, "set k 0 0 2\r\nva\r\n")
		if got := send(addr, "set k 0 0 2097152\r\n"+big[:1000]); got != "" {
			t.Errorf("%s: a set of a value too large, cut: answers %.100q; want nothing", name, got)
		}
		if got := send(addr, "get k\r\n"); got != "END\r\n" {
			t.Errorf("%s: after a set of a value too large, cut: get answers %q; want END", name, got)
		}
	}

	// With replicas, the key's old value goes from each.
	reps := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	rp := startProxy(t, poolYAML("distribution: chash\nreplicas: 2", reps...))
	if got := send(rp.Addr("alpha").String(), "set k 0 0 2\r\nva\r\n"); got != "STORED\r\n" {
		t.Fatalf("replicas: set: %q", got)
	}
	for _, srv := range reps {
		if got := send(srv.Addr, "get k\r\n"); got != had {
			t.Fatalf("replica %s after a set: get answers %q; want %q", srv.Addr, got, had)
		}
	}
	if got := send(rp.Addr("alpha").String(), "set k 0 0 2097152\r\n"+big+"\r\n"); got != refused {
		t.Errorf("replicas: a set of a value too large: %q; want %q", got, refused)
	}
	for _, srv := range reps {
		if got := send(srv.Addr, "get k\r\n"); got != "END\r\n" {
			t.Errorf("replica %s after a set of a value too large: get answers %q; want END", srv.Addr, got)
		}
	}

	// Each refusal is counted as one, not as the delete sent in its place.
	stats := send(p.Addr("alpha").String(), "stats\r\n")
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
