package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/dist"
	"github.com/chash-dev/chash/internal/membership"
	"github.com/chash-dev/chash/internal/membership/etcdtest"
	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/redistest"
	"github.com/chash-dev/chash/internal/testprog"
)

// sourcePool returns a pool of the md5 ketama ring (which spreads short test
// keys over servers) whose servers come from url.
func sourcePool(name, url string) *config.Pool {
	pool := config.NewPool(name)
	pool.Listen, pool.Hash, pool.ServersFrom = "127.0.0.1:0", "md5", url
	pool.Timeout = 2 * time.Second
	return pool
}

// startSourceProxy starts a proxy of the pools, with an admin listener, and
// closes it when the test ends.
func startSourceProxy(t testing.TB, setup func(p *Proxy), pools ...*config.Pool) *Proxy {
	t.Helper()
	p := &Proxy{Admin: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Sources: membership.Config{Heartbeat: 250 * time.Millisecond, MaxBackoff: 500 * time.Millisecond}}
	if testing.Verbose() {
		p.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if setup != nil {
		setup(p)
	}
	if err := p.Start(&config.File{Path: "(test)", Pools: pools}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// serverLine is the server line of a memcached started by memcachedtest.
func serverLine(s *memcachedtest.Server, weight int, alias string) string {
	line := fmt.Sprintf("%s:%d", s.Addr, weight)
	if alias != "" {
		line += " " + alias
	}
	return line
}

// fingerprintOf returns the fingerprint of pool over the server lines.
func fingerprintOf(t testing.TB, pool *config.Pool, lines ...string) string {
	t.Helper()
	var servers []config.Server
	for _, l := range lines {
		s, err := config.ParseServer(l)
		if err != nil {
			t.Fatal(err)
		}
		servers = append(servers, s)
	}
	fp, err := dist.Fingerprint(pool, servers)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

// waitRing waits up to d for the pool of every proxy to show the fingerprint,
// and returns how long that took.
func waitRing(t testing.TB, d time.Duration, pool, fp string, proxies ...*Proxy) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		agree := true
		for _, p := range proxies {
			if p.Rings()[pool].Fingerprint != fp {
				agree = false
				break
			}
		}
		if agree {
			return time.Since(start)
		}
		if time.Since(start) > d {
			var got []string
			for _, p := range proxies {
				got = append(got, fmt.Sprintf("%+v", p.Rings()[pool]))
			}
			t.Fatalf("after %v, pool %q shows %s; want fingerprint %s everywhere", d, pool, strings.Join(got, ", "), fp)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// adminGet returns the body of GET path on the proxy's admin listener.
func adminGet(t testing.TB, p *Proxy, path string) string {
	t.Helper()
	code, body := adminResponse(t, p, path)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", path, code, body)
	}
	return body
}

// TestServersFromFile follows a file of server lines: the proxy routes over
// the file's servers, takes a new file renamed over the old (as
// configuration tools write it), refuses a file with a bad line and keeps the
// last good list, and answers errors at once when the file lists no server.
func TestServersFromFile(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	path := filepath.Join(t.TempDir(), "servers")
	write := func(text string) {
		t.Helper()
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	two := []string{serverLine(servers[0], 1, "a"), serverLine(servers[1], 1, "b")}
	write("# two servers\n" + strings.Join(two, "\n") + "\n")
	pool := sourcePool("alpha", "file:"+path)
	var logs testprog.Buffer
	p := startSourceProxy(t, func(p *Proxy) {
		p.Sources.PollInterval = 200 * time.Millisecond
		p.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	}, pool)
	waitRing(t, time.Second, "alpha", fingerprintOf(t, pool, two...), p)
	c := dial(t, p.Addr("alpha").String())
	if got := c.mustDo("set k 0 0 1\r\nx\r\nget k\r\n"); got != "STORED\r\nVALUE k 0 1\r\nx\r\nEND\r\n" {
		t.Fatalf("set and get over the file's servers: %q", got)
	}
	r := p.Rings()["alpha"]
	if r.Source != "file:"+path || r.Revision != 1 || !r.Connected || !slices.Equal(r.Servers, []string{"a", "b"}) {
		t.Errorf("Rings()[alpha] = %+v; want source file:%s, revision 1, connected, servers [a b]", r, path)
	}
	if page, want := adminGet(t, p, "/"), "servers from <code>file:"+path+"</code>, revision 1, 2 servers</span>"; !strings.Contains(page, want) {
		t.Errorf("the status page lacks %q:\n%s", want, page)
	}

	three := append(slices.Clone(two), serverLine(servers[2], 2, "c"))
	write(strings.Join(three, "\n") + "\n")
	waitRing(t, 5*time.Second, "alpha", fingerprintOf(t, pool, three...), p)
	if r := p.Rings()["alpha"]; r.Revision != 2 || !slices.Equal(r.Servers, []string{"a", "b", "c"}) {
		t.Errorf("after the rename: %+v; want revision 2, servers [a b c]", r)
	}
	// The change says so once, with the source and the ring's fingerprint;
	// the source's own line is for debugging.
	if got := jsonLogs(t, &logs, "servers_from: ring changed"); len(got) != 1 || got[0]["source"] != "file:"+path || got[0]["fingerprint"] != fingerprintOf(t, pool, three...) {
		t.Errorf("logged %v for the change; want one line with the source and the fingerprint", got)
	}
	if got := jsonLogs(t, &logs, "membership: server list changed"); len(got) != 0 {
		t.Errorf("the source logged the change too: %v", got)
	}

	// A bad line: refused, counted; the three servers keep serving.
	write(strings.Join(three, "\n") + "\nnot a server\n")
	if !pollFor(5*time.Second, func() bool {
		return strings.Contains(adminGet(t, p, "/metrics"), `chash_proxy_source_refused_total{pool="alpha"} 1`)
	}) {
		t.Fatalf("a file with a bad line is not counted as refused:\n%s", adminGet(t, p, "/metrics"))
	}
	if r := p.Rings()["alpha"]; r.Fingerprint != fingerprintOf(t, pool, three...) {
		t.Errorf("after a refused file the ring is %+v; want the three servers'", r)
	}
	if got := c.mustDo("get k\r\n"); got != "VALUE k 0 1\r\nx\r\nEND\r\n" && got != "END\r\n" {
		t.Errorf("get after a refused file: %q", got)
	}
	if page, want := adminGet(t, p, "/"), "</code>: its latest list is refused (membership: "+path+":4: server &#34;not a server&#34;"; !strings.Contains(page, want) || !strings.Contains(page, "revision 2 keeps serving.</p>") {
		t.Errorf("the status page lacks %q and revision 2 keeps serving:\n%s", want, page)
	}

	// No servers: every request is answered at once.
	write("# all gone\n")
	waitRing(t, 5*time.Second, "alpha", fingerprintOf(t, pool), p)
	c.c.SetDeadline(time.Now().Add(2 * time.Second))
	for _, req := range []string{"get k\r\n", "set k 0 0 1\r\nx\r\n", "get a b c\r\n"} {
		if got := c.mustDo(req); got != "SERVER_ERROR no live servers\r\n" {
			t.Errorf("%q with an empty file: %q", req, got)
		}
	}
}

// pollFor calls cond every 10ms until it holds or d has passed, and reports
// whether it held.
func pollFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// membershipKeys is a test's server list under an etcd prefix: servers by key.
type membershipKeys struct {
	t      *testing.T
	etcd   *etcdtest.Server
	prefix string
	lines  map[string]string // by key
}

func (m *membershipKeys) put(key, line string) {
	m.t.Helper()
	m.etcd.Put(m.prefix+key, line)
	m.lines[key] = line
}

func (m *membershipKeys) del(key string) {
	m.t.Helper()
	m.etcd.Delete(m.prefix + key)
	delete(m.lines, key)
}

// list returns the server lines in key order, as the proxies read them.
func (m *membershipKeys) list() []string {
	keys := make([]string, 0, len(m.lines))
	for k := range m.lines {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, m.lines[k])
	}
	return out
}

// TestServersFromEtcd runs three proxies on one etcd prefix through 50
// membership changes: after each, every proxy shows the fingerprint of the
// new list within a second (the 99th percentile of the times, over the
// changes, is asserted: a bound on agreement, not a speed test), and keys
// written through one proxy are read back through the others.
func TestServersFromEtcd(t *testing.T) {
	etcd := etcdtest.Start(t)
	servers := make([]*memcachedtest.Server, 5)
	for i := range servers {
		servers[i] = memcachedtest.Start(t)
	}
	m := &membershipKeys{t: t, etcd: etcd, prefix: "/chash/test/", lines: map[string]string{}}
	m.put("s0", serverLine(servers[0], 1, "cache-0"))
	m.put("s1", serverLine(servers[1], 1, "cache-1"))
	url := "etcd://" + etcd.Endpoint + m.prefix
	var proxies []*Proxy
	for range 3 {
		proxies = append(proxies, startSourceProxy(t, nil, sourcePool("alpha", url)))
	}
	pool := sourcePool("alpha", url)
	waitRing(t, time.Second, "alpha", fingerprintOf(t, pool, m.list()...), proxies...)
	clients := make([]*conn, len(proxies))
	for i, p := range proxies {
		clients[i] = dial(t, p.Addr("alpha").String())
	}

	var times []time.Duration
	for change := range 50 {
		key := fmt.Sprintf("s%d", change%len(servers))
		_, present := m.lines[key]
		switch {
		case present && len(m.lines) > 1 && change%3 != 2:
			m.del(key)
		case present:
			m.put(key, serverLine(servers[change%len(servers)], 1+change%3, "cache-"+key[1:])) // a new weight
		default:
			m.put(key, serverLine(servers[change%len(servers)], 1, "cache-"+key[1:]))
		}
		times = append(times, waitRing(t, 5*time.Second, "alpha", fingerprintOf(t, pool, m.list()...), proxies...))
		if change%10 == 9 {
			// Keys written through one proxy hit through the others.
			w := clients[change/10%3]
			for k := range 20 {
				key := fmt.Sprintf("change%d:key%d", change, k)
				if got := w.mustDo("set " + key + " 0 0 1\r\nv\r\n"); got != "STORED\r\n" {
					t.Fatalf("change %d: set %s: %q", change, key, got)
				}
				for _, r := range clients {
					if got := r.mustDo("get " + key + "\r\n"); got != "VALUE "+key+" 0 1\r\nv\r\nEND\r\n" {
						t.Errorf("change %d: %s written through one proxy reads %q through another", change, key, got)
					}
				}
			}
		}
	}
	slices.Sort(times)
	p99 := times[len(times)*99/100]
	t.Logf("agreement after a change: median %v, p99 %v, max %v", times[len(times)/2], p99, times[len(times)-1])
	if p99 > time.Second {
		t.Errorf("p99 of the time for three proxies to agree on a change = %v; want at most 1s", p99)
	}
	// Every proxy says so on /ring and in its metrics. A heartbeat slow on a
	// loaded machine (250 ms here) has the watch made again, the source
	// unreachable meanwhile (at most the backoff, 500 ms): read until it is
	// back, for a few seconds.
	want := fingerprintOf(t, pool, m.list()...)
	for i, p := range proxies {
		var r PoolRing
		waitFor(5*time.Second, func() bool {
			var ring struct {
				Pools map[string]PoolRing `json:"pools"`
			}
			if err := json.Unmarshal([]byte(adminGet(t, p, "/ring")), &ring); err != nil {
				t.Fatal(err)
			}
			r = ring.Pools["alpha"]
			return r.Connected
		})
		if r.Fingerprint != want || r.Source != url || r.Revision == 0 || !r.Connected || len(r.Servers) != len(m.lines) {
			t.Errorf("proxy %d: /ring shows %+v; want fingerprint %s, source %s, %d servers", i, r, want, url, len(m.lines))
		}
		metrics := adminGet(t, p, "/metrics")
		for _, line := range []string{
			`chash_proxy_ring_info{fingerprint="` + want + `",pool="alpha"} 1`,
			`chash_proxy_source_connected{pool="alpha",source="` + url + `"} 1`,
			fmt.Sprintf(`chash_proxy_source_revision{pool="alpha"} %d`, r.Revision),
		} {
			if !strings.Contains(metrics, line) {
				t.Errorf("proxy %d: /metrics lacks %s", i, line)
			}
		}
	}
}

// TestServersFromEtcdFrozen freezes etcd (SIGSTOP) for 30 seconds while
// clients send requests without pause: not one fails; the source reports
// itself disconnected meanwhile, and a change made once etcd is back reaches
// the proxy.
func TestServersFromEtcdFrozen(t *testing.T) {
	if testing.Short() {
		t.Skip("30 seconds of a frozen etcd")
	}
	etcd := etcdtest.Start(t)
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	m := &membershipKeys{t: t, etcd: etcd, prefix: "/chash/frozen/", lines: map[string]string{}}
	m.put("a", serverLine(servers[0], 1, "a"))
	m.put("b", serverLine(servers[1], 1, "b"))
	url := "etcd://" + etcd.Endpoint + m.prefix
	pool := sourcePool("alpha", url)
	p := startSourceProxy(t, nil, pool)
	waitRing(t, time.Second, "alpha", fingerprintOf(t, pool, m.list()...), p)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var done, failed atomic.Int64
	for i := range 4 {
		c := dial(t, p.Addr("alpha").String())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("frozen:%d:%d", i, n%100)
				got, err := c.do("set " + key + " 0 0 1\r\nv\r\nget " + key + "\r\n")
				if err != nil || got != "STORED\r\nVALUE "+key+" 0 1\r\nv\r\nEND\r\n" {
					if failed.Add(1) <= 5 {
						t.Errorf("client %d, request %d with etcd frozen: %q, %v", i, n, got, err)
					}
				}
				done.Add(1)
				time.Sleep(time.Millisecond) // a steady load, not a flood, on a shared machine
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	etcd.Freeze()
	frozen := time.Now()
	if !pollFor(10*time.Second, func() bool { return !p.Rings()["alpha"].Connected }) {
		t.Error("10s after etcd froze, its source still reports itself connected")
	}
	if page, want := adminGet(t, p, "/"), "</code>: unreachable since "; !strings.Contains(page, want) || !strings.Contains(page, "revision ") {
		t.Errorf("with etcd frozen, the status page lacks %q:\n%s", want, page)
	}
	time.Sleep(30*time.Second - time.Since(frozen))
	etcd.Thaw()
	close(stop)
	wg.Wait()
	t.Logf("%d requests over 30s of a frozen etcd, %d failed", done.Load(), failed.Load())
	if failed.Load() > 0 {
		t.Errorf("%d of %d requests failed while etcd was frozen", failed.Load(), done.Load())
	}
	if !pollFor(10*time.Second, func() bool { return p.Rings()["alpha"].Connected }) {
		t.Error("10s after etcd thawed, its source still reports itself disconnected")
	}
	m.put("c", serverLine(servers[2], 1, "c"))
	waitRing(t, 5*time.Second, "alpha", fingerprintOf(t, pool, m.list()...), p)
}

// TestServersFromLeaseLapse registers a server under a lease that stops
// being kept alive, as when its registrar dies with its server: every proxy
// drops it within the lease's TTL and a second.
func TestServersFromLeaseLapse(t *testing.T) {
	etcd := etcdtest.Start(t)
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	m := &membershipKeys{t: t, etcd: etcd, prefix: "/chash/lease/", lines: map[string]string{}}
	m.put("a", serverLine(servers[0], 1, "a"))
	url := "etcd://" + etcd.Endpoint + m.prefix
	pool := sourcePool("alpha", url)
	var proxies []*Proxy
	for range 3 {
		proxies = append(proxies, startSourceProxy(t, nil, sourcePool("alpha", url)))
	}

	const ttl = 2 * time.Second // etcd's least TTL with its default election timeout
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli := etcd.Client()
	lease, err := cli.Grant(ctx, int64(ttl/time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, m.prefix+"b", serverLine(servers[1], 1, "b"), clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	keepCtx, stopKeeping := context.WithCancel(ctx)
	alive, err := cli.KeepAlive(keepCtx, lease.ID)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range alive {
		}
	}()
	waitRing(t, time.Second, "alpha", fingerprintOf(t, pool, m.lines["a"], serverLine(servers[1], 1, "b")), proxies...)
	time.Sleep(ttl) // kept alive past its first TTL
	// The registrar dies: no more keepalives, and no revocation.
	stopKeeping()
	died := time.Now()
	took := waitRing(t, ttl+3*time.Second, "alpha", fingerprintOf(t, pool, m.lines["a"]), proxies...)
	t.Logf("the lapsed server left every ring %v after its last keepalive could have been sent", time.Since(died))
	if d := time.Since(died); d > ttl+time.Second {
		t.Errorf("the server of a lapsed lease left every ring %v after its registrar died (waited %v); want at most TTL+1s = %v", d, took, ttl+time.Second)
	}
}

// TestServersFromBadInput checks what a proxy does with a source that
// cannot serve it: an etcd that does not answer at start fails Start with an
// error naming it; a value that is not a server line, and two keys naming one
// server, are refused while the last good list serves; an empty prefix
// answers every request with an error at once.
func TestServersFromBadInput(t *testing.T) {
	t.Run("unreachable at start", func(t *testing.T) {
		addr := testprog.FreeAddr(t) // nothing listens
		p := &Proxy{SourceTimeout: 700 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
		start := time.Now()
		err := p.Start(&config.File{Path: "test.yml", Pools: []*config.Pool{sourcePool("alpha", "etcd://"+addr+"/chash/x/")}})
		if err == nil {
			p.Close()
			t.Fatal("Start with an etcd that does not answer = nil; want an error")
		}
		for _, want := range []string{`proxy: test.yml:0: pool "alpha": membership:`, "etcd at " + addr} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Start error %q; want it to say %q", err, want)
			}
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Start gave up after %v; want about SourceTimeout (700ms)", d)
		}
	})

	etcd := etcdtest.Start(t)
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}

	t.Run("empty prefix", func(t *testing.T) {
		url := "etcd://" + etcd.Endpoint + "/chash/empty/"
		p := startSourceProxy(t, nil, sourcePool("alpha", url))
		c := dial(t, p.Addr("alpha").String())
		for _, req := range []string{"get k\r\n", "set k 0 0 1\r\nx\r\n", "get a b c\r\n"} {
			start := time.Now()
			if got := c.mustDo(req); got != "SERVER_ERROR no live servers\r\n" {
				t.Errorf("%q with an empty prefix: %q", req, got)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("%q with an empty prefix took %v", req, d)
			}
		}
		if r := p.Rings()["alpha"]; len(r.Servers) != 0 || r.Source != url {
			t.Errorf("Rings()[alpha] of an empty prefix = %+v", r)
		}
	})

	t.Run("refused lists", func(t *testing.T) {
		m := &membershipKeys{t: t, etcd: etcd, prefix: "/chash/bad/", lines: map[string]string{}}
		m.put("a", serverLine(servers[0], 1, "a"))
		url := "etcd://" + etcd.Endpoint + m.prefix
		pool := sourcePool("alpha", url)
		p := startSourceProxy(t, nil, pool)
		good := fingerprintOf(t, pool, m.list()...)
		waitRing(t, time.Second, "alpha", good, p)
		c := dial(t, p.Addr("alpha").String())
		refused := func(n int) {
			t.Helper()
			line := fmt.Sprintf(`chash_proxy_source_refused_total{pool="alpha"} %d`, n)
			if !pollFor(5*time.Second, func() bool { return strings.Contains(adminGet(t, p, "/metrics"), line) }) {
				t.Fatalf("/metrics lacks %s", line)
			}
			if r := p.Rings()["alpha"]; r.Fingerprint != good {
				t.Errorf("after a refused list the ring is %+v; want the last good one, %s", r, good)
			}
			if got := c.mustDo("set k 0 0 1\r\nx\r\n"); got != "STORED\r\n" {
				t.Errorf("set after a refused list: %q", got)
			}
			if m := adminGet(t, p, "/metrics"); !strings.Contains(m, `chash_proxy_source_refusing{pool="alpha"} 1`) {
				t.Errorf("after a refused list /metrics lacks chash_proxy_source_refusing 1")
			}
		}
		etcd.Put(m.prefix+"b", "not a server")
		refused(1)
		etcd.Put(m.prefix+"b", serverLine(servers[1], 1, "a")) // the name of key a's server
		refused(2)
		etcd.Put(m.prefix+"b", serverLine(servers[1], 1, "b"))
		m.lines["b"] = serverLine(servers[1], 1, "b")
		waitRing(t, 5*time.Second, "alpha", fingerprintOf(t, pool, m.list()...), p)
		if !pollFor(5*time.Second, func() bool {
			return strings.Contains(adminGet(t, p, "/metrics"), `chash_proxy_source_refusing{pool="alpha"} 0`)
		}) {
			t.Errorf("after a valid list /metrics lacks chash_proxy_source_refusing 0")
		}
	})
}

// TestServersFromReload checks what a reload does to sources: one that keeps
// a pool's servers_from keeps its source and the list it serves; one that
// changes it follows the new source; one that gives the pool servers: stops
// following.
func TestServersFromReload(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	dir := t.TempDir()
	one, two := filepath.Join(dir, "one"), filepath.Join(dir, "two")
	os.WriteFile(one, []byte(serverLine(servers[0], 1, "a")+"\n"), 0o644)
	os.WriteFile(two, []byte(serverLine(servers[1], 1, "b")+"\n"), 0o644)
	pool := sourcePool("alpha", "file:"+one)
	p := startSourceProxy(t, nil, pool)
	kept := p.sources["alpha"]

	same := sourcePool("alpha", "file:"+one)
	same.Timeout = 3 * time.Second // another setting changes; the source stays
	if err := p.Reload(&config.File{Path: "(test)", Pools: []*config.Pool{same}}); err != nil {
		t.Fatal(err)
	}
	if p.sources["alpha"] != kept || p.Rings()["alpha"].Fingerprint != fingerprintOf(t, pool, serverLine(servers[0], 1, "a")) {
		t.Errorf("a reload that keeps servers_from replaced the source or its list: %+v", p.Rings()["alpha"])
	}

	moved := sourcePool("alpha", "file:"+two)
	if err := p.Reload(&config.File{Path: "(test)", Pools: []*config.Pool{moved}}); err != nil {
		t.Fatal(err)
	}
	if r := p.Rings()["alpha"]; r.Source != "file:"+two || r.Fingerprint != fingerprintOf(t, pool, serverLine(servers[1], 1, "b")) {
		t.Errorf("after a reload to another servers_from: %+v", r)
	}
	select {
	case <-kept.done:
	case <-time.After(5 * time.Second):
		t.Error("the source of the old servers_from still runs after the reload")
	}

	// A servers_from that cannot be read refuses the reload; the pool keeps
	// its source.
	bad := sourcePool("alpha", "file:"+filepath.Join(dir, "missing"))
	if err := p.Reload(&config.File{Path: "bad.yml", Pools: []*config.Pool{bad}}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("Reload to a missing file = %v; want an error naming it", err)
	}
	if r := p.Rings()["alpha"]; r.Source != "file:"+two {
		t.Errorf("after a refused reload the pool follows %q; want file:%s", r.Source, two)
	}

	static := config.NewPool("alpha")
	static.Listen, static.Hash = "127.0.0.1:0", "md5"
	static.Servers = []config.Server{serverOf(t, servers[0])}
	following := p.sources["alpha"]
	if err := p.Reload(&config.File{Path: "(test)", Pools: []*config.Pool{static}}); err != nil {
		t.Fatal(err)
	}
	if r := p.Rings()["alpha"]; r.Source != "" || r.Revision != 0 || len(p.sources) != 0 {
		t.Errorf("after a reload to servers: %+v, %d sources; want none", r, len(p.sources))
	}
	select {
	case <-following.done:
	case <-time.After(5 * time.Second):
		t.Error("the source still runs after a reload gave its pool servers:")
	}

	// Validate reads no source, but refuses a bad URL and a pool with both.
	for _, tt := range []struct {
		edit func(c *config.Pool)
		want string
	}{
		{func(c *config.Pool) { c.ServersFrom = "etcd://127.0.0.1:2379/no-slash" }, `proxy: v.yml:0: pool "alpha": membership: servers_from "etcd://127.0.0.1:2379/no-slash": key prefix "/no-slash" does not end in "/"`},
		{func(c *config.Pool) { c.Servers = []config.Server{serverOf(t, servers[0])} }, "servers and servers_from both set"},
	} {
		c := sourcePool("alpha", "file:"+one)
		tt.edit(c)
		if err := Validate(&config.File{Path: "v.yml", Pools: []*config.Pool{c}}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate = %v; want an error with %q", err, tt.want)
		}
	}
}

// TestServersFromRedis: a Redis pool follows its servers_from as a memcached
// pool does: it serves the file's servers, takes a new list renamed over the
// file, and with no server answers every request with an error at once.
func TestServersFromRedis(t *testing.T) {
	rs := startRedisServers(t, 2)
	dir := t.TempDir()
	list := filepath.Join(dir, "redis.servers")
	write := func(lines ...string) {
		t.Helper()
		tmp := filepath.Join(dir, "new")
		if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, list); err != nil {
			t.Fatal(err)
		}
	}
	one, two := rs[0].Addr+":1 r1", rs[1].Addr+":1 r2"
	write(one)
	pool := sourcePool("alpha", "file:"+list)
	pool.Redis = true
	p := startSourceProxy(t, nil, pool)
	c := redistest.Dial(t, p.Addr("alpha").String())
	for i := range 20 {
		k := fmt.Sprint("key", i)
		if got := c.Do("SET", k, "v"); got != "+OK\r\n" {
			t.Fatalf("SET %s = %q", k, got)
		}
	}
	if n := len(rs[0].Keys()); n != 20 {
		t.Errorf("the one server of the list holds %d keys of 20", n)
	}

	write(one, two)
	waitRing(t, 5*time.Second, "alpha", fingerprintOf(t, pool, one, two), p)
	for i := range 20 {
		k := fmt.Sprint("key", i)
		if got := c.Do("SET", k, "w"); got != "+OK\r\n" {
			t.Fatalf("SET %s with two servers = %q", k, got)
		}
	}
	if n := len(rs[1].Keys()); n == 0 {
		t.Error("no key of 20 went to the server the list added")
	}

	write("# no server")
	waitRing(t, 5*time.Second, "alpha", fingerprintOf(t, pool), p)
	start := time.Now()
	if got := c.Do("GET", "key1"); got != "-ERR no live servers\r\n" {
		t.Errorf("GET with no server = %q; want -ERR no live servers", got)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("GET with no server took %v", d)
	}
}
