package proxy

import (
	"bytes"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/chash-dev/chash/internal/memcachedtest"
)

// scrape returns the proxy's /metrics.
func scrape(t testing.TB, p *Proxy) []byte {
	t.Helper()
	return []byte(adminGet(t, p, "/metrics"))
}

// everyCommand is a request of each memcached command the proxy forwards
// or answers, for key k, each ending with the reply it gets from the
// proxy in front of a fresh memcached: three reads that find the key (get,
// gat, mg) and two that do not (get, mg). conn.do sends mn after each.
var everyCommand = []struct{ req, want string }{
	{"get %[1]s\r\n", "END\r\n"},
	{"set %[1]s 0 0 1\r\n5\r\n", "STORED\r\n"},
	{"get %[1]s\r\n", "VALUE %[1]s 0 1\r\n5\r\nEND\r\n"},
	{"gat 0 %[1]s\r\n", "VALUE %[1]s 0 1\r\n5\r\nEND\r\n"},
	{"add %[1]s 0 0 1\r\n6\r\n", "NOT_STORED\r\n"},
	{"replace %[1]s 0 0 1\r\n7\r\n", "STORED\r\n"},
	{"append %[1]s 0 0 1\r\n0\r\n", "STORED\r\n"},
	{"prepend %[1]s 0 0 1\r\n1\r\n", "STORED\r\n"},
	{"cas %[1]s 0 0 1 1\r\n8\r\n", "EXISTS\r\n"},
	{"incr %[1]s 1\r\n", "171\r\n"},
	{"decr %[1]s 2\r\n", "169\r\n"},
	{"touch %[1]s 0\r\n", "TOUCHED\r\n"},
	{"mg %[1]s v\r\n", "VA 3\r\n169\r\n"},
	{"ms %[1]s 1\r\n9\r\n", "HD\r\n"},
	{"ma %[1]s\r\n", "HD\r\n"},
	{"md %[1]s\r\n", "HD\r\n"},
	{"mg %[1]s v\r\n", "EN\r\n"},
	{"me %[1]s\r\n", "EN\r\n"},
	{"delete %[1]s\r\n", "NOT_FOUND\r\n"},
}

// TestMetricsLean checks /metrics after a workload of every command through
// two pools of 7 servers (issue 16: 4,010 lines, now at most 1,500): the
// text parses as Prometheus reads it (and promtool check metrics passes, if
// installed), and it has what operators graph first: hits and misses per
// pool and server, bytes, connections, chash_build_info, latency by command
// per pool, one latency histogram per server.
func TestMetricsLean(t *testing.T) {
	servers := make([]*memcachedtest.Server, 7)
	for i := range servers {
		servers[i] = memcachedtest.Start(t)
	}
	yaml := poolsYAML(map[string]string{"alpha": poolYAML("", servers...), "beta": poolYAML("hash: murmur", servers...)})
	p := startProxy(t, yaml, func(p *Proxy) { p.Admin = "127.0.0.1:0" })
	// Keys enough that every server of each ring gets some, whatever ports
	// the servers got (50 once left one of seven without a key).
	const keys = 200
	for _, pool := range []string{"alpha", "beta"} {
		c := dial(t, p.Addr(pool).String())
		for i := range keys {
			k := fmt.Sprintf("%s:%08x", pool, uint32(i)*0x9e3779b9) // fnv1a_64, the default, spreads keys that differ in one byte poorly
			for _, cmd := range everyCommand {
				req, want := strings.ReplaceAll(cmd.req, "%[1]s", k), strings.ReplaceAll(cmd.want, "%[1]s", k)
				if got := c.mustDo(req); got != want {
					t.Fatalf("%q = %q; want %q", req, got, want)
				}
			}
		}
		if got := c.mustDo("version\r\n"); !strings.HasPrefix(got, "VERSION ") {
			t.Fatalf("version = %q", got)
		}
		c.mustDo("get a b c d e f g h i j k l m n\r\n") // split over servers: 14 misses
	}

	body := scrape(t, p)
	lines := bytes.Count(body, []byte("\n"))
	t.Logf("%d lines for 2 pools of 7 servers", lines)
	if lines > 1500 {
		t.Errorf("/metrics has %d lines; want at most 1500", lines)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	// promlint holds the rules of promtool check metrics; promtool itself,
	// if installed, checks the text as it would a live target's.
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatalf("promlint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	if promtool, err := exec.LookPath("promtool"); err == nil {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	}

	// Each series by its labels, "pool/server" or "pool/command".
	series := func(name string, labels ...string) map[string]float64 {
		t.Helper()
		mf, ok := families[name]
		if !ok {
			t.Fatalf("/metrics has no %s", name)
		}
		out := map[string]float64{}
		for _, m := range mf.Metric {
			var key []string
			for _, l := range labels {
				for _, lp := range m.Label {
					if lp.GetName() == l {
						key = append(key, lp.GetValue())
					}
				}
			}
			out[strings.Join(key, "/")] = value(m)
		}
		return out
	}
	hits, misses := series("chash_proxy_get_hits_total", "pool", "server"), series("chash_proxy_get_misses_total", "pool", "server")
	var totalHits, totalMisses float64
	for _, pool := range []string{"alpha", "beta"} {
		for _, s := range servers {
			k := pool + "/" + s.Addr
			if hits[k] == 0 || misses[k] == 0 {
				t.Errorf("%s: %v hits, %v misses; want some of each, every server has keys", k, hits[k], misses[k])
			}
			totalHits, totalMisses = totalHits+hits[k], totalMisses+misses[k]
		}
	}
	// Per key: get, gat, mg hit; get, mg miss. And 14 keys missed by the
	// multi-get of each pool.
	if wantHits, wantMisses := 2*keys*3.0, 2*keys*2.0+2*14; totalHits != wantHits || totalMisses != wantMisses {
		t.Errorf("%v hits, %v misses; want %v, %v", totalHits, totalMisses, wantHits, wantMisses)
	}
	for _, name := range []string{"chash_proxy_client_received_bytes_total", "chash_proxy_client_sent_bytes_total"} {
		for pool, v := range series(name, "pool") {
			if v == 0 {
				t.Errorf("%s{pool=%q} = 0", name, pool)
			}
		}
	}
	recv := series("chash_proxy_server_received_bytes_total", "pool", "server")
	if len(recv) != 14 {
		t.Errorf("chash_proxy_server_received_bytes_total: %d series; want 14", len(recv))
	}
	if bi := series("chash_build_info", "goversion"); len(bi) != 1 {
		t.Errorf("chash_build_info: %v; want one series", bi)
	}
	series("chash_proxy_client_connections", "pool")
	series("chash_proxy_server_connections", "pool", "server")

	lat := series("chash_proxy_request_duration_seconds", "pool", "command")
	for _, cmd := range []string{"get", "gat", "set", "mg", "ma", "me", "version"} {
		if _, ok := lat["alpha/"+cmd]; !ok {
			t.Errorf("no latency of %s in pool alpha", cmd)
		}
	}
	for _, cmd := range []string{"mn", "gets", "quit"} {
		if _, ok := lat["alpha/"+cmd]; ok {
			t.Errorf("a latency of %s in pool alpha, which no server answered (mn) or no client sent", cmd)
		}
	}
	if srv := series("chash_proxy_server_request_duration_seconds", "pool", "server"); len(srv) != 14 {
		t.Errorf("chash_proxy_server_request_duration_seconds: %d series; want one a server, 14", len(srv))
	}
}

// value returns the value of a counter or gauge, or the count of a
// histogram.
func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// TestRemovedPoolMetrics: a reload that removes a pool drops its
// per-command series with it (a review found 34 left), and keeps those of
// the pool that stays, counting on.
func TestRemovedPoolMetrics(t *testing.T) {
	s := memcachedtest.Start(t)
	both := poolsYAML(map[string]string{"keep": poolYAML("", s), "gone": poolYAML("", s)})
	p := startProxy(t, both, func(p *Proxy) { p.Admin = "127.0.0.1:0" })
	for _, pool := range []string{"keep", "gone"} {
		dial(t, p.Addr(pool).String()).mustDo("get k\r\n")
	}
	pools := func(name string) []string {
		return slices.Sorted(maps.Keys(metricValues(t, p, name, "pool")))
	}
	if got := pools("chash_proxy_requests_total"); !slices.Equal(got, []string{"gone", "keep"}) {
		t.Fatalf("before the reload, requests counted for pools %q", got)
	}
	f := parseConfig(t, poolYAML("", s))
	f.Pools[0].Name, f.Pools[0].Listen = "keep", p.Addr("keep").String()
	if err := p.Reload(f); err != nil {
		t.Fatal(err)
	}
	dial(t, p.Addr("keep").String()).mustDo("get k\r\n")
	for _, name := range []string{"chash_proxy_requests_total", "chash_proxy_request_duration_seconds"} {
		if !waitFor(5*time.Second, func() bool { return slices.Equal(pools(name), []string{"keep"}) }) {
			t.Errorf("%s: pools %q after the reload that removed gone; want [keep]", name, pools(name))
		}
	}
	// get and mn for each of the two requests: 4.
	if got := metricValues(t, p, "chash_proxy_requests_total", "pool")["keep"]; got != 4 {
		t.Errorf("pool keep counts %v requests; want 4, counted on across the reload", got)
	}
}
