package proxy

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/redistest"
	"github.com/chash-dev/chash/internal/resp"
)

// TestLargeRepliesPipelined: a client pipelines 50 GETs of a 1 MB value in
// one write, 50 MB of replies, and reads them as fast as it can. With a
// timeout of 400 ms, every reply is the value and the server is not ejected
// (nutcracker 0.5.0 answers them all too): the server is busy sending replies,
// not late, even when the last of them comes more than 400 ms after the
// request (the first round, on buffers still growing, took 460 to 620 ms).
func TestLargeRepliesPipelined(t *testing.T) {
	servers := startRedisServers(t, 1)
	yaml := redisPoolYAML("timeout: 400\nauto_eject_hosts: true\nserver_failure_limit: 2\nserver_retry_timeout: 2000", servers...)
	value := strings.Repeat("v", 1<<20)
	servers[0].Do("SET", "big", value)
	p := startProxy(t, yaml)
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

// TestSlowLargeReply: a server that sends a reply in parts, each within the
// timeout but the whole reply in more than twice it (a multi-get of many
// large values), is answering: the client gets the reply, and the server is
// neither failed nor ejected. A server that then stops sending, part-way
// through a reply, times out.
func TestSlowLargeReply(t *testing.T) {
	value := strings.Repeat("v", 10000)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					reply := fmt.Sprintf("VALUE %s 0 %d\r\n%s\r\nEND\r\n", strings.Fields(line)[1], len(value), value)
					stop := strings.Contains(line, "stall") // then it sends half and stops
					for i := 0; i < len(reply); i += len(reply) / 10 {
						if stop && i >= len(reply)/2 {
							time.Sleep(time.Second)
							return
						}
						c.Write([]byte(reply[i:min(i+len(reply)/10, len(reply))]))
						time.Sleep(50 * time.Millisecond)
					}
				}
			}()
		}
	}()
	p := startProxy(t, poolOf("timeout: 200\nauto_eject_hosts: true\nserver_failure_limit: 1\nserver_retry_timeout: 30000",
		[]string{ln.Addr().String() + ":1"}))
	c := dial(t, p.Addr("alpha").String())
	t0 := time.Now()
	if got, want := c.mustDo("get big\r\n"), fmt.Sprintf("VALUE big 0 %d\r\n%s\r\nEND\r\n", len(value), value); got != want {
		t.Errorf("get of a reply sent in ten parts 50ms apart, timeout 200ms: %.60q; want the value", got)
	}
	t.Logf("the reply took %v", time.Since(t0))
	if p.ejected("alpha", ln.Addr().String()) {
		t.Fatal("the server was ejected")
	}
	if got := c.mustDo("get stall\r\n"); got != "SERVER_ERROR Connection timed out\r\n" {
		t.Errorf("get of a reply that stops half-way: %q; want a timeout", got)
	}
}
