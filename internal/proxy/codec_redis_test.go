package proxy

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/redistest"
	"github.com/chash-dev/chash/internal/resp"
)

// testRedisCodec returns the codec of a Redis pool with the password auth
// (none if empty).
func testRedisCodec(auth string) *redisCodec {
	return newRedisCodec(resp.Limits{}, &config.Pool{Redis: true, RedisAuth: auth})
}

// readAll reads every request of in with one client codec, as one connection
// sends them, and returns each request's action and, for local requests, the
// reply.
func readAll(t testing.TB, cd *redisCodec, in string) (acts []action, replies []string, reqs []*redisRequest) {
	t.Helper()
	cc := cd.newClient(strings.NewReader(in))
	for {
		req := cd.newRequest().(*redisRequest)
		act, err := cc.read(req)
		if err != nil {
			return acts, replies, reqs
		}
		acts, reqs = append(acts, act), append(reqs, req)
		replies = append(replies, string(req.appendLocal(nil)))
		if act == closeAfter {
			return acts, replies, reqs
		}
	}
}

// TestRedisCodecRead checks what the codec makes of requests: the action,
// the keys routed, and the bytes a server receives, always a multibulk
// written from the parsed arguments.
func TestRedisCodecRead(t *testing.T) {
	cd := testRedisCodec("")
	tests := []struct {
		in    string
		act   action
		keys  []string // as routed
		split bool
		out   string // what the server receives, whole
		local string // the reply, for local requests
	}{
		{in: "GET k\r\n", keys: []string{"k"}, out: "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"},
		{in: "*2\r\n$3\r\nget\r\n$1\r\nk\r\n", keys: []string{"k"}, out: "*2\r\n$3\r\nget\r\n$1\r\nk\r\n"},
		// Redis's leniency: the byte after '\r' and the two after a bulk are
		// skipped unread, and the server gets the request as the proxy read it.
		{in: "*2\r\n$3\rXgetYZ$1\r\nkAB", keys: []string{"k"}, out: "*2\r\n$3\r\nget\r\n$1\r\nk\r\n"},
		{in: "SET \"a b\" 'c\\'d'\r\n", keys: []string{"a b"}, out: "*3\r\n$3\r\nSET\r\n$3\r\na b\r\n$3\r\nc'd\r\n"},
		{in: "MGET a b c\r\n", keys: []string{"a", "b", "c"}, split: true, out: "*4\r\n$4\r\nMGET\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"},
		{in: "MSET a 1 b 2\r\n", keys: []string{"a", "b"}, split: true, out: "*5\r\n$4\r\nMSET\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n"},
		{in: "DEL a\r\n", keys: []string{"a"}, split: true, out: "*2\r\n$3\r\nDEL\r\n$1\r\na\r\n"},
		{in: "RENAME a b\r\n", keys: []string{"a", "b"}, out: "*3\r\n$6\r\nRENAME\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{in: "EVAL s 2 k1 k2 arg\r\n", keys: []string{"k1", "k2"}, out: "*6\r\n$4\r\nEVAL\r\n$1\r\ns\r\n$1\r\n2\r\n$2\r\nk1\r\n$2\r\nk2\r\n$3\r\narg\r\n"},
		// No key to route by: the server of the empty key answers.
		{in: "EVAL s x\r\n", out: "*3\r\n$4\r\nEVAL\r\n$1\r\ns\r\n$1\r\nx\r\n"},
		{in: "XINFO HELP\r\n", out: "*2\r\n$5\r\nXINFO\r\n$4\r\nHELP\r\n"},
		{in: "COMMAND COUNT\r\n", out: "*2\r\n$7\r\nCOMMAND\r\n$5\r\nCOUNT\r\n"},
		// Answered by the proxy.
		{in: "PING\r\n", act: local, local: "+PONG\r\n"},
		{in: "ping \"a\\r\\nb\"\r\n", act: local, local: "$4\r\na\r\nb\r\n"},
		{in: "PING a b\r\n", act: local, local: "-ERR wrong number of arguments for 'ping' command\r\n"},
		{in: "ECHO hi\r\n", act: local, local: "$2\r\nhi\r\n"},
		{in: "QUIT\r\n", act: closeAfter, local: "+OK\r\n"},
		{in: "SELECT 0\r\n", act: local, local: "+OK\r\n"},
		{in: "SELECT 1\r\n", act: local, local: "-ERR database 1 is not served by the proxy (only 0)\r\n"},
		{in: "SELECT 00\r\n", act: local, local: "-" + resp.ReplyNotInteger + "\r\n"},
		{in: "SELECT -1\r\n", act: local, local: "-" + resp.ReplyDBRange + "\r\n"},
		{in: "EVAL s 0\r\n", act: local, local: "-ERR 'eval' without keys cannot be routed\r\n"},
		{in: "KEYS *\r\n", act: local, local: "-ERR command 'keys' is not supported by the proxy\r\n"},
		{in: "GET\r\n", act: local, local: "-ERR wrong number of arguments for 'get' command\r\n"},
		{in: "HELLO 3\r\n", act: local, local: "-NOPROTO unsupported protocol version: the proxy speaks RESP2 only\r\n"},
		{in: "HELLO 2 SETNAME \"a\\x01\"\r\n", act: local, local: "-ERR Client names cannot contain spaces, newlines or special characters.\r\n"},
		{in: "HELLO 2 AUTH default\r\n", act: local, local: "-ERR Syntax error in HELLO option 'AUTH'\r\n"},
		// Bad input: Redis's error, then the connection closes.
		{in: "*1\r\n$x\r\n", act: closeAfter, local: "-ERR Protocol error: invalid bulk length\r\n"},
		{in: "*x\r\n", act: closeAfter, local: "-ERR Protocol error: invalid multibulk length\r\n"},
		{in: "GET \"k\r\n", act: closeAfter, local: "-ERR Protocol error: unbalanced quotes in request\r\n"},
	}
	for _, tt := range tests {
		acts, replies, reqs := readAll(t, cd, tt.in)
		if len(acts) != 1 {
			t.Errorf("read(%q): %d requests; want 1", tt.in, len(acts))
			continue
		}
		req, act := reqs[0], acts[0]
		if act != tt.act {
			t.Errorf("read(%q) action = %d; want %d", tt.in, act, tt.act)
			continue
		}
		if act != forward {
			if replies[0] != tt.local {
				t.Errorf("read(%q): local reply %q; want %q", tt.in, replies[0], tt.local)
			}
			continue
		}
		var keys []string
		for i := range req.nkeys() {
			keys = append(keys, string(req.routeKey(i)))
		}
		if strings.Join(keys, ",") != strings.Join(tt.keys, ",") || req.splits() != tt.split {
			t.Errorf("read(%q): keys %q, split %v; want %q, %v", tt.in, keys, req.splits(), tt.keys, tt.split)
		}
		if got := string(req.appendRequest(nil, nil, 0, cd.newReply())); got != tt.out {
			t.Errorf("read(%q): sends %q; want %q", tt.in, got, tt.out)
		}
	}
}

// redisRefusals are requests of a client of a pool with the password auth
// (none if empty), each with the class of its refusal ("" if it is none) and
// what the log line quotes of it.
var redisRefusals = []struct{ auth, in, class, line string }{
	{"", "GET k\r\n", "", ""},
	{"", "PING\r\n", "", ""},
	{"", "SELECT 0\r\n", "", ""},
	{"", "HELLO 2\r\n", "", ""},
	{"", "FOO a b\r\n", refusedUnknown, "FOO [2 arguments]"},
	{"", strings.Repeat("X", 100) + " a\r\n", refusedUnknown, strings.Repeat("X", maxRefusedName) + " [1 argument]"},
	{"", "KEYS *\r\n", refusedUnsupported, "KEYS [1 argument]"},
	{"", "MULTI\r\n", refusedUnsupported, "MULTI [0 arguments]"},
	{"", "SUBSCRIBE ch\r\n", refusedUnsupported, "SUBSCRIBE [1 argument]"},
	{"", "get\r\n", refusedArity, "get [0 arguments]"},
	{"", "PING a b\r\n", refusedArity, "PING [2 arguments]"},
	{"", "MSET a 1 b\r\n", refusedArity, "MSET [3 arguments]"},
	{"", "SELECT x\r\n", refusedArgument, "SELECT [1 argument]"},
	{"", "SELECT -1\r\n", refusedArgument, "SELECT [1 argument]"},
	{"", "HELLO x\r\n", refusedArgument, "HELLO [1 argument]"},
	{"", "HELLO 2 AUTH default\r\n", refusedArgument, "HELLO [3 arguments]"},
	{"", "AUTH a b c\r\n", refusedArgument, "AUTH [3 arguments]"},
	{"", "SELECT 1\r\n", refusedDB, "SELECT [1 argument]"},
	{"", "HELLO 3\r\n", refusedProto, "HELLO [1 argument]"},
	{"", "HELLO 4\r\n", refusedProto, "HELLO [1 argument]"},
	{"", "EVAL s 0\r\n", refusedNoKeys, "EVAL [2 arguments]"},
	{"", "AUTH hunter2\r\n", refusedWrongPass, "AUTH [1 argument]"},
	{"sesame", "AUTH hunter2\r\n", refusedWrongPass, "AUTH [1 argument]"},
	{"sesame", "AUTH someone hunter2\r\n", refusedWrongPass, "AUTH [2 arguments]"},
	{"sesame", "HELLO 2 AUTH default hunter2\r\n", refusedWrongPass, "HELLO [4 arguments]"},
	{"sesame", "GET k\r\n", refusedNoAuth, "GET [1 argument]"},
	{"sesame", "KEYS *\r\n", refusedNoAuth, "KEYS [1 argument]"},
	{"sesame", "HELLO 2\r\n", refusedNoAuth, "HELLO [1 argument]"},
	{"sesame", "AUTH sesame\r\n", "", ""},
	{"", "*1\r\n$x\r\n", refusedProtocol, "$x"},
	{"", "*x\r\n", refusedProtocol, "*x"},
	{"", "SET a \"hunter2\r\n", refusedProtocol, "SET"},
	{"", "*1\r\n$600000000\r\n", refusedProtocol, "$600000000"},
}

// TestRedisCodecRefusals checks the class of each refusal and what its log
// line quotes: a command's name as sent and its number of arguments, or the
// input of a protocol error up to a space, never a password or a value.
func TestRedisCodecRefusals(t *testing.T) {
	for _, tt := range redisRefusals {
		_, _, reqs := readAll(t, testRedisCodec(tt.auth), tt.in)
		if len(reqs) != 1 {
			t.Errorf("read(%q): %d requests; want 1", tt.in, len(reqs))
			continue
		}
		class, line := reqs[0].refusal()
		if class != tt.class || string(line) != tt.line {
			t.Errorf("read(%q) refusal() = %q, %q; want %q, %q", tt.in, class, line, tt.class, tt.line)
		}
	}
}

// FuzzRedisRefusal reads random bytes as one connection's requests, to a
// pool with a password and to one without: every request answered with an
// error is a refusal of one of the fixed classes, every other request is
// none, and a refusal's log line stays short, so that neither the label of
// chash_proxy_refused_requests_total nor the log takes what clients send.
//
//	go test ./internal/proxy -run XXX -fuzz FuzzRedisRefusal
func FuzzRedisRefusal(f *testing.F) {
	for _, tt := range redisRefusals {
		f.Add([]byte(tt.in), tt.auth != "")
	}
	classes := []string{refusedProtocol, refusedUnknown, refusedUnsupported, refusedArity, refusedArgument,
		refusedNoAuth, refusedWrongPass, refusedDB, refusedProto, refusedNoKeys}
	maxLine := maxRefusedName + len(" [4294967295 arguments]")
	with, without := testRedisCodec("sesame"), testRedisCodec("")
	f.Fuzz(func(t *testing.T, data []byte, auth bool) {
		cd := without
		if auth {
			cd = with
		}
		cc := cd.newClient(bytes.NewReader(data))
		req := cd.newRequest().(*redisRequest)
		for range 50 {
			act, err := cc.read(req)
			if err != nil {
				return
			}
			class, line := req.refusal()
			refused := act != forward && bytes.HasPrefix(req.appendLocal(nil), []byte("-"))
			switch {
			case refused && !slices.Contains(classes, class):
				t.Fatalf("%q: refused %q in class %q, not one of %q", data, req.appendLocal(nil), class, classes)
			case !refused && class != "":
				t.Fatalf("%q: a request answered %q (action %d) is refused in class %q", data, req.appendLocal(nil), act, class)
			case len(line) > maxLine:
				t.Fatalf("%q: the refusal's log line %q is over %d bytes", data, line, maxLine)
			}
			if act == closeAfter {
				return
			}
		}
	})
}

// TestRedisReplyLookups checks the hits and misses a server's reply counts:
// a GET's (GETEX's, GETDEL's, GETSET's) bulk is a hit and its nil a miss,
// each bulk of an MGET's array (or of its part for one server) a hit and
// each nil a miss; errors and the replies of other commands count nothing.
func TestRedisReplyLookups(t *testing.T) {
	tests := []struct {
		req     string
		keyCall []int // of a part of a split, part 0; nil: the request whole
		reply   string
		hits    int
		misses  int
	}{
		{"GET k\r\n", nil, "$1\r\nv\r\n", 1, 0},
		{"GET k\r\n", nil, "$0\r\n\r\n", 1, 0},
		{"GET k\r\n", nil, "$-1\r\n", 0, 1},
		{"GET k\r\n", nil, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", 1, 0}, // Redis found it
		{"GET k\r\n", nil, "-ERR server down\r\n", 0, 0},
		{"GETEX k PERSIST\r\n", nil, "$1\r\nv\r\n", 1, 0},
		{"GETEX k\r\n", nil, "$-1\r\n", 0, 1},
		{"GETDEL k\r\n", nil, "$-1\r\n", 0, 1},
		{"GETSET k v\r\n", nil, "$1\r\nw\r\n", 1, 0},
		{"MGET a b c d\r\n", nil, "*4\r\n$1\r\n1\r\n$-1\r\n$0\r\n\r\n$-1\r\n", 2, 2},
		{"MGET a b c\r\n", []int{0, 1, 0}, "*2\r\n$-1\r\n$4\r\n*1\r\n\r\n", 1, 1},
		{"MGET a\r\n", nil, "-ERR server down\r\n", 0, 0},
		{"HGET h f\r\n", nil, "$-1\r\n", 0, 0},
		{"GETRANGE k 0 1\r\n", nil, "$0\r\n\r\n", 0, 0},
		{"SET k v\r\n", nil, "+OK\r\n", 0, 0},
		{"LRANGE l 0 -1\r\n", nil, "*2\r\n$1\r\na\r\n$-1\r\n", 0, 0},
	}
	cd := testRedisCodec("")
	rep := cd.newReply() // one reply, reused as a server connection reuses it
	for _, tt := range tests {
		_, _, reqs := readAll(t, cd, tt.req)
		if len(reqs) != 1 {
			t.Fatalf("read(%q): %d requests; want 1", tt.req, len(reqs))
		}
		reqs[0].appendRequest(nil, tt.keyCall, 0, rep)
		if err := cd.newServer(strings.NewReader(tt.reply)).read(rep); err != nil {
			t.Fatalf("%q: reading %q: %v", tt.req, tt.reply, err)
		}
		if hits, misses, _ := rep.lookups(); hits != tt.hits || misses != tt.misses {
			t.Errorf("%q answered %q: lookups() = %d, %d; want %d, %d", tt.req, tt.reply, hits, misses, tt.hits, tt.misses)
		}
	}
}

// TestRedisCodecHello checks HELLO's reply, the RESP2 map Redis 7.0 sends,
// and that each connection keeps its id.
func TestRedisCodecHello(t *testing.T) {
	cd := testRedisCodec("")
	_, replies, _ := readAll(t, cd, "HELLO\r\nHELLO 2 SETNAME app\r\n")
	want := "*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.0.0\r\n$5\r\nproto\r\n:2\r\n" +
		"$2\r\nid\r\n:1\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"
	for i, got := range replies {
		if got != want {
			t.Errorf("HELLO %d = %q; want %q", i, got, want)
		}
	}
	_, replies, _ = readAll(t, cd, "HELLO 2\r\n")
	if want := strings.Replace(want, "id\r\n:1", "id\r\n:2", 1); replies[0] != want {
		t.Errorf("HELLO of a second connection = %q; want %q", replies[0], want)
	}
}

// TestRedisCodecAuth checks a pool with a password: a client is refused
// (NOAUTH) until AUTH or HELLO AUTH gives the password, with Redis's tighter
// limits meanwhile, and a wrong password changes nothing.
func TestRedisCodecAuth(t *testing.T) {
	cd := testRedisCodec("sesame")
	noauth := "-" + resp.ReplyNoAuth + "\r\n"
	wrong := "-" + resp.ReplyWrongPass + "\r\n"
	tests := []struct {
		in   string
		want []string
	}{
		{"GET k\r\nPING\r\nKEYS *\r\nFOO\r\nGET\r\n", []string{noauth, noauth, noauth,
			"-ERR unknown command 'FOO', with args beginning with: \r\n", "-ERR wrong number of arguments for 'get' command\r\n"}},
		{"AUTH nope\r\nGET k\r\nAUTH sesame\r\nPING\r\nAUTH nope\r\nPING\r\n", []string{wrong, noauth, "+OK\r\n", "+PONG\r\n", wrong, "+PONG\r\n"}},
		{"AUTH default sesame\r\nPING\r\n", []string{"+OK\r\n", "+PONG\r\n"}},
		{"AUTH admin sesame\r\n", []string{wrong}},
		{"HELLO 2\r\n", []string{"-" + resp.ReplyHelloNoAuth + "\r\n"}},
		{"HELLO 2 AUTH default nope\r\nPING\r\n", []string{wrong, noauth}},
		{"HELLO 3 AUTH default sesame\r\nPING\r\n", []string{"-NOPROTO unsupported protocol version: the proxy speaks RESP2 only\r\n", noauth}},
		{"QUIT\r\n", []string{"+OK\r\n"}},
		// Until it authenticates, a client may send no more than 10
		// arguments, nor a bulk longer than 16 KiB, as with Redis.
		{"*11\r\n", []string{"-" + resp.ReplyUnauthMultibulk + "\r\n"}},
		{"AUTH sesame\r\n*11\r\n$3\r\nDEL\r\n", []string{"+OK\r\n"}},
	}
	for _, tt := range tests {
		_, replies, _ := readAll(t, cd, tt.in)
		if strings.Join(replies, "") != strings.Join(tt.want, "") {
			t.Errorf("read(%q): replies %q; want %q", tt.in, replies, tt.want)
		}
	}
	// Without a password, as Redis's default user with nopass.
	for _, tt := range []struct{ in, want string }{
		{"AUTH x\r\n", "-" + resp.ReplyNoPassword + "\r\n"},
		{"AUTH default x\r\n", "+OK\r\n"},
		{"AUTH admin x\r\n", wrong},
		{"AUTH a b c\r\n", "-ERR syntax error\r\n"},
	} {
		if _, replies, _ := readAll(t, testRedisCodec(""), tt.in); replies[0] != tt.want {
			t.Errorf("without a password, read(%q) = %q; want %q", tt.in, replies[0], tt.want)
		}
	}
}

// TestRedisCodecSplit checks an MGET split over three servers: each receives
// its keys, the merged reply has the values in the order of the request's
// keys, and a failed call, or keys no server took, fail the request with the
// reason.
func TestRedisCodecSplit(t *testing.T) {
	cd := testRedisCodec("")
	_, _, reqs := readAll(t, cd, "MGET a b c a d\r\n")
	req := reqs[0]
	keyCall := []int{0, 1, 0, 0, 2}
	wantOut := []string{
		"*4\r\n$4\r\nMGET\r\n$1\r\na\r\n$1\r\nc\r\n$1\r\na\r\n",
		"*2\r\n$4\r\nMGET\r\n$1\r\nb\r\n",
		"*2\r\n$4\r\nMGET\r\n$1\r\nd\r\n",
	}
	for part, want := range wantOut {
		if got := string(req.appendRequest(nil, keyCall, part, cd.newReply())); got != want {
			t.Errorf("part %d sends %q; want %q", part, got, want)
		}
	}
	calls := []*call{
		serverReply(t, cd, req, keyCall, 0, "*3\r\n$1\r\nA\r\n$-1\r\n$1\r\nA\r\n"),
		serverReply(t, cd, req, keyCall, 1, "*1\r\n$2\r\nBB\r\n"),
		serverReply(t, cd, req, keyCall, 2, "*1\r\n$-1\r\n"),
	}
	want := "*5\r\n$1\r\nA\r\n$2\r\nBB\r\n$-1\r\n$1\r\nA\r\n$-1\r\n"
	if got := string(req.merge(nil, keyCall, calls, nil)); got != want {
		t.Errorf("merge = %q; want %q", got, want)
	}
	calls[1].err = errTimeout
	if got, want := string(req.merge(nil, keyCall, calls, nil)), "-ERR Connection timed out\r\n"; got != want {
		t.Errorf("merge with a call timed out = %q; want %q", got, want)
	}
	calls[1] = serverReply(t, cd, req, keyCall, 1, "*1\r\n$2\r\nBB\r\n")
	if got, want := string(req.merge(nil, []int{0, 1, 0, 0, -1}, calls[:2], errEjected)), "-ERR server ejected\r\n"; got != want {
		t.Errorf("merge with a key no server took = %q; want %q", got, want)
	}
	if got, want := string(req.appendError(nil, errKeysSpread)), "-ERR keys of 'mget' are on different servers\r\n"; got != want {
		t.Errorf("appendError(errKeysSpread) = %q; want %q", got, want)
	}
	if got, want := string(req.appendError(nil, errNoServers)), "-ERR no live servers\r\n"; got != want {
		t.Errorf("appendError(errNoServers) = %q; want %q", got, want)
	}
}

// TestRedisCodecBadReply checks that a reply out of RESP is errBadReply.
func TestRedisCodecBadReply(t *testing.T) {
	cd := testRedisCodec("")
	for _, in := range []string{"hello\r\n", "$5\r\nab\r\n\r\nxx", ":1x\r\n", "*1\r\n!\r\n", "+OK\n"} {
		err := cd.newServer(strings.NewReader(in)).read(cd.newReply())
		if !errorsIsBadReply(err) {
			t.Errorf("read(%q) = %v; want errBadReply", in, err)
		}
	}
}

// BenchmarkRedisCodec times the Redis codec's work for one request on its
// way through the proxy (see benchmarkCodec).
func BenchmarkRedisCodec(b *testing.B) {
	benchmarkCodec(b, testRedisCodec(""), []codecCase{
		{"get", "*2\r\n$3\r\nGET\r\n$9\r\nuser:1234\r\n", "$10\r\n0123456789\r\n"},
		{"set", "*3\r\n$3\r\nSET\r\n$9\r\nuser:1234\r\n$100\r\n" + strings.Repeat("v", 100) + "\r\n", "+OK\r\n"},
		{"incr", "*2\r\n$4\r\nINCR\r\n$7\r\ncounter\r\n", ":42\r\n"},
		{"lpush", "*3\r\n$5\r\nLPUSH\r\n$6\r\nmylist\r\n$3\r\nxxx\r\n", ":7\r\n"},
		{"inline", "GET user:1234\r\n", "$10\r\n0123456789\r\n"},
		{"mget", "*4\r\n$4\r\nMGET\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", "*3\r\n$1\r\n1\r\n$-1\r\n$1\r\n3\r\n"},
	})
}

func TestRedisCodecAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	cd := testRedisCodec("")
	cc := cd.newClient(&repeatReader{s: "MSET a 1 b 2 c 3\r\nMGET a b c\r\nGET a\r\nPING\r\n"})
	sc := cd.newServer(&repeatReader{s: "+OK\r\n+OK\r\n*2\r\n$1\r\n1\r\n$1\r\n3\r\n*1\r\n$1\r\n2\r\n$1\r\n1\r\n"})
	req := cd.newRequest()
	calls := []*call{{reply: cd.newReply()}, {reply: cd.newReply()}}
	keyCall := []int{0, 1, 0}
	var out []byte
	n := testing.AllocsPerRun(1000, func() {
		for range 2 { // MSET and MGET, split over two servers
			if _, err := cc.read(req); err != nil {
				t.Fatal(err)
			}
			for part, cl := range calls {
				out = req.appendRequest(out[:0], keyCall, part, cl.reply)
				if err := sc.read(cl.reply); err != nil {
					t.Fatal(err)
				}
				cl.reply.lookups()
			}
			out = req.merge(out[:0], keyCall, calls, nil)
		}
		if _, err := cc.read(req); err != nil { // GET
			t.Fatal(err)
		}
		out = req.appendRequest(out[:0], nil, 0, calls[0].reply)
		if err := sc.read(calls[0].reply); err != nil {
			t.Fatal(err)
		}
		calls[0].reply.lookups()
		out = req.appendReply(out[:0], calls[0].reply)
		if act, err := cc.read(req); err != nil || act != local { // PING
			t.Fatal(act, err)
		}
		out = req.appendLocal(out[:0])
	})
	if n > 0 {
		t.Errorf("MSET, MGET split, GET and PING allocate %v times; want 0", n)
	}
}

func errorsIsBadReply(err error) bool { return errors.Is(err, errBadReply) }

// TestRedisCodecKeepsLittle checks that a request reused after a large one
// (many keys, a large local reply) lets the large one's memory go.
func TestRedisCodecKeepsLittle(t *testing.T) {
	cd := testRedisCodec("")
	mget := "MGET" + strings.Repeat(" k", 5000) + "\r\n"
	echo := redistest.Request("ECHO", strings.Repeat("e", 1<<20))
	cc := cd.newClient(strings.NewReader(mget + echo + "PING\r\nPING\r\n"))
	req := cd.newRequest().(*redisRequest)
	for range 4 {
		if _, err := cc.read(req); err != nil {
			t.Fatal(err)
		}
	}
	if cap(req.keys) > maxKeptKeys || cap(req.local) > maxKeptRequest {
		t.Errorf("after MGET of 5000 keys and ECHO of 1 MiB, a request keeps room for %d keys and a %d-byte reply; want at most %d and %d",
			cap(req.keys), cap(req.local), maxKeptKeys, maxKeptRequest)
	}
}
