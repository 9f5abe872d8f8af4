package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/testprog"
)

// BenchmarkRoundTrip times request round trips from clients on loopback: straight
// to memcached, through chash proxy (in this process), and through nutcracker when
// it is installed, in front of the same two memcached servers. Sub-benchmarks:
// target / operation / client connections.
//
//	go test ./internal/proxy -run XXX -bench RoundTrip -count 5
func BenchmarkRoundTrip(b *testing.B) {
	servers := []*memcachedtest.Server{memcachedtest.Start(b), memcachedtest.Start(b)}
	yaml := poolYAML("timeout: 1000", servers...)
	targets := []struct{ name, addr string }{
		{"direct", servers[0].Addr},
		{"chash", startProxy(b, yaml).Addr("alpha").String()},
	}
	if _, err := testprog.Find("nutcracker"); err == nil {
		targets = append(targets, struct{ name, addr string }{"nutcracker", startNutcracker(b, yaml)})
	}
	value := strings.Repeat("v", 100)
	var keys10 []string
	for i := range 10 {
		keys10 = append(keys10, fmt.Sprintf("bench:key:%d", i))
	}
	// Load the keys through chash, which puts them where nutcracker looks; the
	// direct target holds them all.
	for _, t := range targets[:2] {
		c := dialBench(b, t.addr)
		for _, k := range keys10 {
			c.roundTrip(b, fmt.Sprintf("set %s 0 0 %d\r\n%s\r\n", k, len(value), value), "STORED\r\n")
		}
	}
	ops := []struct{ name, req, end string }{
		{"get", "get bench:key:0\r\n", "END\r\n"},
		{"set", "set bench:key:0 0 0 100\r\n" + value + "\r\n", "STORED\r\n"},
		{"get10", "get " + strings.Join(keys10, " ") + "\r\n", "END\r\n"},
	}
	for _, t := range targets {
		for _, op := range ops {
			for _, conns := range []int{1, 8} {
				b.Run(fmt.Sprintf("%s/%s/conns=%d", t.name, op.name, conns), func(b *testing.B) {
					if conns == 1 {
						c := dialBench(b, t.addr)
						for b.Loop() {
							c.roundTrip(b, op.req, op.end)
						}
						return
					}
					b.SetParallelism((conns + 1) / 2) // GOMAXPROCS is 2 here
					b.RunParallel(func(pb *testing.PB) {
						c := dialBench(b, t.addr)
						for pb.Next() {
							c.roundTrip(b, op.req, op.end)
						}
					})
				})
			}
		}
	}
}

type benchConn struct {
	c  net.Conn
	br *bufio.Reader
}

func dialBench(b *testing.B, addr string) *benchConn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return &benchConn{c: c, br: bufio.NewReader(c)}
}

// roundTrip sends req and reads lines up to the line end.
func (c *benchConn) roundTrip(b *testing.B, req, end string) {
	if _, err := io.WriteString(c.c, req); err != nil {
		b.Error(err)
		return
	}
	for {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			b.Error(err)
			return
		}
		if string(line) == end {
			return
		}
		if strings.HasPrefix(string(line), "SERVER_ERROR") || strings.HasPrefix(string(line), "ERROR") {
			b.Errorf("%q: %q", req, line)
			return
		}
	}
}
