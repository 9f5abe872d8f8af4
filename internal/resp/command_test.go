package resp

import (
	"errors"
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	for name, want := range map[string]string{
		"get": "get", "GET": "get", "gEt": "get", "MGET": "mget", "georadiusbymember_ro": "georadiusbymember_ro",
		"restore-asking": "restore-asking", "EVALSHA_RO": "evalsha_ro",
		"": "", "ge": "", "gett": "", "get ": "", "g\x00t": "", strings.Repeat("a", 100): "", "GET\xc0": "",
	} {
		got := ""
		if c := Lookup([]byte(name)); c != nil {
			got = c.Name
		}
		if got != want {
			t.Errorf("Lookup(%q) = %q; want %q", name, got, want)
		}
	}
	name := []byte("ZRANGEBYSCORE")
	if allocs := testing.AllocsPerRun(1000, func() { Lookup(name) }); allocs != 0 {
		t.Errorf("Lookup allocates %v times; want 0", allocs)
	}
}

// twemproxyCommands are the Redis commands twemproxy 0.5 serves
// (src/nc_message.h), each of which a proxy must serve too.
var twemproxyCommands = strings.Fields(`append auth bitcount bitfield bitpos command copy decr decrby del dump
	eval evalsha exists expire expireat geoadd geodist geohash geopos georadius georadiusbymember geosearch
	geosearchstore get getbit getdel getex getrange getset hdel hexists hget hgetall hincrby hincrbyfloat hkeys
	hlen hmget hmset hrandfield hscan hset hsetnx hstrlen hvals incr incrby incrbyfloat lindex linsert llen
	lmove lolwut lpop lpos lpush lpushx lrange lrem lset ltrim mget move mset persist pexpire pexpireat pfadd
	pfcount pfmerge ping psetex pttl quit restore rpop rpoplpush rpush rpushx sadd scard sdiff sdiffstore
	select set setbit setex setnx setrange sinter sinterstore sismember smembers smismember smove sort spop
	srandmember srem sscan strlen sunion sunionstore touch ttl type unlink zadd zcard zcount zdiff zdiffstore
	zincrby zinter zinterstore zlexcount zmscore zpopmax zpopmin zrandmember zrange zrangebylex
	zrangebyscore zrangestore zrank zrem zremrangebylex zremrangebyrank zremrangebyscore zrevrange
	zrevrangebylex zrevrangebyscore zrevrank zscan zscore zunion zunionstore`)

func TestRoutes(t *testing.T) {
	want := map[string]Route{}
	for _, name := range twemproxyCommands {
		want[name] = RouteKeys
	}
	for _, name := range strings.Fields("mget mset del unlink exists touch") {
		want[name] = RouteSplit
	}
	for _, name := range strings.Fields("ping echo quit auth select hello client") {
		want[name] = RouteLocal
	}
	for _, name := range strings.Fields("command lolwut") {
		want[name] = RouteAny
	}
	for _, name := range strings.Fields(`keys scan randomkey dbsize flushall flushdb multi exec discard watch unwatch
		subscribe psubscribe unsubscribe punsubscribe ssubscribe publish spublish pubsub cluster config info
		monitor shutdown blpop brpop brpoplpush blmove blmpop bzpopmin bzpopmax bzmpop xread xreadgroup
		wait script function migrate memory swapdb time save bgsave`) {
		want[name] = RouteNone
	}
	// Commands twemproxy lacks that a proxy routes by their keys too.
	for _, name := range strings.Fields(`expiretime pexpiretime lmpop zmpop sintercard zintercard lcs substr
		xadd xrange xrevrange xlen xdel xtrim xack xclaim xautoclaim xpending xsetid eval_ro evalsha_ro
		fcall fcall_ro sort_ro georadius_ro georadiusbymember_ro bitfield_ro msetnx rename renamenx bitop
		xinfo xgroup object`) {
		want[name] = RouteKeys
	}
	for name, route := range want {
		c := Lookup([]byte(name))
		if c == nil {
			t.Errorf("Lookup(%q) = nil", name)
			continue
		}
		if c.Route != route {
			t.Errorf("%s: Route = %v; want %v", name, c.Route, route)
		}
	}
	for _, c := range Commands() {
		if c.Route == RouteKeys || c.Route == RouteSplit {
			if c.keys.kind == keyNone {
				t.Errorf("%s: routed by its keys, but has no key spec", c.Name)
			}
		} else if c.keys.kind != keyNone {
			t.Errorf("%s: route %v, but has a key spec", c.Name, c.Route)
		}
		if (c.Route == RouteSplit) != (c.merge != mergeNone) || (c.Route == RouteSplit) != (c.keyStep() != 0) {
			t.Errorf("%s: route %v, merge %d, keyStep %d", c.Name, c.Route, c.merge, c.keyStep())
		}
	}
	if got := Lookup([]byte("mset")).keyStep(); got != 2 {
		t.Errorf("mset: keyStep() = %d; want 2", got)
	}
	if got := Lookup([]byte("del")).keyStep(); got != 1 {
		t.Errorf("del: keyStep() = %d; want 1", got)
	}
}

func TestCommandsID(t *testing.T) {
	cs := Commands()
	for i, c := range cs {
		if c.ID() != i || Lookup([]byte(c.Name)) != c {
			t.Errorf("Commands()[%d] is %q, ID %d; Lookup gives %p, not %p", i, c.Name, c.ID(), Lookup([]byte(c.Name)), c)
		}
		if i > 0 && cs[i-1].Name >= c.Name {
			t.Errorf("Commands() not sorted: %q before %q", cs[i-1].Name, c.Name)
		}
	}
}

func TestRouteString(t *testing.T) {
	for r, want := range map[Route]string{RouteNone: "none", RouteKeys: "keys", RouteSplit: "split", RouteAny: "any", RouteLocal: "local", 12: "Route(12)"} {
		if got := r.String(); got != want {
			t.Errorf("Route(%d).String() = %q; want %q", r, got, want)
		}
	}
}

func splitArgs(s string) [][]byte {
	var args [][]byte
	for _, f := range strings.Split(s, " ") {
		args = append(args, []byte(f))
	}
	return args
}

func TestCheck(t *testing.T) {
	a200 := strings.Repeat("a", 200)
	tests := []struct {
		args [][]byte
		cmd  string // the command returned
		err  string // the *Error's Reply
	}{
		{args: splitArgs("GET k"), cmd: "get"},
		{args: splitArgs("get"), cmd: "get", err: "ERR wrong number of arguments for 'get' command"},
		{args: splitArgs("GET a b"), cmd: "get", err: "ERR wrong number of arguments for 'get' command"},
		{args: splitArgs("MGET a b c"), cmd: "mget"},
		{args: splitArgs("MGET"), cmd: "mget", err: "ERR wrong number of arguments for 'mget' command"},
		{args: splitArgs("MSET a 1 b 2"), cmd: "mset"},
		{args: splitArgs("MSET a 1 b"), cmd: "mset", err: "ERR wrong number of arguments for 'mset' command"},
		{args: splitArgs("MSETNX a 1 b"), cmd: "msetnx", err: "ERR wrong number of arguments for 'msetnx' command"},
		{args: splitArgs("HMSET h f v g"), cmd: "hmset"},
		{args: splitArgs("KEYS *"), cmd: "keys", err: "ERR command 'keys' is not supported by the proxy"},
		{args: splitArgs("keys"), cmd: "keys", err: "ERR wrong number of arguments for 'keys' command"},
		{args: splitArgs("SubScribe ch"), cmd: "subscribe", err: "ERR command 'subscribe' is not supported by the proxy"},
		{args: splitArgs("PING"), cmd: "ping"},
		{args: splitArgs("COMMAND"), cmd: "command"},
		{args: splitArgs("FOO"), err: "ERR unknown command 'FOO', with args beginning with: "},
		{args: splitArgs("FOO a b"), err: "ERR unknown command 'FOO', with args beginning with: 'a' 'b' "},
		{args: [][]byte{[]byte("F\x00OO"), []byte("a\x00b"), []byte("c\r\nd")}, err: "ERR unknown command 'F', with args beginning with: 'a' 'c  d' "},
		{args: splitArgs("FOO " + a200 + " b"), err: "ERR unknown command 'FOO', with args beginning with: '" + a200[:128] + "' "},
		{args: splitArgs("FOO " + a200[:100] + " " + a200 + " c"), err: "ERR unknown command 'FOO', with args beginning with: '" + a200[:100] + "' '" + a200[:25] + "' "},
		{args: [][]byte{[]byte(a200)}, err: "ERR unknown command '" + a200[:128] + "', with args beginning with: "},
		{args: nil, err: "ERR empty request"},
	}
	for _, tt := range tests {
		c, err := Check(tt.args)
		name, reply := "", ""
		if c != nil {
			name = c.Name
		}
		var e *Error
		if errors.As(err, &e) {
			reply = e.Reply
		} else if err != nil {
			reply = "not an *Error: " + err.Error()
		}
		if name != tt.cmd || reply != tt.err {
			t.Errorf("Check(%q) = %q, %q; want %q, %q", tt.args, name, reply, tt.cmd, tt.err)
		}
	}
	args := splitArgs("MGET a b c d e f g h")
	if allocs := testing.AllocsPerRun(1000, func() { Check(args) }); allocs != 0 {
		t.Errorf("Check allocates %v times; want 0", allocs)
	}
}

func TestAppendKeys(t *testing.T) {
	tests := []struct {
		args string
		keys string // the keys, space-separated
		ok   bool
	}{
		{"GET k", "k", true},
		{"SET k v EX 10", "k", true},
		{"MGET a b c", "a b c", true},
		{"MSET a 1 b 2", "a b", true},
		{"COPY a b DB 1", "a b", true},
		{"BITOP AND d a b", "d a b", true},
		{"SDIFF a b", "a b", true},
		{"EVAL s 0", "", true},
		{"EVAL s 2 a b c", "a b", true},
		{"EVAL s 3 a b", "", false},
		{"EVAL s -1 a", "", false},
		{"EVAL s 1x a", "", false},
		{"ZUNIONSTORE d 2 a b WEIGHTS 1 2", "d a b", true},
		{"ZUNION 0 a", "", false},
		{"ZUNION 1 a b", "a", true},
		{"LMPOP 2 a b LEFT", "a b", true},
		{"SORT k BY x LIMIT 0 1 GET y STORE d", "k d", true},
		{"SORT k LIMIT STORE x STORE", "k", true},
		{"SORT k store d1 STORE d2", "k d2", true},
		{"SORT_RO k STORE d", "k", true},
		{"GEORADIUS k 1 2 3 m STOREDIST b STORE a", "k a", true},
		{"GEORADIUS k 1 2 3 m STORE a STORE b", "k b", true},
		{"GEORADIUS k 1 2 3 m COUNT store STORE b", "k b", true},
		{"SORT k STORE by GET y*", "k by", true},
		{"GEORADIUS k 1 2 3 m STORE", "k", true},
		{"GEORADIUSBYMEMBER k m 3 km STORE a", "k a", true},
		{"XINFO STREAM k FULL", "k", true},
		{"xgroup create k g $", "k", true},
		{"OBJECT encoding k", "k", true},
		{"XINFO HELP", "", false},
		{"XINFO STREAM", "", false},
		{"XINFO FOO k", "", false},
	}
	for _, tt := range tests {
		args := splitArgs(tt.args)
		c, err := Check(args)
		if err != nil {
			t.Fatalf("Check(%q): %v", tt.args, err)
		}
		idx, ok := c.AppendKeys(nil, args)
		var keys []string
		for _, i := range idx {
			keys = append(keys, string(args[i]))
		}
		if strings.Join(keys, " ") != tt.keys || ok != tt.ok {
			t.Errorf("AppendKeys(%q) = %q, %v; want %q, %v", tt.args, keys, ok, tt.keys, tt.ok)
		}
	}
	args := splitArgs("EVALSHA abc 3 a b c d")
	c := Lookup(args[0])
	dst := make([]int, 0, 8)
	if allocs := testing.AllocsPerRun(1000, func() { dst, _ = c.AppendKeys(dst[:0], args) }); allocs != 0 {
		t.Errorf("AppendKeys allocates %v times; want 0", allocs)
	}
}

// TestAppendSortPatterns: the patterns of SORT that name keys, as sort.c
// reads its options: the last BY and every GET, with a '*' (without one, BY
// does not sort and GET reads nil), LIMIT's two numbers and STORE's key
// skipped, any case. The last BY comes last.
func TestAppendSortPatterns(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{"SORT k", ""},
		{"SORT k BY w_* GET o_* GET # GET h_*->f", "o_* h_*->f w_*"},
		{"SORT k BY nosort GET #", ""},
		{"sort_ro k by W_* limit 0 10 get O_*", "O_* W_*"},
		{"SORT k LIMIT GET x GET y*", "y*"}, // GET and x are LIMIT's
		{"SORT k GET", ""},
		{"SORT k ALPHA DESC STORE d", ""},
		{"SORT k GET nostar GET # GET #*", "#*"},
		{"SORT k BY a_* BY nosort", ""},
		{"SORT k BY nosort BY a_*", "a_*"},
		{"SORT k STORE by GET y*", "y*"},
		{"SORT k STORE limit GET y* GET z*", "y* z*"},
		{"SORT k STORE get BY w_*", "w_*"},
	} {
		args := splitArgs(tt.args)
		var got []string
		for _, i := range AppendSortPatterns(nil, args) {
			got = append(got, string(args[i]))
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("AppendSortPatterns(%q) = %q; want %q", tt.args, got, tt.want)
		}
	}
}

func TestServerOf(t *testing.T) {
	tests := []struct {
		args string
		srv  int
		err  string // the error's text
	}{
		{"GET apple", 0, ""},
		{"SET banana v", 1, ""},
		{"SDIFF apple avocado", 0, ""},
		{"SDIFF apple banana", -1, "resp: ERR keys of 'sdiff' are on different servers"},
		{"RENAME apple banana", -1, "resp: ERR keys of 'rename' are on different servers"},
		{"EVAL s 2 apple avocado", 0, ""},
		{"EVAL s 2 apple banana", -1, "resp: ERR keys of 'eval' are on different servers"},
		{"EVAL s 0", -1, "resp: ERR 'eval' without keys cannot be routed"},
		{"EVAL s 5 apple", -1, ""},
		{"XINFO HELP", -1, ""},
		{"GET xylophone", -1, "no server for x"},
		{"SDIFF apple xylophone", -1, "no server for x"},
	}
	for _, tt := range tests {
		args := splitArgs(tt.args)
		c, err := Check(args)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := c.ServerOf(args, byFirstLetter)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if srv != tt.srv || msg != tt.err {
			t.Errorf("ServerOf(%q) = %d, %q; want %d, %q", tt.args, srv, msg, tt.srv, tt.err)
		}
	}
	args := splitArgs("EVAL s 3 apple avocado almond arg")
	c := Lookup(args[0])
	if allocs := testing.AllocsPerRun(1000, func() { c.ServerOf(args, byFirstLetter) }); allocs != 0 {
		t.Errorf("ServerOf allocates %v times; want 0", allocs)
	}
}

func TestErrorReplies(t *testing.T) {
	c := Lookup([]byte("sdiff"))
	for _, tt := range []struct{ got, want string }{
		{UnsupportedError(c).Reply, "ERR command 'sdiff' is not supported by the proxy"},
		{CrossServerError(c).Reply, "ERR keys of 'sdiff' are on different servers"},
		{NoKeyError(Lookup([]byte("eval"))).Reply, "ERR 'eval' without keys cannot be routed"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q; want %q", tt.got, tt.want)
		}
	}
}

func BenchmarkLookup(b *testing.B) {
	for _, name := range []string{"GET", "zrangebyscore", "NOSUCHCOMMAND"} {
		b.Run(name, func(b *testing.B) {
			n := []byte(name)
			b.ReportAllocs()
			for range b.N {
				Lookup(n)
			}
		})
	}
}
