package resp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/testprog"
)

// redisServer is a redis-server started for a test on a free port of
// 127.0.0.1; the test's end stops it.
type redisServer struct {
	Addr string
}

// startRedis starts redis-server with args after its own (port, address, no
// persistence) and waits until it accepts connections. Where redis-server is
// missing, the test is skipped, or fails when CI is set.
func startRedis(t testing.TB, args ...string) *redisServer {
	t.Helper()
	addr := testprog.FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	testprog.Start(t, testprog.Program{
		Name: "redis-server",
		Args: append([]string{"--port", port, "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", t.TempDir()}, args...),
		Ready: testprog.Listening(addr),
	})
	return &redisServer{Addr: addr}
}

// answer sends in to the server on a connection of its own, ends the
// connection's writing side and returns all the server sends before it closes
// the connection.
func (s *redisServer) answer(t testing.TB, in []byte) []byte {
	t.Helper()
	return []byte(testprog.Exchange(t, s.Addr, string(in), 20*time.Second))
}

// client is a connection to a server, through this package's writer and
// reader.
type client struct {
	t  testing.TB
	c  net.Conn
	r  *Reader
	rp Reply
}

func (s *redisServer) dial(t testing.TB) *client {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, r: NewReader(c, Limits{})}
}

// do sends the request of args and returns the reply, valid until the next do.
func (cl *client) do(args ...string) *Reply {
	cl.t.Helper()
	q := Request{}
	for _, a := range args {
		q.Args = append(q.Args, []byte(a))
	}
	return cl.doRaw(AppendRequest(nil, &q))
}

// doRaw sends a request as it is and returns the reply.
func (cl *client) doRaw(req []byte) *Reply {
	cl.t.Helper()
	cl.c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := cl.c.Write(req); err != nil {
		cl.t.Fatal(err)
	}
	if err := cl.r.ReadReply(&cl.rp); err != nil {
		cl.t.Fatalf("reply to %q: %v", req, err)
	}
	return &cl.rp
}

// emulate returns what Redis answers to the stream in, as far as this package
// can tell it: the requests a Reader reads (PING, ECHO and AUTH answered as
// Redis answers them; Check's errors; -NOAUTH until AUTH password when there is
// a password) and the reply to the protocol error that ends it. It reports
// false for a stream with a command it cannot answer.
func emulate(in []byte, password string) ([]byte, bool) {
	r := NewReader(bytes.NewReader(in), Limits{})
	authed := password == ""
	r.SetAuthRequired(!authed)
	var out []byte
	var q Request
	for {
		err := r.ReadRequest(&q)
		var e *Error
		if errors.As(err, &e) {
			return AppendError(out, e.Reply), true
		}
		if err != nil {
			return out, true
		}
		c, err := Check(q.Args)
		switch {
		case errors.As(err, &e) && (c == nil || c.Route != RouteNone || !c.arityOK(len(q.Args))):
			out = AppendError(out, e.Reply)
			continue
		case err != nil:
			return nil, false
		case !authed && !c.NoAuth:
			out = AppendError(out, ReplyNoAuth)
			continue
		}
		switch c.Name {
		case "ping":
			switch len(q.Args) {
			case 1:
				out = AppendSimple(out, "PONG")
			case 2:
				out = AppendBulk(out, q.Args[1])
			default:
				out = AppendError(out, "ERR wrong number of arguments for 'ping' command")
			}
		case "echo":
			out = AppendBulk(out, q.Args[1])
		case "auth":
			if len(q.Args) == 2 && password != "" && string(q.Args[1]) == password {
				out = AppendSimple(out, "OK")
				authed = true
				r.SetAuthRequired(false)
			} else {
				return nil, false
			}
		default:
			return nil, false
		}
	}
}

// TestRequestsMatchRedis sends each stream of readRequestTests, and streams
// made at random from PING and ECHO requests, to redis-server and checks that
// it answers what emulate says it does: the same requests and the same
// protocol error.
func TestRequestsMatchRedis(t *testing.T) {
	srv := startRedis(t)
	check := func(in []byte) bool {
		t.Helper()
		want, ok := emulate(in, "")
		if !ok {
			return false
		}
		if got := srv.answer(t, in); !bytes.Equal(got, want) {
			t.Errorf("redis-server answers %q with %q; the Reader reads it as %q", cut(string(in)), cut(string(got)), cut(string(want)))
		}
		return true
	}
	for _, tt := range readRequestTests {
		if !check([]byte(tt.in)) {
			t.Errorf("emulate(%q) cannot tell Redis's answer", cut(tt.in))
		}
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	n, checked := 1000, 0
	if testing.Short() {
		n = 50
	}
	for range n {
		if check(randomStream(rnd)) {
			checked++
		}
	}
	if checked < n*3/4 {
		t.Errorf("only %d of %d random streams had answers emulate can tell", checked, n)
	}
}

// TestUnauthenticatedMatchRedis is TestRequestsMatchRedis for a client of a
// server with a password, before and after AUTH.
func TestUnauthenticatedMatchRedis(t *testing.T) {
	srv := startRedis(t, "--requirepass", "sesame")
	big := strings.Repeat("x", 16385)
	for _, in := range []string{
		"*10\r\n", "*11\r\n", "*1\r\n$16384\r\n", "*1\r\n$16385\r\n", "*1\r\n$x\r\n",
		"PING\r\n", "FOO\r\n", "ECHO\r\n", "ECHO " + big + "\r\n",
		"AUTH sesame\r\n*11\r\n", "AUTH sesame\r\nECHO " + big + "\r\n*2\r\n$4\r\nECHO\r\n$16385\r\n" + big + "\r\n",
		"*12\r\n" + strings.Repeat("$4\r\nECHO\r\n", 12),
		"AUTH sesame\r\n*2\r\n$4\r\nPING\r\n$16385\r\n" + big + "\r\n",
	} {
		want, ok := emulate([]byte(in), "sesame")
		if !ok {
			t.Fatalf("emulate(%q) cannot tell Redis's answer", cut(in))
		}
		if got := srv.answer(t, []byte(in)); !bytes.Equal(got, want) {
			t.Errorf("redis-server with a password answers %q with %q; the Reader reads it as %q", cut(in), cut(string(got)), cut(string(want)))
		}
	}
}

// randomStream makes a stream of one to four PING or ECHO requests, multibulk
// or inline, and then mangles it in up to three places.
func randomStream(rnd *rand.Rand) []byte {
	words := []string{"PING", "ECHO", "ping", "EcHo", "FOO", "x", "", "a b", "a\r\nb", `"q"`, `'s'`,
		`\x41`, `"\x41"`, "\x00", "*", "$", "-1", "\t", `"a\"b"`, "it's", "  "}
	var b []byte
	for range 1 + rnd.IntN(4) {
		args := []string{[]string{"PING", "ECHO", "ping", "echo"}[rnd.IntN(4)]}
		for range rnd.IntN(3) {
			args = append(args, words[rnd.IntN(len(words))])
		}
		if rnd.IntN(3) == 0 {
			b = append(b, strings.Join(args, " ")...)
			b = append(b, []string{"\r\n", "\n", "\r\r\n"}[rnd.IntN(3)]...)
			continue
		}
		b = AppendArray(b, len(args))
		for _, a := range args {
			b = AppendBulkString(b, a)
		}
	}
	special := []byte("\r\n\x00\"'\\$*: -019x")
	for range rnd.IntN(4) {
		i := rnd.IntN(len(b))
		switch rnd.IntN(4) {
		case 0:
			b[i] = special[rnd.IntN(len(special))]
		case 1:
			b = append(b[:i], b[i+1:]...)
		case 2:
			b = append(b[:i], append([]byte{special[rnd.IntN(len(special))]}, b[i:]...)...)
		default:
			b = b[:i]
		}
		if len(b) == 0 {
			b = append(b, '*')
		}
	}
	return b
}

// TestCommandTable checks every command of the table against redis-server's
// COMMAND: the same names, arities, flags and, for commands with fixed key
// positions, the same first key, last key and step.
func TestCommandTable(t *testing.T) {
	srv := startRedis(t)
	cl := srv.dial(t)
	rp := cl.do("COMMAND")
	if rp.Kind != KindArray {
		t.Fatalf("COMMAND answered %q", rp.Bytes())
	}
	seen := map[string]bool{}
	for _, raw := range rp.AppendElems(nil) {
		info := parseValue(t, raw).([]any)
		name := string(info[0].([]byte))
		arity, first, last, step := info[1].(int64), info[3].(int64), info[4].(int64), info[5].(int64)
		flags := map[string]bool{}
		for _, f := range info[2].([]any) {
			flags[string(f.([]byte))] = true
		}
		seen[name] = true
		c := Lookup([]byte(name))
		if c == nil {
			t.Errorf("Lookup(%q) = nil; redis-server has the command", name)
			continue
		}
		if c.Name != name || int64(c.Arity) != arity || c.ReadOnly != flags["readonly"] || c.NoAuth != flags["no_auth"] {
			t.Errorf("command %q is %q, arity %d, readonly %v, no_auth %v; redis-server: arity %d, flags %v",
				name, c.Name, c.Arity, c.ReadOnly, c.NoAuth, arity, flags)
		}
		if c.keys.kind == keyRange {
			got := [3]int64{int64(c.keys.first), int64(c.keys.last), int64(c.keys.step)}
			if want := [3]int64{first, last, step}; got != want {
				t.Errorf("command %q has keys first, last, step %v; redis-server %v", name, got, want)
			}
		}
		if c.keys.kind == keyRange && flags["movablekeys"] {
			t.Errorf("command %q has fixed key positions; redis-server says they move", name)
		}
		if c.keys.kind == keySubcommand {
			// The subcommands with a key: the first is the argument after them.
			var keyed []string
			for _, sub := range info[9].([]any) {
				sub := sub.([]any)
				if sub[3].(int64) != 0 {
					keyed = append(keyed, strings.TrimPrefix(string(sub[0].([]byte)), name+"|"))
					if got := [3]int64{sub[3].(int64), sub[4].(int64), sub[5].(int64)}; got != [3]int64{2, 2, 1} {
						t.Errorf("subcommand %s has keys first, last, step %v; want the argument after it", sub[0], got)
					}
				}
			}
			sort.Strings(keyed)
			if !equalStrings(keyed, c.keys.subs) {
				t.Errorf("command %q: subcommands with a key %q; redis-server %q", name, c.keys.subs, keyed)
			}
		}
	}
	for _, c := range Commands() {
		if !seen[c.Name] {
			t.Errorf("command %q is not redis-server's", c.Name)
		}
	}
	if len(seen) != len(commands) {
		t.Errorf("redis-server has %d commands; the table %d", len(seen), len(commands))
	}
}

// parseValue reads the reply raw (read by ReadReply already) as Go values:
// []byte for simple strings, errors and bulks, int64, []any for arrays, nil
// for nulls.
func parseValue(t testing.TB, raw []byte) any {
	t.Helper()
	r := NewReader(bytes.NewReader(raw), Limits{})
	var rp Reply
	if err := r.ReadReply(&rp); err != nil {
		t.Fatalf("read %q again: %v", raw, err)
	}
	switch {
	case rp.IsNull():
		return nil
	case rp.Kind == KindInteger:
		return rp.Int
	case rp.Kind == KindArray:
		var v []any
		for _, e := range rp.AppendElems(nil) {
			v = append(v, parseValue(t, e))
		}
		return v
	}
	return append([]byte{}, rp.Str...)
}

// keyTests lists requests of commands whose keys move with their arguments,
// for TestKeysMatchRedis.
var keyTests = [][]string{
	{"EVAL", "s", "0"},
	{"EVAL", "s", "1", "k1"},
	{"EVAL", "s", "2", "k1", "k2", "a"},
	{"EVAL", "s", "3", "k1", "k2"},
	{"EVAL", "s", "-1", "k1"},
	{"EVAL", "s", "x", "k1"},
	{"EVAL", "s", "01", "k1"},
	{"EVALSHA", "0123456789012345678901234567890123456789", "1", "k1", "a"},
	{"EVAL_RO", "s", "2", "k1", "k2"},
	{"EVALSHA_RO", "s", "1", "k1"},
	{"FCALL", "f", "1", "k1", "a"},
	{"FCALL_RO", "f", "2", "k1", "k2"},
	{"FCALL", "f", "0"},
	{"ZUNION", "2", "k1", "k2", "WEIGHTS", "1", "2"},
	{"ZUNION", "0", "k1"},
	{"ZUNION", "3", "k1"},
	{"ZINTER", "1", "k1"},
	{"ZDIFF", "2", "k1", "k2", "WITHSCORES"},
	{"ZINTERCARD", "2", "k1", "k2"},
	{"SINTERCARD", "1", "k1", "LIMIT", "1"},
	{"SINTERCARD", "x", "k1"},
	{"LMPOP", "2", "k1", "k2", "LEFT"},
	{"ZMPOP", "1", "k1", "MIN", "COUNT", "2"},
	{"ZUNIONSTORE", "d", "2", "k1", "k2"},
	{"ZINTERSTORE", "d", "1", "k1", "AGGREGATE", "MAX"},
	{"ZDIFFSTORE", "d", "2", "k1", "k2"},
	{"ZDIFFSTORE", "d", "0", "k1"},
	{"ZUNIONSTORE", "d", "4", "k1", "k2"},
	{"SORT", "k1"},
	{"SORT", "k1", "STORE", "d"},
	{"SORT", "k1", "BY", "w_*", "LIMIT", "0", "1", "GET", "o_*", "STORE", "d"},
	{"SORT", "k1", "store", "d1", "STORE", "d2"},
	{"SORT", "k1", "LIMIT", "store", "x", "STORE"},
	{"SORT", "k1", "GET", "store", "ALPHA"},
	{"SORT", "k1", "STORE"},
	{"SORT_RO", "k1", "BY", "w_*", "STORE", "d"},
	{"GEORADIUS", "k1", "1", "2", "3", "m"},
	{"GEORADIUS", "k1", "1", "2", "3", "m", "STORE", "d1"},
	{"GEORADIUS", "k1", "1", "2", "3", "m", "STOREDIST", "d2", "STORE", "d1"},
	{"GEORADIUS", "k1", "1", "2", "3", "m", "store", "d1", "STORE", "d3"},
	{"GEORADIUS", "k1", "1", "2", "3", "STORE", "d1"},
	{"GEORADIUS", "k1", "1", "2", "3", "m", "STORE"},
	{"GEORADIUSBYMEMBER", "k1", "m1", "3", "m", "STORE", "d1"},
	{"GEORADIUSBYMEMBER", "k1", "m1", "3", "STORE", "d1"},
	{"GEORADIUSBYMEMBER", "k1", "STORE", "3", "m"},
	{"MSET", "k1", "v", "k2", "v"},
	{"MSETNX", "k1", "v", "k2", "v", "k3", "v"},
	{"BITOP", "AND", "d", "k1", "k2"},
	{"SDIFF", "k1", "k2", "k3"},
	{"PFCOUNT", "k1", "k2"},
	{"XINFO", "STREAM", "k1"},
	{"XINFO", "stream", "k1", "FULL", "COUNT", "2"},
	{"XINFO", "GROUPS", "k1"},
	{"XINFO", "CONSUMERS", "k1", "g"},
	{"XINFO", "HELP"},
	{"XINFO", "STREAM"},
	{"XINFO", "NOSUCH", "k1"},
	{"XGROUP", "CREATE", "k1", "g", "$", "MKSTREAM"},
	{"XGROUP", "SETID", "k1", "g", "0"},
	{"XGROUP", "DESTROY", "k1", "g"},
	{"XGROUP", "CREATECONSUMER", "k1", "g", "c"},
	{"XGROUP", "DELCONSUMER", "k1", "g", "c"},
	{"XGROUP", "help"},
	{"OBJECT", "ENCODING", "k1"},
	{"OBJECT", "FREQ", "k1"},
	{"OBJECT", "IDLETIME", "k1"},
	{"OBJECT", "REFCOUNT", "k1"},
	{"OBJECT", "HELP"},
}

// TestKeysMatchRedis checks AppendKeys against redis-server's COMMAND GETKEYS:
// for keyTests, and for every routed command with fixed key positions with
// requests of the fewest arguments it takes and of three more. Where
// AppendKeys reports a count of keys not valid, it checks that redis-server
// answers the request with an error.
func TestKeysMatchRedis(t *testing.T) {
	srv := startRedis(t)
	cl := srv.dial(t)
	tests := keyTests
	for _, c := range Commands() {
		if c.keys.kind != keyRange {
			continue
		}
		n := c.Arity
		if n < 0 {
			n = -n
			tests = append(tests, argsOf(c.Name, n+3), argsOf(c.Name, n+4))
		}
		tests = append(tests, argsOf(c.Name, n))
	}
	for _, args := range tests {
		var bargs [][]byte
		for _, a := range args {
			bargs = append(bargs, []byte(a))
		}
		c, err := Check(bargs)
		if err != nil {
			if !strings.Contains(err.Error(), "wrong number") {
				t.Errorf("Check(%q): %v", args, err)
			}
			continue
		}
		idx, ok := c.AppendKeys(nil, bargs)
		if !ok {
			help := c.keys.kind == keySubcommand && equalFold(bargs[1], "help")
			if rp := cl.do(args...); rp.Kind != KindError && !(help && rp.Kind == KindArray) {
				t.Errorf("AppendKeys(%q) says its keys are not to be found; redis-server answers it %q", args, rp.Bytes())
			}
			continue
		}
		var got []string
		for _, i := range idx {
			got = append(got, args[i])
		}
		rp := cl.do(append([]string{"COMMAND", "GETKEYS"}, args...)...)
		var want []string
		switch {
		case rp.Kind == KindArray:
			for _, e := range parseValue(t, rp.Bytes()).([]any) {
				want = append(want, string(e.([]byte)))
			}
		case rp.Kind == KindError && len(got) == 0:
			// No keys: Redis 7.0 answers GETKEYS with an error.
		case rp.Kind == KindError && c.Name == "pfmerge" && len(args) == 2:
			// Redis 7.0's key specs of PFMERGE want a source key, so GETKEYS
			// finds none in "PFMERGE dest", which Redis runs (and
			// TestCommandTable checks PFMERGE's key positions).
			continue
		default:
			t.Errorf("COMMAND GETKEYS %q answered %q", args, rp.Bytes())
			continue
		}
		stores := 0
		for _, a := range args {
			if equalFold([]byte(a), "store") || equalFold([]byte(a), "storedist") {
				stores++
			}
		}
		if c.keys.kind == keyGeoStore && stores > 1 {
			// Redis's key specs of GEORADIUS name the keys of its first
			// STORE and first STOREDIST; the command writes that of the
			// last (TestStoreKeyWritten).
			continue
		}
		if !equalStrings(got, want) {
			t.Errorf("AppendKeys(%q) = %q; want %q", args, got, want)
		}
	}
}

// TestStoreKeyWritten runs SORT and GEORADIUS requests with STORE options on
// redis-server: the key each writes, if any, is the last AppendKeys names
// after the first, and it names none after the first when none is written.
func TestStoreKeyWritten(t *testing.T) {
	srv := startRedis(t)
	cl := srv.dial(t)
	candidates := []string{"d1", "d2", "d3", "by", "limit", "get", "store", "count"}
	for _, req := range []string{
		"SORT k1 STORE d1",
		"SORT k1 store d1 STORE d2",
		"SORT k1 STORE by GET #",
		"SORT k1 STORE limit LIMIT 0 5",
		"SORT k1 LIMIT 0 5 STORE get",
		"SORT k1 GET # STORE store",
		"SORT k1 BY store STORE d3",
		"SORT k1 ALPHA DESC STORE d1 ALPHA",
		"GEORADIUS k1 15 37 200 km STORE d1",
		"GEORADIUS k1 15 37 200 km STORE d1 STORE d2",
		"GEORADIUS k1 15 37 200 km STOREDIST d2 STORE d1",
		"GEORADIUS k1 15 37 200 km STORE d1 STOREDIST d3",
		"GEORADIUS k1 15 37 200 km COUNT 5 STORE count",
		"GEORADIUS k1 15 37 200 km ASC STORE store",
		"GEORADIUSBYMEMBER k1 P 200 km STORE d1 STORE by",
	} {
		cl.do("FLUSHALL")
		cl.do("RPUSH", "k1", "3", "1", "2")
		if strings.HasPrefix(req, "GEO") {
			cl.do("DEL", "k1")
			cl.do("GEOADD", "k1", "15", "37", "P")
		}
		args := strings.Fields(req)
		rp := cl.do(args...)
		if rp.Kind == KindError {
			t.Fatalf("%s: %q", req, rp.Bytes())
		}
		var written []string
		for _, k := range candidates {
			if rp := cl.do("EXISTS", k); string(rp.Bytes()) == ":1\r\n" {
				written = append(written, k)
			}
		}
		var bargs [][]byte
		for _, a := range args {
			bargs = append(bargs, []byte(a))
		}
		idx, _ := Lookup(bargs[0]).AppendKeys(nil, bargs)
		var named []string
		if len(idx) > 1 {
			named = append(named, args[idx[len(idx)-1]])
		}
		if !equalStrings(named, written) {
			t.Errorf("%s writes %q; AppendKeys names %q last", req, written, named)
		}
	}
}

// argsOf returns a request of the command name with n arguments, the name
// included, all different: name, k1, k2, ...
func argsOf(name string, n int) []string {
	args := []string{name}
	for i := 1; i < n; i++ {
		args = append(args, fmt.Sprintf("k%d", i))
	}
	return args
}

// TestRepliesMatchRedis reads replies of every kind from redis-server and
// checks what ReadReply makes of them: the bytes as sent (the server's reply
// is read again by a bufio.Reader from Bytes and must end exactly there) and
// the top-level value.
func TestRepliesMatchRedis(t *testing.T) {
	srv := startRedis(t)
	cl := srv.dial(t)
	cl.do("RPUSH", "list", "a", "", "c\r\n")
	cl.do("XADD", "stream", "1-1", "f", "v")
	cl.do("HSET", "hash", "f", "v")
	big := strings.Repeat("b", 100000)
	cl.do("SET", "big", big)
	tests := []struct {
		args []string
		kind Kind
		str  string
		n    int64
	}{
		{[]string{"PING"}, KindSimple, "PONG", 0},
		{[]string{"SET", "k", "v"}, KindSimple, "OK", 0},
		{[]string{"GET", "k"}, KindBulk, "v", 1},
		{[]string{"GET", "big"}, KindBulk, big, 100000},
		{[]string{"GET", "missing"}, KindBulk, "", -1},
		{[]string{"ECHO", ""}, KindBulk, "", 0},
		{[]string{"INCR", "counter"}, KindInteger, "", 1},
		{[]string{"INCRBY", "counter", "-9223372036854775807"}, KindInteger, "", -9223372036854775806},
		{[]string{"LRANGE", "list", "0", "-1"}, KindArray, "", 3},
		{[]string{"LRANGE", "missing", "0", "-1"}, KindArray, "", 0},
		{[]string{"MGET", "k", "missing", "big"}, KindArray, "", 3},
		{[]string{"XRANGE", "stream", "-", "+"}, KindArray, "", 1},
		{[]string{"XREAD", "STREAMS", "stream", "$"}, KindArray, "", -1},
		{[]string{"HGETALL", "hash"}, KindArray, "", 2},
		{[]string{"COMMAND", "INFO", "get", "eval"}, KindArray, "", 2},
		{[]string{"INCR", "list"}, KindError, "WRONGTYPE Operation against a key holding the wrong kind of value", 0},
		{[]string{"FOO"}, KindError, "ERR unknown command 'FOO', with args beginning with: ", 0},
	}
	for _, tt := range tests {
		rp := cl.do(tt.args...)
		if rp.Kind != tt.kind || string(rp.Str) != tt.str || rp.Int != tt.n {
			t.Errorf("reply to %q read as %v %q %d; want %v %q %d", tt.args, rp.Kind, cut(string(rp.Str)), rp.Int, tt.kind, cut(tt.str), tt.n)
		}
		if err := checkOneValue(rp.Bytes()); err != nil {
			t.Errorf("reply to %q read as %q: %v", tt.args, cut(string(rp.Bytes())), err)
		}
	}
}

// checkOneValue checks that b is exactly one RESP value, reading it with
// bufio rather than this package.
func checkOneValue(b []byte) error {
	br := bufio.NewReader(bytes.NewReader(b))
	if err := skipOne(br); err != nil {
		return err
	}
	if br.Buffered() != 0 {
		return fmt.Errorf("%d bytes after the value", br.Buffered())
	}
	return nil
}

func skipOne(br *bufio.Reader) error {
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasSuffix(line, "\r\n") {
		return fmt.Errorf("bad line %q: %v", line, err)
	}
	n, _ := strconv.Atoi(line[1 : len(line)-2])
	switch line[0] {
	case '$':
		if n >= 0 {
			_, err = br.Discard(n + 2)
		}
	case '*':
		for range n {
			if err = skipOne(br); err != nil {
				break
			}
		}
	}
	return err
}

// TestCheckMatchesRedis sends redis-server a request with a wrong number of
// arguments for every command that can have one, and unknown commands, and
// checks that it answers Check's error.
func TestCheckMatchesRedis(t *testing.T) {
	srv := startRedis(t)
	cl := srv.dial(t)
	a200 := strings.Repeat("a", 200)
	tests := [][]string{
		{"FOO"}, {"FOO", "a", "b"}, {"F\x00OO", "a\x00b", "c\r\nd"}, {"FOO", a200, "b"},
		{"FOO", a200[:100], a200, "c"}, {a200}, {"MSET", "a", "1", "b"}, {"MSETNX", "a", "1", "b"},
	}
	for _, c := range Commands() {
		switch {
		case c.Arity == 1: // none can be sent with fewer
			tests = append(tests, argsOf(c.Name, c.Arity+1))
		case c.Arity > 1:
			tests = append(tests, argsOf(c.Name, c.Arity+1), argsOf(strings.ToUpper(c.Name), c.Arity-1))
		case c.Arity < -1:
			tests = append(tests, argsOf(c.Name, -c.Arity-1))
		}
	}
	for _, args := range tests {
		var bargs [][]byte
		for _, a := range args {
			bargs = append(bargs, []byte(a))
		}
		_, err := Check(bargs)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Check(%q) = %v; want an *Error", args, err)
			continue
		}
		if rp := cl.do(args...); string(rp.Bytes()) != string(AppendError(nil, e.Reply)) {
			t.Errorf("redis-server answers %q with %q; Check says %q", args, rp.Bytes(), e.Reply)
		}
	}
}

// TestSplitMatchesRedis sends requests of every split command both whole to
// one redis-server and split over three others, the keys spread by a hash, and
// checks that the merged replies, and the data left behind, are the same.
func TestSplitMatchesRedis(t *testing.T) {
	whole := startRedis(t).dial(t)
	var shards []*client
	for range 3 {
		shards = append(shards, startRedis(t).dial(t))
	}
	route := func(key []byte) (int, error) {
		h := uint32(2166136261)
		for _, c := range key {
			h = (h ^ uint32(c)) * 16777619
		}
		return int(h % uint32(len(shards))), nil
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	key := func() string { return fmt.Sprintf("key:%d", rnd.IntN(40)) }
	var s Split
	var replies []*Reply
	for i := range 300 {
		name := []string{"MGET", "MSET", "DEL", "UNLINK", "EXISTS", "TOUCH"}[rnd.IntN(6)]
		args := [][]byte{[]byte(name)}
		for range 1 + rnd.IntN(12) {
			args = append(args, []byte(key()))
			if name == "MSET" {
				args = append(args, fmt.Appendf(nil, "value %d", i))
			}
		}
		c, err := Check(args)
		if err != nil {
			t.Fatal(err)
		}
		want := string(whole.doRaw(AppendRequest(nil, &Request{Args: args})).Bytes())
		if err := s.Build(c, args, route); err != nil {
			t.Fatal(err)
		}
		replies = replies[:0]
		for _, sub := range s.Subs { // a copy of each reply: the clients reuse theirs
			replies = append(replies, replyOf(t, string(shards[sub.Server].doRaw(sub.Request).Bytes())))
		}
		if got := string(s.Merge(nil, replies)); got != want {
			t.Fatalf("%q: split over servers, the reply is %q; redis-server answers %q", quoteArgs(args), got, want)
		}
	}
	for i := range 40 {
		k := fmt.Sprintf("key:%d", i)
		srv, _ := route([]byte(k))
		if got, want := shards[srv].do("GET", k).Bytes(), whole.do("GET", k).Bytes(); string(got) != string(want) {
			t.Errorf("GET %s: %q on its server; %q where every request went whole", k, got, want)
		}
	}
}

// TestLocalRepliesMatchRedis checks the replies of local.go against
// redis-server's, without and with a password.
func TestLocalRepliesMatchRedis(t *testing.T) {
	open := startRedis(t).dial(t)
	locked := startRedis(t, "--requirepass", "sesame").dial(t)
	for _, tt := range []struct {
		cl   *client
		args []string
		want string
	}{
		{locked, []string{"GET", "k"}, ReplyNoAuth},
		{locked, []string{"HELLO", "2"}, ReplyHelloNoAuth},
		{locked, []string{"AUTH", "wrong"}, ReplyWrongPass},
		{locked, []string{"AUTH", "nobody", "sesame"}, ReplyWrongPass},
		{open, []string{"AUTH", "any"}, ReplyNoPassword},
		{open, []string{"HELLO", "4"}, ReplyNoProto},
		{open, []string{"HELLO", "1"}, ReplyNoProto},
		{open, []string{"HELLO", "two"}, ReplyBadProto},
		{open, []string{"SELECT", "16"}, ReplyDBRange},
		{open, []string{"SELECT", "-1"}, ReplyDBRange},
		{open, []string{"SELECT", "x"}, ReplyNotInteger},
	} {
		if got := string(tt.cl.do(tt.args...).Bytes()); got != string(AppendError(nil, tt.want)) {
			t.Errorf("redis-server answers %q with %q; want %q", tt.args, got, tt.want)
		}
	}
}
