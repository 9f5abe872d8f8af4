package proxy

import (
	"fmt"
	"io"
	"testing"

	"github.com/chash-dev/chash/internal/memcachedtest"
)

// raceEnabled is set when the race detector, which allocates, is on.
var raceEnabled bool

// TestAllocs counts allocations per request through the proxy, the client's
// and the proxy's sides together (memcached runs in its own process).
func TestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	p := startProxy(t, poolYAML("timeout: 1000\nhash: md5", servers...))
	c := dial(t, p.Addr("alpha").String())
	c.mustDo("set k 0 0 5\r\nhello\r\nset n 0 0 1\r\n0\r\n")
	// Keys on both servers: a get of them is split in two.
	split := "get k"
	owner := ownerFunc(t, poolYAML("hash: md5", servers...))
	for i := 0; split == "get k"; i++ {
		if k := fmt.Sprint("other", i); owner(k) != owner("k") {
			split += " " + k
		}
	}
	for _, tt := range []struct {
		req, reply string
		max        float64
	}{
		{"get k\r\n", "VALUE k 0 5\r\nhello\r\nEND\r\n", 0},
		{"set k 0 0 5\r\nhello\r\n", "STORED\r\n", 0},
		{"mg k v\r\n", "VA 5\r\nhello\r\n", 0},
		{split + "\r\n", "VALUE k 0 5\r\nhello\r\nEND\r\n", 0},
		{"ms k 5 T0\r\nhello\r\n", "HD\r\n", 0},
		{"incr n 0\r\n", "0\r\n", 0},
		{"set q 0 0 1 noreply\r\nq\r\nmn\r\n", "MN\r\n", 0},
	} {
		if n := allocsPerRequest(t, c, tt.req, tt.reply); n > tt.max {
			t.Errorf("%q allocates %v times per request; want at most %v", tt.req, n, tt.max)
		}
	}
}

// allocsPerRequest sends req on c, which must be answered reply, many times,
// and returns the allocations of the test's process per request.
func allocsPerRequest(t *testing.T, c *conn, req, reply string) float64 {
	t.Helper()
	out := []byte(req)
	buf := make([]byte, len(reply))
	do := func() {
		if _, err := c.c.Write(out); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c.br, buf); err != nil || string(buf) != reply {
			t.Fatalf("%q: %q; want %q (%v)", req, buf, reply, err)
		}
	}
	for range 100 {
		do()
	}
	return testing.AllocsPerRun(1000, do)
}
