package proxy

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcache"
	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/testprog"
)

// statLines parses the STAT lines of a reply to stats.
func statLines(t *testing.T, out string) map[string]string {
	t.Helper()
	stats, err := memcachedtest.ParseStats(out)
	if err != nil {
		t.Fatal(err)
	}
	return stats
}

// TestDataPortStats checks the proxy's answer to stats on a pool's port: its
// own counters, which follow what its clients do.
func TestDataPortStats(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	p := startProxy(t, poolYAML("", servers...))
	c := dial(t, p.Addr("alpha").String())
	dial(t, p.Addr("alpha").String()).mustDo("version\r\n")
	c.mustDo("set a 0 0 1\r\nx\r\nset b 0 0 1\r\ny\r\nget a b c\r\nget c\r\ntouch a 10\r\nfoo\r\n")
	before := p.serverRequests("alpha")
	s := statLines(t, c.mustDo("stats\r\n"))
	if n := p.serverRequests("alpha") - before; n != 0 {
		t.Errorf("stats sent %d requests to servers; want none", n)
	}
	want := map[string]string{
		"curr_connections": "2", "total_connections": "2",
		"cmd_get": "4", "get_hits": "2", "get_misses": "2", "cmd_set": "2", "cmd_touch": "1", "cmd_flush": "0",
		"requests_get": "2", "requests_set": "2", "requests_mn": "2", "requests_version": "1", "requests_delete": "0",
		"refused_error": "1", "pool_servers": "2", "ejected_servers": "0", "version": statsVersion,
	}
	for name, v := range want {
		if s[name] != v {
			t.Errorf("STAT %s = %q; want %q", name, s[name], v)
		}
	}
	for _, name := range []string{"pid", "uptime", "time", "bytes_read", "bytes_written"} {
		if _, err := strconv.ParseUint(s[name], 10, 64); err != nil {
			t.Errorf("STAT %s = %q; want a number", name, s[name])
		}
	}
	if n, _ := strconv.Atoi(s["bytes_read"]); n < 80 {
		t.Errorf("STAT bytes_read = %d; want the bytes of the requests sent", n)
	}
	// stats with arguments, and memcached's commands that act on one
	// server, are refused as a server's own, not as unknown (ERROR); the
	// connection goes on.
	for _, req := range []string{"stats detail on\r\n", "stats reset\r\n", "stats settings\r\n",
		"shutdown\r\n", "slabs automove 1\r\n", "lru_crawler crawl all\r\n", "lru mode flat\r\n",
		"watch\r\n", "cache_memlimit 100\r\n", "cache_memlimit 100 noreply\r\n"} {
		if got := c.mustDo(req); got != replyServerOwn+"\r\n" {
			t.Errorf("%q answered %q; want %q", req, got, replyServerOwn)
		}
	}
	// Unknown commands, and arguments of stats memcached does not know,
	// are answered ERROR, as memcached answers them (memccapable's ascii
	// stat test sends "stats noreply").
	if got := c.mustDo("foo\r\nstats noreply\r\nstats foo\r\nversion\r\n"); !strings.HasPrefix(got, "ERROR\r\nERROR\r\nERROR\r\nVERSION ") {
		t.Errorf("an unknown command, stats noreply, stats foo, then version: %q; want ERROR thrice, then VERSION", got)
	}
	s = statLines(t, c.mustDo("stats\r\n"))
	if s["refused_not_supported_by_the_proxy"] != "10" || s["refused_error"] != "4" {
		t.Errorf("STAT refused_not_supported_by_the_proxy %q, refused_error %q; want 10, 4", s["refused_not_supported_by_the_proxy"], s["refused_error"])
	}
}

// TestDataPortTouchStats sends the same gets, gats, touches and mg to the
// proxy and to a memcached: stats counts the keys of gat and gats as
// touches, not gets, as memcached does, and touch's outcome in touch_hits
// and touch_misses; an mg with T that finds its item is a touch, one that
// misses a get's miss.
func TestDataPortTouchStats(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	p := startProxy(t, poolYAML("", servers...))
	direct := memcachedtest.Start(t)
	const reqs = "set a 0 0 1\r\nx\r\nset b 0 0 1\r\ny\r\nget a b c\r\ngets a\r\ngat 10 a nope b a\r\n" +
		"gats 10 c\r\ntouch a 10\r\ntouch zz 10\r\ntouch b 10 noreply\r\nmg a v\r\nmg zz v\r\n" +
		"mg a T30 v\r\nmg b T30\r\nmg zz T30 v\r\nmg yy T30 q\r\nmg b T30 q k\r\n"
	names := []string{"cmd_get", "get_hits", "get_misses", "cmd_touch", "touch_hits", "touch_misses"}
	got := map[string]map[string]string{}
	for _, target := range []struct{ name, addr string }{
		{"chash proxy", p.Addr("alpha").String()},
		{"memcached", direct.Addr},
	} {
		c := dial(t, target.addr)
		c.mustDo(reqs)
		got[target.name] = statLines(t, c.mustDo("stats\r\n"))
	}
	for _, name := range names {
		if got["chash proxy"][name] != got["memcached"][name] || got["memcached"][name] == "" {
			t.Errorf("STAT %s = %q through the proxy; memcached %q", name, got["chash proxy"][name], got["memcached"][name])
		}
	}
}

// TestDataPortStatsPipelined sends gets of stored keys, stats and a set in
// one write, as a pipelining client does, to the proxy and to a memcached:
// in both, stats counts the hits of the gets before it, whose replies the
// proxy has not read from its servers when it reads stats, and not the set
// after it, which the proxy has read when it answers stats.
func TestDataPortStatsPipelined(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	p := startProxy(t, poolYAML("", servers...))
	direct := memcachedtest.Start(t)
	const n = 20
	var set, gets, multi strings.Builder
	multi.WriteString("get")
	for i := range n {
		fmt.Fprintf(&set, "set k%d 0 0 1\r\n%d\r\n", i, i%10)
		fmt.Fprintf(&gets, "get k%d\r\n", i)
		fmt.Fprintf(&multi, " k%d nokey%d", i, i)
	}
	multi.WriteString("\r\n")
	for _, target := range []struct{ name, addr string }{
		{"chash proxy", p.Addr("alpha").String()},
		{"memcached", direct.Addr},
	} {
		c := dial(t, target.addr)
		c.mustDo(set.String())
		hits, misses := 0, 0
		for round := range 5 {
			req := gets.String()
			if round%2 == 1 {
				req = multi.String() // split over the two servers by the proxy
			}
			// The get and set after stats are not counted by it.
			out := c.mustDo(req + "stats\r\nget k1\r\nset k0 0 0 1\r\n0\r\n")
			i := strings.Index(out, "STAT ")
			stats, ok := strings.CutSuffix(out[max(i, 0):], "VALUE k1 0 1\r\n1\r\nEND\r\nSTORED\r\n")
			if i < 0 || !ok || strings.Count(out[:i], "VALUE ") != n {
				t.Fatalf("%s: %q, stats, get and set answered %q; want %d values, STAT lines, k1's value, STORED", target.name, req, out, n)
			}
			hits += n
			if round%2 == 1 {
				misses += n
			}
			s := statLines(t, stats)
			if s["get_hits"] != strconv.Itoa(hits) || s["get_misses"] != strconv.Itoa(misses) || s["cmd_get"] != strconv.Itoa(hits+misses) {
				t.Errorf("%s, round %d: stats after pipelined gets: get_hits %s, get_misses %s, cmd_get %s; want %d, %d, %d",
					target.name, round, s["get_hits"], s["get_misses"], s["cmd_get"], hits, misses, hits+misses)
			}
			if want := strconv.Itoa(n + round); s["cmd_set"] != want {
				t.Errorf("%s, round %d: stats before a set: cmd_set %s; want %s, the sets before it", target.name, round, s["cmd_set"], want)
			}
			hits++ // the get after stats
		}
	}
}

// TestFlushAllVerbosity checks flush_all, sent to every server of the pool,
// and verbosity, answered by the proxy, against memcached's own answers.
func TestFlushAllVerbosity(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	p := startProxy(t, poolYAML("timeout: 500", servers...))
	c := dial(t, p.Addr("alpha").String())
	direct := dial(t, servers[0].Addr)
	var keys []string
	for i := range 30 {
		k := "k" + strconv.Itoa(i)
		keys = append(keys, k)
		c.mustDo("set " + k + " 0 0 1\r\nx\r\n")
	}
	tests := []struct{ req, want string }{
		{"flush_all\r\n", "OK\r\n"},
		{"flush_all 0\r\n", "OK\r\n"},
		{"flush_all noreply\r\n", ""},
		{"flush_all 0 noreply\r\n", ""},
		{"flush_all x\r\n", "CLIENT_ERROR invalid exptime argument\r\n"},
		{"flush_all 1 2 3\r\n", "ERROR\r\n"},
		{"verbosity 1\r\n", "OK\r\n"},
		{"verbosity 1 noreply\r\n", ""},
		{"verbosity noreply\r\n", ""},
		{"verbosity x\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"verbosity\r\n", "ERROR\r\n"},
	}
	for _, tt := range tests {
		if got := c.mustDo(tt.req); got != tt.want {
			t.Errorf("%q answered %q; want %q", tt.req, got, tt.want)
		}
		if got := direct.mustDo(tt.req); got != tt.want {
			t.Errorf("memcached answers %q with %q; the table says %q", tt.req, got, tt.want)
		}
	}
	if got := c.mustDo("get " + strings.Join(keys, " ") + "\r\n"); got != "END\r\n" {
		t.Errorf("get after flush_all: %q; want every key gone", got)
	}
	for i, s := range servers {
		if got := memcachedStats(t, s.Addr)["cmd_flush"]; i > 0 && got != "4" {
			t.Errorf("server %d ran %s flush_all; want the 4 the proxy was sent", i, got)
		}
	}

	// A server down: its keys are not flushed, and the client hears it.
	servers[2].Stop()
	if got := c.mustDo("flush_all\r\n"); !strings.HasPrefix(got, "SERVER_ERROR ") {
		t.Errorf("flush_all with a server down: %q; want SERVER_ERROR", got)
	}
}

// memccapableResults runs memccapable's ASCII tests against addr and returns
// each test's outcome ("pass", "FAIL", ...).
func memccapableResults(t *testing.T, bin, addr string) map[string]string {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, "-h", host, "-p", port, "-a", "-t", "5").CombinedOutput()
	res := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(ascii [a-z ]+?)\s+\[(\w+)\]`).FindAllStringSubmatch(string(out), -1) {
		res[m[1]] = m[2]
	}
	if len(res) == 0 {
		t.Fatalf("memccapable -h %s -p %s -a: no results:\n%s", host, port, out)
	}
	return res
}

// TestMemccapable runs libmemcached's memccapable against memcached and
// through the proxy: every test that passes against memcached passes through
// the proxy.
func TestMemccapable(t *testing.T) {
	bin := testprog.LookPath(t, "memccapable")
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	p := startProxy(t, poolYAML("", servers...))
	direct := memccapableResults(t, bin, servers[0].Addr)
	proxied := memccapableResults(t, bin, p.Addr("alpha").String())
	if len(direct) < 27 {
		t.Errorf("memccapable ran %d tests against memcached; want 27", len(direct))
	}
	for test, res := range direct {
		if res == "pass" && proxied[test] != "pass" {
			t.Errorf("memccapable %q: %q through the proxy; %q against memcached", test, proxied[test], res)
		}
	}
}

// TestBinaryByteMidStream: a 0x80 byte at a connection's start is
// memcached's binary protocol, refused and closed; later, at the start of a
// line, memcached answers it ERROR and reads on, and so does the proxy,
// also when the client was idle between (its reader given back and taken
// again).
func TestBinaryByteMidStream(t *testing.T) {
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("", s))
	for _, addr := range []string{s.Addr, p.Addr("alpha").String()} {
		c := dial(t, addr)
		if got := c.mustDo("get a\r\n\x80\r\nget a\r\n"); got != "END\r\nERROR\r\nEND\r\n" {
			t.Errorf("%s: get, a 0x80 line, get: %q; want END, ERROR, END", addr, got)
		}
		time.Sleep(50 * time.Millisecond) // idle
		if got := c.mustDo("\x80\x07abc\r\nget a\r\n"); got != "ERROR\r\nEND\r\n" {
			t.Errorf("%s: after an idle wait, a 0x80 line, get: %q; want ERROR, END", addr, got)
		}
	}
	c := dial(t, p.Addr("alpha").String())
	c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c.c, "\x80\x07"+strings.Repeat("\x00", 22)); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(c.br); err != nil || string(got) != memcache.ReplyBinary+"\r\n" {
		t.Errorf("a connection that starts with 0x80: %q, %v; want %q, then the close", got, err, memcache.ReplyBinary)
	}
}
