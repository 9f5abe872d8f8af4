package proxy

import (
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
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("timeout: 1000", s))
	c := dial(t, p.Addr("alpha").String())
	c.mustDo("set k 0 0 5\r\nhello\r\n")
	for _, tt := range []struct {
		req, reply string
		max        float64
	}{
		{"get k\r\n", "VALUE k 0 5\r\nhello\r\nEND\r\n", 0},
		{"set k 0 0 5\r\nhello\r\n", "STORED\r\n", 0},
		{"mg k v\r\n", "VA 5\r\nhello\r\n", 0},
	} {
		req := []byte(tt.req)
		buf := make([]byte, len(tt.reply))
		do := func() {
			if _, err := c.c.Write(req); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(c.br, buf); err != nil || string(buf) != tt.reply {
				t.Fatalf("%q: %q, %v", tt.req, buf, err)
			}
		}
		for range 100 {
			do()
		}
		if n := testing.AllocsPerRun(1000, do); n > tt.max {
			t.Errorf("%q allocates %v times per request; want at most %v", tt.req, n, tt.max)
		}
	}
}
