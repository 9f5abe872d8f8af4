package proxy

import (
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/redistest"
	"github.com/chash-dev/chash/internal/resp"
	"github.com/chash-dev/chash/internal/testprog"
)

// TestRedisAuthAndDB runs a pool with redis_auth and redis_db in front of
// servers that require the password: clients must AUTH first, and keys land
// in the database redis_db names, on the server the ring names. nutcracker
// 0.5.0 with the same file requires AUTH too (its NOAUTH reply lacks Redis's
// final dot), but it sends its server connections SELECT before AUTH, which
// the servers refuse, so its keys land in database 0.
func TestRedisAuthAndDB(t *testing.T) {
	servers := startRedisServers(t, 3, "--requirepass", "sesame")
	yaml := redisPoolYAML("redis_auth: sesame\nredis_db: 3\nhash_tag: \"{}\"", servers...)
	p := startProxy(t, yaml)
	c := redistest.Dial(t, p.Addr("alpha").String())
	noauth := "-" + resp.ReplyNoAuth + "\r\n"
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"GET", "k"}, noauth},
		{[]string{"PING"}, noauth},
		{[]string{"AUTH", "wrong"}, "-" + resp.ReplyWrongPass + "\r\n"},
		{[]string{"SET", "k", "v"}, noauth},
		{[]string{"AUTH", "sesame"}, "+OK\r\n"},
		{[]string{"SET", "k", "v"}, "+OK\r\n"},
		{[]string{"MSET", "a", "1", "b", "2", "c", "3"}, "+OK\r\n"},
		{[]string{"GET", "k"}, "$1\r\nv\r\n"},
		{[]string{"SELECT", "0"}, "+OK\r\n"},
		{[]string{"SELECT", "3"}, "-ERR database 3 is not served by the proxy (only 0)\r\n"},
		// MOVE and COPY's DB name databases as clients see them: 0 is
		// redis_db, another is not served.
		{[]string{"SET", "{k}1", "v"}, "+OK\r\n"},
		{[]string{"MOVE", "{k}1", "0"}, "-ERR source and destination objects are the same\r\n"},
		{[]string{"MOVE", "{k}1", "3"}, "-ERR database 3 is not served by the proxy (only 0)\r\n"},
		{[]string{"MOVE", "{k}1", "x"}, "-" + resp.ReplyNotInteger + "\r\n"},
		{[]string{"MOVE", "{k}1", "99999999999"}, "-ERR value is out of range, value must between -2147483648 and 2147483647\r\n"},
		{[]string{"COPY", "{k}1", "{k}2", "DB", "-99999999999"}, "-ERR value is out of range, value must between -2147483648 and 2147483647\r\n"},
		{[]string{"COPY", "{k}1", "{k}2", "DB", "5"}, "-ERR database 5 is not served by the proxy (only 0)\r\n"},
		{[]string{"COPY", "{k}1", "{k}2", "db", "7", "DB", "-1"}, "-" + resp.ReplyDBRange + "\r\n"},
		{[]string{"COPY", "{k}1", "{k}2", "db", "7", "DB", "0"}, ":1\r\n"},
		{[]string{"COPY", "{k}1", "{k}2", "DB", "0", "REPLACE"}, ":1\r\n"},
		{[]string{"GET", "{k}2"}, "$1\r\nv\r\n"},
	} {
		if got := c.Do(tt.args...); got != tt.want {
			t.Errorf("%q = %q; want %q", tt.args, got, tt.want)
		}
	}
	hello := redistest.Dial(t, p.Addr("alpha").String())
	if got := hello.Do("HELLO", "2", "AUTH", "default", "sesame"); !strings.HasPrefix(got, "*14\r\n$6\r\nserver\r\n") {
		t.Errorf("HELLO 2 AUTH default sesame = %q", got)
	}
	if got := hello.Do("GET", "a"); got != "$1\r\n1\r\n" {
		t.Errorf("GET a after HELLO AUTH = %q", got)
	}
	nc := redistest.Dial(t, startNutcracker(t, yaml))
	if got, want := nc.Do("GET", "k"), "-NOAUTH Authentication required\r\n"; got != want {
		t.Errorf("nutcracker before AUTH: GET k = %q; want %q", got, want)
	}
	if got := nc.Do("AUTH", "sesame") + nc.Do("SET", "n", "1"); got != "+OK\r\n+OK\r\n" {
		t.Errorf("nutcracker: AUTH sesame, SET n 1 = %q", got)
	}
	owner := redisOwner(t, yaml)
	for i, s := range servers {
		name := fmt.Sprintf("s%d", i+1)
		var want, wantNC []string
		for _, k := range []string{"a", "b", "c", "k", "{k}1", "{k}2"} {
			if owner(k) == name {
				want = append(want, k)
			}
		}
		if owner("n") == name {
			wantNC = []string{"n"}
		}
		if got := s.KeysOf(3); !slices.Equal(got, want) {
			t.Errorf("keys in database 3 of %s = %q; want %q", name, got, want)
		}
		if got := s.KeysOf(0); !slices.Equal(got, wantNC) {
			t.Errorf("keys in database 0 of %s = %q; want %q, nutcracker's", name, got, wantNC)
		}
	}
}

// TestRedisSetupRefused checks a pool whose password or database the
// servers refuse: requests fail with the server's words, and the log says
// so, once.
func TestRedisSetupRefused(t *testing.T) {
	s := redistest.Start(t, "--requirepass", "sesame")
	for _, tt := range []struct{ opts, want string }{
		{"redis_auth: wrong", "-ERR server refused the connection's setup: AUTH: WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"redis_auth: sesame\nredis_db: 99", "-ERR server refused the connection's setup: SELECT 99: ERR DB index is out of range\r\n"},
		{"", "-NOAUTH Authentication required.\r\n"}, // no setup: the server's own refusal, as it is
	} {
		var logs testprog.Buffer
		p := startProxy(t, redisPoolYAML(tt.opts, s), func(p *Proxy) { p.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
		c := redistest.Dial(t, p.Addr("alpha").String())
		if strings.Contains(tt.opts, "redis_auth") {
			c.Do("AUTH", strings.Fields(tt.opts)[1])
		}
		for range 3 {
			if got := c.Do("GET", "k"); got != tt.want {
				t.Errorf("%s: GET k = %q; want %q", tt.opts, got, tt.want)
			}
		}
		if n := strings.Count(logs.String(), `msg="server refused the connection's setup"`); tt.opts != "" && n != 1 {
			t.Errorf("%s: the refusal is logged %d times; want once:\n%s", tt.opts, n, logs.String())
		}
		p.Close()
	}
}

// startRedisLoad runs workers that set and get keys through the proxy, each
// on a connection that gave auth (if not empty), until finish.
func startRedisLoad(t *testing.T, addr, auth string, owner func(string) string, workers int) *load {
	return runLoad(t, workers, func() func(w, i int) (string, bool, error) {
		c := redistest.Dial(t, addr)
		if auth != "" {
			c.Do("AUTH", auth)
		}
		return func(w, i int) (string, bool, error) {
			key := fmt.Sprintf("w%d-%d", w, i%500)
			c.Send(redistest.Request("SET", key, "x") + redistest.Request("GET", key))
			got, err := c.ReadErr()
			if err != nil {
				return "", false, err
			}
			got2, err := c.ReadErr()
			return owner(key), got+got2 == "+OK\r\n$1\r\nx\r\n", err
		}
	})
}

// TestRedisFaults freezes a server (SIGSTOP) of a pool with a password, then
// kills and restarts it, under load: it is ejected, only its keys see
// errors, it is not readmitted while frozen, and once it answers the probe,
// which must authenticate (PING alone gets NOAUTH), it is readmitted.
func TestRedisFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	servers := startRedisServers(t, 3, "--requirepass", "sesame")
	yaml := redisPoolYAML("redis_auth: sesame\ntimeout: 200\nauto_eject_hosts: true\nserver_failure_limit: 2\nserver_retry_timeout: 300", servers...)
	p := startProxy(t, yaml)
	l := startRedisLoad(t, p.Addr("alpha").String(), "sesame", redisOwner(t, yaml), 4)
	defer l.finish()
	time.Sleep(200 * time.Millisecond)
	victim := servers[1]
	waitEjected := func(want bool, within time.Duration) bool {
		return waitFor(within, func() bool { return p.ejected("alpha", "s2") == want })
	}

	victim.Freeze()
	if !waitEjected(true, 5*time.Second) {
		t.Fatal("frozen server not ejected")
	}
	for _, name := range []string{"s1", "s3"} {
		if n := get(&l.errs, name); n != 0 {
			t.Errorf("while s2 froze, %d errors for keys of %s", n, name)
		}
	}
	time.Sleep(1200 * time.Millisecond) // several retry intervals
	if !p.ejected("alpha", "s2") {
		t.Error("frozen server readmitted")
	}
	victim.Thaw()
	if !waitEjected(false, 3*time.Second) {
		t.Fatal("thawed server not readmitted")
	}
	if !waitFor(3*time.Second, func() bool { return get(&l.ok, "s2") > 0 }) {
		t.Error("no request served by the readmitted server")
	}

	victim.Stop()
	if !waitEjected(true, 5*time.Second) {
		t.Fatal("killed server not ejected")
	}
	victim.Restart()
	if !waitEjected(false, 3*time.Second) {
		t.Fatal("restarted server not readmitted")
	}
	l.reset()
	waitFor(3*time.Second, func() bool { return get(&l.ok, "s2") >= 20 })
	if get(&l.ok, "s2") == 0 || get(&l.errs, "s2") != 0 {
		t.Errorf("after restart: %d ok, %d errors for its keys", get(&l.ok, "s2"), get(&l.errs, "s2"))
	}
}

// TestRedisMixedPools serves a memcached pool and a Redis pool from one
// file, then reloads it: a Redis server added keeps the others'
// connections, and a new redis_auth restarts the Redis pool, whose clients
// must then give the new password, while the memcached pool goes on.
func TestRedisMixedPools(t *testing.T) {
	mc := memcachedtest.Start(t)
	rs := startRedisServers(t, 3, "--requirepass", "sesame")
	file := func(auth string, n int) string {
		return poolsYAML(map[string]string{
			"cache":  poolYAML("", mc),
			"alpha":  redisPoolYAML("redis_auth: "+auth, rs[:n]...),
			"vanish": redisPoolYAML("", rs[0]),
		})
	}
	p := startProxy(t, file("sesame", 2))
	m := dial(t, p.Addr("cache").String())
	r := redistest.Dial(t, p.Addr("alpha").String())
	r.Do("AUTH", "sesame")
	if got := m.mustDo("set a 0 0 1\r\nx\r\nget a\r\n"); got != "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n" {
		t.Errorf("memcached pool: %q", got)
	}
	if got := r.Do("SET", "a", "y") + r.Do("GET", "a"); got != "+OK\r\n$1\r\ny\r\n" {
		t.Errorf("Redis pool: %q", got)
	}
	kept := p.pools["alpha"].state.Load().servers["s1"]

	f := parseConfig(t, file("sesame", 3))
	f.Pools = slices.DeleteFunc(f.Pools, func(pl *config.Pool) bool { return pl.Name == "vanish" })
	if err := p.Reload(f); err != nil {
		t.Fatal(err)
	}
	if st := p.pools["alpha"].state.Load(); len(st.list) != 3 || st.servers["s1"] != kept {
		t.Errorf("after adding a server: %d servers, s1 kept %v", len(st.list), st.servers["s1"] == kept)
	}
	if p.Addr("vanish") != nil {
		t.Error("a pool removed from the file still listens")
	}
	if got := r.Do("PING"); got != "+PONG\r\n" {
		t.Errorf("a Redis client across a reload that kept its pool: PING = %q", got)
	}

	// Another password: the pool restarts.
	if err := p.Reload(parseConfig(t, file("open-sesame", 3))); err != nil {
		t.Fatal(err)
	}
	if !r.Closed() {
		t.Error("a client of the Redis pool stays connected across a change of redis_auth")
	}
	r = redistest.Dial(t, p.Addr("alpha").String())
	if got := r.Do("AUTH", "sesame") + r.Do("AUTH", "open-sesame"); got != "-"+resp.ReplyWrongPass+"\r\n+OK\r\n" {
		t.Errorf("AUTH with the old, then the new password: %q", got)
	}
	// The servers still want sesame: the proxy says so.
	if got := r.Do("GET", "a"); !strings.HasPrefix(got, "-ERR server refused the connection's setup: AUTH: WRONGPASS") {
		t.Errorf("GET with a redis_auth the servers refuse: %q", got)
	}
	if got := m.mustDo("get a\r\n"); got != "VALUE a 0 1\r\nx\r\nEND\r\n" {
		t.Errorf("memcached pool after the Redis pool restarted: %q", got)
	}
}

// TestRedisUpdateServers replaces a Redis pool's servers in code: keys go
// where the router over the new list says.
func TestRedisUpdateServers(t *testing.T) {
	rs := startRedisServers(t, 3)
	p := startProxy(t, redisPoolYAML("hash: md5", rs[0]))
	c := redistest.Dial(t, p.Addr("alpha").String())
	y3 := redisPoolYAML("hash: md5", rs...)
	if err := p.UpdateServers("alpha", parseConfig(t, y3).Pools[0].Servers); err != nil {
		t.Fatal(err)
	}
	owner := redisOwner(t, y3)
	want := map[string][]string{}
	for i := range 60 {
		k := fmt.Sprint("key", i)
		if got := c.Do("SET", k, "v"); got != "+OK\r\n" {
			t.Fatalf("SET %s = %q", k, got)
		}
		want[owner(k)] = append(want[owner(k)], k)
	}
	for i, s := range rs {
		w := want[fmt.Sprintf("s%d", i+1)]
		slices.Sort(w)
		if got := s.Keys(); !slices.Equal(got, w) {
			t.Errorf("keys of s%d = %q; want %q", i+1, got, w)
		}
	}
}

// TestRedisTLS serves a Redis pool to TLS clients.
func TestRedisTLS(t *testing.T) {
	s := redistest.Start(t)
	cert := selfSigned(t)
	p := startProxy(t, redisPoolYAML("", s), func(p *Proxy) {
		p.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	})
	raw, err := tls.Dial("tcp", p.Addr("alpha").String(), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	c := redistest.NewConn(t, raw)
	if got := c.Do("SET", "a", "x") + c.Do("GET", "a") + c.Do("PING"); got != "+OK\r\n$1\r\nx\r\n+PONG\r\n" {
		t.Errorf("over TLS: %q", got)
	}
}

// TestRedisAdmin checks /stats and /metrics for a Redis pool: requests are
// counted by server and by Redis command name, and only the commands sent
// have series.
func TestRedisAdmin(t *testing.T) {
	servers := startRedisServers(t, 2)
	p := startProxy(t, redisPoolYAML("hash: md5", servers...), func(p *Proxy) { p.Admin = "127.0.0.1:0" })
	c := redistest.Dial(t, p.Addr("alpha").String())
	c.Do("SET", "a", "1")
	c.Do("MGET", "a", "b", "c", "d", "e", "f")
	c.Do("KEYS", "*")
	var sent uint64
	for _, name := range []string{"s1", "s2"} {
		st := adminServerStats(t, p, "alpha", name)
		n, _ := st["requests"].(float64)
		sent += uint64(n)
	}
	if sent != 3 { // SET, and MGET in two parts
		t.Errorf("/stats: %d requests to servers; want 3", sent)
	}
	// MGET's and GET's hits and misses (nil replies), summed over the
	// servers: the MGET's a and b..f, a and zz twice.
	c.Do("GET", "a")
	c.Do("GET", "zz")
	c.Do("GET", "zz")
	for name, want := range map[string]float64{"chash_proxy_get_hits_total": 2, "chash_proxy_get_misses_total": 7} {
		if got := metricValues(t, p, name)[""]; got != want {
			t.Errorf("%s = %v; want %v", name, got, want)
		}
	}
	body := scrape(t, p)
	for _, want := range []string{
		`chash_proxy_requests_total{command="set",pool="alpha"} 1`,
		`chash_proxy_requests_total{command="mget",pool="alpha"} 1`,
		`chash_proxy_requests_total{command="keys",pool="alpha"} 1`,
		`chash_proxy_request_duration_seconds_count{command="mget",pool="alpha"} 1`,
		`chash_proxy_server_request_duration_seconds_count{pool="alpha",server=`,
		`chash_proxy_fragments_total{pool="alpha"} 2`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(string(body), `command="zunionstore"`) {
		t.Error("/metrics has series of a command no client sent")
	}
}

// TestRedisBadReplies puts a server that answers out of RESP beside a real
// redis-server: its replies never reach a client, whose requests get "-ERR
// Protocol error" instead, and each is counted in /stats; the redis-server's
// keys are served throughout.
func TestRedisBadReplies(t *testing.T) {
	for _, garbage := range []string{"hello\r\n", ":1x\r\n", "$3\r\nabcde\r\n", "*1\r\n!\r\n"} {
		t.Run(fmt.Sprintf("%q", garbage), func(t *testing.T) {
			good := redistest.Start(t)
			bad := fakeServer(t, garbage)
			yaml := poolOf("redis: true\nhash: md5\ntimeout: 1000", []string{good.Addr + ":1 good", bad + ":1 bad"})
			p := startProxy(t, yaml, func(p *Proxy) { p.Admin = "127.0.0.1:0" })
			owner := redisOwner(t, yaml)
			c := redistest.Dial(t, p.Addr("alpha").String())
			seen := map[string]int{}
			for i := range 100 {
				key := fmt.Sprint("k", i)
				got := c.Do("SET", key, "x") + c.Do("GET", key)
				switch o := owner(key); {
				case o == "bad" && got != "-ERR Protocol error\r\n-ERR Protocol error\r\n":
					t.Errorf("%s, a key of the bad server: %q; want Protocol errors", key, got)
				case o == "good" && got != "+OK\r\n$1\r\nx\r\n":
					t.Errorf("%s, a key of redis-server: %q", key, got)
				}
				seen[owner(key)]++
			}
			if seen["bad"] == 0 || seen["good"] == 0 {
				t.Fatalf("keys of the servers: %v; want some of each", seen)
			}
			if n, _ := adminServerStats(t, p, "alpha", "bad")["server_protocol_errors"].(float64); n < 1 {
				t.Errorf("/stats: server_protocol_errors of the bad server = %v; want at least 1", n)
			}
			if n := adminServerStats(t, p, "alpha", "good")["server_protocol_errors"]; n != 0.0 {
				t.Errorf("/stats: server_protocol_errors of redis-server = %v; want 0", n)
			}
		})
	}
}

// TestRedisAuthThenSplitRequest: a client sends AUTH and, in the same write,
// the start of a request longer than an unauthenticated client may send (a
// bulk of 20,000 bytes, twelve arguments), the rest in a later write: the
// proxy answers both, as Redis does, rather than close the connection.
func TestRedisAuthThenSplitRequest(t *testing.T) {
	servers := startRedisServers(t, 1, "--requirepass", "sesame")
	p := startProxy(t, redisPoolYAML("redis_auth: sesame", servers...))
	big := strings.Repeat("q", 20000)
	mget := "*12\r\n$4\r\nMGET\r\n" + strings.Repeat("$1\r\na\r\n", 11)
	for _, tt := range []struct{ first, rest, want string }{
		{"*2\r\n$4\r\nAUTH\r\n$6\r\nsesame\r\n*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$20000\r\n",
			big + "\r\n*2\r\n$6\r\nSTRLEN\r\n$3\r\nbig\r\n", "+OK\r\n+OK\r\n:20000\r\n"},
		{"*2\r\n$4\r\nAUTH\r\n$6\r\nsesame\r\n" + mget[:30], mget[30:], "+OK\r\n*11\r\n" + strings.Repeat("$-1\r\n", 11)},
	} {
		conn, err := net.Dial("tcp", p.Addr("alpha").String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(conn, tt.first); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // the proxy reads the first write alone
		if _, err := io.WriteString(conn, tt.rest); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(tt.want))
		if n, err := io.ReadFull(conn, got); err != nil {
			t.Errorf("after AUTH and %.40q...: %q, %v; want %q", tt.first[28:], got[:n], err, tt.want)
		} else if string(got) != tt.want {
			t.Errorf("after AUTH and %.40q...: %q; want %q", tt.first[28:], got, tt.want)
		}
	}
}

// TestRedisHelloAuthMatches sends HELLO's refusals on a pool with a password,
// each on a new connection, to redis-server with that password and through
// the proxy: the same replies, in Redis's order of checks (syntax, password,
// name, NOAUTH), and NOPROTO for protocol 3 only where Redis would switch to
// it, which leaves the client unauthenticated.
func TestRedisHelloAuthMatches(t *testing.T) {
	s := redistest.Start(t, "--requirepass", "sesame")
	p := startProxy(t, redisPoolYAML("redis_auth: sesame", s))
	for _, req := range [][]string{
		{"HELLO", "2"},
		{"HELLO", "3"},
		{"HELLO", "4"},
		{"HELLO", "x"},
		{"HELLO", "3", "FOO"},
		{"HELLO", "3", "SETNAME"},
		{"HELLO", "2", "SETNAME", "a b"},
		{"HELLO", "3", "SETNAME", "a b"},
		{"HELLO", "3", "AUTH", "default", "nope"},
		{"HELLO", "2", "AUTH", "default", "nope", "SETNAME", "a b"},
		{"HELLO", "2", "AUTH", "default", "sesame", "SETNAME", "a b"},
	} {
		want := redistest.Dial(t, s.Addr).Do(req...)
		if got := redistest.Dial(t, p.Addr("alpha").String()).Do(req...); got != want {
			t.Errorf("%q through the proxy = %q; redis-server %q", req, got, want)
		}
	}
	c := redistest.Dial(t, p.Addr("alpha").String())
	if got := c.Do("HELLO", "3", "AUTH", "default", "sesame"); got != "-NOPROTO unsupported protocol version: the proxy speaks RESP2 only\r\n" {
		t.Errorf("HELLO 3 AUTH default sesame = %q; want NOPROTO", got)
	}
	if got := c.Do("PING"); got != "-NOAUTH Authentication required.\r\n" {
		t.Errorf("PING after a refused HELLO 3 AUTH = %q; want NOAUTH", got)
	}
}
