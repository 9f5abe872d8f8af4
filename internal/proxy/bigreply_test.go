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
