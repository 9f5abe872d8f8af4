package proxy

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/redistest"
	"github.com/chash-dev/chash/internal/testprog"
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
	targets := []struct{ name, addr string }{
		{"direct", servers[0].Addr},
		{"chash", startProxy(b, yaml).Addr("alpha").String()},
	}
	if _, err := testprog.Find("nutcracker"); err == nil {
		targets = append(targets, struct{ name, addr string }{"nutcracker", startNutcracker(b, yaml)})
	}
	value := strings.Repeat("v", 100)
	mset := []string{"MSET"}
	for i := range 10 {
		mset = append(mset, fmt.Sprintf("bench:key:%d", i), value)
	}
	ops := []struct{ name, req string }{
		{"get", redistest.Request("GET", "bench:key:0")},
		{"set", redistest.Request("SET", "bench:key:0", value)},
		{"mset10", redistest.Request(mset...)},
	}
	for _, t := range targets {
		for _, op := range ops {
			for _, conns := range []int{1, 8} {
				b.Run(fmt.Sprintf("%s/%s/conns=%d", t.name, op.name, conns), func(b *testing.B) {
					if conns == 1 {
						c := dialBench(b, t.addr)
						for b.Loop() {
							c.roundTripRedis(b, op.req)
						}
						return
					}
					b.SetParallelism((conns + 1) / 2) // GOMAXPROCS is 2 here
					b.RunParallel(func(pb *testing.PB) {
						c := dialBench(b, t.addr)
						for pb.Next() {
							c.roundTripRedis(b, op.req)
						}
					})
				})
			}
		}
	}
}

// roundTripRedis sends req and reads a one-line reply, or a bulk.
func (c *benchConn) roundTripRedis(b *testing.B, req string) {
	if _, err := io.WriteString(c.c, req); err != nil {
		b.Fatal(err)
	}
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		b.Fatal(err)
	}
	if line[0] == '$' && line[1] != '-' {
		var n int
		fmt.Sscanf(string(line[1:]), "%d", &n)
		if _, err := c.br.Discard(n + 2); err != nil {
			b.Fatal(err)
		}
	} else if line[0] != '+' {
		b.Fatalf("%q: %q", req, line)
	}
}
