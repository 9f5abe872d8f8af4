package proxy

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcache"
	"github.com/chash-dev/chash/internal/memcachedtest"
)

// readOne reads the first request of in with a memcache client codec.
func readOne(t testing.TB, cd *memcacheCodec, in string) (*mcRequest, action) {
	t.Helper()
	req := cd.newRequest().(*mcRequest)
	act, err := cd.newClient(strings.NewReader(in)).read(req)
	if err != nil {
		t.Fatalf("read(%q): %v", in, err)
	}
	return req, act
}

// TestMemcacheCodecRead checks what the codec makes of requests: the action,
// the keys routed, and the bytes a server receives, re-encoded.
func TestMemcacheCodecRead(t *testing.T) {
	cd := newMemcacheCodec(memcache.Limits{})
	longGet := strings.TrimSpace(strings.Repeat("key:with:a:long:name ", 200)) // memcached reads get lines whole
	tests := []struct {
		in      string
		act     action
		keys    []string // as routed
		out     string   // what the server receives, whole
		local   string   // the reply, for local requests
		noreply bool
	}{
		{in: "get  a   b \r\n", keys: []string{"a", "b"}, out: "get a b\r\n"},
		{in: "set k 1 2 3 noreply\r\nabc\r\n", keys: []string{"k"}, out: "set k 1 2 3\r\nabc\r\n", noreply: true},
		{in: "mg k v q\r\n", keys: []string{"k"}, out: "mg k v q\r\nmn\r\n"},
		{in: "mg eHl6 b v\r\n", keys: []string{"xyz"}, out: "mg eHl6 b v\r\n"},
		{in: "version\r\n", out: "version\r\n"},
		{in: "mn\r\n", act: local, local: "MN\r\n"},
		{in: "gat 10\r\n", act: local, local: "END\r\n"},
		{in: "quit\r\n", act: closeAfter},
		{in: "flush_all 10 noreply\r\n", out: "flush_all 10\r\n", noreply: true},
		{in: "verbosity 1\r\n", act: local, local: "OK\r\n"},
		{in: "stats\r\n", act: localAlone, local: "END\r\n"}, // no pool to count; answered before the next is read
		{in: "stats items\r\n", act: localAlone, local: replyServerOwn + "\r\n"},
		{in: "stats noreply\r\n", act: localAlone, local: "ERROR\r\n"},
		{in: "shutdown\r\n", act: local, local: replyServerOwn + "\r\n"},
		{in: "shutdownx\r\n", act: local, local: "ERROR\r\n"},
		{in: "get " + strings.Repeat("k", 251) + "\r\n", act: local, local: "CLIENT_ERROR bad command line format\r\n"},
		// What the parser takes but a server would read otherwise.
		{in: "set k\x00 0 0 1\r\nx\r\n", act: local, local: "CLIENT_ERROR bad command line format\r\n"},
		{in: "set k\x00 0 0 1 noreply\r\nx\r\n", act: local, local: ""},
		{in: "mg k\t v\r\n", act: local, local: "CLIENT_ERROR bad command line format\r\n"},
		{in: "ms " + strings.Repeat("a", 252) + " 1 b\r\nx\r\n", act: local, local: "CLIENT_ERROR bad command line format\r\n"},
		{in: "mg k v O" + strings.Repeat("x", 2000) + "\r\n", act: local, local: "CLIENT_ERROR opaque token too long\r\n"},
		{in: "set a 0 0 -1\r\nx\r\n", act: closeAfter, local: "CLIENT_ERROR bad command line format\r\n"},
		// The proxy closes the connection: it says why, noreply or not.
		{in: "set a 0 0 -5 noreply\r\nx\r\n", act: closeAfter, local: "CLIENT_ERROR bad command line format\r\n"},
		{in: "set e3 0 0 1 noreply\r\nxyz\r\n", act: closeAfter, local: "CLIENT_ERROR bad data chunk\r\n"},
		{in: "get " + longGet + "\r\n", keys: strings.Fields(longGet), out: "get " + longGet + "\r\n"},
	}
	for _, tt := range tests {
		req, act := readOne(t, cd, tt.in)
		if act != tt.act {
			t.Errorf("read(%.80q) action = %d; want %d", tt.in, act, tt.act)
			continue
		}
		if act != forward {
			if got := string(req.appendLocal(nil)); got != tt.local {
				t.Errorf("read(%.80q): local reply %q; want %q", tt.in, got, tt.local)
			}
			// A refusal's log line quotes the request.
			if class, line := req.refusal(); class != "" && len(line) == 0 {
				t.Errorf("read(%.80q): refused as %q with no line to log", tt.in, class)
			}
			continue
		}
		var keys []string
		for i := range req.nkeys() {
			keys = append(keys, string(req.routeKey(i)))
		}
		if strings.Join(keys, ",") != strings.Join(tt.keys, ",") {
			t.Errorf("read(%.80q): keys %q; want %q", tt.in, keys, tt.keys)
		}
		rep := cd.newReply()
		if got := string(req.appendRequest(nil, nil, 0, rep)); got != tt.out {
			t.Errorf("read(%.80q): sends %q; want %q", tt.in, got, tt.out)
		}
		if req.noreply != tt.noreply {
			t.Errorf("read(%.80q): noreply %v; want %v", tt.in, req.noreply, tt.noreply)
		}
	}
}

// serverReply reads in as the reply to what req sent in part.
func serverReply(t testing.TB, cd codec, req request, keyCall []int, part int, in string) *call {
	t.Helper()
	cl := &call{reply: cd.newReply()}
	req.appendRequest(nil, keyCall, part, cl.reply)
	if err := cd.newServer(strings.NewReader(in)).read(cl.reply); err != nil {
		t.Fatalf("reply %q: %v", in, err)
	}
	return cl
}

// TestMemcacheCodecSplit checks a get split over three servers: each receives
// its keys, and the merged reply has the values found in the order of the
// request's keys, repeats included, a failed server's keys read as misses.
func TestMemcacheCodecSplit(t *testing.T) {
	cd := newMemcacheCodec(memcache.Limits{})
	req, _ := readOne(t, cd, "gets a b c a d e\r\n")
	keyCall := []int{0, 1, 0, 0, 2, -1}
	wantOut := []string{"gets a c a\r\n", "gets b\r\n", "gets d\r\n"}
	for part, want := range wantOut {
		if got := string(req.appendRequest(nil, keyCall, part, cd.newReply())); got != want {
			t.Errorf("part %d sends %q; want %q", part, got, want)
		}
	}
	calls := []*call{
		serverReply(t, cd, req, keyCall, 0, "VALUE a 1 1 10\r\nA\r\nVALUE a 1 1 10\r\nA\r\nEND\r\n"),
		serverReply(t, cd, req, keyCall, 1, "VALUE b 2 2 11\r\nBB\r\nEND\r\n"),
		{reply: cd.newReply(), err: errTimeout},
	}
	want := "VALUE a 1 1 10\r\nA\r\nVALUE b 2 2 11\r\nBB\r\nVALUE a 1 1 10\r\nA\r\nEND\r\n"
	if got := string(req.merge(nil, keyCall, calls, nil)); got != want {
		t.Errorf("merge = %q; want %q", got, want)
	}
	// Every server failed: the first failure is the reply.
	calls[0] = serverReply(t, cd, req, keyCall, 0, "SERVER_ERROR out of memory\r\n")
	calls[1].err = errClosed
	if got, want := string(req.merge(nil, keyCall, calls, nil)), "SERVER_ERROR out of memory\r\n"; got != want {
		t.Errorf("merge of failures = %q; want %q", got, want)
	}
}

// TestMemcacheCodecReplies checks the client's reply to a reply, noreply and
// quiet modes included, and that a malformed reply is errBadReply.
func TestMemcacheCodecReplies(t *testing.T) {
	cd := newMemcacheCodec(memcache.Limits{})
	tests := []struct{ req, reply, want string }{
		{"set k 0 0 1\r\nx\r\n", "STORED\r\n", "STORED\r\n"},
		{"set k 0 0 1 noreply\r\nx\r\n", "STORED\r\n", ""},
		// A quiet request is sent followed by mn: the MN comes in place of a
		// reply that q hid, or after the reply.
		{"mg k v q\r\n", "MN\r\n", ""},
		{"mg k v q\r\n", "VA 1\r\nx\r\nMN\r\n", "VA 1\r\nx\r\n"},
		{"md k q\r\n", "MN\r\n", ""},
		{"md k q\r\n", "NF\r\nMN\r\n", "NF\r\n"},
		{"ma k q v\r\n", "MN\r\n", ""},
		{"ma k q v N0\r\n", "VA 1\r\n0\r\nMN\r\n", "VA 1\r\n0\r\n"},
	}
	for _, tt := range tests {
		req, _ := readOne(t, cd, tt.req)
		cl := serverReply(t, cd, req, nil, 0, tt.reply)
		if got := string(req.appendReply(nil, cl.reply)); got != tt.want {
			t.Errorf("reply to %q of %q = %q; want %q", tt.req, tt.reply, got, tt.want)
		}
	}
	req, _ := readOne(t, cd, "get k\r\n")
	rep := cd.newReply()
	req.appendRequest(nil, nil, 0, rep)
	if err := cd.newServer(strings.NewReader("VALUE k 0 x\r\n")).read(rep); !errors.Is(err, errBadReply) {
		t.Errorf("malformed reply: %v; want errBadReply", err)
	}
}

// BenchmarkMemcacheCodec times the memcache codec's work for one request on
// its way through the proxy (see benchmarkCodec).
func BenchmarkMemcacheCodec(b *testing.B) {
	benchmarkCodec(b, newMemcacheCodec(memcache.Limits{}), []codecCase{
		{"get", "get user:1234\r\n", "VALUE user:1234 0 10\r\n0123456789\r\nEND\r\n"},
		{"set", "set user:1234 0 0 100\r\n" + strings.Repeat("v", 100) + "\r\n", "STORED\r\n"},
		{"mg", "mg user:1234 v f t\r\n", "VA 10 f0 t-1\r\n0123456789\r\n"},
	})
}

func TestMemcacheCodecAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	cd := newMemcacheCodec(memcache.Limits{})
	cc := cd.newClient(&repeatReader{s: "get a b c\r\n"})
	sc := cd.newServer(&repeatReader{s: "VALUE a 0 1\r\nx\r\nEND\r\nVALUE b 0 1\r\ny\r\nEND\r\n"})
	req := cd.newRequest()
	calls := []*call{{reply: cd.newReply()}, {reply: cd.newReply()}}
	keyCall := []int{0, 1, 0}
	var out []byte
	n := testing.AllocsPerRun(1000, func() {
		if _, err := cc.read(req); err != nil {
			t.Fatal(err)
		}
		for part, cl := range calls {
			out = req.appendRequest(out[:0], keyCall, part, cl.reply)
			if err := sc.read(cl.reply); err != nil {
				t.Fatal(err)
			}
		}
		out = req.merge(out[:0], keyCall, calls, nil)
	})
	if n > 0 {
		t.Errorf("a split get allocates %v times; want 0", n)
	}
}

// repeatReader reads s over and over.
type repeatReader struct {
	s string
	i int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.s[r.i:])
		n += c
		r.i = (r.i + c) % len(r.s)
	}
	return n, nil
}

var _ io.Reader = (*repeatReader)(nil)

// TestBinaryProtocol sends memcached's binary protocol: memcached answers it
// in kind; the proxy, which speaks text only, says so and closes the
// connection at once rather than wait for a line; a text client beside it is
// served.
func TestBinaryProtocol(t *testing.T) {
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("", s))
	// A binary get of "k": magic, opcode, key length, ..., total body length.
	get := []byte{0x80, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'k'}
	for _, addr := range []string{s.Addr, p.Addr("alpha").String()} {
		c := dial(t, addr)
		c.c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.c.Write(get); err != nil {
			t.Fatal(err)
		}
		if addr == s.Addr {
			if b, err := c.br.ReadByte(); err != nil || b != 0x81 {
				t.Errorf("memcached answers a binary get with %#x, %v; want a binary reply (0x81)", b, err)
			}
			continue
		}
		if got, err := io.ReadAll(c.br); string(got) != memcache.ReplyBinary+"\r\n" || err != nil {
			t.Errorf("the proxy answers a binary get with %q, %v; want %q and the connection closed", got, err, memcache.ReplyBinary)
		}
	}
	if got := dial(t, p.Addr("alpha").String()).mustDo("get k\r\n"); got != "END\r\n" {
		t.Errorf("a text client after a binary one: %q", got)
	}
}

// TestForServer checks the codec's guard on what reaches a server, on
// requests built by hand, which no parser saw: it refuses them by memcache's
// rules.
func TestForServer(t *testing.T) {
	b := func(s ...string) [][]byte {
		var out [][]byte
		for _, x := range s {
			out = append(out, []byte(x))
		}
		return out
	}
	long := strings.Repeat("k", 250)
	tests := []struct {
		req  memcache.Request
		want string
	}{
		{memcache.Request{Command: memcache.CmdSet, Keys: b("k")}, ""},
		{memcache.Request{Command: memcache.CmdSet, Keys: b("k\x00")}, memcache.ReplyBadFormat},
		{memcache.Request{Command: memcache.CmdSet, Keys: b("k\r")}, memcache.ReplyBadFormat},
		{memcache.Request{Command: memcache.CmdSet, Keys: b("k k")}, memcache.ReplyBadFormat},
		{memcache.Request{Command: memcache.CmdSet, Keys: b(long + "k")}, memcache.ReplyBadFormat},
		{memcache.Request{Command: memcache.CmdGet, Keys: b("a", "b\x7f")}, memcache.ReplyBadFormat},
		{memcache.Request{Command: memcache.CmdMetaGet, Keys: b("k"), MetaFlags: b("v", "O\t")}, memcache.ReplyBadFormat},
		{memcache.Request{Command: memcache.CmdMetaGet, Keys: b("k"), MetaFlags: b("v", "O"+strings.Repeat("x", 2000))}, memcache.ReplyOpaqueTooLong},
		{memcache.Request{Command: memcache.CmdMetaGet, Keys: b("k"), MetaFlags: b("v", "P"+strings.Repeat("x", 2040))}, memcache.ReplyLineTooLong},
		{memcache.Request{Command: memcache.CmdMetaGet, Keys: b("YSBi"), MetaFlags: b("b", "k")}, memcache.ReplyUnsafeBinaryKey},
		{memcache.Request{Command: memcache.CmdMetaGet, Keys: b("YSBi"), MetaFlags: b("b", "v")}, ""},
		{memcache.Request{Command: memcache.CmdMetaArithmetic, Keys: b("YSBi"), MetaFlags: b("b", "N0", "k")}, ""},
		{memcache.Request{Command: memcache.CmdMetaGet, Keys: b("k"), MetaFlags: b("v", "v")}, memcache.ReplyDuplicateFlag},
		{memcache.Request{Command: memcache.CmdUnknown, Keys: b("k")}, memcache.ReplyError},
		{memcache.Request{Command: memcache.CmdGat, Keys: b(long, long, long, long, long, long, long, long, long)}, memcache.ReplyLineTooLong},
		{memcache.Request{Command: memcache.CmdGet, Keys: b(long, long, long, long, long, long, long, long, long, long)}, ""},
	}
	for _, tt := range tests {
		if got := forServer(&tt.req); got != tt.want {
			t.Errorf("forServer(%s %.40q %.40q) = %q; want %q", tt.req.Command, tt.req.Keys, tt.req.MetaFlags, got, tt.want)
		}
	}
}
