package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/bigbuf"
	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/memcache"
	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/redistest"
	"github.com/chash-dev/chash/internal/resp"
)

// lentSizes are the value sizes of the lending tests: either side of the
// size from which values are lent, and large ones.
var lentSizes = []int{bigbuf.Min - 1, bigbuf.Min, bigbuf.Min + 1, 100_000, 1<<19 + 7}

// lentValue returns the value of client c's i-th request, of n bytes, which
// no other request of the test sends.
func lentValue(c, i, n int) []byte {
	rng := rand.New(rand.NewPCG(uint64(c), uint64(i)))
	v := make([]byte, n)
	for j := range v {
		v[j] = 'a' + byte(rng.IntN(26))
	}
	return v
}

// twin returns v reversed, the value of an MSET's second key.
func twin(v []byte) []byte {
	w := slices.Clone(v)
	slices.Reverse(w)
	return w
}

// TestLentValues stores large values through the proxy, which writes them to
// the servers from where it read them (lender), pipelined by eight clients
// at once between small requests, over memcached and Redis pools of two
// servers; then reads every key from the servers themselves: each holds the
// bytes its client sent.
func TestLentValues(t *testing.T) {
	mc1, mc2 := memcachedtest.Start(t), memcachedtest.Start(t)
	rd1, rd2 := redistest.Start(t), redistest.Start(t)
	p := startProxy(t, poolsYAML(map[string]string{
		"alpha": poolYAML("timeout: 5000", mc1, mc2),
		"beta":  redisPoolYAML("timeout: 5000", rd1, rd2),
	}))
	const clients, perClient = 8, 30
	key := func(c, i int) string { return fmt.Sprintf("lent:%d:%d", c, i) }
	for _, tc := range []struct {
		pool    string
		request func(k string, v []byte, i int) []byte
		reply   func(i int) string
	}{
		{"alpha", func(k string, v []byte, i int) []byte {
			if i%3 == 1 {
				return fmt.Appendf(nil, "ms %s %d T0 F%d\r\n%s\r\nmn\r\n", k, len(v), i, v)
			}
			return fmt.Appendf(nil, "set %s %d 0 %d\r\n%s\r\nversion\r\n", k, i, len(v), v)
		}, func(i int) string {
			if i%3 == 1 {
				return "HD\r\nMN\r\n"
			}
			return "STORED\r\nVERSION" // the version's number cut (below)
		}},
		{"beta", func(k string, v []byte, i int) []byte {
			switch i % 3 {
			case 1:
				// The value between arguments: SET key value EX 1000.
				return []byte(redistest.Request("SET", k, string(v), "EX", "1000") + redistest.Request("PING"))
			case 2:
				// Split over the servers more often than not.
				return []byte(redistest.Request("MSET", k, string(v), k+":twin", string(twin(v))) + redistest.Request("PING"))
			}
			return []byte(redistest.Request("SET", k, string(v)) + redistest.Request("PING"))
		}, func(i int) string { return "+OK\r\n+PONG\r\n" }},
	} {
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, err := net.Dial("tcp", p.Addr(tc.pool).String())
				if err != nil {
					errs <- err
					return
				}
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(60 * time.Second))
				var all []byte
				var want strings.Builder
				for i := range perClient {
					all = append(all, tc.request(key(c, i), lentValue(c, i, lentSizes[(c+i)%len(lentSizes)]), i)...)
					want.WriteString(tc.reply(i))
				}
				go conn.Write(all) // the whole pipeline at once, read meanwhile
				br := bufio.NewReader(conn)
				var got strings.Builder
				for got.Len() < want.Len() {
					line, err := br.ReadString('\n')
					if strings.HasPrefix(line, "VERSION") {
						line = "VERSION"
					}
					got.WriteString(line)
					if err != nil {
						errs <- fmt.Errorf("%s client %d: %v after %q", tc.pool, c, err, got.String())
						return
					}
				}
				if got.String() != want.String() {
					errs <- fmt.Errorf("%s client %d: replies %.200q; want %.200q", tc.pool, c, got.String(), want.String())
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
	if t.Failed() {
		return
	}
	// Every value, read from the server that holds it.
	for c := range clients {
		for i := range perClient {
			k, v := key(c, i), lentValue(c, i, lentSizes[(c+i)%len(lentSizes)])
			flags := i
			var found []string
			for _, s := range []*memcachedtest.Server{mc1, mc2} {
				if got := dial(t, s.Addr).mustDo("get " + k + "\r\n"); got != "END\r\n" {
					found = append(found, got)
				}
			}
			want := fmt.Sprintf("VALUE %s %d %d\r\n%s\r\nEND\r\n", k, flags, len(v), v)
			if len(found) != 1 || found[0] != want {
				t.Errorf("memcached: %s (%d bytes) found on %d servers, intact %v", k, len(v), len(found), len(found) == 1 && found[0] == want)
			}
			found = found[:0]
			for _, s := range []*redistest.Server{rd1, rd2} {
				if got := s.Do("GET", k); got != "$-1\r\n" {
					found = append(found, got)
				}
			}
			want = fmt.Sprintf("$%d\r\n%s\r\n", len(v), v)
			if len(found) != 1 || found[0] != want {
				t.Errorf("Redis: %s (%d bytes) found on %d servers, intact %v", k, len(v), len(found), len(found) == 1 && found[0] == want)
			}
			if i%3 == 2 {
				want := fmt.Sprintf("$%d\r\n%s\r\n", len(v), twin(v))
				if a, b := rd1.Do("GET", k+":twin"), rd2.Do("GET", k+":twin"); a != want && b != want {
					t.Errorf("Redis: %s:twin (%d bytes, MSET) not intact on either server", k, len(v))
				}
			}
		}
	}
}

// TestAppendLent checks the requests that lend their values: what goes to
// the server, out with each part in its place, is appendRequest's bytes, and
// the parts are the values read, not copies of them.
func TestAppendLent(t *testing.T) {
	big, big2 := strings.Repeat("v", 100_000), strings.Repeat("w", bigbuf.Min)
	small := strings.Repeat("s", bigbuf.Min-1)
	rc := newRedisCodec(resp.Limits{}, &config.Pool{Redis: true})
	mc := newMemcacheCodec(memcache.Limits{})
	for _, tc := range []struct {
		codec codec
		in    string
		lent  int // the values lent
	}{
		{rc, redistest.Request("SET", "k", big), 1},
		{rc, redistest.Request("SET", "k", big, "EX", "10"), 1},
		{rc, redistest.Request("HSET", "h", "f1", big, "f2", big2, "f3", small), 2},
		{rc, redistest.Request("SET", "k", small), 0},
		{rc, redistest.Request("SET", big, "v"), 0}, // a key is never lent
		{rc, redistest.Request("GET", "k"), 0},
		{mc, "set k 1 0 100000\r\n" + big + "\r\n", 1},
		{mc, "cas k 1 0 100000 77 noreply\r\n" + big + "\r\n", 1},
		{mc, "ms k 100000 T0 q\r\n" + big + "\r\n", 1},
		{mc, fmt.Sprintf("append k 0 0 %d\r\n%s\r\n", len(small), small), 0},
		{mc, "get k\r\n", 0},
	} {
		read := func() (request, [][]byte) {
			cc := tc.codec.newClient(strings.NewReader(tc.in))
			req := tc.codec.newRequest()
			if act, err := cc.read(req); err != nil || act != forward {
				t.Fatalf("%.40q: read: %v, %v", tc.in, act, err)
			}
			var vals [][]byte
			switch r := req.(type) {
			case *redisRequest:
				vals = r.q.Args
			case *mcRequest:
				vals = [][]byte{r.Value}
			}
			return req, slices.Clone(vals)
		}
		req, _ := read()
		want := req.appendRequest(nil, nil, 0, tc.codec.newReply())
		req, vals := read()
		size := req.size()
		out, parts := req.(lender).appendLent([]byte("x"), nil, 0, tc.codec.newReply(), nil)
		if len(parts) != tc.lent {
			t.Errorf("%.40q: %d values lent; want %d", tc.in, len(parts), tc.lent)
		}
		if req.size() != size {
			t.Errorf("%.40q: size %d after lending, %d before", tc.in, req.size(), size)
		}
		var got []byte
		at := 1
		for _, p := range parts {
			got = append(append(got, out[at:p.at]...), p.b...)
			at = p.at
			if !slices.ContainsFunc(vals, func(v []byte) bool { return len(v) > 0 && &v[0] == &p.b[0] }) {
				t.Errorf("%.40q: a part of %d bytes is not a value read but a copy", tc.in, len(p.b))
			}
		}
		got = append(got, out[at:]...)
		if !bytes.Equal(got, want) {
			t.Errorf("%.40q: lent %.80q; want %.80q", tc.in, got, want)
		}
	}
}

// TestAppendLentSplit: an MSET split over three servers lends each large
// value to the part of its key only; each part goes out as appendRequest
// writes it.
func TestAppendLentSplit(t *testing.T) {
	rc := newRedisCodec(resp.Limits{}, &config.Pool{Redis: true})
	v := func(c byte, n int) string { return strings.Repeat(string(c), n) }
	in := redistest.Request("MSET", "a", v('a', 100_000), "b", "small", "c", v('c', bigbuf.Min), "a", v('d', 20_000), "e", v('e', 1))
	keyCall := []int{0, 1, 2, 0, 1}
	read := func() request {
		req := rc.newRequest()
		if act, err := rc.newClient(strings.NewReader(in)).read(req); err != nil || act != forward {
			t.Fatalf("read: %v, %v", act, err)
		}
		return req
	}
	want := read()
	req := read()
	for part, lent := range []int{2, 0, 1} {
		w := want.appendRequest(nil, keyCall, part, rc.newReply())
		out, parts := req.(lender).appendLent(nil, keyCall, part, rc.newReply(), nil)
		if len(parts) != lent {
			t.Errorf("part %d: %d values lent; want %d", part, len(parts), lent)
		}
		var got []byte
		at := 0
		for _, p := range parts {
			got = append(append(got, out[at:p.at]...), p.b...)
			at = p.at
		}
		if got = append(got, out[at:]...); !bytes.Equal(got, w) {
			t.Errorf("part %d: %.80q; want %.80q", part, got, w)
		}
	}
}

// TestLentValuesServerDies: a server killed while large values are written
// to it (lent, from where they were read) fails the requests in flight with
// an error each, in order; the proxy neither hangs nor stores what it did not
// read, and once the server is back, large values go to it whole again.
func TestLentValuesServerDies(t *testing.T) {
	s := redistest.Start(t)
	p := startProxy(t, redisPoolYAML("timeout: 5000\nauto_eject_hosts: false", s))
	addr := p.Addr("alpha").String()
	const n = 40
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	var all []byte
	for i := range n {
		all = append(all, redistest.Request("SET", fmt.Sprint("dies:", i), string(lentValue(1, i, 300_000)))...)
	}
	go conn.Write(all)
	br := bufio.NewReader(conn)
	// The first reply, then the server dies with the rest in flight.
	first, err := br.ReadString('\n')
	if err != nil || first != "+OK\r\n" {
		t.Fatalf("first SET: %q, %v", first, err)
	}
	s.Signal(os.Kill)
	ok, failed := 1, 0
	for range n - 1 {
		line, err := br.ReadString('\n')
		switch {
		case err != nil:
			t.Fatalf("after %d OK and %d errors: %v", ok, failed, err)
		case line == "+OK\r\n" && failed == 0:
			ok++
		case strings.HasPrefix(line, "-"):
			failed++
		default:
			t.Fatalf("reply %q after %d OK and %d errors", line, ok, failed)
		}
	}
	if failed == 0 {
		t.Errorf("all %d SETs stored though the server was killed", n)
	}
	s.Restart()
	c := redistest.Dial(t, addr)
	for i := range 5 {
		v := string(lentValue(2, i, 100_000+i))
		var got string
		for try := 0; try < 50; try++ { // until the proxy reconnects
			if got = c.Do("SET", "back", v); got == "+OK\r\n" {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if got != "+OK\r\n" {
			t.Fatalf("SET after the restart: %q", got)
		}
		if got, want := s.Do("GET", "back"), fmt.Sprintf("$%d\r\n%s\r\n", len(v), v); got != want {
			t.Fatalf("the server holds %d bytes after the restart, not the value sent", len(got))
		}
	}
}
