package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/dist"
	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/testprog"
)

var k251 = strings.Repeat("k", 251)

// directScript is sent, one request at a time, through the proxy and straight
// to a fresh memcached; the replies must be the same bytes.
var directScript = []string{
	"set a 5 0 2\r\nhi\r\n",
	"get a\r\n",
	"gets a\r\n",
	"get a a nokey a\r\n",
	"add a 0 0 1\r\nx\r\n",
	"add b 0 0 1\r\nx\r\n",
	"replace a 7 0 3\r\nabc\r\n",
	"replace zz 0 0 1\r\nx\r\n",
	"append a 0 0 2\r\nde\r\n",
	"prepend a 0 0 2\r\n01\r\n",
	"gets a b\r\n",
	"cas a 0 0 1 999\r\nx\r\n",
	"cas a 0 0 1 5\r\ny\r\n",
	"cas nokey 0 0 1 5\r\ny\r\n",
	"set n 0 0 2\r\n10\r\n",
	"incr n 5\r\n",
	"decr n 100\r\n",
	"incr a 1\r\n",
	"incr nokey 1\r\n",
	"touch n 100\r\n",
	"touch nokey 100\r\n",
	"gat 100 n a\r\n",
	"gats 0 n\r\n",
	"delete b\r\n",
	"delete b\r\n",
	"delete n 0\r\n",
	"set q 0 0 1 noreply\r\nq\r\n",
	"get q\r\n",
	"delete q noreply\r\n",
	"incr q 1 noreply\r\n",
	"get q\r\n",
	"version\r\n",
	"ms m 2 T0 F3\r\nhi\r\n",
	"mg m v f t\r\n",
	"mg m v k c s O99\r\n",
	"mg nokey v\r\n",
	"mg nokey v q\r\n",
	"mg m v q\r\n",
	"mg m q\r\n",
	"ms m 1 q\r\nx\r\n",
	"ms m 1 q ME\r\nx\r\n",
	"ma m q\r\n",
	// Quiet mode is memcached's: ma hides its reply when it finds the item,
	// not when N makes it; mg shows a hit; errors always show.
	"ma qn N0 q v\r\n",
	"ma qn N0 q v\r\n",
	"ma qn q\r\n",
	"ma nokey q\r\n",
	"mg qn q k\r\n",
	"ma m q v\r\n",
	"md nokey q\r\n",
	"ms qn 1 q MR C1\r\nx\r\n",
	"ms c 1\r\n5\r\n",
	"ma c D10 v\r\n",
	"ma c MD D100 v\r\n",
	"ma nokey\r\n",
	"md c q\r\n",
	"md c q\r\n",
	"md c\r\n",
	"ms eHl6 2 b\r\nhi\r\n",
	"mg eHl6 b v k\r\n",
	"get xyz\r\n",
	"mg m zz\r\n",
	"mg m v v\r\n",
	"mn\r\n",
	// Bad input, answered as memcached answers it.
	"\r\n",
	"bogus\r\n",
	"GET a\r\n",
	"get\r\n",
	"get " + k251 + "\r\n",
	"incr a x\r\n",
	"touch a x\r\n",
	"delete a 1\r\n",
	"gat x a\r\n",
	"mg\r\n",
	"ms x 2 b\r\nhi\r\n",
	"mg a" + strings.Repeat(" v", 18) + "\r\n",
	"get a\r\n",
}

// dataScript is bad input after which memcached reads what the client meant
// as data as the next command. The proxy answers memcached's error for the
// request alone and skips its data block, or, when it cannot tell where the
// block ends, closes the connection: the bytes are not a command.
var dataScript = []struct {
	req, reply string
	closes     bool
}{
	{"set " + k251 + " 0 0 1\r\nx\r\n", "CLIENT_ERROR bad command line format\r\n", false},
	{"set a x 0 1\r\nx\r\n", "CLIENT_ERROR bad command line format\r\n", false},
	{"ms a S2\r\nhi\r\n", "CLIENT_ERROR bad command line format\r\n", true},
	{"set a 0 0 -1\r\nflush_all\r\n", "CLIENT_ERROR bad command line format\r\n", true},
	{"set a 0 0 2\r\nabc\r\n", "CLIENT_ERROR bad data chunk\r\n", true},
	{"set a 0 0 1 2 3\r\nx\r\n", "ERROR\r\n", true},
}

// TestDataNotRun sends dataScript: each request gets memcached's error, its
// data is never run, and none reaches the server.
func TestDataNotRun(t *testing.T) {
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("", s))
	for _, tt := range dataScript {
		before := p.serverRequests("alpha")
		c := dial(t, p.Addr("alpha").String())
		if !tt.closes {
			if got := c.mustDo(tt.req); got != tt.reply {
				t.Errorf("%.40q: %q; want %q", tt.req, got, tt.reply)
			}
		} else {
			c.c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.WriteString(c.c, tt.req); err != nil {
				t.Fatal(err)
			}
			if got, err := io.ReadAll(c.br); string(got) != tt.reply || err != nil {
				t.Errorf("%.40q: %q, %v; want %q and the end of the stream", tt.req, got, err, tt.reply)
			}
		}
		if n := p.serverRequests("alpha") - before; n != 0 {
			t.Errorf("%.40q: %d requests reached the server", tt.req, n)
		}
	}
}

// TestCommandsMatchDirect runs with Go code on one thread, where requests reach
// servers through their connections' writer goroutines, and on two, where a
// request to an idle connection is written by its client's goroutine.
func TestCommandsMatchDirect(t *testing.T) {
	for _, procs := range []int{1, 2} {
		t.Run(fmt.Sprintf("procs=%d", procs), func(t *testing.T) {
			defer SetProcs(SetProcs(procs))
			viaProxy := memcachedtest.Start(t)
			direct := memcachedtest.Start(t)
			p := startProxy(t, poolYAML("", viaProxy))
			pc := dial(t, p.Addr("alpha").String())
			dc := dial(t, direct.Addr)
			for _, req := range directScript {
				want := dc.mustDo(req)
				got := pc.mustDo(req)
				if got != want {
					t.Errorf("%q through the proxy = %q; memcached answers %q", req, got, want)
				}
			}
		})
	}
}

func TestPipelinedRequests(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	p := startProxy(t, poolYAML("", servers...))
	c := dial(t, p.Addr("alpha").String())
	var req, want strings.Builder
	for i := range 500 {
		fmt.Fprintf(&req, "set key%d 0 0 %d\r\nv%d\r\n", i, len(fmt.Sprint(i))+1, i)
		want.WriteString("STORED\r\n")
		fmt.Fprintf(&req, "set quiet%d 0 0 1 noreply\r\nx\r\n", i)
		fmt.Fprintf(&req, "get key%d\r\n", i)
		fmt.Fprintf(&want, "VALUE key%d 0 %d\r\nv%d\r\nEND\r\n", i, len(fmt.Sprint(i))+1, i)
		fmt.Fprintf(&req, "mg nokey%d v q\r\n", i)
	}
	if got := c.mustDo(req.String()); got != want.String() {
		t.Errorf("pipelined replies differ: got %d bytes, want %d", len(got), want.Len())
	}
}

// TestLargeValuesManyClients sends values larger than a server connection's
// write buffer from many clients at once, so that senders wait for room in it.
func TestLargeValuesManyClients(t *testing.T) {
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("timeout: 5000", s))
	const clients, rounds, size = 8, 10, maxWriteBuffer/2 + 1000
	var wg sync.WaitGroup
	for i := range clients {
		c := dial(t, p.Addr("alpha").String())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				v := strings.Repeat(string(rune('a'+(i+r)%26)), size)
				req := fmt.Sprintf("set big%d 0 0 %d\r\n%s\r\nget big%d\r\n", i, size, v, i)
				want := fmt.Sprintf("STORED\r\nVALUE big%d 0 %d\r\n%s\r\nEND\r\n", i, size, v)
				got, err := c.do(req)
				if err != nil || got != want {
					t.Errorf("client %d round %d: got %d bytes (%v); want %d", i, r, len(got), err, len(want))
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestMultiGetFourServers(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	// twemproxy's fnv1a_64 puts keys as alike as k0..k199 on two servers of four.
	const opts = "hash: md5"
	p := startProxy(t, poolYAML(opts, servers...))
	c := dial(t, p.Addr("alpha").String())
	const n = 200
	for i := range n {
		if got := c.mustDo(fmt.Sprintf("set k%d %d 0 %d\r\nv%d\r\n", i, i, len(fmt.Sprint(i))+1, i)); got != "STORED\r\n" {
			t.Fatalf("set k%d: %q", i, got)
		}
	}
	// Each key is where the pool's router says, and only there.
	cfg := parseConfig(t, poolYAML(opts, servers...)).Pools[0]
	r, err := dist.Build(cfg, cfg.Servers)
	if err != nil {
		t.Fatal(err)
	}
	direct := map[string]*conn{}
	for _, s := range servers {
		direct[s.Addr] = dial(t, s.Addr)
	}
	perServer := map[string]int{}
	for i := range n {
		key := fmt.Sprintf("k%d", i)
		j, _ := r.Lookup([]byte(key))
		owner := cfg.Servers[j].Name()
		perServer[owner]++
		for addr, dc := range direct {
			got := dc.mustDo("get " + key + "\r\n")
			if has := got != "END\r\n"; has != (addr == owner) {
				t.Errorf("key %s on %s: %v; router says %s", key, addr, has, owner)
			}
		}
	}
	if len(perServer) != 4 {
		t.Errorf("keys spread over %d servers; want 4", len(perServer))
	}
	// Gets of many keys, with misses and repeats, come back in request order.
	for _, cmd := range []string{"get", "gets"} {
		for start := 0; start < n; start += 37 {
			var req, want strings.Builder
			req.WriteString(cmd)
			for i := start; i < min(start+50, n+5); i++ {
				for rep := 0; rep < 1+i%7/6; rep++ {
					fmt.Fprintf(&req, " k%d", i)
					if i < n {
						fmt.Fprintf(&want, "VALUE k%d %d %d", i, i, len(fmt.Sprint(i))+1)
						if cmd == "gets" {
							want.WriteString(" CAS")
						}
						fmt.Fprintf(&want, "\r\nv%d\r\n", i)
					}
				}
			}
			req.WriteString("\r\n")
			want.WriteString("END\r\n")
			got := c.mustDo(req.String())
			if cmd == "gets" {
				got = maskCas(got)
			}
			if got != want.String() {
				t.Errorf("%.40q...: got\n%q\nwant\n%q", req.String(), got, want.String())
			}
		}
	}
}

// maskCas replaces the cas of each VALUE line by "CAS".
func maskCas(s string) string {
	lines := strings.Split(s, "\r\n")
	for i, l := range lines {
		if f := strings.Fields(l); len(f) == 5 && f[0] == "VALUE" {
			lines[i] = strings.Join(append(f[:4], "CAS"), " ")
		}
	}
	return strings.Join(lines, "\r\n")
}

func TestLimits(t *testing.T) {
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("", s), func(p *Proxy) { p.Limits.MaxValue = 100; p.Limits.MaxLine = 1000 })
	c := dial(t, p.Addr("alpha").String())
	if got := c.mustDo("set a 0 0 101\r\n" + strings.Repeat("x", 101) + "\r\n"); got != "SERVER_ERROR object too large for cache\r\n" {
		t.Errorf("value over the limit: %q", got)
	}
	if got := c.mustDo("get " + k251 + "\r\n"); got != "CLIENT_ERROR bad command line format\r\n" {
		t.Errorf("key over 250 bytes: %q", got)
	}
	// A get line over the limit is read in parts, and answered whole.
	c.mustDo("set a 0 0 1\r\nx\r\n")
	if got, want := c.mustDo("get "+strings.Repeat("a ", 1000)+"\r\n"), strings.Repeat("VALUE a 0 1\r\nx\r\n", 1000)+"END\r\n"; got != want {
		t.Errorf("get line over the limit: %.80q (%d bytes); want %.80q (%d bytes)", got, len(got), want, len(want))
	}
	// Another line over the limit is refused and the connection closed.
	got, err := c.do("mg " + strings.Repeat("a ", 1000) + "\r\n")
	if got != "CLIENT_ERROR line too long\r\n" || err == nil {
		t.Errorf("line over the limit: %q, %v; want the error and the connection closed", got, err)
	}
}

func TestAdmin(t *testing.T) {
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("", s), func(p *Proxy) { p.Admin = "127.0.0.1:0" })
	c := dial(t, p.Addr("alpha").String())
	c.mustDo("set a 0 0 1\r\nx\r\nget a b\r\n")
	base := "http://" + p.AdminAddr().String()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`chash_proxy_requests_total{command="set",pool="alpha"} 1`,
		`chash_proxy_request_duration_seconds_count{command="get",pool="alpha"} 1`,
		`chash_proxy_server_request_duration_seconds_bucket{pool="alpha",server="` + s.Addr + `"`,
		`chash_proxy_server_ring_share{pool="alpha",server="` + s.Addr + `"} 1`,
		`chash_proxy_client_connections{pool="alpha"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	resp, err = http.Get(base + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	var stats map[string]any
	json.NewDecoder(resp.Body).Decode(&stats)
	resp.Body.Close()
	srv, _ := stats["alpha"].(map[string]any)[s.Addr].(map[string]any)
	if srv["requests"] != 2.0 || stats["service"] != "nutcracker" {
		t.Errorf("/stats = %v", stats)
	}
}

// load runs workers that set and get keys through the proxy until stop is
// closed, counting errors per key owner.
type load struct {
	errs, ok sync.Map // owner -> *atomic.Int64
	// epoch counts resets: an op that began before the last one is not
	// counted (a set before a readmission and its get after it, say).
	epoch atomic.Int64
	stop  chan struct{}
	wg    sync.WaitGroup
}

func count(m *sync.Map, k string) {
	v, _ := m.LoadOrStore(k, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

func get(m *sync.Map, k string) int64 {
	if v, ok := m.Load(k); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

func startLoad(t *testing.T, addr string, owner func(key string) string, workers int) *load {
	return runLoad(t, workers, func() func(w, i int) (string, bool, error) {
		c := dial(t, addr)
		return func(w, i int) (string, bool, error) {
			key := fmt.Sprintf("w%d-%d", w, i%500)
			got, err := c.do(fmt.Sprintf("set %s 0 0 1\r\nx\r\nget %s\r\n", key, key))
			return owner(key), got == "STORED\r\nVALUE "+key+" 0 1\r\nx\r\nEND\r\n", err
		}
	})
}

// runLoad runs workers, each with its own op made by newOp, until finish:
// op(w, i) does worker w's request i and returns the owner of its key,
// whether it succeeded, and an error that ends the worker (the connection
// failed).
func runLoad(t *testing.T, workers int, newOp func() func(w, i int) (string, bool, error)) *load {
	l := &load{stop: make(chan struct{})}
	for w := range workers {
		op := newOp()
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				epoch := l.epoch.Load()
				o, ok, err := op(w, i)
				if err != nil {
					t.Errorf("worker %d: %v", w, err)
					return
				}
				if l.epoch.Load() != epoch {
					continue // begun before a reset
				}
				if ok {
					count(&l.ok, o)
				} else {
					count(&l.errs, o)
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	return l
}

func (l *load) finish() {
	close(l.stop)
	l.wg.Wait()
}

// reset forgets what was counted, and the ops under way.
func (l *load) reset() {
	l.epoch.Add(1)
	l.errs.Clear()
	l.ok.Clear()
}

// TestRandom checks distribution: random, which the catalogue marks as routing
// at random: each request of one key goes to a server chosen at random, so
// after 100 sets of k every one of three servers holds it.
func TestRandom(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	p := startProxy(t, poolYAML("distribution: random", servers...))
	c := dial(t, p.Addr("alpha").String())
	for range 100 {
		if got := c.mustDo("set k 0 0 1\r\nv\r\n"); got != "STORED\r\n" {
			t.Fatalf("set k: %q", got)
		}
	}
	for _, s := range servers {
		if got := dial(t, s.Addr).mustDo("get k\r\n"); got != "VALUE k 0 1\r\nv\r\nEND\r\n" {
			t.Errorf("server %s: get k = %q; want the value, set through the proxy", s.Addr, got)
		}
	}
}

func ownerFunc(t *testing.T, yaml string) func(string) string {
	cfg := parseConfig(t, yaml).Pools[0]
	r, err := dist.Build(cfg, cfg.Servers)
	if err != nil {
		t.Fatal(err)
	}
	return func(k string) string {
		i, _ := r.Lookup([]byte(k))
		return cfg.Servers[i].Name()
	}
}

// TestFaults freezes a server (SIGSTOP), thaws it, then kills and restarts it,
// under load, checking that only its keys see errors, that it is ejected, not
// readmitted while frozen, and readmitted once it answers.
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	const opts = "timeout: 200\nauto_eject_hosts: true\nserver_failure_limit: 2\nserver_retry_timeout: 300"
	yaml := poolYAML(opts, servers...)
	p := startProxy(t, yaml)
	victim := servers[1].Addr
	l := startLoad(t, p.Addr("alpha").String(), ownerFunc(t, yaml), 4)
	defer l.finish()
	time.Sleep(200 * time.Millisecond)
	before := runtime.NumGoroutine()
	var memBefore runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&memBefore)

	// Freeze: errors for the victim's keys only, for about timeout × failure
	// limit, then none.
	servers[1].Freeze()
	frozen := time.Now()
	deadline := time.Now().Add(5 * time.Second)
	for !p.ejected("alpha", victim) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !p.ejected("alpha", victim) {
		t.Fatal("frozen server not ejected")
	}
	if d := time.Since(frozen); d > 2*200*time.Millisecond+time.Second {
		t.Errorf("frozen server ejected after %v; want about 2 × 200ms", d)
	} else {
		t.Logf("SIGSTOP: ejected after %v", d.Round(time.Millisecond))
	}
	for _, s := range servers {
		if s.Addr != victim && get(&l.errs, s.Addr) != 0 {
			t.Errorf("while %s froze, %d errors for keys of %s", victim, get(&l.errs, s.Addr), s.Addr)
		}
	}
	t.Logf("SIGSTOP: %d errors for the frozen server's keys before ejection", get(&l.errs, victim))
	// Requests sent just before the ejection time out after it.
	time.Sleep(500 * time.Millisecond)
	l.reset()
	// Frozen across several retry intervals: never readmitted, no errors.
	time.Sleep(1200 * time.Millisecond)
	if !p.ejected("alpha", victim) {
		t.Error("frozen server readmitted")
	}
	var errs int64
	for _, s := range servers {
		errs += get(&l.errs, s.Addr)
	}
	if errs != 0 {
		t.Errorf("%d errors after ejection", errs)
	}

	// Thaw: readmitted after a probe, within a retry interval and a timeout.
	servers[1].Thaw()
	deadline = time.Now().Add(3 * time.Second)
	for p.ejected("alpha", victim) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if p.ejected("alpha", victim) {
		t.Fatal("thawed server not readmitted")
	}
	if !waitFor(3*time.Second, func() bool { return get(&l.ok, victim) > 0 }) {
		t.Error("no request served by the readmitted server")
	}

	// Kill and restart.
	l.reset()
	servers[1].Stop()
	deadline = time.Now().Add(5 * time.Second)
	for !p.ejected("alpha", victim) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !p.ejected("alpha", victim) {
		t.Fatal("killed server not ejected")
	}
	t.Logf("SIGKILL: %d errors for the killed server's keys before ejection", get(&l.errs, victim))
	servers[1].Restart()
	deadline = time.Now().Add(3 * time.Second)
	for p.ejected("alpha", victim) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if p.ejected("alpha", victim) {
		t.Fatal("restarted server not readmitted")
	}
	l.reset()
	waitFor(3*time.Second, func() bool { return get(&l.ok, victim) >= 20 })
	if get(&l.ok, victim) == 0 || get(&l.errs, victim) != 0 {
		t.Errorf("after restart: %d ok, %d errors for its keys", get(&l.ok, victim), get(&l.errs, victim))
	}
	// The same connections are open as before the faults: no goroutine or
	// memory growth.
	if n := runtime.NumGoroutine(); n > before+2 {
		t.Errorf("%d goroutines after the run; %d before", n, before)
	}
	var memAfter runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&memAfter)
	if memAfter.HeapInuse > 2*memBefore.HeapInuse+4<<20 {
		t.Errorf("heap grew from %d to %d bytes", memBefore.HeapInuse, memAfter.HeapInuse)
	}
}

// waitFor polls cond until it holds or d passes, and returns its last value.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// ejected reports whether the named server of the pool is ejected, or its
// keys still route around it: a readmission clears the flag before it swaps
// in the ring that has the server again (probeLoop), and a test that waits
// for it, then counts the server's keys, must find them routed to it (a set
// routed by the old ring and its get by the new one would miss).
func (p *Proxy) ejected(pool, server string) bool {
	p.mu.Lock()
	pl := p.pools[pool]
	p.mu.Unlock()
	st := pl.state.Load()
	s := st.servers[server]
	if s == nil {
		return false
	}
	return s.ejected.Load() || slices.Contains(st.fullList, s) && !slices.Contains(st.live, s)
}

// TestReload adds and removes a server under load: keys whose owner does not
// change never fail.
func TestReload(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	y1 := poolYAML("timeout: 500", servers[0], servers[1])
	y2 := poolYAML("timeout: 500", servers...)
	y3 := poolYAML("timeout: 500", servers[1], servers[2])
	var logs testprog.Buffer
	p := startProxy(t, y1, func(p *Proxy) { p.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	kept := p.pools["alpha"].state.Load().servers[servers[1].Addr]
	o1, o2, o3 := ownerFunc(t, y1), ownerFunc(t, y2), ownerFunc(t, y3)
	var phase atomic.Int32
	unchanged := func(k string) string {
		switch phase.Load() {
		case 1:
			if o1(k) == o2(k) {
				return "stable"
			}
		case 2:
			if o2(k) == o3(k) {
				return "stable"
			}
		}
		return "moved"
	}
	l := startLoad(t, p.Addr("alpha").String(), unchanged, 4)
	defer l.finish()
	for i, y := range []string{y2, y3} {
		phase.Store(int32(i + 1))
		time.Sleep(150 * time.Millisecond)
		if err := p.Reload(parseConfig(t, y)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(150 * time.Millisecond)
	}
	if n := get(&l.errs, "stable"); n != 0 || get(&l.ok, "stable") == 0 {
		t.Errorf("reloads: %d errors, %d successes for keys that did not move", n, get(&l.ok, "stable"))
	}
	// Invalid configurations are refused; the old one keeps serving.
	bad := parseConfig(t, strings.Replace(y3, "  listen: 127.0.0.1:22121\n", "", 1))
	if err := p.Reload(bad); err == nil {
		t.Error("reload of a pool without a listen address accepted")
	}
	c := dial(t, p.Addr("alpha").String())
	if got := c.mustDo("set z 0 0 1\r\nx\r\n"); got != "STORED\r\n" {
		t.Errorf("after a refused reload: %q", got)
	}
	st := p.pools["alpha"].state.Load()
	if len(st.list) != 2 || st.servers[servers[0].Addr] != nil {
		t.Errorf("after reloads, servers %v", st.servers)
	}
	if st.servers[servers[1].Addr] != kept {
		t.Error("a server in every configuration did not keep its connections")
	}
	if !logged(&logs, `msg="reload: key space moved" pool=alpha moved=0.`) {
		t.Errorf("reload logs lack the moved fraction:\n%s", logs.String())
	}
}

func TestEjectErrors(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	yaml := poolYAML("timeout: 200\nauto_eject_hosts: true\nserver_failure_limit: 1\nserver_retry_timeout: 10000", servers...)
	p := startProxy(t, yaml, func(p *Proxy) { p.EjectErrors = true })
	owner := ownerFunc(t, yaml)
	servers[0].Stop()
	c := dial(t, p.Addr("alpha").String())
	var key string
	for i := 0; key == ""; i++ {
		if k := fmt.Sprint("key", i); owner(k) == servers[0].Addr {
			key = k
		}
	}
	c.mustDo("get " + key + "\r\n") // fails and ejects
	if got := c.mustDo("get " + key + "\r\n"); got != "SERVER_ERROR server ejected\r\n" {
		t.Errorf("key of an ejected server: %q", got)
	}
}

// TestRetryZero: with server_retry_timeout: 0, an ejected server is
// readmitted as soon as it answers again (it stayed out 30 s).
func TestRetryZero(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	yaml := poolYAML("timeout: 200\nauto_eject_hosts: true\nserver_failure_limit: 1\nserver_retry_timeout: 0", servers...)
	p := startProxy(t, yaml)
	owner := ownerFunc(t, yaml)
	key := "k"
	for i := 0; owner(key) != servers[0].Addr; i++ {
		key = fmt.Sprint("k", i)
	}
	servers[0].Stop()
	c := dial(t, p.Addr("alpha").String())
	c.mustDo("get " + key + "\r\n") // fails and ejects
	srv := p.pools["alpha"].state.Load().servers[servers[0].Addr]
	if !srv.ejected.Load() {
		t.Fatal("a stopped server was not ejected")
	}
	servers[0].Restart()
	if !waitFor(3*time.Second, func() bool { return !srv.ejected.Load() }) {
		t.Error("3 s after the server came back, with server_retry_timeout: 0, it is still ejected")
	}
	if got := c.mustDo("set " + key + " 0 0 1\r\nv\r\n"); got != "STORED\r\n" {
		t.Errorf("set of its key after readmission: %q", got)
	}
	if got := dial(t, servers[0].Addr).mustDo("get " + key + "\r\n"); got != "VALUE "+key+" 0 1\r\nv\r\nEND\r\n" {
		t.Errorf("the readmitted server has %q for its key; want the value set through the proxy", got)
	}
}

// TestPoolEjectErrors checks eject_errors per pool: over the same servers, with
// the proxy's default false, the keys of an ejected server answer errors in the
// pool that sets it and move in the pool that does not, until a reload sets it
// there too.
func TestPoolEjectErrors(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	const opts = "timeout: 200\nauto_eject_hosts: true\nserver_failure_limit: 1\nserver_retry_timeout: 10000"
	pools := map[string]string{
		"errs":  poolYAML(opts+"\neject_errors: true", servers...),
		"moves": poolYAML(opts, servers...),
	}
	p := startProxy(t, poolsYAML(pools))
	owner := ownerFunc(t, pools["moves"])
	victim := servers[0].Addr
	var key string
	for i := 0; key == ""; i++ {
		if k := fmt.Sprint("key", i); owner(k) == victim {
			key = k
		}
	}
	servers[0].Stop()
	set := "set " + key + " 0 0 1\r\nx\r\n"
	for _, name := range []string{"errs", "moves"} {
		dial(t, p.Addr(name).String()).mustDo(set) // fails and ejects
		if !p.ejected(name, victim) {
			t.Fatalf("pool %s: %s not ejected", name, victim)
		}
	}
	tests := []struct{ pool, want string }{
		{"errs", "SERVER_ERROR server ejected\r\n"},
		{"moves", "STORED\r\n"},
	}
	for _, tt := range tests {
		if got := dial(t, p.Addr(tt.pool).String()).mustDo(set); got != tt.want {
			t.Errorf("pool %s: %q for a key of the ejected server; want %q", tt.pool, got, tt.want)
		}
	}
	// A reload that sets eject_errors takes effect at once, on the connection
	// already open, and keeps the server ejected.
	c := dial(t, p.Addr("moves").String())
	c.mustDo("get " + key + "\r\n")
	pools["moves"] = poolYAML(opts+"\neject_errors: true", servers...)
	if err := p.Reload(parseConfig(t, poolsYAML(pools))); err != nil {
		t.Fatal(err)
	}
	if got := c.mustDo(set); got != "SERVER_ERROR server ejected\r\n" {
		t.Errorf("pool moves after a reload set eject_errors: %q for a key of the ejected server", got)
	}
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		edit func(*config.Pool) // a change made in code, past what a file can say
		want string
	}{
		{yaml: "a:\n  servers:\n   - 127.0.0.1:2:1\n", want: `pool "a": no listen address`},
		{yaml: "a:\n  listen: 127.0.0.1:1\n  redis: true\n  servers:\n   - 127.0.0.1:2:1\n",
			edit: func(p *config.Pool) { p.RedisDB = -1 }, want: `pool "a": redis_db -1 is not a database number`},
	} {
		f, err := config.Parse("t.yml", []byte(tt.yaml))
		if err != nil {
			t.Fatal(err)
		}
		if tt.edit != nil {
			tt.edit(f.Pools[0])
		}
		if err := Validate(f); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%q) = %v; want an error with %q", tt.yaml, err, tt.want)
		}
	}
}

func TestCloseEndsGoroutines(t *testing.T) {
	s := memcachedtest.Start(t)
	before := runtime.NumGoroutine()
	f := parseConfig(t, poolYAML("server_connections: 4", s))
	p := &Proxy{Listen: map[string]string{"alpha": "127.0.0.1:0"}, Admin: "127.0.0.1:0"}
	if err := p.Start(f); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		c := dial(t, p.Addr("alpha").String())
		c.mustDo("set a 0 0 1\r\nx\r\nget a b c d\r\n")
	}
	p.Close()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after Close; %d before\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// TestShutdown checks that Shutdown stops accepting clients and lets a request
// in flight finish.
func TestShutdown(t *testing.T) {
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("timeout: 5000", s))
	addr := p.Addr("alpha").String()
	c := dial(t, addr)
	c.mustDo("set a 0 0 1\r\nx\r\n")
	s.Freeze()
	reply := make(chan string, 1)
	go func() {
		got, _ := c.do("get a\r\n")
		reply <- got
	}()
	time.Sleep(100 * time.Millisecond) // the get is in flight
	done := make(chan error, 1)
	go func() { done <- p.Shutdown(context.Background()) }()
	time.Sleep(100 * time.Millisecond)
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Error("shutting down proxy accepts clients")
	}
	s.Thaw()
	if got := <-reply; got != "VALUE a 0 1\r\nx\r\nEND\r\n" {
		t.Errorf("request in flight at shutdown: %q", got)
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown = %v", err)
	}
}

// TestReloadMoveRefused checks that a reload moving a pool to an address that
// cannot be opened is refused whole, the pool serving on where it was; and that
// the move works once the address is free.
func TestReloadMoveRefused(t *testing.T) {
	s := memcachedtest.Start(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := free.Addr().String()
	free.Close()
	at := func(addr string) *config.File {
		return parseConfig(t, strings.Replace(poolYAML("", s), "127.0.0.1:22121", addr, 1))
	}
	var logs testprog.Buffer
	p := &Proxy{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
	if err := p.Start(at(a)); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Reload(at(busy.Addr().String())); err == nil || !strings.Contains(err.Error(), `pool "alpha"`) {
		t.Fatalf("reload onto a busy address = %v; want an error naming the pool", err)
	}
	c := dial(t, a)
	if got := c.mustDo("set m 0 0 1\r\nx\r\n"); got != "STORED\r\n" {
		t.Fatalf("after the refused move, the pool's old address answers %q", got)
	}
	b := busy.Addr().String()
	busy.Close()
	if err := p.Reload(at(b)); err != nil {
		t.Fatalf("reload onto a free address: %v", err)
	}
	if got := dial(t, b).mustDo("get m\r\n"); got != "VALUE m 0 1\r\nx\r\nEND\r\n" {
		t.Errorf("after the move, the new address answers %q", got)
	}
	// The log says the pool restarts, why, where from, and how many clients
	// it closes.
	if got := jsonLogs(t, &logs, "pool restarting: its clients are closed once answered"); len(got) != 1 ||
		fmt.Sprint(got[0]["why"]) != "[listen]" || got[0]["from"] != a || got[0]["clients"] != float64(1) {
		t.Errorf("pool restarting lines %v; want one, why [listen], from %s, clients 1", got, a)
	}
	if conn, err := net.DialTimeout("tcp", a, time.Second); err == nil {
		conn.Close()
		t.Error("after the move, the old address still accepts clients")
	}
}

// TestServerConnectionsKeepOrder pipelines a set and a get of one key, many
// times over, to a pool with four connections to its server: each get reads
// the value of the set before it, as from memcached itself, where requests
// taking turns over the connections let a get overtake its set.
func TestServerConnectionsKeepOrder(t *testing.T) {
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("server_connections: 4\ntimeout: 5000", s))
	var req, want strings.Builder
	for i := range 500 {
		v := itoa(i)
		fmt.Fprintf(&req, "set k 0 0 %d\r\n%s\r\nget k\r\n", len(v), v)
		fmt.Fprintf(&want, "STORED\r\nVALUE k 0 %d\r\n%s\r\nEND\r\n", len(v), v)
	}
	c := dial(t, p.Addr("alpha").String())
	if got := c.mustDo(req.String()); got != want.String() {
		stale := 0
		for i, line := range strings.Split(got, "\r\n") {
			if i%4 == 2 && line != itoa(i/4) {
				stale++
			}
		}
		t.Errorf("%d of 500 gets did not read the set pipelined before them", stale)
	}
}

// TestReloadKeepsCounters reloads a pool with another server_connections,
// then moves it to another address: its servers get new connections, and
// the pool a new listener, but the counters of the stats port go on from
// where they were, as requests_total of /metrics does.
func TestReloadKeepsCounters(t *testing.T) {
	s := memcachedtest.Start(t)
	var addrs [2]string
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs[i] = ln.Addr().String()
		ln.Close()
	}
	at := func(addr string, conns int) *config.File {
		return parseConfig(t, strings.Replace(poolYAML("server_connections: "+itoa(conns), s), "127.0.0.1:22121", addr, 1))
	}
	p := &Proxy{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := p.Start(at(addrs[0], 1)); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := dial(t, addrs[0])
	for range 3 {
		c.mustDo("set k 0 0 1\r\nx\r\n")
	}
	io.WriteString(c.c, "quit\r\n")
	io.Copy(io.Discard, c.c)
	counts := func() (requests, eof int64) {
		alpha := parseStats(t, p.StatsJSON()).obj(t, "alpha")
		return alpha.obj(t, s.Addr).num(t, "requests"), alpha.num(t, "client_eof")
	}
	waitFor(5*time.Second, func() bool { _, eof := counts(); return eof == 1 })
	for _, step := range []struct {
		what  string
		addr  string
		conns int
	}{
		{"before a reload", addrs[0], 1},
		{"after a reload to server_connections: 2", addrs[0], 2},
		{"after a reload to another listen address", addrs[1], 2},
	} {
		if err := p.Reload(at(step.addr, step.conns)); err != nil {
			t.Fatal(err)
		}
		if requests, eof := counts(); requests != 3 || eof != 1 {
			t.Errorf("%s: requests = %d, client_eof = %d; want 3, 1", step.what, requests, eof)
		}
	}
	dial(t, addrs[1]).mustDo("set k 0 0 1\r\nx\r\n")
	if requests, _ := counts(); requests != 4 {
		t.Errorf("a set more at the new address: requests = %d; want 4", requests)
	}
}

// TestUnixSockets serves a pool on a Unix socket in front of a memcached on
// another, as nutcracker.yml allows for both.
func TestUnixSockets(t *testing.T) {
	s := memcachedtest.StartUnix(t)
	listen := filepath.Join(filepath.Dir(s.Addr), "proxy.sock")
	yaml := "alpha:\n  listen: " + listen + "\n  servers:\n   - " + s.Addr + ":1\n"
	p := &Proxy{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := p.Start(parseConfig(t, yaml)); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := dial(t, listen)
	if got := c.mustDo("set u 3 0 4\r\nunix\r\n"); got != "STORED\r\n" {
		t.Fatalf("set through the proxy's socket = %q", got)
	}
	if got := c.mustDo("get u\r\n"); got != "VALUE u 3 4\r\nunix\r\nEND\r\n" {
		t.Errorf("get through the proxy's socket = %q", got)
	}
	direct := dial(t, s.Addr)
	if got := direct.mustDo("get u\r\n"); got != "VALUE u 3 4\r\nunix\r\nEND\r\n" {
		t.Errorf("get from memcached's socket = %q", got)
	}
}

// TestStaleUnixSocket: a pool's Unix socket left by a process that died (the
// file is there, nothing listens) is replaced, as nutcracker replaces it; one
// that another process serves is not, and the pool does not start.
func TestStaleUnixSocket(t *testing.T) {
	s := memcachedtest.Start(t)
	path := filepath.Join(t.TempDir(), "p.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	yaml := "alpha:\n  listen: " + path + "\n  servers:\n   - " + s.Addr + ":1\n"
	// Served: refused, and left as it is.
	p := &Proxy{Logger: slog.New(slog.DiscardHandler)}
	if err := p.Start(parseConfig(t, yaml)); err == nil || !strings.Contains(err.Error(), "address already in use") {
		p.Close()
		t.Errorf("Start on a Unix socket another listener serves: %v; want address already in use", err)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err != nil {
		t.Errorf("the other listener's socket after the refused Start: %v", err)
	} else {
		c.Close()
	}
	// Stale: the listener closed without removing its file.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	p = &Proxy{Logger: slog.New(slog.DiscardHandler)}
	if err := p.Start(parseConfig(t, yaml)); err != nil {
		t.Fatalf("Start on a stale Unix socket: %v", err)
	}
	defer p.Close()
	c := dial(t, path)
	if got := c.mustDo("set u 0 0 1\r\nx\r\n"); got != "STORED\r\n" {
		t.Errorf("set through the replaced socket = %q", got)
	}
}
