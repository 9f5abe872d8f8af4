package proxy

import (
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/redistest"
)

// TestHTTPRequestCloses: a web page can make a browser POST to any port,
// its body then read as commands (cross-protocol scripting). A connection
// whose request is named POST or Host: is closed unanswered, as Redis
// closes it, after the replies of the requests before it; in a memcached
// pool too, where memcached itself would answer ERROR to the request line
// and headers and run the body's set. The body's command is not run, and
// the refusal is counted as "http request".
func TestHTTPRequestCloses(t *testing.T) {
	mc := memcachedtest.Start(t)
	rs := startRedisServers(t, 1)
	mp := startProxy(t, poolYAML("", mc))
	rp := startProxy(t, redisPoolYAML("", rs...))
	mcGet := func(addr string) string { return dial(t, addr).mustDo("get pwned\r\n") }
	redisGet := func(addr string) string { return redistest.Dial(t, addr).Do("GET", "pwned") }
	for _, tt := range []struct {
		name, first, body, before string
		p                         *Proxy
		check                     func(addr string) string // the body's key, read
		want                      string
	}{
		{"memcached", "POST / HTTP/1.1", "set pwned 0 0 1\r\nx\r\n", "version\r\n", mp, mcGet, "END\r\n"},
		{"memcached, Host: first", "Host: 127.0.0.1", "set pwned 0 0 1\r\nx\r\n", "version\r\n", mp, mcGet, "END\r\n"},
		{"redis", "POST / HTTP/1.1", "SET pwned x\r\n", "PING\r\n", rp, redisGet, "$-1\r\n"},
		{"redis, lower case", "post / HTTP/1.1", "SET pwned x\r\n", "PING\r\n", rp, redisGet, "$-1\r\n"},
		{"redis, host: first", "host: 127.0.0.1", "SET pwned x\r\n", "PING\r\n", rp, redisGet, "$-1\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := tt.p.Addr("alpha").String()
			c, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			req := tt.before + tt.first + "\r\nHost: " + addr + "\r\nContent-Type: text/plain\r\n\r\n" + tt.body
			if _, err := io.WriteString(c, req); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			got, err := io.ReadAll(c)
			if err != nil {
				t.Fatalf("the connection was not closed: %v (read %q)", err, got)
			}
			// Only the reply to the request before.
			if s := string(got); strings.Count(s, "\r\n") != 1 || strings.Contains(s, "ERR") {
				t.Errorf("replies %q; want the reply of %q alone, then the close", s, tt.before)
			}
			if got := tt.check(addr); got != tt.want {
				t.Errorf("get pwned = %q; want %q (the body was not run)", got, tt.want)
			}
			classes, totals := tt.p.pools["alpha"].refused.counts()
			if i := slices.Index(classes, refusedHTTP); i < 0 || totals[i] == 0 {
				t.Errorf("refusals %v %v; want %q counted", classes, totals, refusedHTTP)
			}
		})
	}
}
