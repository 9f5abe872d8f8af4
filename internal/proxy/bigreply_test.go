package proxy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/redistest"
	"github.com/chash-dev/chash/internal/resp"
)

// TestLargeRepliesPipelined: a client pipelines 50 GETs of a 1 MB value in
// one write, 50 MB of replies, and reads them as fast as it can. Every reply
// is the value and the server is not ejected (nutcracker 0.5.0 answers them
// all too, at timeout 400 ms). The timeout is 3 s: redis-server answers a
// pipeline once it has run all of it, here 50 MB of replies to copy, which
// under -race on a loaded machine (the CI's) took longer than 400 ms before
// the first byte, and, with two more busy processes on its two cores, left
// more than a second between two replies. TestPipelinedRepliesLate and
// TestSlowLargeReply time the replies with a server of their own.
func TestLargeRepliesPipelined(t *testing.T) {
	servers := startRedisServers(t, 1)
	yaml := redisPoolYAML("timeout: 3000\nauto_eject_hosts: true\nserver_failure_limit: 2\nserver_retry_timeout: 2000", servers...)
	value := strings.Repeat("v", 1<<20)
	servers[0].Do("SET", "big", value)
	p := startProxy(t, yaml)
	// The server connection first: a first request also waits for it to be
	// made, which a loaded machine (the CI's, under -race) may take most of
	// the timeout for.
	warm := redistest.Dial(t, p.Addr("alpha").String())
	warm.Do("GET", "none")
	for round := range 3 {
		c, err := net.Dial("tcp", p.Addr("alpha").String())
		if err != nil {
			t.Fatal(err)
		}
		const n = 50
		t0 := time.Now()
		c.Write([]byte(strings.Repeat(redistest.Request("GET", "big"), n)))
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		rd := resp.NewReaderSize(bufio.NewReaderSize(c, 1<<20), resp.Limits{}, 64<<10)
		var rp resp.Reply
		bad := 0
		for i := range n {
			if err := rd.ReadReply(&rp); err != nil {
				t.Fatalf("round %d, reply %d: %v", round, i, err)
			}
			if string(rp.Bytes()) != fmt.Sprintf("$%d\r\n%s\r\n", len(value), value) {
				bad++
				if bad == 1 {
					t.Errorf("round %d, reply %d of %d: %.60q; want the 1 MB value", round, i, n, rp.Bytes())
				}
			}
		}
		t.Logf("round %d: %v", round, time.Since(t0))
		c.Close()
		if bad > 0 {
			t.Errorf("round %d: %d of %d replies not the value", round, bad, n)
		}
	}
	if e := p.pools["alpha"].stats.ejects.Load(); e != 0 {
		t.Errorf("%d ejections of a server that answered every request", e)
	}
}

// trickleServer answers each get line with the value of reply, in parts
// pause apart, and then waits pause before it reads the next line; a key
// with "stall" in it gets half its reply, and nothing more.
func trickleServer(t *testing.T, reply func(key string) string, parts int, pause time.Duration) string {
	return lineServer(t, func(c net.Conn, line string) bool {
		key := strings.Fields(line)[1]
		r := reply(key)
		part := (len(r) + parts - 1) / parts
		for i := 0; i < len(r); i += part {
			if strings.Contains(key, "stall") && i >= len(r)/2 {
				time.Sleep(time.Second)
				return false
			}
			c.Write([]byte(r[i:min(i+part, len(r))]))
			time.Sleep(pause)
		}
		return true
	})
}

// TestSlowLargeReply: a server that sends a reply in parts, each within the
// timeout but the whole reply in more than twice it (a multi-get of many
// large values), is answering: the client gets the reply, and the server is
// neither failed nor ejected. A server that then stops sending, part-way
// through a reply, times out.
func TestSlowLargeReply(t *testing.T) {
	value := strings.Repeat("v", 10000)
	reply := func(key string) string {
		return fmt.Sprintf("VALUE %s 0 %d\r\n%s\r\nEND\r\n", key, len(value), value)
	}
	addr := trickleServer(t, reply, 10, 50*time.Millisecond)
	p := startProxy(t, poolOf("timeout: 200\nauto_eject_hosts: true\nserver_failure_limit: 1\nserver_retry_timeout: 30000",
		[]string{addr + ":1"}))
	c := dial(t, p.Addr("alpha").String())
	t0 := time.Now()
	if got := c.mustDo("get big\r\n"); got != reply("big") {
		t.Errorf("get of a reply sent in ten parts 50ms apart, timeout 200ms: %.60q; want the value", got)
	}
	t.Logf("the reply took %v", time.Since(t0))
	if p.ejected("alpha", addr) {
		t.Fatal("the server was ejected")
	}
	if got := c.mustDo("get stall\r\n"); got != "SERVER_ERROR Connection timed out\r\n" {
		t.Errorf("get of a reply that stops half-way: %q; want a timeout", got)
	}
}

// TestPipelinedRepliesLate: five gets pipelined in one write to a server that
// answers each in 100 ms, the last 500 ms after the request, at a timeout of
// 200 ms: each request behind another has its time from the reply before it
// (session.pop), so all are answered and the server is not ejected.
func TestPipelinedRepliesLate(t *testing.T) {
	reply := func(key string) string { return fmt.Sprintf("VALUE %s 0 1\r\nv\r\nEND\r\n", key) }
	addr := trickleServer(t, reply, 1, 100*time.Millisecond)
	p := startProxy(t, poolOf("timeout: 200\nauto_eject_hosts: true\nserver_failure_limit: 1\nserver_retry_timeout: 30000",
		[]string{addr + ":1"}))
	c := dial(t, p.Addr("alpha").String())
	var req, want strings.Builder
	for i := range 5 {
		fmt.Fprintf(&req, "get k%d\r\n", i)
		want.WriteString(reply(fmt.Sprint("k", i)))
	}
	if got := c.mustDo(req.String()); got != want.String() {
		t.Errorf("five pipelined gets, answered 100ms apart, timeout 200ms: %q; want %q", got, want.String())
	}
	if p.ejected("alpha", addr) {
		t.Error("the server was ejected")
	}
}

// TestLargeRepliesInterleaved pipelines small and large replies (a large
// one is written as it came, not through the write buffer that holds the
// small ones before it): the client reads every reply, in order.
func TestLargeRepliesInterleaved(t *testing.T) {
	servers := startRedisServers(t, 1)
	p := startProxy(t, redisPoolYAML("timeout: 3000", servers...))
	sizes := []int{1, flushAt - 10, flushAt, 3 * flushAt, 100_000, 5}
	var req strings.Builder
	var want []string
	for i, n := range sizes {
		v := strings.Repeat(string(rune('a'+i)), n)
		servers[0].Do("SET", fmt.Sprint("k", i), v)
		want = append(want, fmt.Sprintf("$%d\r\n%s\r\n", n, v))
	}
	for round := range 3 {
		for i := range sizes {
			req.WriteString(redistest.Request("GET", fmt.Sprint("k", (i+round)%len(sizes))))
			req.WriteString(redistest.Request("PING"))
		}
	}
	c, err := net.Dial("tcp", p.Addr("alpha").String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte(req.String()))
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	rd := resp.NewReader(bufio.NewReader(c), resp.Limits{})
	var rp resp.Reply
	for round := range 3 {
		for i := range sizes {
			if err := rd.ReadReply(&rp); err != nil || string(rp.Bytes()) != want[(i+round)%len(sizes)] {
				t.Fatalf("round %d, GET k%d: %.40q, %v; want the value of %d bytes", round, (i+round)%len(sizes), rp.Bytes(), err, sizes[(i+round)%len(sizes)])
			}
			if err := rd.ReadReply(&rp); err != nil || string(rp.Bytes()) != "+PONG\r\n" {
				t.Fatalf("round %d, PING after GET k%d: %.40q, %v", round, (i+round)%len(sizes), rp.Bytes(), err)
			}
		}
	}
}

// TestLargeValuesInterleaved pipelines gets, gets and mg of small and large
// values (a large one is written as it came, between the bytes before and
// after it, not copied into the write buffer) to a memcached pool: read as
// fast as the client can, then through a 128 KiB receive buffer with a pause
// after each megabyte, so that the proxy's writes are cut short and finished
// later, and over TLS. The client reads what memcached sends for the same
// requests, byte for byte.
func TestLargeValuesInterleaved(t *testing.T) {
	mc := memcachedtest.Start(t, "-I", "2m")
	p := startProxy(t, poolYAML("timeout: 3000", mc))
	pt := startProxy(t, poolYAML("timeout: 3000", mc), func(p *Proxy) {
		p.TLS = &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}}
	})
	sizes := []int{1, flushAt - 10, flushAt, 3 * flushAt, 100_000, 1 << 20, 5}
	setup := dial(t, mc.Addr)
	for i, n := range sizes {
		v := strings.Repeat(string(rune('a'+i)), n)
		if got := setup.mustDo(fmt.Sprintf("set k%d %d 0 %d\r\n%s\r\n", i, i, n, v)); got != "STORED\r\n" {
			t.Fatalf("set k%d: %q", i, got)
		}
	}
	var req strings.Builder
	for round := range 2 {
		for i := range sizes {
			k := (i + round) % len(sizes)
			fmt.Fprintf(&req, "get k%d\r\ngets k%d\r\nmg k%d v f s\r\nget k%d missing\r\nversion\r\n", k, k, k, k)
		}
	}
	req.WriteString("mn\r\n")
	transcript := func(addr string, rcvbuf int, secure bool) string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if rcvbuf > 0 {
			c.(*net.TCPConn).SetReadBuffer(rcvbuf)
		}
		if secure {
			c = tls.Client(c, &tls.Config{InsecureSkipVerify: true})
		}
		go c.Write([]byte(req.String()))
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		var got []byte
		buf := make([]byte, 4096)
		for !bytes.HasSuffix(got, []byte("MN\r\n")) {
			n, err := c.Read(buf)
			got = append(got, buf[:n]...)
			if rcvbuf > 0 && len(got)>>20 != (len(got)-n)>>20 {
				time.Sleep(20 * time.Millisecond) // a pause a megabyte: the proxy's socket fills
			}
			if err != nil {
				t.Fatalf("%s, receive buffer %d, TLS %v: %v after %d bytes", addr, rcvbuf, secure, err, len(got))
			}
		}
		return string(got)
	}
	want := transcript(mc.Addr, 0, false)
	for _, tc := range []struct {
		p      *Proxy
		rcvbuf int
	}{{p, 0}, {p, 128 << 10}, {pt, 0}} {
		secure := tc.p == pt
		if got := transcript(tc.p.Addr("alpha").String(), tc.rcvbuf, secure); got != want {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Errorf("receive buffer %d, TLS %v: %d bytes, memcached's %d, first difference at %d: %.60q; want %.60q",
				tc.rcvbuf, secure, len(got), len(want), i, got[i:], want[i:])
		}
	}
}
