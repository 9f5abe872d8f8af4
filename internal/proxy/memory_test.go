package proxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/redistest"
)

// inUse returns the bytes of heap and goroutine stacks in use after a
// collection.
func inUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}

// TestIdleClientsMemory checks what an idle client costs the proxy: it holds
// neither a read nor a write buffer while it waits, and once idle for
// shedAfter no goroutine either (parker), in a memcached pool as in a Redis
// pool. The figure includes the test's end of each connection, in the same
// process (0.3 KB). A client used to cost 40 KB (a 16 KiB read and a 16 KiB
// write buffer each), then 7.0 (a stack of 4 KiB the runtime could not
// shrink, a 512-byte buffer), then 4.1 (a new goroutine's stack of 2 KiB),
// now 2.1 where clients are parked (Linux); nutcracker's about 0.3.
func TestIdleClientsMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's memory would count")
	}
	defer func(d time.Duration) { shedAfter = d }(shedAfter)
	shedAfter = 50 * time.Millisecond
	for _, proto := range []struct {
		name       string
		yaml       func() string
		req, reply string
	}{
		{"memcached", func() string { return poolYAML("", memcachedtest.Start(t)) },
			"set k 0 0 1000\r\n" + string(make([]byte, 1000)) + "\r\n", "STORED\r\n"},
		{"redis", func() string { return redisPoolYAML("", redistest.Start(t)) },
			redistest.Request("SET", "k", string(make([]byte, 1000))), "+OK\r\n"},
	} {
		p := startProxy(t, proto.yaml())
		addr := p.Addr("alpha").String()
		before := inUse()
		const n = 2000
		conns := make([]net.Conn, n)
		reply := make([]byte, len(proto.reply))
		for i := range conns {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			conns[i] = c
			if _, err := io.WriteString(c, proto.req); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(c, reply); err != nil || string(reply) != proto.reply {
				t.Fatalf("%s: client %d: %q, %v", proto.name, i, reply, err)
			}
		}
		if !waitFor(10*time.Second, func() bool { return p.pools["alpha"].sheds.Load() >= n }) {
			t.Errorf("%s: %d of %d idle clients' goroutines replaced", proto.name, p.pools["alpha"].sheds.Load(), n)
		}
		perClient := (int64(inUse()) - int64(before)) / n
		t.Logf("%s: an idle client costs %d bytes of heap and stack", proto.name, perClient)
		want := int64(5632)
		if runtime.GOOS == "linux" {
			want = 3072
		}
		if perClient > want {
			t.Errorf("%s: an idle client costs %d bytes of heap and stack; want at most %d", proto.name, perClient, want)
		}
	}
}

// TestParkedClients checks that clients idle for shedAfter wait without a
// goroutine each (parker), and that a parked client is served when it sends,
// and closed when it closes its end, by reset or FIN.
func TestParkedClients(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("clients are parked on Linux only")
	}
	// Restored after the proxy closes (cleanups run last first), whose
	// clients read it.
	d := shedAfter
	t.Cleanup(func() { shedAfter = d })
	shedAfter = 20 * time.Millisecond
	p := startProxy(t, poolYAML("", memcachedtest.Start(t)), func(p *Proxy) { p.Admin = "127.0.0.1:0" })
	pl := p.pools["alpha"]
	idle := func() float64 { return metricValues(t, p, "chash_proxy_client_connections_idle", "pool")["alpha"] }
	const n = 300
	before := runtime.NumGoroutine()
	conns := make([]*conn, n)
	for i := range conns {
		conns[i] = dial(t, p.Addr("alpha").String())
		conns[i].mustDo(fmt.Sprintf("set k%d 0 0 1\r\n%d\r\n", i, i%10))
	}
	if !waitFor(10*time.Second, func() bool { return pl.sheds.Load() >= n }) {
		t.Fatalf("%d of %d idle clients shed", pl.sheds.Load(), n)
	}
	// The test's own goroutines and the servers' are a few; a goroutine a
	// client would be n more.
	if !waitFor(5*time.Second, func() bool { return runtime.NumGoroutine() < before+n/4 }) {
		t.Errorf("%d idle clients parked: %d goroutines, %d before they connected; want fewer than %d more",
			n, runtime.NumGoroutine(), before, n/4)
	}
	if got := idleClients.parkedCount(); got < n {
		t.Errorf("%d clients parked; want at least %d", got, n)
	}
	if got := idle(); got != n {
		t.Errorf("with %d clients parked, /metrics says %v idle; want %d", n, got, n)
	}
	for i, c := range conns[:n/2] {
		want := fmt.Sprintf("VALUE k%d 0 1\r\n%d\r\nEND\r\n", i, i%10)
		if got := c.mustDo(fmt.Sprintf("get k%d\r\n", i)); got != want {
			t.Fatalf("parked client %d: get = %q; want %q", i, got, want)
		}
	}
	// The other half close while parked: the proxy closes their
	// connections, half of them reset, half by FIN.
	open := pl.nconns.Load()
	for i, c := range conns[n/2:] {
		if i%2 == 0 {
			c.c.(*net.TCPConn).SetLinger(0)
		}
		c.c.Close()
	}
	if !waitFor(5*time.Second, func() bool { return pl.nconns.Load() <= open-n/2 }) {
		t.Errorf("%d parked clients closed their end: the proxy has %d connections, %d before", n/2, pl.nconns.Load(), open)
	}
	// The half served park again, idle for shedAfter; the half closed are
	// gone.
	if !waitFor(5*time.Second, func() bool { return idle() == n/2 }) {
		t.Errorf("after half the parked clients closed and half were served, /metrics says %v idle; want %d", idle(), n/2)
	}
}

// TestParkedClientsChurn has clients that pause around shedAfter between
// requests, so that they park and wake over and over, while reloads change
// the idle timeout; every reply is right, and a shutdown then ends every
// client, parked or not.
func TestParkedClientsChurn(t *testing.T) {
	d := shedAfter
	t.Cleanup(func() { shedAfter = d })
	shedAfter = 5 * time.Millisecond
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("", s))
	pl := p.pools["alpha"]
	const clients = 40
	l := runLoad(t, clients, func() func(w, i int) (string, bool, error) {
		c := dial(t, p.Addr("alpha").String())
		return func(w, i int) (string, bool, error) {
			time.Sleep(time.Duration((w+i)%4) * 4 * time.Millisecond)
			v := strconv.Itoa(w*100000 + i)
			got, err := c.do(fmt.Sprintf("set c%d 0 0 %d\r\n%s\r\n", w, len(v), v))
			if err != nil || got != "STORED\r\n" {
				t.Errorf("client %d, request %d: set = %q, %v", w, i, got, err)
				return "", false, err
			}
			want := fmt.Sprintf("VALUE c%d 0 %d\r\n%s\r\nEND\r\n", w, len(v), v)
			if got, err = c.do(fmt.Sprintf("get c%d\r\n", w)); err != nil || got != want {
				t.Errorf("client %d, request %d: get = %q, %v; want %q", w, i, got, err, want)
				return "", false, err
			}
			return "", true, nil
		}
	})
	for i := range 10 {
		extra := ""
		if i%2 == 0 {
			extra = "client_idle_timeout: 60000"
		}
		if err := p.Reload(parseConfig(t, poolYAML(extra, s))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	l.finish()
	t.Logf("%d clients parked in all", pl.sheds.Load())
	if pl.sheds.Load() < clients {
		t.Errorf("%d clients parked in all; want at least %d", pl.sheds.Load(), clients)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if n := pl.nconns.Load(); n != 0 {
		t.Errorf("after the shutdown, the pool has %d clients; want 0", n)
	}
	if n := pl.parked.Load(); n != 0 {
		t.Errorf("after the shutdown, the pool counts %d clients parked; want 0", n)
	}
}

// TestShedIdleClient checks that a client whose goroutine was replaced
// (shedAfter), from its start or after requests, is served as before: its next requests are answered, a request
// whose bytes arrive over more than shedAfter is read whole, the idle
// timeout, longer than shedAfter, still closes it, and a shutdown ends it.
func TestShedIdleClient(t *testing.T) {
	defer func(d time.Duration) { shedAfter = d }(shedAfter)
	shedAfter = 20 * time.Millisecond
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("", s))
	pl := p.pools["alpha"]
	shed := func(c *conn, what string) {
		t.Helper()
		sheds := pl.sheds.Load()
		if !waitFor(5*time.Second, func() bool { return pl.sheds.Load() > sheds }) {
			t.Fatalf("%s: the idle client's goroutine is not replaced", what)
		}
	}
	// A client that has sent nothing yet.
	silent := dial(t, p.Addr("alpha").String())
	shed(silent, "before a request")
	if got := silent.mustDo("get k\r\n"); got != "END\r\n" {
		t.Errorf("first get after the goroutine was replaced = %q", got)
	}
	c := dial(t, p.Addr("alpha").String())
	c.mustDo("set k 0 0 1\r\nv\r\n")
	shed(c, "after a set")
	if got := c.mustDo("get k\r\n"); got != "VALUE k 0 1\r\nv\r\nEND\r\n" {
		t.Errorf("get after the goroutine was replaced = %q", got)
	}
	shed(c, "after a get")
	// A value uploaded slowly right after a request, which set shedAfter's
	// deadline: it passes while the request is read.
	c.mustDo("get k\r\n")
	c.c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c.c, "set slow 0 0 10\r\n12345")
	time.Sleep(4 * shedAfter)
	io.WriteString(c.c, "67890\r\n")
	time.Sleep(4 * shedAfter)
	if got := c.mustDo("get slow\r\n"); got != "STORED\r\nVALUE slow 0 10\r\n1234567890\r\nEND\r\n" {
		t.Errorf("a set whose value arrived over 4 shedAfter, then get = %q", got)
	}

	// With an idle timeout of 10 shedAfter, the client is replaced first,
	// then closed.
	q := startProxy(t, poolYAML("client_idle_timeout: 200", s))
	qpl := q.pools["alpha"]
	idle := dial(t, q.Addr("alpha").String())
	idle.mustDo("get k\r\n")
	if !waitFor(5*time.Second, func() bool { return qpl.sheds.Load() > 0 }) {
		t.Fatal("a client with an idle timeout of 200 ms: its goroutine is not replaced")
	}
	idle.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := idle.br.ReadByte(); err != io.EOF {
		t.Errorf("client idle past client_idle_timeout after its goroutine was replaced: read %v; want io.EOF", err)
	}

	// A shutdown ends a client whose goroutine was replaced.
	sheds := pl.sheds.Load()
	c.mustDo("get k\r\n")
	if !waitFor(5*time.Second, func() bool { return pl.sheds.Load() > sheds }) {
		t.Fatal("before the shutdown: the idle client's goroutine is not replaced")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Errorf("shutdown with an idle client whose goroutine was replaced: %v", err)
	}
	c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.br.ReadByte(); err != io.EOF {
		t.Errorf("after the shutdown, the client reads %v; want io.EOF", err)
	}
}

// The tests of the budget take the proxy past it with multi-gets of many
// values under largeValue, each reply 512 KiB: a pool does not remember
// such values (largeValues), so nothing bounds a client's replies in flight
// below maxPendingKeys.
const spreadKeys, spreadSize = 16, 32 << 10

// spread returns, for memcached or Redis, the request that stores the
// spreadKeys values, its reply, a multi-get of them and the multi-get's reply.
func spread(redis bool) (set, stored, get, reply string) {
	value := strings.Repeat("v", spreadSize)
	keys := make([]string, spreadKeys)
	var sets, vals strings.Builder
	mset := []string{"MSET"}
	for i := range keys {
		keys[i] = fmt.Sprint("s", i)
		fmt.Fprintf(&sets, "set %s 0 0 %d noreply\r\n%s\r\n", keys[i], spreadSize, value)
		fmt.Fprintf(&vals, "VALUE %s 0 %d\r\n%s\r\n", keys[i], spreadSize, value)
		mset = append(mset, keys[i], value)
	}
	if redis {
		var mget strings.Builder
		fmt.Fprintf(&mget, "*%d\r\n", spreadKeys)
		for range keys {
			fmt.Fprintf(&mget, "$%d\r\n%s\r\n", spreadSize, value)
		}
		return redistest.Request(mset...), "+OK\r\n", "MGET " + strings.Join(keys, " ") + "\r\n", mget.String()
	}
	return sets.String() + "version\r\n", "VERSION ", "get " + strings.Join(keys, " ") + "\r\n", vals.String() + "END\r\n"
}

// TestMemoryBudget has a client pipeline 40 gets of 512 KiB (spread) and not
// read the replies, so that the proxy holds 20 MiB it cannot write. With a
// budget of 8 MiB, another client is not read until the first reads its
// replies; with the default budget, it is served at once. Either way the proxy
// holds nothing once every reply is written. So for memcached and Redis pools.
func TestMemoryBudget(t *testing.T) {
	const gets = 40
	for _, proto := range []struct {
		name                  string
		yaml                  func() string
		set, stored, get, big string
		getSmall, small       string
	}{
		{
			name:     "memcached",
			yaml:     func() string { return poolYAML("timeout: 20000", memcachedtest.Start(t)) },
			getSmall: "get small\r\n",
			small:    "END\r\n",
		},
		{
			name:     "redis",
			yaml:     func() string { return redisPoolYAML("timeout: 20000", redistest.Start(t)) },
			getSmall: "GET small\r\n",
			small:    "$-1\r\n",
		},
	} {
		proto.set, proto.stored, proto.get, proto.big = spread(proto.name == "redis")
		yaml := proto.yaml()
		for _, budget := range []int64{8 << 20, 0} {
			p := startProxy(t, yaml, func(p *Proxy) { p.MaxMemory = budget })
			addr := p.Addr("alpha").String()
			loader := dial(t, addr)
			io.WriteString(loader.c, proto.set)
			if line, err := loader.br.ReadString('\n'); !strings.HasPrefix(line, proto.stored) {
				t.Fatalf("%s: storing the values: %q, %v", proto.name, line, err)
			}
			greedy := dial(t, addr)
			if _, err := io.WriteString(greedy.c, strings.Repeat(proto.get, gets)); err != nil {
				t.Fatal(err)
			}
			if !waitFor(10*time.Second, func() bool { return p.mem.held.Load() > 16<<20 }) {
				t.Fatalf("%s, budget %d: the proxy holds %d bytes; want the replies it cannot write", proto.name, budget, p.mem.held.Load())
			}
			waits := p.mem.waits.Load()
			other := dial(t, addr)
			if _, err := io.WriteString(other.c, proto.getSmall); err != nil {
				t.Fatal(err)
			}
			if budget > 0 {
				// The other client waits for memory, its request unread.
				if !waitFor(10*time.Second, func() bool { return p.mem.waits.Load() > waits }) {
					t.Fatalf("%s, budget %d: no client waits while the proxy holds %d bytes", proto.name, budget, p.mem.held.Load())
				}
				other.c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				if line, err := other.br.ReadString('\n'); err == nil {
					t.Errorf("%s, budget %d: a client is answered %q while the proxy is over its budget", proto.name, budget, line)
				}
			}
			other.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			answered := make(chan string, 1)
			go func() {
				line, _ := other.br.ReadString('\n')
				answered <- line
			}()
			if budget == 0 {
				if line := <-answered; line != proto.small {
					t.Errorf("%s, default budget: the other client is answered %q; want %q", proto.name, line, proto.small)
				}
			}
			greedy.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			for i := range gets {
				got := make([]byte, len(proto.big))
				if _, err := io.ReadFull(greedy.br, got); err != nil || string(got) != proto.big {
					t.Fatalf("%s, budget %d: reply %d to the greedy client: %v", proto.name, budget, i, err)
				}
			}
			if budget > 0 {
				if line := <-answered; line != proto.small {
					t.Errorf("%s, budget %d: once memory is free, the other client is answered %q; want %q", proto.name, budget, line, proto.small)
				}
			}
			if !waitFor(5*time.Second, func() bool { return p.mem.held.Load() == 0 }) {
				t.Errorf("%s, budget %d: %d bytes held once every reply is written; want 0", proto.name, budget, p.mem.held.Load())
			}
		}
	}
}

// TestSlowReaderClosed: past the memory budget, a client that does not read
// its replies (40 gets of 512 KiB, spread) holds the bytes the others wait for; after slowReader without
// taking a write, it is closed, and the client that waited is answered. The
// closing is counted as a refusal of class slow_reader. So over TLS too,
// where a write that began within the budget waited for ever, and with it
// every client of the proxy.
func TestSlowReaderClosed(t *testing.T) {
	const gets = 40
	set, _, get, _ := spread(false)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeCert(t, certFile, keyFile)
	for _, overTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "tcp", true: "tls"}[overTLS], func(t *testing.T) {
			p := startProxy(t, poolYAML("timeout: 20000", memcachedtest.Start(t)), func(p *Proxy) {
				p.MaxMemory = 8 << 20
				if overTLS {
					p.TLSCertFile, p.TLSKeyFile = certFile, keyFile
				}
			})
			addr := p.Addr("alpha").String()
			dialAny := func() *conn {
				if overTLS {
					c, _ := dialTLS(t, addr)
					return c
				}
				return dial(t, addr)
			}
			if got := dialAny().mustDo(set); !strings.HasPrefix(got, "VERSION ") {
				t.Fatalf("storing the values: %q", got)
			}
			// Connected before the proxy goes past its budget, when it reads
			// no new client (and so completes no TLS handshake).
			other := dialAny()
			greedy := dialAny()
			if _, err := io.WriteString(greedy.c, strings.Repeat(get, gets)); err != nil {
				t.Fatal(err)
			}
			if !waitFor(10*time.Second, func() bool { return p.mem.held.Load() > 16<<20 }) {
				t.Fatalf("the proxy holds %d bytes; want the replies it cannot write", p.mem.held.Load())
			}
			start := time.Now()
			other.c.SetDeadline(time.Now().Add(4 * slowReader))
			io.WriteString(other.c, "get small\r\n")
			if got, err := other.br.ReadString('\n'); got != "END\r\n" {
				t.Fatalf("the client that waited: %q, %v after %v; want END", got, err, time.Since(start).Round(time.Millisecond))
			}
			waited := time.Since(start)
			if waited < slowReader/2 {
				t.Errorf("the other client was answered after %v, before the slow reader's %v could pass", waited, slowReader)
			}
			// The slow reader's connection is closed (the loader's and the
			// other client's stay), and ends for it after what it had
			// received.
			if !waitFor(5*time.Second, func() bool { return p.pools["alpha"].nconns.Load() == 2 }) {
				t.Errorf("%d clients connected; want 2, the slow reader closed", p.pools["alpha"].nconns.Load())
			}
			greedy.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.Copy(io.Discard, greedy.br); isTimeout(err) {
				t.Error("the slow reader's connection does not end")
			}
			if s := statLines(t, other.mustDo("stats\r\n")); s["refused_slow_reader"] != "1" {
				t.Errorf("stats: refused_slow_reader %q; want 1", s["refused_slow_reader"])
			}
			if !waitFor(5*time.Second, func() bool { return p.mem.held.Load() == 0 }) {
				t.Errorf("after the slow reader was closed, the proxy holds %d bytes; want 0", p.mem.held.Load())
			}
		})
	}
}

// TestPendingKeysBound: clients that pipeline multi-gets of many keys and do
// not read their replies have at most maxPendingKeys keys in flight each, so
// the replies the proxy holds for them stay near 4,096 values each: three
// clients of 400 gets of 3,000 keys of 1 KB held 17 MB, and without the bound
// 34 to 258 MB after a few seconds, growing past a budget of 64 MiB (1.4 GB
// in a review), while the other clients waited.
func TestPendingKeysBound(t *testing.T) {
	p := startProxy(t, poolYAML("timeout: 20000", memcachedtest.Start(t)), func(p *Proxy) { p.MaxMemory = 64 << 20 })
	c := dial(t, p.Addr("alpha").String())
	value := strings.Repeat("v", 1000)
	keys := make([]string, 3000)
	var b strings.Builder
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
		fmt.Fprintf(&b, "set %s 0 0 %d noreply\r\n%s\r\n", keys[i], len(value), value)
	}
	c.mustDo(b.String())
	get := "get " + strings.Join(keys, " ") + "\r\n" // 3 MB of replies
	for range 3 {
		greedy := dial(t, p.Addr("alpha").String())
		go io.WriteString(greedy.c, strings.Repeat(get, 400)) // ends when the test closes it
	}
	waitFor(5*time.Second, func() bool { return p.mem.peak.Load() > 24<<20 })
	if peak := p.mem.peak.Load(); peak > 24<<20 {
		// Two gets in flight each: 18 MB.
		t.Errorf("the proxy held %d MB for three clients with 400 gets of 3,000 keys of 1 KB each; want at most 24 MB", peak>>20)
	}
	if got := c.mustDo("get k1\r\n"); got != "VALUE k1 0 1000\r\n"+value+"\r\nEND\r\n" {
		t.Errorf("another client meanwhile: %.40q", got)
	}
}

// TestSlowReaderGivesBack: a client pipelines 40 gets of 512 KiB (spread) and
// reads its replies slowly (4 MiB a second), so that the proxy, with a budget
// of 8 MiB, goes past it. Another client waits for memory only until the
// replies not yet written fit the budget: it is answered while the slow
// client has read less than 70% of its 20 MiB. Had the memory of a batch of
// replies been given back only once all were written, it would wait until
// the last were in the socket's buffers (a few MiB).
func TestSlowReaderGivesBack(t *testing.T) {
	const gets = 40
	set, _, get, reply := spread(false)
	p := startProxy(t, poolYAML("timeout: 20000", memcachedtest.Start(t)), func(p *Proxy) { p.MaxMemory = 8 << 20 })
	addr := p.Addr("alpha").String()
	if got := dial(t, addr).mustDo(set); !strings.HasPrefix(got, "VERSION ") {
		t.Fatalf("storing the values: %q", got)
	}
	other := dial(t, addr)
	slow := dial(t, addr)
	slow.c.(*net.TCPConn).SetReadBuffer(64 << 10)
	if _, err := io.WriteString(slow.c, strings.Repeat(get, gets)); err != nil {
		t.Fatal(err)
	}
	if !waitFor(10*time.Second, func() bool { return p.mem.held.Load() > 12<<20 }) {
		t.Fatalf("the proxy holds %d bytes; want the replies it cannot write yet", p.mem.held.Load())
	}
	var read atomic.Int64
	go func() {
		buf := make([]byte, 64<<10)
		tick := time.NewTicker(16 * time.Millisecond) // 64 KiB each: 4 MiB a second
		defer tick.Stop()
		slow.c.SetReadDeadline(time.Now().Add(30 * time.Second))
		for range tick.C {
			n, err := io.ReadFull(slow.br, buf)
			read.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	other.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(other.c, "get small\r\n")
	got, err := other.br.ReadString('\n')
	done := read.Load()
	total := int64(gets * len(reply))
	t.Logf("the other client was answered %q when the slow one had read %d of %d bytes (%.0f%%)", got, done, total, 100*float64(done)/float64(total))
	if got != "END\r\n" {
		t.Fatalf("the other client: %q, %v; want END", got, err)
	}
	if done >= total*7/10 {
		t.Errorf("the other client was answered when the slow one had read %d of %d bytes; want under 70%%", done, total)
	}
}

// TestLargeValuesBound: two clients pipeline 40 gets of four 512 KiB values
// (80 MiB of replies each) and do not read, under a budget of 8 MiB. The
// pool has seen the value (a set through the proxy; for Redis, a GET of a
// value set on the server directly), so each client has one get in flight,
// and the proxy holds at most 16 MiB (4 MiB here); without the bound it sent
// all 40 of each and held 156 MiB after 3 s. Cold, the pool has seen no such
// value (set on the server directly), and the clients' first gets count as
// values of 1 MiB, so each has one in flight before the first reply comes
// back (without, the proxy held 16 to 18 MiB, past the budget). The replies all come
// once the clients read, and the proxy then holds nothing.
func TestLargeValuesBound(t *testing.T) {
	const gets, size = 40, 512 << 10
	value := strings.Repeat("v", size)
	for _, tc := range []struct {
		redis, cold bool
	}{{false, false}, {true, false}, {false, true}, {true, true}} {
		redis := tc.redis
		name := map[bool]string{false: "memcached", true: "redis"}[redis]
		if tc.cold {
			name += ", cold"
		}
		t.Run(name, func(t *testing.T) {
			var yaml, get, reply string
			var learn func(c *conn)
			if redis {
				s := redistest.Start(t)
				if got := s.Do("SET", "big", value); got != "+OK\r\n" {
					t.Fatalf("SET big on the server: %q", got)
				}
				yaml, get = redisPoolYAML("timeout: 20000", s), "MGET big big big big\r\n"
				reply = "*4\r\n" + strings.Repeat(fmt.Sprintf("$%d\r\n%s\r\n", size, value), 4)
				learn = func(c *conn) {
					io.WriteString(c.c, "GET big\r\n")
					got := make([]byte, len(value)+len("$524288\r\n\r\n"))
					if _, err := io.ReadFull(c.br, got); err != nil || !strings.HasPrefix(string(got), "$524288\r\nvvv") {
						t.Fatalf("GET big: %.20q, %v", got, err)
					}
				}
			} else {
				s := memcachedtest.Start(t)
				yaml, get = poolYAML("timeout: 20000", s), "get big big big big\r\n"
				reply = strings.Repeat(fmt.Sprintf("VALUE big 0 %d\r\n%s\r\n", size, value), 4) + "END\r\n"
				learn = func(c *conn) {
					if got := c.mustDo(fmt.Sprintf("set big 0 0 %d\r\n%s\r\n", size, value)); got != "STORED\r\n" {
						t.Fatalf("set big: %q", got)
					}
				}
				if tc.cold {
					learn(dial(t, s.Addr))
				}
			}
			p := startProxy(t, yaml, func(p *Proxy) { p.MaxMemory = 8 << 20 })
			addr := p.Addr("alpha").String()
			if !tc.cold {
				learn(dial(t, addr))
			}
			greedy := []*conn{dial(t, addr), dial(t, addr)}
			for _, g := range greedy {
				if _, err := io.WriteString(g.c, strings.Repeat(get, gets)); err != nil {
					t.Fatal(err)
				}
			}
			bound := int64(16 << 20)
			if tc.cold {
				bound = 8 << 20 // without firstValue, all of the budget and more: 16 to 18 MiB
			}
			waitFor(3*time.Second, func() bool { return p.mem.peak.Load() > bound })
			t.Logf("%s: the proxy held at most %d KiB", name, p.mem.peak.Load()>>10)
			if peak := p.mem.peak.Load(); peak > bound {
				t.Errorf("%s: the proxy held %d KiB for two clients that pipeline gets of four 512 KiB values, under a budget of 8 MiB; want at most %d MiB", name, peak>>10, bound>>20)
			}
			for i, g := range greedy {
				g.c.SetReadDeadline(time.Now().Add(20 * time.Second))
				got := make([]byte, len(reply))
				for j := range gets {
					if _, err := io.ReadFull(g.br, got); err != nil || string(got) != reply {
						t.Fatalf("%s: client %d, reply %d: %.40q, %v", name, i, j, got, err)
					}
				}
			}
			if !waitFor(5*time.Second, func() bool { return p.mem.held.Load() == 0 }) {
				t.Errorf("%s: %d bytes held once every reply is written; want 0", name, p.mem.held.Load())
			}
		})
	}
}

// TestLargeValuesShared: 24 clients pipeline 64 gets of a 512 KiB value,
// under a budget of 64 MiB, to a server that does not answer gets. Each
// client may have a sixteenth of the budget in flight (8 gets), but the
// replies all clients' requests in flight are expected to bring count
// against the budget too, so together they have at most the budget's worth
// in flight, and one get each past it: 152 gets (without, 192).
func TestLargeValuesShared(t *testing.T) {
	const clients, gets, size = 24, 64, 512 << 10
	var sent atomic.Int64
	srv := lineServer(t, func(c net.Conn, line string) bool {
		switch {
		case strings.HasPrefix(line, "set "):
			return true // its value's line comes next
		case strings.HasPrefix(line, "get "):
			sent.Add(1) // never answered
			return true
		}
		_, err := io.WriteString(c, "STORED\r\n")
		return err == nil
	})
	p := startProxy(t, poolOf("timeout: 20000", []string{srv + ":1"}), func(p *Proxy) { p.MaxMemory = 64 << 20 })
	addr := p.Addr("alpha").String()
	value := strings.Repeat("v", size)
	if got := dial(t, addr).mustDo(fmt.Sprintf("set big 0 0 %d\r\n%s\r\n", size, value)); got != "STORED\r\n" {
		t.Fatalf("set big: %q", got)
	}
	for range clients {
		if _, err := io.WriteString(dial(t, addr).c, strings.Repeat("get big\r\n", gets)); err != nil {
			t.Fatal(err)
		}
	}
	const bound = 64<<20/size + clients
	waitFor(2*time.Second, func() bool { return sent.Load() > bound })
	time.Sleep(200 * time.Millisecond) // any more on the way
	t.Logf("%d gets in flight", sent.Load())
	if n := sent.Load(); n > bound {
		t.Errorf("%d gets of a 512 KiB value in flight for %d clients under a budget of 64 MiB; want at most %d", n, clients, bound)
	}
	if n := sent.Load(); n < 64<<20/size {
		t.Errorf("%d gets in flight; want the budget's worth, %d, at least", n, 64<<20/size)
	}
}
