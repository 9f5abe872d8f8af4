package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/memcache"
	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/redistest"
	"github.com/chash-dev/chash/internal/resp"
)

// wholeCodecs are the codecs whose whole FuzzWhole checks: memcached's, and
// Redis's with and without redis_auth (a client yet to authenticate has
// tighter limits).
func wholeCodecs() map[string]codec {
	return map[string]codec{
		"memcache":   newMemcacheCodec(memcache.Limits{}),
		"redis":      newRedisCodec(resp.Limits{}, &config.Pool{Redis: true}),
		"redis-auth": newRedisCodec(resp.Limits{}, &config.Pool{Redis: true, RedisAuth: "pw"}),
	}
}

// readWhole reads data as a client's idle read served by rawIO.serveClient:
// the connection may not be read past data. It returns the requests read, and
// the error that stopped it, if any.
func readWhole(cd codec, data []byte) (int, error) {
	src := &clientSource{head: data, noRead: true}
	cc := cd.newClient(src)
	n := 0
	for len(src.head) > 0 || cc.buffered() > 0 {
		act, err := cc.read(cd.newRequest())
		if err != nil {
			return n, err
		}
		n++
		if act == closeAfter {
			break
		}
	}
	return n, nil
}

// FuzzWhole checks clientCodec.whole against the codec's read: bytes it finds
// whole are read without reading past them. (A client's requests found whole
// are served without a read of its socket, which would find nothing.)
//
//	go test ./internal/proxy -run XXX -fuzz FuzzWhole
func FuzzWhole(f *testing.F) {
	for _, s := range directScript {
		f.Add([]byte(s))
	}
	for _, s := range smuggleVectors() {
		f.Add([]byte(s))
	}
	for _, c := range redisScript {
		f.Add([]byte(c.req + "\r\n"))
		args := strings.Fields(c.req)
		b := resp.AppendArray(nil, len(args))
		for _, a := range args {
			b = resp.AppendBulkString(b, a)
		}
		f.Add(b)
	}
	f.Add([]byte(authThenBig))
	codecs := wholeCodecs()
	f.Fuzz(func(t *testing.T, data []byte) {
		for name, cd := range codecs {
			cc := cd.newClient(&clientSource{noRead: true})
			if !cc.whole(data) {
				continue
			}
			if n, err := readWhole(cd, data); err != nil {
				t.Fatalf("%s: whole(%q) = true, but request %d read past it: %v", name, data, n+1, err)
			}
		}
	})
}

// authThenBig is AUTH and the start of a request longer than a client that
// has not authenticated may send.
const authThenBig = "*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$20000\r\n"

// TestWhole checks that whole finds what clients send whole, so that they are
// served without a read that finds nothing, and refuses what needs more bytes.
func TestWhole(t *testing.T) {
	codecs := wholeCodecs()
	tests := []struct {
		codec string
		in    string
		want  bool
	}{
		{"memcache", "get a\r\n", true},
		{"memcache", "get a b c d e f g h i j\r\n", true},
		{"memcache", "set a 0 0 5\r\nhello\r\n", true},
		{"memcache", "set a 0 0 5\r\nhello\r\nget a\r\ndelete a\r\n", true},
		{"memcache", "set a 0 0 5 noreply\r\nhello\r\nmn\r\n", true},
		{"memcache", "ms a 2 T0\r\nhi\r\nmg a v\r\n", true},
		{"memcache", "get a\n", true},
		{"memcache", "bogus\r\n", true},              // answered ERROR
		{"memcache", "set a 0 0 x\r\n", true},        // refused, and the connection closes
		{"memcache", "get a\r\nquit\r\nget b", true}, // nothing is read after quit
		{"memcache", "", true},
		{"memcache", "get a", false},
		{"memcache", "get a\r\nget b", false},
		{"memcache", "set a 0 0 5\r\n", false},
		{"memcache", "set a 0 0 5\r\nhel", false},
		{"memcache", "set a 0 0 5\r\nhello", false},
		{"memcache", "set a 0 0 5\r\nhello\r", false},
		{"memcache", "set a 0 0 2000000\r\n", false}, // refused, but its value is to skip
		{"memcache", "set a 0 0 2000000\r\nxx", false},
		{"redis", "*2\r\n$3\r\nGET\r\n$1\r\na\r\n", true},
		{"redis", "*3\r\n$3\r\nSET\r\n$1\r\na\r\n$5\r\nhello\r\n*1\r\n$4\r\nPING\r\n", true},
		{"redis", "PING\r\nGET a\r\n", true},
		{"redis", "*1\r\n$x\r\n", true}, // a protocol error: the connection closes
		{"redis", "*2\r\n$3\r\nGET\r\n", false},
		{"redis", "*2\r\n$3\r\nGET\r\n$1\r\na", false},
		{"redis", "*2\r\n$3\r\nGET\r\n$1\r\na\r", false},
		{"redis", "PING", false},
		// A client that has to authenticate is read as usual: before AUTH,
		// a bulk of 20,000 bytes is refused, after it, it is waited for.
		{"redis-auth", authThenBig, false},
	}
	for _, tt := range tests {
		cd := codecs[tt.codec]
		cc := cd.newClient(&clientSource{noRead: true})
		if got := cc.whole([]byte(tt.in)); got != tt.want {
			t.Errorf("%s: whole(%q) = %v; want %v", tt.codec, tt.in, got, tt.want)
		}
		_, err := readWhole(cd, []byte(tt.in))
		if readPast := err != nil; readPast == tt.want {
			t.Errorf("%s: reading %q: %v; whole says %v", tt.codec, tt.in, err, tt.want)
		}
	}
}

// BenchmarkWhole measures what a client's idle read costs to check: a get, a
// set and a RESP GET.
func BenchmarkWhole(b *testing.B) {
	codecs := wholeCodecs()
	for _, bb := range []struct{ name, codec, in string }{
		{"get", "memcache", "get key:1234\r\n"},
		{"get10", "memcache", "get k:1 k:2 k:3 k:4 k:5 k:6 k:7 k:8 k:9 k:10\r\n"},
		{"set", "memcache", "set key:1234 0 0 100\r\n" + strings.Repeat("v", 100) + "\r\n"},
		{"redis-get", "redis", "*2\r\n$3\r\nGET\r\n$8\r\nkey:1234\r\n"},
	} {
		b.Run(bb.name, func(b *testing.B) {
			cc := codecs[bb.codec].newClient(&clientSource{noRead: true})
			in := []byte(bb.in)
			b.ReportAllocs()
			for b.Loop() {
				if !cc.whole(in) {
					b.Fatalf("whole(%q) = false", in)
				}
			}
		})
	}
}

// TestHalfClose sends requests and shuts down its side of the connection at
// once, as `printf 'get k\r\n' | nc -N` does: the proxy answers, then closes.
// The end of the stream arrives with the request, before the proxy reads it,
// so a proxy that waited for more after a read that returned less than its
// buffer, without asking the kernel whether the stream had ended, would keep
// the connection open.
func TestHalfClose(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
		yaml           func(t *testing.T) string // t the subtest's: a missing server skips it
	}{
		{"memcache", "set k 0 0 1\r\nv\r\nget k\r\n", "STORED\r\nVALUE k 0 1\r\nv\r\nEND\r\n",
			func(t *testing.T) string { return poolYAML("", memcachedtest.Start(t)) }},
		{"redis", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\nGET k\r\n", "+OK\r\n$1\r\nv\r\n",
			func(t *testing.T) string { return redisPoolYAML("", redistest.Start(t)) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := startProxy(t, tt.yaml(t)).Addr("alpha").String()
			for i := range 50 {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				c.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := c.Write([]byte(tt.in)); err != nil {
					t.Fatal(err)
				}
				c.(*net.TCPConn).CloseWrite()
				out, err := io.ReadAll(c)
				c.Close()
				if err != nil || string(out) != tt.want {
					t.Fatalf("connection %d: read %q, %v; want %q and the end of the stream", i, out, err, tt.want)
				}
			}
		})
	}
}

// queuedReplies readies a reply for each of reqs, requests as clients send
// them, read with cd and sent unsplit.
func queuedReplies(t testing.TB, cd codec, reqs []string) []reply {
	t.Helper()
	var reps []reply
	for _, in := range reqs {
		req := cd.newRequest()
		if act, err := cd.newClient(strings.NewReader(in)).read(req); err != nil || act != forward {
			t.Fatalf("read(%q): action %d, %v; want one to forward", in, act, err)
		}
		rep := cd.newReply()
		req.appendRequest(nil, nil, 0, rep)
		reps = append(reps, rep)
	}
	return reps
}

// serverWhole returns what a server codec's whole says of data, buffered as
// the replies to reps, and reads them as serverConn.serveReplies does once
// whole says so: without reading the connection past data. It returns the
// error of the read that read past data, if any.
func serverWhole(cd codec, reps []reply, data []byte) (bool, error) {
	src := &clientSource{head: data, noRead: true}
	sc := cd.newServer(src)
	if err := sc.wait(); err != nil || sc.buffered() == 0 {
		return true, nil // nothing buffered: the reader does not ask
	}
	queued := func(i int) reply {
		if i < len(reps) {
			return reps[i]
		}
		return nil
	}
	if !sc.whole(queued) {
		return false, nil
	}
	for i := 0; sc.buffered() > 0 && i < len(reps); i++ {
		if err := sc.read(reps[i]); err != nil {
			if errors.Is(err, errReadPast) {
				return true, fmt.Errorf("reply %d: %w", i+1, err)
			}
			break // out of protocol: the connection is reset
		}
	}
	return true, nil
}

// TestServerWhole checks serverCodec.whole, which lets a server connection's
// reader wait for the next replies without a read that finds nothing: it
// finds whole the replies that are, and not those that need more bytes.
func TestServerWhole(t *testing.T) {
	codecs := wholeCodecs()
	tests := []struct {
		codec string
		reqs  []string
		in    string
		want  bool
	}{
		{"memcache", []string{"get a\r\n"}, "VALUE a 0 1\r\nx\r\nEND\r\n", true},
		{"memcache", []string{"get a\r\n"}, "END\r\n", true},
		{"memcache", []string{"get a b\r\n"}, "VALUE a 0 1\r\nx\r\nVALUE b 0 2\r\nyy\r\nEND\r\n", true},
		{"memcache", []string{"get a\r\n", "get b\r\n"}, "END\r\nEND\r\n", true},
		{"memcache", []string{"get a\r\n", "get b\r\n"}, "END\r\n", true}, // the second is still to come
		{"memcache", []string{"set a 0 0 1\r\nx\r\n"}, "STORED\r\n", true},
		{"memcache", []string{"incr a 1\r\n"}, "2\r\n", true},
		{"memcache", []string{"mg a v q\r\n"}, "MN\r\n", true}, // the EN hidden
		{"memcache", []string{"mg a v q\r\n"}, "VA 1\r\nx\r\nMN\r\n", true},
		{"memcache", []string{"get a\r\n"}, "bogus\r\n", true},      // out of protocol: read fails on it
		{"memcache", []string{"get a\r\n"}, "END\r\nEND\r\n", true}, // a reply with no call: read fails on it
		{"memcache", []string{"get a\r\n"}, "VALUE a 0 1\r\nx\r\n", false},
		{"memcache", []string{"get a\r\n"}, "VALUE a 0 5\r\nxy", false},
		{"memcache", []string{"get a\r\n"}, "EN", false},
		{"memcache", []string{"get a\r\n", "get b\r\n"}, "END\r\nEN", false},
		{"memcache", []string{"mg a v q\r\n"}, "VA 1\r\nx\r\n", false}, // the MN is to come
		{"redis", []string{"GET a\r\n"}, "$1\r\nx\r\n", true},
		{"redis", []string{"GET a\r\n"}, "$-1\r\n", true},
		{"redis", []string{"SET a b\r\n", "INCR c\r\n"}, "+OK\r\n:1\r\n", true},
		{"redis", []string{"HGETALL h\r\n"}, "*2\r\n$1\r\nf\r\n$1\r\nv\r\n", true},
		{"redis", []string{"GET a\r\n"}, "!bad\r\n", true},
		{"redis", []string{"GET a\r\n"}, "$1\r\nx", false},
		{"redis", []string{"HGETALL h\r\n"}, "*2\r\n$1\r\nf\r\n", false},
		{"redis", []string{"SET a b\r\n", "INCR c\r\n"}, "+OK\r\n:1", false},
	}
	for _, tt := range tests {
		cd := codecs[tt.codec]
		got, err := serverWhole(cd, queuedReplies(t, cd, tt.reqs), []byte(tt.in))
		if got != tt.want {
			t.Errorf("%s: replies %q to %q: whole = %v; want %v", tt.codec, tt.in, tt.reqs, got, tt.want)
		}
		if err != nil {
			t.Errorf("%s: replies %q to %q found whole, but %v", tt.codec, tt.in, tt.reqs, err)
		}
	}
}

// FuzzServerWhole checks serverCodec.whole against the codec's read: replies
// it finds whole are read without reading past them.
//
//	go test ./internal/proxy -run XXX -fuzz FuzzServerWhole
func FuzzServerWhole(f *testing.F) {
	f.Add([]byte("VALUE a 0 1\r\nx\r\nVALUE b 0 1\r\ny\r\nEND\r\nSTORED\r\n"))
	f.Add([]byte("VA 1 f0\r\nx\r\nMN\r\nHD\r\n5\r\n"))
	f.Add([]byte("$1\r\nx\r\n*2\r\n$1\r\nf\r\n:3\r\n+OK\r\n"))
	f.Add([]byte("-ERR no\r\n$-1\r\n*-1\r\n"))
	codecs := wholeCodecs()
	queued := map[string][]string{
		"memcache": {"get a b\r\n", "mg a v f q\r\n", "set a 0 0 1\r\nx\r\n", "incr a 5\r\n", "gets a\r\n"},
		"redis":    {"GET a\r\n", "HGETALL h\r\n", "INCR c\r\n", "SET a b\r\n", "MGET a b\r\n"},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"memcache", "redis"} {
			cd := codecs[name]
			if _, err := serverWhole(cd, queuedReplies(t, cd, queued[name]), data); err != nil {
				t.Fatalf("%s: whole(%q) = true, but %v", name, data, err)
			}
		}
	})
}

// BenchmarkServerWhole times serverCodec.whole on one reply buffered, the
// check a server connection's reader makes of each burst before it completes
// calls within its raw read (about a tenth of the read that finds nothing it
// saves).
func BenchmarkServerWhole(b *testing.B) {
	codecs := wholeCodecs()
	for _, bc := range []struct{ codec, req, reply string }{
		{"memcache", "get key:000123\r\n", "VALUE key:000123 0 100\r\n" + strings.Repeat("v", 100) + "\r\nEND\r\n"},
		{"redis", "GET key:000123\r\n", "$100\r\n" + strings.Repeat("v", 100) + "\r\n"},
	} {
		b.Run(bc.codec, func(b *testing.B) {
			cd := codecs[bc.codec]
			reps := queuedReplies(b, cd, []string{bc.req})
			sc := cd.newServer(&clientSource{head: []byte(bc.reply), noRead: true})
			if err := sc.wait(); err != nil {
				b.Fatal(err)
			}
			queued := func(i int) reply {
				if i < len(reps) {
					return reps[i]
				}
				return nil
			}
			b.ReportAllocs()
			for b.Loop() {
				if !sc.whole(queued) {
					b.Fatalf("%q to %q: not whole", bc.reply, bc.req)
				}
			}
		})
	}
}
