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
	targets := benchTargets(b, servers[0].Addr, yaml)
	// Load the keys through chash, which puts them where nutcracker looks; the
	// direct target holds them all.
	big := strings.Repeat("v", 100_000) // past the sizes a request or reply keeps
	benchMemcache(b, targets, targets[:2],
		benchOp{"set100k", "set bench:big 0 0 100000\r\n" + big + "\r\n", "STORED\r\n"},
		benchOp{"get100k", "get bench:big\r\n", "END\r\n"})
}

// benchOp is a request of a round-trip benchmark and how its reply ends.
type benchOp struct{ name, req, end string }

// benchMemcache stores ten keys of 100 bytes through each of load, then runs
// get, set and get10 (a get of the ten keys), and any extra operations, on
// every target with benchRoundTrips.
func benchMemcache(b *testing.B, targets, load []benchTarget, extra ...benchOp) {
	value := strings.Repeat("v", 100)
	keys10 := testKeys("bench:key:", 10)
	for _, t := range load {
		c := dialBench(b, t.addr)
		for _, k := range keys10 {
			c.roundTrip(b, fmt.Sprintf("set %s 0 0 %d\r\n%s\r\n", k, len(value), value), "STORED\r\n")
		}
	}
	ops := append([]benchOp{
		{"get", "get bench:key:0\r\n", "END\r\n"},
		{"set", "set bench:key:0 0 0 100\r\n" + value + "\r\n", "STORED\r\n"},
		{"get10", "get " + strings.Join(keys10, " ") + "\r\n", "END\r\n"},
	}, extra...)
	names := make([]string, len(ops))
	for i, op := range ops {
		names[i] = op.name
	}
	benchRoundTrips(b, targets, names, func(b *testing.B, c *benchConn, op int) {
		c.roundTrip(b, ops[op].req, ops[op].end)
	})
}

// benchTarget is a program that BenchmarkRoundTrip sends requests to.
type benchTarget struct{ name, addr string }

// benchTargets returns the targets of a round-trip benchmark: the server at
// direct, chash proxy with the configuration yaml, in this process, and
// nutcracker with it when it is installed.
func benchTargets(b *testing.B, direct, yaml string) []benchTarget {
	targets := []benchTarget{
		{"direct", direct},
		{"chash", startProxy(b, yaml).Addr("alpha").String()},
	}
	if _, err := testprog.Find("nutcracker"); err == nil {
		targets = append(targets, benchTarget{"nutcracker", startNutcracker(b, yaml)})
	}
	return targets
}

// benchRoundTrips runs a sub-benchmark target / operation / client
// connections for each target, each of the named operations, and 1 or 8
// client connections; roundTrip does operation op on a connection. Each
// reports cpu-ns/op, the CPU this process used a request, the clients' and
// chash's (not the servers' or nutcracker's): between runs of one target,
// chash's CPU a request.
func benchRoundTrips(b *testing.B, targets []benchTarget, ops []string, roundTrip func(b *testing.B, c *benchConn, op int)) {
	for _, t := range targets {
		for op, name := range ops {
			for _, conns := range []int{1, 8} {
				b.Run(fmt.Sprintf("%s/%s/conns=%d", t.name, name, conns), func(b *testing.B) {
					cpu, ok := cpuTime()
					defer func() {
						if now, _ := cpuTime(); ok && b.N > 0 {
							b.ReportMetric(float64(now-cpu)/float64(b.N), "cpu-ns/op")
						}
					}()
					if conns == 1 {
						c := dialBench(b, t.addr)
						for b.Loop() {
							roundTrip(b, c, op)
						}
						return
					}
					b.SetParallelism((conns + 1) / 2) // GOMAXPROCS is 2 here
					b.RunParallel(func(pb *testing.PB) {
						c := dialBench(b, t.addr)
						for pb.Next() {
							roundTrip(b, c, op)
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
		if err == bufio.ErrBufferFull {
			continue // a value longer than the buffer
		}
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
