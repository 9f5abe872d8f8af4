package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/redistest"
)

// adminResponse returns the status and body of GET path on the proxy's admin listener.
func adminResponse(t testing.TB, p *Proxy, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + p.AdminAddr().String() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestRoute checks GET /route against where keys land: each key set through
// the proxy is found on the server /route names and on no other; after that
// server is ejected, /route names the server its keys move to; bad queries
// get a JSON error.
func TestRoute(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	yaml := fmt.Sprintf(`alpha:
  listen: 127.0.0.1:22121
  hash: fnv1a_64
  distribution: ketama
  auto_eject_hosts: true
  server_failure_limit: 1
  server_retry_timeout: 60000
  timeout: 500
  servers:
   - %s:1 one
   - %s:1 two
   - %s:1 three
`, servers[0].Addr, servers[1].Addr, servers[2].Addr)
	p := startProxy(t, yaml, func(p *Proxy) { p.Admin = "127.0.0.1:0" })
	byName := map[string]*memcachedtest.Server{"one": servers[0], "two": servers[1], "three": servers[2]}
	route := func(key string) routeReply {
		t.Helper()
		code, body := adminResponse(t, p, "/route?pool=alpha&key="+url.QueryEscape(key))
		var r routeReply
		if code != http.StatusOK || json.Unmarshal([]byte(body), &r) != nil {
			t.Fatalf("/route of %q: %d %s", key, code, body)
		}
		return r
	}
	c := dial(t, p.Addr("alpha").String())
	seen := map[string]int{}
	for i := range 30 {
		k := fmt.Sprintf("user:%08x", uint32(i)*0x9e3779b9)
		if got := c.mustDo("set " + k + " 0 0 1\r\nx\r\n"); got != "STORED\r\n" {
			t.Fatalf("set %s: %q", k, got)
		}
		r := route(k)
		if r.Pool != "alpha" || r.Key != k {
			t.Errorf("/route of %q = %+v; want pool alpha, key %q", k, r, k)
		}
		seen[r.Server]++
		for name, s := range byName {
			got := dial(t, s.Addr).mustDo("get " + k + "\r\n")
			if has := got != "END\r\n"; has != (name == r.Server) {
				t.Errorf("/route(%q) = %q; but server %s has it: %v", k, r.Server, name, has)
			}
		}
	}
	if len(seen) != 3 {
		t.Errorf("30 keys went to %v; want all three servers", seen)
	}

	// Eject the server of a key: /route names the key's new server, where
	// the proxy now sends it.
	k := "user:00000000"
	first := route(k).Server
	byName[first].Stop()
	c.do("get " + k + "\r\n") // fails, and the server is ejected
	var moved routeReply
	if !waitFor(5*time.Second, func() bool { moved = route(k); return moved.Server != first }) {
		t.Fatalf("after %s was ejected, /route(%q) = %+v; want another server", first, k, moved)
	}
	if got := c.mustDo("set " + k + " 0 0 1\r\ny\r\n"); got != "STORED\r\n" {
		t.Fatalf("set %s after the ejection: %q", k, got)
	}
	if got := dial(t, byName[moved.Server].Addr).mustDo("get " + k + "\r\n"); got != "VALUE "+k+" 0 1\r\ny\r\nEND\r\n" {
		t.Errorf("after the ejection, %s has %q for %s; /route said it gets it", moved.Server, got, k)
	}

	// The ejection is counted for that server alone.
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(scrape(t, p)))
	if err != nil {
		t.Fatal(err)
	}
	ejections := families["chash_proxy_server_ejections_total"].GetMetric()
	if len(ejections) != 3 {
		t.Errorf("chash_proxy_server_ejections_total: %d series; want one a server, 3", len(ejections))
	}
	for _, m := range ejections {
		var server string
		for _, l := range m.Label {
			if l.GetName() == "server" {
				server = l.GetValue()
			}
		}
		if want := map[bool]float64{true: 1, false: 0}[server == first]; value(m) != want {
			t.Errorf("chash_proxy_server_ejections_total{server=%q} = %v; want %v", server, value(m), want)
		}
	}

	for _, tt := range []struct {
		query string
		code  int
		err   string
	}{
		{"/route?key=k", http.StatusBadRequest, "no pool"},
		{"/route?pool=alpha", http.StatusBadRequest, "no key"},
		{"/route?pool=alpha&key=", http.StatusBadRequest, "an empty key"},
		{"/route?pool=alpha&key=" + strings.Repeat("k", 251), http.StatusBadRequest, "a key of 251 bytes"},
		{"/route?pool=nope&key=k", http.StatusNotFound, `no pool \"nope\"`},
	} {
		code, body := adminResponse(t, p, tt.query)
		var e struct{ Error string }
		if code != tt.code || json.Unmarshal([]byte(body), &e) != nil || !strings.Contains(body, tt.err) {
			t.Errorf("GET %s = %d %s; want %d and a JSON error with %q", tt.query, code, body, tt.code, tt.err)
		}
	}
}

// TestStatusPage checks the status page without a browser: every pool and
// server is named, each pool's ring is inline SVG with the server names in
// it, names are escaped, a pool whose hash clusters similar keys is warned
// of, and nothing is loaded from elsewhere.
func TestStatusPage(t *testing.T) {
	s := memcachedtest.Start(t)
	yaml := fmt.Sprintf(`alpha:
  listen: 127.0.0.1:22121
  distribution: ketama
  servers:
   - %s:1 cache-a
   - 127.0.0.1:1:1 <b>x</b>
beta:
  listen: 127.0.0.1:22122
  distribution: modula
  servers:
   - %s:1 m1
   - 127.0.0.1:2:1 m2
`, s.Addr, s.Addr)
	p := startProxy(t, yaml, func(p *Proxy) { p.Admin = "127.0.0.1:0" })
	// A request for a key of the dead server, which no ejection takes out
	// (auto_eject_hosts is false): its row says down, cache-a's up.
	owner := ownerFunc(t, yaml)
	key := "k"
	for i := 0; owner(key) != "<b>x</b>"; i++ {
		key = fmt.Sprint("k", i)
	}
	if got := dial(t, p.Addr("alpha").String()).mustDo("get " + key + "\r\n"); !strings.HasPrefix(got, "SERVER_ERROR") {
		t.Fatalf("get %s of the dead server = %q; want SERVER_ERROR", key, got)
	}
	code, page := adminResponse(t, p, "/")
	if code != http.StatusOK {
		t.Fatalf("GET / = %d\n%s", code, page)
	}
	rows := regexp.MustCompile(`(?s)<tr>.*?</tr>`).FindAllString(page, -1)
	for name, want := range map[string]string{"&lt;b&gt;x&lt;/b&gt;": `<span class="down">down</span>`, "cache-a": `<span class="ok">up</span>`} {
		found := false
		for _, r := range rows {
			if strings.Contains(r, "</span>"+name+"</th>") {
				found = true
				if !strings.Contains(r, want) {
					t.Errorf("the status page's row of %s has no %s:\n%s", html.UnescapeString(name), want, r)
				}
			}
		}
		if !found {
			t.Errorf("the status page has no row of server %s", html.UnescapeString(name))
		}
	}
	// alpha has the client that sent the get, beta none.
	for _, want := range []string{"pool alpha", "pool beta", "cache-a", "m1", "m2", "&lt;b&gt;x&lt;/b&gt;", `<meta http-equiv="refresh"`, "<svg",
		"<span>1 client</span>", "<span>0 clients</span>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the status page has no %q", want)
		}
	}
	for pool, r := range p.Rings() {
		if !strings.Contains(page, "ring fingerprint <code>"+r.Fingerprint+"</code>") {
			t.Errorf("the status page has no fingerprint %s of pool %s", r.Fingerprint, pool)
		}
	}
	if strings.Contains(page, "<b>x</b>") {
		t.Error("the status page has a server name unescaped")
	}
	// alpha's hash (fnv1a_64, ketama's default) clusters similar keys,
	// beta's modula over two servers spreads them.
	const warning = `<p class="warning" role="note">Warning: hash fnv1a_64 sends keys that differ only in their last character to one server (1000 of 1000 groups)`
	alpha, beta, _ := strings.Cut(page, `id="pool-beta"`)
	if !strings.Contains(alpha, warning) || strings.Contains(beta, `class="warning"`) {
		t.Errorf("the status page warns of clustering in pools alpha %v, beta %v; want alpha only",
			strings.Contains(alpha, warning), strings.Contains(beta, `class="warning"`))
	}
	if n := strings.Count(page, "<svg"); n != 2 {
		t.Errorf("%d rings drawn; want one a pool, 2", n)
	}
	// The names in the SVG's own text, so that a terminal browser and a
	// screen reader read them.
	svgs := regexp.MustCompile(`(?s)<svg.*?</svg>`).FindAllString(page, -1)
	for i, names := range [][]string{{"cache-a", "&lt;b&gt;x&lt;/b&gt;"}, {"m1", "m2"}} {
		if i >= len(svgs) {
			break
		}
		for _, n := range names {
			if !strings.Contains(svgs[i], ">"+n+"<") {
				t.Errorf("ring %d has no text %q", i, html.UnescapeString(n))
			}
		}
	}
	for _, bad := range []string{"http://", "https://", "<script"} {
		if strings.Contains(page, bad) && !strings.Contains(page, "http://www.w3.org/") {
			t.Errorf("the status page has %q", bad)
		}
	}
	if code, _ := adminResponse(t, p, "/nothing"); code != http.StatusNotFound {
		t.Errorf("GET /nothing = %d; want 404", code)
	}
}

// TestRouteReplicas: in a pool with replicas: 2, /route names each key's
// replica set, the servers that hold the key after a set through the proxy
// and no other; its server is the first of them.
func TestRouteReplicas(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	yaml := fmt.Sprintf("alpha:\n  listen: 127.0.0.1:22121\n  distribution: chash\n  replicas: 2\n  servers:\n   - %s:1 one\n   - %s:1 two\n   - %s:1 three\n",
		servers[0].Addr, servers[1].Addr, servers[2].Addr)
	p := startProxy(t, yaml, func(p *Proxy) { p.Admin = "127.0.0.1:0" })
	byName := map[string]*memcachedtest.Server{"one": servers[0], "two": servers[1], "three": servers[2]}
	c := dial(t, p.Addr("alpha").String())
	for i := range 20 {
		k := fmt.Sprintf("user:%d", i)
		if got := c.mustDo("set " + k + " 0 0 1\r\nx\r\n"); got != "STORED\r\n" {
			t.Fatalf("set %s: %q", k, got)
		}
		code, body := adminResponse(t, p, "/route?pool=alpha&key="+url.QueryEscape(k))
		var r routeReply
		if code != http.StatusOK || json.Unmarshal([]byte(body), &r) != nil || len(r.Replicas) != 2 || r.Server != r.Replicas[0].Server {
			t.Fatalf("/route of %q: %d %s; want two replicas, the first the server", k, code, body)
		}
		for name, s := range byName {
			has := dial(t, s.Addr).mustDo("get "+k+"\r\n") != "END\r\n"
			listed := name == r.Replicas[0].Server || name == r.Replicas[1].Server
			if has != listed {
				t.Errorf("key %s: server %s holds it %v, /route lists it %v (%s)", k, name, has, listed, body)
			}
		}
	}
}

// TestStatusPageNoLiveServer checks the page of a pool whose servers are all
// ejected: it says why there is no ring, in the ring's place, so that the
// servers' table keeps its column and shows every figure.
func TestStatusPageNoLiveServer(t *testing.T) {
	p := startProxy(t, `alpha:
  listen: 127.0.0.1:22121
  auto_eject_hosts: true
  server_failure_limit: 1
  server_retry_timeout: 60000
  servers:
   - 127.0.0.1:1:1 gone
`, func(p *Proxy) { p.Admin = "127.0.0.1:0" })
	c := dial(t, p.Addr("alpha").String())
	for range 2 {
		c.mustDo("get k\r\n")
	}
	if e := p.Rings()["alpha"].Ejected; len(e) != 1 {
		t.Fatalf("ejected servers: %v; want gone", e)
	}
	code, page := adminResponse(t, p, "/")
	if code != http.StatusOK {
		t.Fatalf("GET / = %d\n%s", code, page)
	}
	// The grid of a pool: the ring's figure, then the servers.
	grid := regexp.MustCompile(`(?s)<div class="pool">\s*<figure class="ring"[^>]*>(.*?)</figure>\s*<div class="servers">`).FindStringSubmatch(page)
	if grid == nil {
		t.Fatalf("the status page of a pool with no live server has no figure before its servers:\n%s", page)
	}
	if !strings.Contains(grid[1], "no server of the pool is live") {
		t.Errorf("the figure in the ring's place is %q; want it to say no server is live", grid[1])
	}
}

// TestStatusRates checks the rates the status page shows: none at the first
// view, the rate since the view before, the same figures for a view within a
// second, and none again after a view more than rateWindow old, whose average
// would not be a rate of now.
func TestStatusRates(t *testing.T) {
	var r statusRates
	s := &server{stats: new(serverStats)}
	t0 := time.Now()
	at := func(d time.Duration, requests uint64) (float64, float64) {
		s.stats.requests.Store(requests)
		return r.rates(s, t0.Add(d))
	}
	for _, tt := range []struct {
		at       time.Duration
		requests uint64
		want     float64
	}{
		{0, 100, -1},
		{5 * time.Second, 600, 100},
		{5*time.Second + 500*time.Millisecond, 900, 100}, // at once: the same
		{10 * time.Second, 1100, 100},
		{10*time.Second + rateWindow + time.Second, 1200, -1}, // after a quiet spell
		{15*time.Second + rateWindow + time.Second, 1700, 100},
	} {
		if req, errs := at(tt.at, tt.requests); req != tt.want || (tt.want < 0) != (errs < 0) {
			t.Errorf("at %v with %d requests: rates %v, %v; want %v", tt.at, tt.requests, req, errs, tt.want)
		}
	}
}

// TestRouteEmptyRedisKey: Redis takes an empty key, so /route of a Redis pool
// answers for it: the server that holds it once set through the proxy.
func TestRouteEmptyRedisKey(t *testing.T) {
	servers := startRedisServers(t, 3)
	p := startProxy(t, redisPoolYAML("", servers...), func(p *Proxy) { p.Admin = "127.0.0.1:0" })
	if got := redistest.Dial(t, p.Addr("alpha").String()).Do("SET", "", "v"); got != "+OK\r\n" {
		t.Fatalf(`SET "" v = %q`, got)
	}
	code, body := adminResponse(t, p, "/route?pool=alpha&key=")
	var rr routeReply
	if code != http.StatusOK || json.Unmarshal([]byte(body), &rr) != nil {
		t.Fatalf("GET /route?pool=alpha&key= = %d %s; want 200 and the key's server", code, body)
	}
	for i, s := range servers {
		if holds := s.Do("GET", "") == "$1\r\nv\r\n"; holds != (rr.Server == fmt.Sprintf("s%d", i+1)) {
			t.Errorf("server s%d holds the empty key: %v; /route says %q", i+1, holds, rr.Server)
		}
	}
}

// TestRouteReplicaEjected: in a pool with replicas: 2, a key whose first
// replica is ejected is read from its second: /route names that one as the
// key's server, and lists the first as ejected.
func TestRouteReplicaEjected(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	yaml := fmt.Sprintf("alpha:\n  listen: 127.0.0.1:22121\n  distribution: chash\n  replicas: 2\n  timeout: 500\n  auto_eject_hosts: true\n  server_failure_limit: 1\n  server_retry_timeout: 60000\n  servers:\n   - %s:1 one\n   - %s:1 two\n   - %s:1 three\n",
		servers[0].Addr, servers[1].Addr, servers[2].Addr)
	p := startProxy(t, yaml, func(p *Proxy) { p.Admin = "127.0.0.1:0" })
	route := func(k string) routeReply {
		code, body := adminResponse(t, p, "/route?pool=alpha&key="+url.QueryEscape(k))
		var r routeReply
		if code != http.StatusOK || json.Unmarshal([]byte(body), &r) != nil || len(r.Replicas) != 2 {
			t.Fatalf("/route of %q: %d %s; want two replicas", k, code, body)
		}
		return r
	}
	var k string
	for i := 0; k == ""; i++ {
		if r := route(fmt.Sprintf("user:%d", i)); r.Replicas[0].Server == "one" {
			k = r.Key
		}
	}
	c := dial(t, p.Addr("alpha").String())
	if got := c.mustDo("set " + k + " 0 0 1\r\nx\r\n"); got != "STORED\r\n" {
		t.Fatalf("set %s: %q", k, got)
	}
	servers[0].Stop()
	if got := c.mustDo("get " + k + "\r\n"); got != "VALUE "+k+" 0 1\r\nx\r\nEND\r\n" {
		t.Fatalf("get %s with its first replica stopped = %q; want the second's", k, got)
	}
	if !p.ejected("alpha", "one") {
		t.Fatal("the stopped server was not ejected")
	}
	r := route(k)
	if r.Server != r.Replicas[1].Server || !r.Replicas[0].Ejected || r.Replicas[1].Ejected || r.Ejected {
		t.Errorf("/route of %q with its first replica ejected = %+v; want its second as the server, the first listed ejected", k, r)
	}
}
