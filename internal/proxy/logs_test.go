package proxy

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/redistest"
	"github.com/chash-dev/chash/internal/testprog"
)

// jsonLogs returns the records logged in JSON to logs with the message msg.
func jsonLogs(t *testing.T, logs *testprog.Buffer, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(logs.String(), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// TestLogs checks what the proxy logs once: a server going down and coming
// back (not each failed connection), a class of refused requests (not each
// request), a reload's movement with the same keys whatever the servers, and
// a clean shutdown.
func TestLogs(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	var logs testprog.Buffer
	yaml := poolYAML("timeout: 300", servers...)
	owner := ownerFunc(t, yaml)
	p := startProxy(t, yaml, func(p *Proxy) {
		p.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		p.Admin = "127.0.0.1:0"
	})
	c := dial(t, p.Addr("alpha").String())

	// A server down for many requests, then up: a get of keys of each server.
	keys := "get"
	var of [2]int
	for i := 0; of[0] < 5 || of[1] < 5; i++ {
		k := "k" + itoa(i)
		for j, s := range servers {
			if owner(k) == s.Addr && of[j] < 5 {
				keys += " " + k
				of[j]++
			}
		}
	}
	keys += "\r\n"
	c.mustDo(keys)
	servers[1].Stop()
	// Until a connection is refused (a dying memcached may still take one),
	// then many more.
	for deadline := time.Now().Add(5 * time.Second); len(jsonLogs(t, &logs, "server down")) == 0 && time.Now().Before(deadline); {
		c.mustDo(keys)
		time.Sleep(10 * time.Millisecond)
	}
	for range 20 {
		c.mustDo(keys)
	}
	if got := jsonLogs(t, &logs, "server down"); len(got) != 1 || got[0]["server"] != servers[1].Addr {
		t.Errorf("server down: %d lines %v; want one, for %s; logs:\n%s", len(got), got, servers[1].Addr, logs.String())
	}
	servers[1].Restart()
	deadline := time.Now().Add(5 * time.Second)
	for len(jsonLogs(t, &logs, "server up")) == 0 && time.Now().Before(deadline) {
		c.mustDo(keys)
		time.Sleep(20 * time.Millisecond)
	}
	c.mustDo(keys)
	if got := jsonLogs(t, &logs, "server up"); len(got) != 1 {
		t.Errorf("server up: %d lines %v; want one", len(got), got)
	} else if down := jsonLogs(t, &logs, "server down"); got[0]["level"] != down[0]["level"] {
		// A log read at the level of "server down" must show its end.
		t.Errorf("server up at level %v, server down at %v; want the same", got[0]["level"], down[0]["level"])
	}

	// Refused requests: one line a class, with the count.
	for range 5 {
		// delete's usage is a bad command line format too.
		c.mustDo("bogus\r\nget " + strings.Repeat("k", 251) + "\r\ndelete k 1\r\n")
	}
	refused := jsonLogs(t, &logs, "requests refused")
	classes := map[string]int{}
	for _, r := range refused {
		classes[r["class"].(string)]++
	}
	if len(refused) != 2 || classes["error"] != 1 || classes["bad_command_line_format"] != 1 {
		t.Errorf("requests refused: %v; want one line for each of two classes", refused)
	}
	if s := statLines(t, c.mustDo("stats\r\n")); s["refused_error"] != "5" || s["refused_bad_command_line_format"] != "10" {
		t.Errorf("stats: refused_error %q, refused_bad_command_line_format %q; want 5 and 10", s["refused_error"], s["refused_bad_command_line_format"])
	}
	metrics := adminGet(t, p, "/metrics")
	for _, want := range []string{
		`chash_proxy_refused_requests_total{class="error",pool="alpha"} 5`,
		`chash_proxy_refused_requests_total{class="bad_command_line_format",pool="alpha"} 10`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}

	// A reload: the moved flows in one list.
	reloadAlpha(t, p, poolYAML("timeout: 300", servers[0]))
	// The movement is measured off the path of the reload, and logged after.
	moved := jsonLogs(t, &logs, "reload: key space moved")
	for deadline := time.Now().Add(10 * time.Second); len(moved) == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		moved = jsonLogs(t, &logs, "reload: key space moved")
	}
	if len(moved) != 1 {
		t.Fatalf("reload: %d lines %v; want one", len(moved), moved)
	}
	for _, key := range []string{"pool", "moved", "method", "added", "removed", "reweighted", "readdressed", "routing", "flows", "changes"} {
		if _, ok := moved[0][key]; !ok {
			t.Errorf("reload line %v lacks %q", moved[0], key)
		}
	}
	if len(moved[0]) != 3+10 { // time, level, msg and the ten
		t.Errorf("reload line %v: keys beyond the fixed ones", moved[0])
	}
	if flows, _ := moved[0]["flows"].([]any); len(flows) != 1 || !strings.HasPrefix(flows[0].(string), servers[1].Addr+"->"+servers[0].Addr+":0.") {
		t.Errorf("reload flows %v; want one, from %s to %s", moved[0]["flows"], servers[1].Addr, servers[0].Addr)
	}
	// A server named by an alias moves to another address: nothing moves in
	// the ring, and the line says where it went. A reload that changes no
	// server logs no line at Info.
	settings := "timeout: 300"
	reload := func(lines ...string) {
		t.Helper()
		reloadAlpha(t, p, poolOf(settings, lines))
	}
	// Each reload waits for the line of the one before: changes within a
	// second of each other are measured together.
	lines := func() int { return len(jsonLogs(t, &logs, "reload: key space moved")) }
	waitLine := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); lines() < n; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no reload line %d in 10s; logs:\n%s", n, logs.String())
			}
		}
	}
	reload(servers[0].Addr + ":1 s0")
	waitLine(2)
	reload(servers[1].Addr + ":1 s0")
	waitLine(3)
	reload(servers[1].Addr + ":1 s0")
	time.Sleep(moveEvery + 200*time.Millisecond) // a line of the reload that changed nothing would be out
	moved = jsonLogs(t, &logs, "reload: key space moved")
	want := "s0:" + servers[0].Addr + "->" + servers[1].Addr
	if r, _ := moved[2]["readdressed"].([]any); len(r) != 1 || r[0] != want || moved[2]["moved"] != "0.000000" {
		t.Errorf("the readdressing's line %v; want readdressed [%s], nothing moved", moved[2], want)
	}
	if len(moved) != 3 {
		t.Errorf("%d reload lines; want 3, none at Info for the reload that changed nothing: %v", len(moved), moved)
	}
	// A server's weight changes: the line names it, with both weights, and
	// the server keeps its connections and counters.
	reload(servers[1].Addr+":1 s0", servers[0].Addr+":1 s1")
	waitLine(4)
	s1 := p.pools["alpha"].state.Load().servers["s1"]
	reload(servers[1].Addr+":1 s0", servers[0].Addr+":3 s1")
	waitLine(5)
	moved = jsonLogs(t, &logs, "reload: key space moved")
	if r, _ := moved[4]["reweighted"].([]any); len(r) != 1 || r[0] != "s1:1->3" || moved[4]["moved"] == "0.000000" {
		t.Errorf("the reweighting's line %v; want reweighted [s1:1->3], keys moved", moved[4])
	}
	if st := p.pools["alpha"].state.Load(); st.servers["s1"] != s1 || st.nodes(st.live)[1].Weight != 3 {
		t.Errorf("after s1's weight changed, s1 is a new server (%v) or has weight %d in the ring; want the same, weight 3",
			st.servers["s1"] != s1, st.nodes(st.live)[1].Weight)
	}
	// The key hash changes: keys move between servers that all stay, and
	// the line says what changed.
	settings = "timeout: 300\nhash: murmur"
	reload(servers[1].Addr+":1 s0", servers[0].Addr+":3 s1")
	waitLine(6)
	moved = jsonLogs(t, &logs, "reload: key space moved")
	if r, _ := moved[5]["routing"].([]any); len(r) != 1 || r[0] != "hash:fnv1a_64->murmur" || moved[5]["moved"] == "0.000000" {
		t.Errorf("the new hash's line %v; want routing [hash:fnv1a_64->murmur], keys moved", moved[5])
	}
	// To and from keys routed at random: every key moves, and the line has
	// the same keys.
	for i, d := range []string{"ketama->random", "random->ketama"} {
		if i == 0 {
			settings = "timeout: 300\nhash: murmur\ndistribution: random"
		} else {
			settings = "timeout: 300\nhash: murmur"
		}
		reload(servers[1].Addr+":1 s0", servers[0].Addr+":3 s1")
		waitLine(7 + i)
		moved = jsonLogs(t, &logs, "reload: key space moved")
		l := moved[6+i]
		if r, _ := l["routing"].([]any); len(r) != 1 || r[0] != "distribution:"+d || l["moved"] != "1.000000" || l["method"] != "random distribution" {
			t.Errorf("the line of distribution %s: %v; want routing [distribution:%s], moved 1, method random distribution", d, l, d)
		}
		if len(l) != 3+10 {
			t.Errorf("the line of distribution %s: %v; want the fixed keys", d, l)
		}
	}

	// A clean shutdown.
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := jsonLogs(t, &logs, "proxy shut down"); len(got) != 1 || got[0]["graceful"] != true {
		t.Errorf("shutdown: %v; want one line, graceful", got)
	}
}

// TestLogsHungServer: a server that hangs (SIGSTOP) is ejected and probed
// again and again; its kernel still takes the probes' connections, which is
// not the server being up: one "server down" line, none "server up", until it
// answers again.
func TestLogsHungServer(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	var logs testprog.Buffer
	yaml := poolYAML("timeout: 200\nauto_eject_hosts: true\nserver_failure_limit: 1\nserver_retry_timeout: 200", servers...)
	owner := ownerFunc(t, yaml)
	p := startProxy(t, yaml, func(p *Proxy) { p.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
	c := dial(t, p.Addr("alpha").String())
	key := "k"
	for i := 0; owner(key) != servers[1].Addr; i++ {
		key = "k" + itoa(i)
	}
	servers[1].Freeze()
	for deadline := time.Now().Add(5 * time.Second); len(jsonLogs(t, &logs, "server ejected")) == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("a hung server not ejected in 5s; logs:\n%s", logs.String())
		}
		c.mustDo("get " + key + "\r\n")
	}
	time.Sleep(1500 * time.Millisecond) // some five probes, each timing out
	if up, down := jsonLogs(t, &logs, "server up"), jsonLogs(t, &logs, "server down"); len(up) != 0 || len(down) != 1 {
		t.Errorf("while the server hangs: %d server up lines, %d server down; want 0 and 1; logs:\n%s", len(up), len(down), logs.String())
	}
	servers[1].Thaw()
	for deadline := time.Now().Add(5 * time.Second); len(jsonLogs(t, &logs, "server readmitted after a successful probe")) == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("not readmitted 5s after it answers again; logs:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if up := jsonLogs(t, &logs, "server up"); len(up) != 1 {
		t.Errorf("after it answers again: %d server up lines; want 1; logs:\n%s", len(up), logs.String())
	}
	in, out := jsonLogs(t, &logs, "server readmitted after a successful probe"), jsonLogs(t, &logs, "server ejected")
	if in[0]["level"] != out[0]["level"] {
		t.Errorf("server readmitted at level %v, server ejected at %v; want the same", in[0]["level"], out[0]["level"])
	}
}

// TestLogsFailingServer: in a pool without ejection, a server that stops
// answering logs one "server failing" line, however many requests time out,
// and one "server answering again" when it answers; and a connection closed
// for client_connections is logged as a refusal.
func TestLogsFailingServer(t *testing.T) {
	s := memcachedtest.Start(t)
	var logs testprog.Buffer
	p := startProxy(t, poolYAML("timeout: 200\nclient_connections: 1", s), func(p *Proxy) { p.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
	c := dial(t, p.Addr("alpha").String())
	s.Freeze()
	for range 3 {
		if got := c.mustDo("get k\r\n"); !strings.HasPrefix(got, "SERVER_ERROR") {
			t.Fatalf("get from a frozen server: %q", got)
		}
	}
	if got := jsonLogs(t, &logs, "server failing"); len(got) != 1 || got[0]["server"] != s.Addr {
		t.Errorf("after three timeouts: %v; want one server failing line; logs:\n%s", got, logs.String())
	}
	s.Thaw()
	if got := c.mustDo("get k\r\n"); got != "END\r\n" {
		t.Fatalf("get once thawed: %q", got)
	}
	if got := jsonLogs(t, &logs, "server answering again"); len(got) != 1 || got[0]["failures"] != 3.0 {
		t.Errorf("once it answers: %v; want one server answering again line, after 3 failures", got)
	} else if failing := jsonLogs(t, &logs, "server failing"); got[0]["level"] != failing[0]["level"] {
		t.Errorf("server answering again at level %v, server failing at %v; want the same", got[0]["level"], failing[0]["level"])
	}
	// A second client is one too many.
	extra, err := net.Dial("tcp", p.Addr("alpha").String())
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := extra.Read(make([]byte, 1)); err == nil {
		t.Errorf("a client past client_connections read %d bytes", n)
	}
	if got := jsonLogs(t, &logs, "requests refused"); len(got) != 1 || got[0]["class"] != "client_connections" {
		t.Errorf("refusals logged: %v; want one of class client_connections", got)
	} else if line, ok := got[0]["line"]; ok {
		t.Errorf("a client refused before it sent logged with line %q; want none", line)
	}
}

// TestLogsRefusedBurst checks that refusals held back within a class's
// interval are logged with their count when the pool stops, rather than
// waiting for a refusal of the class that may never come.
func TestLogsRefusedBurst(t *testing.T) {
	s := memcachedtest.Start(t)
	var logs testprog.Buffer
	p := startProxy(t, poolYAML("", s), func(p *Proxy) { p.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
	c := dial(t, p.Addr("alpha").String())
	for range 5 {
		if got := c.mustDo("bogus\r\n"); got != "ERROR\r\n" {
			t.Fatalf("bogus = %q; want ERROR", got)
		}
	}
	if got := jsonLogs(t, &logs, "requests refused"); len(got) != 1 || got[0]["count"] != 1.0 {
		t.Fatalf("after five refusals: %v; want one line, of count 1", got)
	}
	p.Close()
	got := jsonLogs(t, &logs, "requests refused")
	if len(got) != 2 || got[1]["class"] != "error" || got[1]["count"] != 4.0 || got[1]["line"] != "bogus" {
		t.Errorf("once the pool stopped: %v; want a second line of class error, count 4, quoting bogus", got)
	}
}

// TestRefusalsLoggedAtIntervalEnd checks that a class's refusals after its
// line are logged, counted, once its interval ends, and that one line a
// class an interval is all that is logged.
func TestRefusalsLoggedAtIntervalEnd(t *testing.T) {
	var logs testprog.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	const every = 200 * time.Millisecond
	rs := &refusals{every: every}
	start := time.Now()
	for i := range 10 {
		rs.add(log, "alpha", "ERROR", []byte("bogus "+itoa(i)), "127.0.0.1:1")
	}
	rs.add(log, "alpha", "CLIENT_ERROR line too long", []byte("get kkk"), "127.0.0.1:2")
	if got := jsonLogs(t, &logs, "requests refused"); len(got) != 2 {
		t.Fatalf("at once: %v; want the first of each class", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(jsonLogs(t, &logs, "requests refused")) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	got := jsonLogs(t, &logs, "requests refused")
	if len(got) != 3 || got[2]["class"] != "error" || got[2]["count"] != 9.0 || got[2]["line"] != "bogus 9" {
		t.Fatalf("after the interval: %v; want a third line, of class error, count 9, quoting the last", got)
	}
	if d := time.Since(start); d < every {
		t.Errorf("the held refusals were logged after %v; want the interval, %v", d, every)
	}
	rs.close(log, "alpha")
	if got := jsonLogs(t, &logs, "requests refused"); len(got) != 3 {
		t.Errorf("close with nothing held logged again: %v", got)
	}
}

// TestLogsRefusedBurstAfterRestart: a pool that a reload restarts (here as a
// Redis pool) counts its refusals on in the new pool, whose bursts are still
// logged once the old pool has stopped.
func TestLogsRefusedBurstAfterRestart(t *testing.T) {
	s := memcachedtest.Start(t)
	var logs testprog.Buffer
	p := startProxy(t, poolYAML("", s), func(p *Proxy) { p.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
	if got := dial(t, p.Addr("alpha").String()).mustDo("bogus\r\n"); got != "ERROR\r\n" {
		t.Fatalf("bogus = %q; want ERROR", got)
	}
	if err := p.Reload(parseConfig(t, poolYAML("redis: true", s))); err != nil {
		t.Fatal(err)
	}
	// The old pool stops once its clients had their grace (a second and the
	// close's linger).
	time.Sleep(time.Second + closeLinger + 500*time.Millisecond)
	c := redistest.Dial(t, p.Addr("alpha").String())
	for range 5 {
		if got := c.Do("bogus"); !strings.HasPrefix(got, "-ERR unknown command 'bogus'") {
			t.Fatalf("bogus through the restarted pool = %q; want Redis's unknown command", got)
		}
	}
	p.Close()
	var n float64
	for _, r := range jsonLogs(t, &logs, "requests refused") {
		n += r["count"].(float64)
	}
	if n != 6 {
		t.Errorf("refusals logged: %v in all; want 6; logs:\n%s", n, logs.String())
	}
}

// TestLogsClusteringHash starts pools on twemproxy's default hash (fnv1a_64
// on ketama), which sends keys that differ only in their last character to
// one server, and on md5: the first logs one warning naming its pool and
// hash as it starts, md5 none; a reload that keeps the hash logs no other, one
// that gives the pool fnv1a_64 logs it; the status page's note comes and
// goes with the hash.
func TestLogsClusteringHash(t *testing.T) {
	s := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	const msg = "pool's hash sends keys that differ only in their last character to one server"
	for _, tt := range []struct {
		extra string
		want  int
	}{{"", 1}, {"hash: fnv1a_64", 1}, {"hash: md5", 0}} {
		var logs testprog.Buffer
		p := startProxy(t, poolYAML(tt.extra, s...), func(p *Proxy) {
			p.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		})
		recs := jsonLogs(t, &logs, msg)
		if len(recs) != tt.want {
			t.Fatalf("%q: %d warnings; want %d:\n%s", tt.extra, len(recs), tt.want, logs.String())
		}
		if tt.want > 0 && (recs[0]["pool"] != "alpha" || recs[0]["hash"] != "fnv1a_64" || recs[0]["level"] != "WARN") {
			t.Errorf("%q: warning %v; want pool alpha, hash fnv1a_64, level WARN", tt.extra, recs[0])
		}
		if err := p.Reload(parseConfig(t, poolYAML(tt.extra+"\ntimeout: 500", s...))); err != nil {
			t.Fatal(err)
		}
		if got := len(jsonLogs(t, &logs, msg)); got != tt.want {
			t.Errorf("%q: %d warnings after a reload that keeps the hash; want %d", tt.extra, got, tt.want)
		}
		if err := p.Reload(parseConfig(t, poolYAML("hash: fnv1a_64", s...))); err != nil {
			t.Fatal(err)
		}
		if got := len(jsonLogs(t, &logs, msg)); got != 1 {
			t.Errorf("%q, then fnv1a_64: %d warnings; want 1", tt.extra, got)
		}
		// The status page's note follows the hash.
		if p.pools["alpha"].clusters.Load() == nil {
			t.Errorf("%q, then fnv1a_64: no note for the status page", tt.extra)
		}
		if err := p.Reload(parseConfig(t, poolYAML("hash: md5", s...))); err != nil {
			t.Fatal(err)
		}
		if note := p.pools["alpha"].clusters.Load(); note != nil {
			t.Errorf("%q, then fnv1a_64, then md5: the status page still notes %q", tt.extra, *note)
		}
		p.Close()
	}
}

// TestLogsClusteringServers changes a modula pool's servers, under which
// fnv1a_64 sends similar keys to one server over three servers and not over
// four: the warning comes once the list shrinks to three (measured off the
// path of the change, as the moved key space is), the status page's note with
// it, and the note goes as the list grows back, without another warning.
func TestLogsClusteringServers(t *testing.T) {
	const msg = "pool's hash sends keys that differ only in their last character to one server"
	four := []string{"127.0.0.1:1:1", "127.0.0.1:2:1", "127.0.0.1:3:1", "127.0.0.1:4:1"}
	var logs testprog.Buffer
	p := startProxy(t, poolOf("distribution: modula\nhash: fnv1a_64", four), func(p *Proxy) {
		p.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	servers := parseConfig(t, poolOf("", four)).Pools[0].Servers
	pl := p.pools["alpha"]
	for i, tt := range []struct {
		n        int
		warnings int
		note     bool
	}{{4, 0, false}, {3, 1, true}, {4, 1, false}, {3, 2, true}} {
		if i > 0 {
			if err := p.UpdateServers("alpha", servers[:tt.n]); err != nil {
				t.Fatal(err)
			}
		}
		// Measured with the moves, at most a second after the last.
		state := func() (int, bool) { return len(jsonLogs(t, &logs, msg)), pl.clusters.Load() != nil }
		waitFor(5*time.Second, func() bool { w, n := state(); return w == tt.warnings && n == tt.note })
		if w, n := state(); w != tt.warnings || n != tt.note {
			t.Errorf("step %d, %d servers: %d warnings, the status page notes it %v; want %d, %v", i, tt.n, w, n, tt.warnings, tt.note)
		}
	}
}
