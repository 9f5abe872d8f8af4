package proxy

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/redistest"
)

// TestRedisAllocs counts allocations per request through the proxy, the
// client's and the proxy's sides together (redis-server runs in its own
// process).
func TestRedisAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	servers := startRedisServers(t, 2)
	yaml := redisPoolYAML("timeout: 1000\nhash: md5", servers...)
	p := startProxy(t, yaml)
	c, err := net.Dial("tcp", p.Addr("alpha").String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Keys on both servers: an MGET of them is split in two.
	owner := redisOwner(t, yaml)
	other := "k"
	for i := 0; owner(other) == owner("k"); i++ {
		other = fmt.Sprint("other", i)
	}
	for _, tt := range []struct{ req, reply string }{
		{"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n", "+OK\r\n"},
		{"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "$5\r\nhello\r\n"},
		{redistest.Request("MGET", "k", other), "*2\r\n$5\r\nhello\r\n$-1\r\n"},
		{redistest.Request("MSET", "k", "hello", other+"x", "1"), "+OK\r\n"},
		{"*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n", ""}, // the count varies
		{"*3\r\n$5\r\nLPUSH\r\n$1\r\nl\r\n$1\r\nx\r\n", ""},
		{"*1\r\n$4\r\nPING\r\n", "+PONG\r\n"},
		{"GET k\r\n", "$5\r\nhello\r\n"},
	} {
		req := []byte(tt.req)
		buf := make([]byte, 64)
		do := func() {
			if _, err := c.Write(req); err != nil {
				t.Fatal(err)
			}
			n, err := c.Read(buf)
			if err != nil || tt.reply != "" && string(buf[:n]) != tt.reply || n == 0 {
				t.Fatalf("%q: %q, %v", tt.req, buf[:n], err)
			}
		}
		for range 100 {
			do()
		}
		if n := testing.AllocsPerRun(1000, do); n > 0 {
			t.Errorf("%q allocates %v times per request; want 0", tt.req, n)
		}
	}
}

// BenchmarkRedisRoundTrip times request round trips from clients on
// loopback: straight to redis-server, through chash proxy (in this process),
// and through nutcracker when it is installed, in front of the same two
// redis-servers. Sub-benchmarks: target / operation / client connections.
//
//	go test ./internal/proxy -run XXX -bench RedisRoundTrip -count 5
func BenchmarkRedisRoundTrip(b *testing.B) {
	servers := startRedisServers(b, 2)
	yaml := redisPoolYAML("timeout: 1000", servers...)
	targets := benchTargets(b, servers[0].Addr, yaml)
	value := strings.Repeat("v", 100)
	mset := []string{"MSET"}
	for i := range 10 {
		mset = append(mset, fmt.Sprintf("bench:key:%d", i), value)
	}
	ops := []struct{ name, req string }{
		{"get", redistest.Request("GET", "bench:key:0")},
		{"set", redistest.Request("SET", "bench:key:0", value)},
		{"mset10", redistest.Request(mset...)},
		// Values of 100 KB, past the sizes a request or reply keeps.
		{"set100k", redistest.Request("SET", "bench:big", strings.Repeat("v", 100_000))},
		{"get100k", redistest.Request("GET", "bench:big")},
	}
	names := make([]string, len(ops))
	for i, op := range ops {
		names[i] = op.name
	}
	benchRoundTrips(b, targets, names, func(b *testing.B, c *benchConn, op int) {
		c.roundTripRedis(b, ops[op].req)
	})
}

// roundTripRedis sends req and reads its reply: a line, or a bulk; an error
// reply fails the benchmark.
func (c *benchConn) roundTripRedis(b *testing.B, req string) {
	if _, err := io.WriteString(c.c, req); err != nil {
		b.Fatal(err)
	}
	line, err := c.br.ReadSlice('\n')
	switch {
	case err != nil:
		b.Fatal(err)
	case line[0] == '-':
		b.Fatalf("%q: %q", req, line)
	case line[0] == '$' && line[1] != '-':
		n, err := strconv.Atoi(string(line[1 : len(line)-2]))
		if err != nil {
			b.Fatalf("%q: %q", req, line)
		}
		if _, err := c.br.Discard(n + 2); err != nil {
			b.Fatal(err)
		}
	}
}
