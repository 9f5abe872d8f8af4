package proxy

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/redistest"
	"github.com/chash-dev/chash/internal/resp"
)

// TestRedisPipeline sends a thousand requests of every kind in one write,
// multibulk and inline, to chash proxy in front of three servers and to a
// redis-server: the replies come in order and are Redis's (but for the
// commands the proxy refuses, which the redis-server is not sent).
func TestRedisPipeline(t *testing.T) {
	servers := startRedisServers(t, 3)
	p := startProxy(t, redisPoolYAML("hash: md5", servers...))
	direct := redistest.Start(t)
	rng := rand.New(rand.NewPCG(1, 2))
	key := func(kind string) string { return fmt.Sprintf("%s:%d", kind, rng.IntN(20)) }
	var toProxy, toRedis strings.Builder
	var refused []int // the requests Redis is not sent
	const n = 1000
	for i := range n {
		var args []string
		switch rng.IntN(14) {
		case 0:
			args = []string{"SET", key("s"), fmt.Sprint("v", i)}
		case 1:
			args = []string{"GET", key("s")}
		case 2:
			args = []string{"MGET", key("s"), key("s"), key("s"), key("s")}
		case 3:
			args = []string{"MSET", key("s"), "a", key("s"), "b", key("s"), "c"}
		case 4:
			args = []string{"DEL", key("s"), key("l"), key("s")}
		case 5:
			args = []string{"EXISTS", key("s"), key("l")}
		case 6:
			args = []string{"INCR", key("n")}
		case 7:
			args = []string{"LPUSH", key("l"), fmt.Sprint(i)}
		case 8:
			args = []string{"LRANGE", key("l"), "0", "3"}
		case 9:
			args = []string{"PING"}
		case 10:
			args = []string{"ECHO", fmt.Sprint("e", i)}
		case 11:
			args = []string{"GET"} // Redis's arity error
		case 12:
			inline := fmt.Sprintf("get %s\r\n", key("s"))
			toProxy.WriteString(inline)
			toRedis.WriteString(inline)
			continue
		case 13:
			toProxy.WriteString(redistest.Request("KEYS", "*"))
			refused = append(refused, i)
			continue
		}
		toProxy.WriteString(redistest.Request(args...))
		toRedis.WriteString(redistest.Request(args...))
	}
	pc := redistest.Dial(t, p.Addr("alpha").String())
	dc := redistest.Dial(t, direct.Addr)
	pc.Send(toProxy.String())
	dc.Send(toRedis.String())
	for i := range n {
		got := pc.Read()
		if len(refused) > 0 && refused[0] == i {
			refused = refused[1:]
			if want := "-ERR command 'keys' is not supported by the proxy\r\n"; got != want {
				t.Fatalf("reply %d through the proxy = %q; want %q", i, got, want)
			}
			continue
		}
		if want := dc.Read(); got != want {
			t.Fatalf("reply %d through the proxy = %q; redis-server answers %q", i, got, want)
		}
	}
}

// TestRedisRefusedMulti: after a MULTI the proxy refuses, the commands up to
// EXEC or DISCARD are not run (they ran one by one, outside the transaction
// the client meant, and DISCARD undid nothing); EXEC answers EXECABORT and
// DISCARD OK, as Redis with a transaction that failed to queue, and the
// connection reads on as before.
func TestRedisRefusedMulti(t *testing.T) {
	servers := startRedisServers(t, 2)
	p := startProxy(t, redisPoolYAML("", servers...))
	pc := redistest.Dial(t, p.Addr("alpha").String())
	const (
		refused = "-ERR command 'multi' is not supported by the proxy\r\n"
		notRun  = "-" + replyNotRun + "\r\n"
	)
	for _, tt := range []struct {
		name string
		reqs [][]string
		want []string
	}{
		{"exec", [][]string{{"SET", "tx", "before"}, {"MULTI"}, {"SET", "tx", "applied"}, {"INCR", "n"}, {"PING"}, {"MULTI"}, {"EXEC"}, {"GET", "tx"}, {"EXISTS", "n"}},
			[]string{"+OK\r\n", refused, notRun, notRun, notRun, notRun, "-" + replyExecAbort + "\r\n", "$6\r\nbefore\r\n", ":0\r\n"}},
		{"discard", [][]string{{"MULTI"}, {"SET", "tx", "applied"}, {"DISCARD", "x"}, {"DISCARD"}, {"GET", "tx"}, {"DISCARD"}, {"EXEC"}},
			[]string{refused, notRun, notRun, "+OK\r\n", "$6\r\nbefore\r\n",
				"-ERR command 'discard' is not supported by the proxy\r\n", "-ERR command 'exec' is not supported by the proxy\r\n"}},
		{"quit", [][]string{{"MULTI"}, {"SET", "tx", "applied"}, {"QUIT"}}, []string{refused, notRun, "+OK\r\n"}},
	} {
		var req strings.Builder
		for _, r := range tt.reqs {
			req.WriteString(redistest.Request(r...))
		}
		pc.Send(req.String()) // in one write, as a client pipelines a transaction
		for i, want := range tt.want {
			if got := pc.Read(); got != want {
				t.Fatalf("%s: reply %d, to %q = %q; want %q", tt.name, i, tt.reqs[i], got, want)
			}
		}
	}
	if got := redistest.Dial(t, p.Addr("alpha").String()).Do("GET", "tx"); got != "$6\r\nbefore\r\n" {
		t.Errorf("after the transactions: GET tx = %q; want the value set before them", got)
	}
}

// TestRedisBadInput sends malformed RESP to chash proxy and to a
// redis-server: the proxy answers as Redis does, byte for byte (the replies
// to the requests before, then Redis's error), and closes the connection;
// meanwhile another client of the proxy is served as usual.
func TestRedisBadInput(t *testing.T) {
	servers := startRedisServers(t, 2)
	p := startProxy(t, redisPoolYAML("", servers...))
	direct := redistest.Start(t)
	addr := p.Addr("alpha").String()
	other := redistest.Dial(t, addr)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // another client, served all along
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprint(i)
			other.Send(redistest.Request("SET", "other", v) + redistest.Request("GET", "other"))
			if got, got2 := other.Read(), other.Read(); got != "+OK\r\n" || got2 != "$"+fmt.Sprint(len(v))+"\r\n"+v+"\r\n" {
				t.Errorf("the other client got %q, %q", got, got2)
				return
			}
		}
	}()
	long := strings.Repeat("x", resp.DefaultMaxInline+10)
	for _, in := range []string{
		"*x\r\n",
		"*1\r\n$x\r\n",
		"*1\r\n$-5\r\n",
		"*1\r\n$600000000\r\n",
		"*1\r\nx3\r\nGET\r\n",
		"*2\r\n$3\r\nGET\r\n:1\r\n",
		"*99999999999\r\n",
		"*3000000000\r\n",
		"PING\r\n*1\r\n$4\r\nPING\r\n*1\r\n$x\r\nPING\r\n",
		"SET a \"b\r\n",
		"SET a 'b'c\r\n",
		// A length line longer than 64 KiB: Redis refuses it as too big if
		// its end has not come by then, as here, but reads it if the end came
		// in the same read; the proxy always refuses it (see package resp).
		"*1\r\n$" + long,
		long,
		"*" + long,
		"PING\x00" + long,
		"*1\r\n$4\r\nPI",      // truncated
		"*2\r\n$3\r\nGET\r\n", // truncated
		"\x80\x01\x02\xff\r\n",
		"\r\n\r\n*0\r\n*-1\r\nPING\r\n",
		"GET \x00\x01\r\nECHO \"\\x41\\n\"\r\n",
	} {
		want := redistest.Exchange(t, direct.Addr, in)
		if got := redistest.Exchange(t, addr, in); got != want {
			t.Errorf("%.60q: the proxy answers %.200q; redis-server %.200q", in, got, want)
		}
	}
	close(stop)
	wg.Wait()
}

// TestRedisLargeValues stores values of up to 32 MiB through the proxy from
// several clients at once, and checks that a client announcing a bulk of
// 400 MB and sending little of it makes the proxy hold about what was sent,
// not what was announced; and that a bulk over the proxy's limit is refused
// as Redis refuses one over its proto-max-bulk-len.
func TestRedisLargeValues(t *testing.T) {
	servers := startRedisServers(t, 2)
	p := startProxy(t, redisPoolYAML("timeout: 10000", servers...), func(p *Proxy) {
		p.RedisLimits = resp.Limits{MaxBulk: 450 << 20}
	})
	addr := p.Addr("alpha").String()
	var wg sync.WaitGroup
	for i, size := range []int{1 << 10, maxWriteBuffer + 1, 4 << 20, 32 << 20} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redistest.Dial(t, addr)
			v := strings.Repeat(string(rune('a'+i)), size)
			k := fmt.Sprint("big", i)
			c.Send(redistest.Request("SET", k, v) + redistest.Request("GET", k) + redistest.Request("STRLEN", k))
			if got := c.Read(); got != "+OK\r\n" {
				t.Errorf("SET of %d bytes = %q", size, got)
			}
			if got, want := c.Read(), string(resp.AppendBulkString(nil, v)); got != want {
				t.Errorf("GET of %d bytes = %d bytes, %.20q...; want %.20q...", size, len(got), got, want)
			}
			if got, want := c.Read(), fmt.Sprintf(":%d\r\n", size); got != want {
				t.Errorf("STRLEN of %d bytes = %q; want %q", size, got, want)
			}
		}()
	}
	wg.Wait()

	before := inUse()
	c := redistest.Dial(t, addr)
	c.Send("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$400000000\r\n" + strings.Repeat("x", 1<<20))
	time.Sleep(200 * time.Millisecond) // the proxy reads what came
	if grew := int64(inUse()) - int64(before); grew > 32<<20 {
		t.Errorf("a client that announced 400 MB and sent 1 MiB took %d MiB", grew>>20)
	}
	c.Close()
	runtime.KeepAlive(c)

	c = redistest.Dial(t, addr)
	c.Send("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$500000000\r\n")
	if got, want := c.Read(), "-"+resp.ReplyInvalidBulk+"\r\n"; got != want || !c.Closed() {
		t.Errorf("a bulk over the limit = %q; want %q and a close", got, want)
	}
}
