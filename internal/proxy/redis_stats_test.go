package proxy

import (
	"bytes"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/redistest"
	"github.com/chash-dev/chash/internal/testprog"
)

// metricValues returns the values of the series of the metric name in the
// proxy's /metrics, by the values of the labels named, joined by "/".
func metricValues(t testing.TB, p *Proxy, name string, labels ...string) map[string]float64 {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(scrape(t, p)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, m := range families[name].GetMetric() {
		vals := make([]string, len(labels))
		for _, l := range m.GetLabel() {
			if i := slices.Index(labels, l.GetName()); i >= 0 {
				vals[i] = l.GetValue()
			}
		}
		out[strings.Join(vals, "/")] += value(m)
	}
	return out
}

// TestRedisRefusals sends each class of request a Redis pool refuses
// through the proxy, in front of real redis-servers that require a
// password, the i-th class i times: /metrics counts each class under its
// label, the log has one line a class (with the pool, the count so far and
// the command's name, never an argument), and the connection reads on after
// all but a protocol error. A request the server refuses (INCR of a word)
// is no refusal of the proxy's.
func TestRedisRefusals(t *testing.T) {
	servers := startRedisServers(t, 2, "--requirepass", "sesame")
	yaml := redisPoolYAML("redis_auth: sesame", servers...)
	owner := redisOwner(t, yaml)
	var logs testprog.Buffer
	p := startProxy(t, yaml, func(p *Proxy) {
		p.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		p.Admin = "127.0.0.1:0"
	})
	addr := p.Addr("alpha").String()
	a, b := "a", "b"
	for i := 0; owner(a) == owner(b); i++ {
		b = fmt.Sprint("b", i)
	}
	authed := redistest.Dial(t, addr)
	if got := authed.Do("AUTH", "sesame"); got != "+OK\r\n" {
		t.Fatalf("AUTH sesame = %q", got)
	}
	stranger := redistest.Dial(t, addr)
	tests := []struct {
		label string
		c     *redistest.Conn // nil: a connection of its own, which closes
		req   string
		reply string // the reply's start
	}{
		{"unknown_command", authed, redistest.Request("FOO", "a"), "-ERR unknown command 'FOO'"},
		{"unsupported_command", authed, redistest.Request("KEYS", "*"), "-ERR command 'keys' is not supported by the proxy"},
		{"wrong_number_of_arguments", authed, redistest.Request("GET"), "-ERR wrong number of arguments for 'get' command"},
		{"invalid_argument", authed, redistest.Request("SELECT", "x"), "-ERR value is not an integer"},
		{"noauth", stranger, redistest.Request("GET", a), "-NOAUTH Authentication required."},
		{"wrongpass", authed, redistest.Request("AUTH", "hunter2"), "-WRONGPASS"},
		{"unsupported_database", authed, redistest.Request("SELECT", "1"), "-ERR database 1 is not served by the proxy (only 0)"},
		{"unsupported_protocol", authed, redistest.Request("HELLO", "3"), "-NOPROTO"},
		{"script_without_keys", authed, redistest.Request("EVAL", "return 1", "0"), "-ERR 'eval' without keys cannot be routed"},
		{"keys_on_different_servers", authed, redistest.Request("EVAL", "return 1", "2", a, b), "-ERR keys of 'eval' are on different servers"},
		{"pattern_of_keys_on_other_servers", authed, redistest.Request("SORT", a, "GET", "o_*"), "-ERR BY and GET options of 'sort' denied by the proxy"},
		{"protocol_error", nil, "SET a \"hunter2\r\n", "-ERR Protocol error: unbalanced quotes in request"},
	}
	for i, tt := range tests {
		for range i + 1 {
			c := tt.c
			if c == nil {
				c = redistest.Dial(t, addr)
			}
			c.Send(tt.req)
			if got := c.Read(); !strings.HasPrefix(got, tt.reply) {
				t.Errorf("%q = %q; want %q...", tt.req, got, tt.reply)
			}
			if tt.c == nil && !c.Closed() {
				t.Errorf("%q: the connection stays open after a protocol error", tt.req)
			}
		}
	}
	if got := stranger.Do("SET", "s", "word"); got != "-NOAUTH Authentication required.\r\n" {
		t.Errorf("SET of a client yet to AUTH, after the refusals = %q; want NOAUTH", got)
	}
	if got := authed.Do("SET", "s", "word"); got != "+OK\r\n" {
		t.Errorf("SET after the refusals = %q; want +OK", got)
	}
	if got := authed.Do("INCR", "s"); got != "-ERR value is not an integer or out of range\r\n" {
		t.Errorf("INCR of a word = %q; want the server's error", got)
	}

	got := metricValues(t, p, "chash_proxy_refused_requests_total", "pool", "class")
	want := map[string]float64{}
	for i, tt := range tests {
		want["alpha/"+tt.label] = float64(i + 1)
	}
	want["alpha/noauth"]++ // the stranger's SET
	for k, n := range want {
		if got[k] != n {
			t.Errorf("chash_proxy_refused_requests_total{pool/class=%s} = %v; want %v", k, got[k], n)
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("chash_proxy_refused_requests_total{pool/class=%s} = %v; want no such class", k, n)
		}
	}

	lines := map[string]map[string]any{}
	for _, rec := range jsonLogs(t, &logs, "requests refused") {
		label := rec["class"].(string) // as the metric's label
		if lines[label] != nil {
			t.Errorf("class %s logged twice: %v and %v", label, lines[label], rec)
		}
		lines[label] = rec
	}
	for _, tt := range tests {
		rec := lines[tt.label]
		if rec == nil {
			t.Errorf("class %s not logged", tt.label)
			continue
		}
		if rec["pool"] != "alpha" || rec["count"] != 1.0 {
			t.Errorf("class %s logged as %v; want pool alpha, count 1", tt.label, rec)
		}
		// HELLO 3 is a client's offer, declined as Redis declines a
		// protocol it does not speak (NOPROTO): Info; the others Warn.
		level := "WARN"
		if tt.label == "unsupported_protocol" {
			level = "INFO"
		}
		if line, _ := rec["line"].(string); line == "" {
			t.Errorf("class %s logged with no line quoted: %v", tt.label, rec)
		}
		if rec["level"] != level {
			t.Errorf("class %s logged at level %v; want %s", tt.label, rec["level"], level)
		}
	}
	if len(lines) != len(tests) {
		t.Errorf("%d classes logged; want %d", len(lines), len(tests))
	}
	for label, line := range map[string]string{
		"unknown_command":           "FOO [1 argument]",
		"noauth":                    "GET [1 argument]",
		"wrongpass":                 "AUTH [1 argument]",
		"keys_on_different_servers": "EVAL [4 arguments]",
		"protocol_error":            "SET",
	} {
		if rec := lines[label]; rec != nil && rec["line"] != line {
			t.Errorf("class %s logged with line %q; want %q", label, rec["line"], line)
		}
	}
	if strings.Contains(logs.String(), "hunter2") {
		t.Errorf("a refused password is in the log:\n%s", logs.String())
	}
}

// redisInfoStat returns a number of the stats section of a redis-server's
// INFO: keyspace_hits, say.
func redisInfoStat(t testing.TB, s *redistest.Server, name string) float64 {
	t.Helper()
	info := s.Do("INFO", "stats")
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			var n float64
			if _, err := fmt.Sscan(v, &n); err != nil {
				t.Fatalf("INFO stats of %s: %s: %v", s.Addr, line, err)
			}
			return n
		}
	}
	t.Fatalf("INFO stats of %s has no %s:\n%s", s.Addr, name, info)
	return 0
}

// TestRedisHitsMatchRedis reads keys spread over three redis-servers, some
// stored and some not, with MGET (split by server), GET, GETEX, GETDEL and
// GETSET through the proxy (and GET and GETDEL of a list), and checks each
// server's hits and misses in /metrics and /stats against the keys the ring
// gave it, and against what the server itself counts (INFO's keyspace_hits
// and keyspace_misses, the truth). Writes (SET, MSET) and other reads that Redis counts and the proxy
// does not (none here) would make them differ.
func TestRedisHitsMatchRedis(t *testing.T) {
	servers := startRedisServers(t, 3)
	yaml := redisPoolYAML("hash: md5", servers...)
	owner := redisOwner(t, yaml)
	p := startProxy(t, yaml, func(p *Proxy) { p.Admin = "127.0.0.1:0" })
	c := redistest.Dial(t, p.Addr("alpha").String())

	// Keys of every server, stored and not.
	wantHits, wantMisses := map[string]float64{}, map[string]float64{}
	var mget []string
	stored := map[string]bool{}
	for i := 0; len(mget) < 30 || len(wantHits) < 3 || len(wantMisses) < 3; i++ {
		k := fmt.Sprint("user:", i)
		mget = append(mget, k)
		if i%3 != 2 {
			stored[k] = true
			if got := c.Do("SET", k, fmt.Sprint(i)); got != "+OK\r\n" {
				t.Fatalf("SET %s = %q", k, got)
			}
			wantHits[owner(k)]++
		} else {
			wantMisses[owner(k)]++
		}
	}
	if got := c.Do("MSET", "m:1", "1", "m:2", "2"); got != "+OK\r\n" {
		t.Fatalf("MSET = %q", got)
	}
	reply := c.Do(append([]string{"MGET"}, mget...)...)
	if n := strings.Count(reply, "$-1\r\n"); !strings.HasPrefix(reply, fmt.Sprintf("*%d\r\n", len(mget))) || n != len(mget)-len(stored) {
		t.Fatalf("MGET of %d keys, %d stored: %q", len(mget), len(stored), reply)
	}
	// One read of each other kind, of a stored key and a missing one; and
	// of a key of another type, which Redis finds (a hit) and refuses.
	if got := c.Do("RPUSH", "list:1", "a"); got != ":1\r\n" {
		t.Fatalf("RPUSH = %q", got)
	}
	for _, args := range [][]string{{"GET", "list:1"}, {"GETDEL", "list:1"}} {
		if got := c.Do(args...); !strings.HasPrefix(got, "-WRONGTYPE ") {
			t.Errorf("%q = %q; want WRONGTYPE", args, got)
		}
		wantHits[owner("list:1")]++
	}
	for _, args := range [][]string{
		{"GET", "user:0"}, {"GET", "nokey:1"},
		{"GETEX", "user:1", "PERSIST"}, {"GETEX", "nokey:2"},
		{"GETSET", "user:3", "x"}, {"GETSET", "nokey:3", "x"},
		{"GETDEL", "user:4"}, {"GETDEL", "nokey:4"},
	} {
		got := c.Do(args...)
		if strings.HasPrefix(args[1], "user:") {
			wantHits[owner(args[1])]++
			if !strings.HasPrefix(got, "$") || got == "$-1\r\n" {
				t.Errorf("%q = %q; want a value", args, got)
			}
		} else {
			wantMisses[owner(args[1])]++
			if got != "$-1\r\n" {
				t.Errorf("%q = %q; want nil", args, got)
			}
		}
	}

	hits := metricValues(t, p, "chash_proxy_get_hits_total", "pool", "server")
	misses := metricValues(t, p, "chash_proxy_get_misses_total", "pool", "server")
	for i, s := range servers {
		name := fmt.Sprintf("s%d", i+1)
		redisHits, redisMisses := redisInfoStat(t, s, "keyspace_hits"), redisInfoStat(t, s, "keyspace_misses")
		t.Logf("%s: proxy hits %v, misses %v; redis-server keyspace_hits %v, keyspace_misses %v",
			name, hits["alpha/"+name], misses["alpha/"+name], redisHits, redisMisses)
		if got := hits["alpha/"+name]; got != wantHits[name] || got != redisHits {
			t.Errorf("chash_proxy_get_hits_total{server=%q} = %v; want %v, as the server's keyspace_hits, %v", name, got, wantHits[name], redisHits)
		}
		if got := misses["alpha/"+name]; got != wantMisses[name] || got != redisMisses {
			t.Errorf("chash_proxy_get_misses_total{server=%q} = %v; want %v, as the server's keyspace_misses, %v", name, got, wantMisses[name], redisMisses)
		}
		st := adminServerStats(t, p, "alpha", name)
		if st["get_hits"] != wantHits[name] || st["get_misses"] != wantMisses[name] {
			t.Errorf("/stats: server %s get_hits %v, get_misses %v; want %v, %v", name, st["get_hits"], st["get_misses"], wantHits[name], wantMisses[name])
		}
	}
}

// TestRedisPoolNoMemcachedSeries scrapes a proxy of a memcached pool and a
// Redis pool: the series of what only memcached pools have (warm-up,
// replicas' failovers, owed deletes) name the memcached pool alone, and
// the series both have name both.
func TestRedisPoolNoMemcachedSeries(t *testing.T) {
	rs := startRedisServers(t, 1)
	ms := memcachedtest.Start(t)
	p := startProxy(t, poolsYAML(map[string]string{
		"mc":  poolYAML("", ms),
		"red": redisPoolYAML("", rs...),
	}), func(p *Proxy) { p.Admin = "127.0.0.1:0" })
	for _, name := range []string{
		"chash_proxy_warmup_windows_total", "chash_proxy_warmup_window_open", "chash_proxy_warmup_reads_total",
		"chash_proxy_warmup_copies_undone_total", "chash_proxy_replica_failovers_total",
		"chash_proxy_owed_deletes", "chash_proxy_owed_deletes_total", "chash_proxy_owed_flushes_total",
		"chash_proxy_client_connections", "chash_proxy_server_ejected",
	} {
		pools := slices.Sorted(maps.Keys(metricValues(t, p, name, "pool")))
		want := []string{"mc"}
		if name == "chash_proxy_client_connections" || name == "chash_proxy_server_ejected" {
			want = []string{"mc", "red"}
		}
		if !slices.Equal(pools, want) {
			t.Errorf("%s: pools %q; want %q", name, pools, want)
		}
	}
}
