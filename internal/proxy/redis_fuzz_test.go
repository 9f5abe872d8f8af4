package proxy

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/redistest"
	"github.com/chash-dev/chash/internal/resp"
)

// FuzzRedisProxy feeds bytes to a Redis pool in front of two real
// redis-servers, on a connection of their own: whatever they are, the proxy
// answers with well-formed RESP replies only, closes the connection once the
// input ends (or at bad input, after Redis's error), within a deadline, and
// goes on serving other clients. The seeds (testdata/fuzz/FuzzRedisProxy)
// hold every kind of request and of bad input; crashers found are kept
// there.
//
//	go test ./internal/proxy -run XXX -fuzz FuzzRedisProxy -fuzztime 30s
func FuzzRedisProxy(f *testing.F) {
	servers := startRedisServers(f, 2)
	p := startProxy(f, redisPoolYAML("timeout: 2000", servers...), func(p *Proxy) {
		p.RedisLimits = resp.Limits{MaxBulk: 1 << 20, MaxSize: 4 << 20}
	})
	addr := p.Addr("alpha").String()
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		go func() {
			c.Write(in)
			c.(*net.TCPConn).CloseWrite()
		}()
		r := resp.NewReader(c, resp.Limits{})
		var rp resp.Reply
		for n := 0; ; n++ {
			err := r.ReadReply(&rp)
			if errors.Is(err, io.EOF) || err != nil && strings.Contains(err.Error(), "connection reset") {
				break
			}
			if err != nil {
				t.Fatalf("%q: reply %d: %v", in, n, err)
			}
		}
		if got := redistest.Dial(t, addr).Do("PING"); got != "+PONG\r\n" {
			t.Fatalf("after %q, another client's PING = %q", in, got)
		}
	})
}
