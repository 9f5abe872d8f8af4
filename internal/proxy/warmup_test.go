package proxy

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/testprog"
)

// TestWarmupJoin is issue 14's proof: three memcached servers hold 5000 keys
// and a fourth joins by reload. Without warm-up an immediate read of every
// key hits only where keys did not move (about 75%); with it, at least 99%
// hit, only the keys that moved are read from their previous servers, and
// the new server then holds at least 95% of the keys it owns.
func TestWarmupJoin(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	keys := testKeys("join:", 5000)
	three, four := servers[:3], servers
	_, oldR := routerOf(t, poolYAML("", three...))
	newCfg, newR := routerOf(t, poolYAML("", four...))
	var moved, owned []string // keys that changed server; keys of the new one
	for _, k := range keys {
		i, _ := oldR.Lookup([]byte(k))
		j, _ := newR.Lookup([]byte(k))
		if three[i].Addr != four[j].Addr {
			moved = append(moved, k)
		}
		if newCfg.Servers[j].Name() == servers[3].Addr {
			owned = append(owned, k)
		}
	}
	t.Logf("%d of %d keys moved to the new server", len(moved), len(keys))
	if len(moved) != len(owned) {
		t.Fatalf("%d keys moved, %d owned by the new server: a join moves keys only to it", len(moved), len(owned))
	}

	run := func(warmup string) (hits int, p *Proxy) {
		for _, c := range direct(t, servers) {
			c.mustDo("flush_all\r\n")
		}
		p = startProxy(t, poolYAML(warmup, three...))
		c := dial(t, p.Addr("alpha").String())
		setMany(t, c, keys)
		if err := p.Reload(parseConfig(t, poolYAML(warmup, four...))); err != nil {
			t.Fatal(err)
		}
		found := getMany(t, c, keys)
		for k, v := range found {
			if v != valueOf(k) {
				t.Errorf("get %s = %q; want %q", k, v, valueOf(k))
			}
		}
		return len(found), p
	}
	cold, _ := run("")
	warm, p := run("warmup: 60000")
	t.Logf("immediate reads after the join: %d of %d hit without warm-up (%.1f%%), %d with (%.1f%%)",
		cold, len(keys), 100*float64(cold)/float64(len(keys)), warm, 100*float64(warm)/float64(len(keys)))
	if cold != len(keys)-len(moved) {
		t.Errorf("without warm-up, %d hits; want the %d keys that did not move", cold, len(keys)-len(moved))
	}
	if warm*100 < 99*len(keys) {
		t.Errorf("with warm-up, %d hits of %d; want at least 99%%", warm, len(keys))
	}
	st := p.pools["alpha"].stats
	if got := st.warmReads.Load(); got != uint64(len(moved)) {
		t.Errorf("%d warm-up reads; want %d, one for each key that moved and no other", got, len(moved))
	}
	if got := waitCount(10*time.Second, st.warmHits.Load(), st.warmCopies.Load); got != st.warmHits.Load() {
		t.Errorf("%d copies of %d warm-up hits", got, st.warmHits.Load())
	}
	dc := direct(t, servers)
	onNew := holds(t, dc[servers[3].Addr], owned)
	t.Logf("the new server holds %d of the %d keys it owns; %d warm-up reads, %d copies", len(onNew), len(owned), st.warmReads.Load(), st.warmCopies.Load())
	if len(onNew)*100 < 95*len(owned) {
		t.Errorf("the new server holds %d of the %d keys it owns, all read; want at least 95%%", len(onNew), len(owned))
	}
	// Each moved key left its previous server.
	left := 0
	for _, s := range three {
		left += len(holds(t, dc[s.Addr], moved))
	}
	if left != 0 {
		t.Errorf("%d moved keys still on their previous servers; want 0 (the copy deletes them)", left)
	}
	// Keys read again hit on the new server: no more warm-up reads.
	before := st.warmReads.Load()
	if n := len(getMany(t, dial(t, p.Addr("alpha").String()), keys)); n != warm {
		t.Errorf("second read: %d hits; want %d", n, warm)
	}
	if got := st.warmReads.Load(); got != before {
		t.Errorf("second read: %d more warm-up reads; want none", got-before)
	}
}

// warmPool starts two memcached servers and a proxy over the first, and
// returns the proxy, the servers and n keys of prefix that a reload over both
// moves to the second server, and n that stay on the first.
func warmPool(t *testing.T, opts string, prefix string, n int, set ...func(*Proxy)) (p *Proxy, servers []*memcachedtest.Server, moved, stayed []string) {
	servers = []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	owner := ownerFunc(t, poolYAML(opts, servers...))
	for i := 0; len(moved) < n || len(stayed) < n; i++ {
		k := fmt.Sprintf("%s%d", prefix, i)
		if owner(k) == servers[1].Addr {
			if len(moved) < n {
				moved = append(moved, k)
			}
		} else if len(stayed) < n {
			stayed = append(stayed, k)
		}
	}
	p = startProxy(t, poolYAML(opts, servers[0]), set...)
	return p, servers, moved, stayed
}

// TestWarmupCommands checks each retrieval through a warm-up window: replies
// are those the previous server gives (flags, cas of gets, mg's flags), gat
// and mg's T set the copy's time to live, a get of many keys warms the keys
// that moved only, and keys that did not move or are missing everywhere cost
// no second read but their own.
func TestWarmupCommands(t *testing.T) {
	const opts = "timeout: 1000\nwarmup: 60000"
	p, servers, moved, stayed := warmPool(t, opts, "cmd:", 8)
	c := dial(t, p.Addr("alpha").String())
	old := dial(t, servers[0].Addr)
	for i, k := range append(moved, stayed...) {
		c.mustDo(fmt.Sprintf("set %s %d 0 %d\r\n%s\r\n", k, i+7, len(valueOf(k)), valueOf(k)))
	}
	// What the previous server answers, before the change.
	cas := map[string]string{}
	for _, k := range moved {
		line, _, _ := strings.Cut(old.mustDo("gets "+k+"\r\n"), "\r\n")
		cas[k] = line
	}
	mgWant := old.mustDo("mg " + moved[3] + " s v f k Oab\r\n")
	if err := p.Reload(parseConfig(t, poolYAML(opts, servers...))); err != nil {
		t.Fatal(err)
	}
	st := p.pools["alpha"].stats

	// Keys on no server, that moved and that did not.
	owner := ownerFunc(t, poolYAML(opts, servers...))
	var missMoved, missStayed []string
	for i := 0; len(missMoved) == 0 || len(missStayed) == 0; i++ {
		k := fmt.Sprint("miss:", i)
		if owner(k) == servers[1].Addr {
			missMoved = append(missMoved, k)
		} else {
			missStayed = append(missStayed, k)
		}
	}
	item := func(k string, flags int) string {
		return fmt.Sprintf("VALUE %s %d %d\r\n%s\r\n", k, flags, len(valueOf(k)), valueOf(k))
	}
	tests := []struct {
		name, req, want string
		reads           uint64 // warm-up reads it causes
	}{
		{"get", "get " + moved[0] + "\r\n", item(moved[0], 7) + "END\r\n", 1},
		{"gets", "gets " + moved[1] + "\r\n", cas[moved[1]] + "\r\n" + valueOf(moved[1]) + "\r\nEND\r\n", 1},
		{"gat", "gat 3000 " + moved[2] + "\r\n", item(moved[2], 9) + "END\r\n", 1},
		{"mg", "mg " + moved[3] + " s v f k Oab\r\n", mgWant, 1},
		{"mg without value", "mg " + moved[4] + " f\r\n", "HD f11\r\n", 1},
		{"mg with T", "mg " + moved[5] + " T2000 v\r\n", fmt.Sprintf("VA %d\r\n%s\r\n", len(valueOf(moved[5])), valueOf(moved[5])), 1},
		{"get of many", "get " + stayed[0] + " " + moved[6] + " " + missStayed[0] + " " + stayed[1] + "\r\n",
			item(stayed[0], 15) + item(moved[6], 13) + item(stayed[1], 16) + "END\r\n", 1},
		{"miss of a key that moved", "get " + missMoved[0] + "\r\n", "END\r\n", 1},
		{"miss of a key that stayed", "get " + missStayed[0] + "\r\n", "END\r\n", 0},
		{"hit of a key that stayed", "mg " + stayed[3] + " v\r\n", fmt.Sprintf("VA %d\r\n%s\r\n", len(valueOf(stayed[3])), valueOf(stayed[3])), 0},
		{"warmed already", "get " + moved[0] + "\r\n", item(moved[0], 7) + "END\r\n", 0},
	}
	for _, tt := range tests {
		if tt.name == "warmed already" {
			waitCount(5*time.Second, st.warmHits.Load(), st.warmCopies.Load)
		}
		before := st.warmReads.Load()
		if got := c.mustDo(tt.req); got != tt.want {
			t.Errorf("%s: %q = %q; want %q", tt.name, tt.req, got, tt.want)
		}
		if got := st.warmReads.Load() - before; got != tt.reads {
			t.Errorf("%s: %d warm-up reads; want %d", tt.name, got, tt.reads)
		}
	}
	// The copies have the flags, and the time to live gat and T gave.
	waitCount(5*time.Second, st.warmHits.Load(), st.warmCopies.Load)
	nw := dial(t, servers[1].Addr)
	for _, tt := range []struct {
		key        string
		flags      int
		ttl, slack int
	}{
		{moved[0], 7, -1, 0},
		{moved[2], 9, 3000, 2},
		{moved[5], 12, 2000, 2},
	} {
		line := nw.mustDo("mg " + tt.key + " f t\r\n")
		var flags, ttl int
		if _, err := fmt.Sscanf(line, "HD f%d t%d", &flags, &ttl); err != nil || flags != tt.flags || ttl > tt.ttl || ttl < tt.ttl-tt.slack {
			t.Errorf("copy of %s: mg f t = %q; want flags %d, time to live %d", tt.key, line, tt.flags, tt.ttl)
		}
	}
}

// TestWarmupWrites checks that writes in a window remove the previous
// server's copy, so that no stale value comes back: a set there, a delete
// before the new server's, and a later read does not bring back what was
// deleted. A write that works on the item (incr, append, touch, add, ...)
// finds it as a read would: copied from the previous server first.
func TestWarmupWrites(t *testing.T) {
	const opts = "timeout: 1000\nwarmup: 60000"
	p, servers, moved, _ := warmPool(t, opts, "w:", 15)
	c := dial(t, p.Addr("alpha").String())
	setMany(t, c, moved)
	c.mustDo("set " + moved[6] + " 0 0 1\r\n5\r\n")
	c.mustDo("set " + moved[11] + " 0 0 1\r\n5\r\n")
	if err := p.Reload(parseConfig(t, poolYAML(opts, servers...))); err != nil {
		t.Fatal(err)
	}
	old, nw := dial(t, servers[0].Addr), dial(t, servers[1].Addr)
	for i, tt := range []struct {
		name, req, reply string
		value            string // the value the new server then has, if any
	}{
		{"set", "set %s 0 0 3\r\nnew\r\n", "STORED\r\n", "new"},
		// The new server has not got the key, its previous one had it:
		// deleted (NOT_FOUND and NF before, for a key a get returned).
		{"delete", "delete %s\r\n", "DELETED\r\n", ""},
		{"md", "md %s\r\n", "HD\r\n", ""},
		{"ms", "ms %s 3\r\nnew\r\n", "HD\r\n", "new"},
		{"touch", "touch %s 100\r\n", "TOUCHED\r\n", "value-of-%s"},
		{"add", "add %s 0 0 3\r\nnew\r\n", "NOT_STORED\r\n", "value-of-%s"},
		{"incr", "incr %s 2\r\n", "7\r\n", "7"},
		{"append", "append %s 0 0 1\r\n!\r\n", "STORED\r\n", "value-of-%s!"},
		{"prepend", "prepend %s 0 0 1\r\n!\r\n", "STORED\r\n", "!value-of-%s"},
		{"replace", "replace %s 0 0 3\r\nnew\r\n", "STORED\r\n", "new"},
		{"ms append", "ms %s 1 MA\r\n!\r\n", "HD\r\n", "value-of-%s!"},
		{"ma", "ma %s D3 v\r\n", "VA 1\r\n8\r\n", "8"},
		{"md C of a wrong cas", "md %s C1\r\n", "EX\r\n", "value-of-%s"},
		{"delete noreply", "delete %s noreply\r\n", "", ""},
		{"md q", "md %s q\r\n", "", ""},
	} {
		key := moved[i]
		req, value := strings.ReplaceAll(tt.req, "%s", key), strings.ReplaceAll(tt.value, "%s", key)
		if got := c.mustDo(req); got != tt.reply {
			t.Errorf("%s: %q = %q; want %q", tt.name, req, got, tt.reply)
		}
		if got := old.mustDo("get " + key + "\r\n"); got != "END\r\n" {
			t.Errorf("%s: the previous server still has %s: %q", tt.name, key, got)
		}
		// On the new server, and read through the proxy: the value written,
		// or a miss; never the old value back.
		want := "END\r\n"
		if value != "" {
			want = fmt.Sprintf("VALUE %s 0 %d\r\n%s\r\nEND\r\n", key, len(value), value)
		}
		if got := nw.mustDo("get " + key + "\r\n"); got != want {
			t.Errorf("%s: the new server has %q; want %q", tt.name, got, want)
		}
		if got := c.mustDo("get " + key + "\r\n"); got != want {
			t.Errorf("%s: then get %s = %q; want %q", tt.name, key, got, want)
		}
	}
}

// TestWarmupWindowCloses checks that a window closes after warmup: misses
// are then misses, with no read of the previous server, and no request is
// planned; its close is logged with its own reads, hits and copies, and a
// later window's with its own, not the pool's since it started.
func TestWarmupWindowCloses(t *testing.T) {
	const opts = "timeout: 1000\nwarmup: 300"
	var logs testprog.Buffer
	p, servers, moved, _ := warmPool(t, opts, "close:", 2, func(p *Proxy) { p.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
	c := dial(t, p.Addr("alpha").String())
	setMany(t, c, moved)
	if err := p.Reload(parseConfig(t, poolYAML(opts, servers...))); err != nil {
		t.Fatal(err)
	}
	pl := p.pools["alpha"]
	if st := pl.state.Load(); st.warm == nil || !st.planned {
		t.Fatal("no window open after the reload")
	}
	if got := getMany(t, c, moved[:1]); len(got) != 1 {
		t.Errorf("in the window: %d hits of 1", len(got))
	}
	if !waitFor(3*time.Second, func() bool { return pl.state.Load().warm == nil }) {
		t.Fatal("the window did not close")
	}
	if pl.state.Load().planned {
		t.Error("requests still planned after the window closed")
	}
	before := pl.stats.warmReads.Load()
	if got := getMany(t, c, moved[1:]); len(got) != 0 {
		t.Errorf("after the window: %d hits; want 0", len(got))
	}
	if got := pl.stats.warmReads.Load(); got != before {
		t.Errorf("after the window: %d warm-up reads", got-before)
	}
	// A second window, back to the first server, in which nothing is read.
	if err := p.Reload(parseConfig(t, poolYAML(opts, servers[0]))); err != nil {
		t.Fatal(err)
	}
	if !waitFor(3*time.Second, func() bool { return len(jsonLogs(t, &logs, "warm-up window closed")) == 2 }) {
		t.Fatalf("the second window did not close: %d closes logged", len(jsonLogs(t, &logs, "warm-up window closed")))
	}
	for i, want := range []float64{1, 0} {
		rec := jsonLogs(t, &logs, "warm-up window closed")[i]
		if rec["reads"] != want || rec["hits"] != want || rec["copies"] != want {
			t.Errorf("window %d's close logged reads %v, hits %v, copies %v; want %v of each", i+1, rec["reads"], rec["hits"], rec["copies"], want)
		}
	}
}

// TestWarmupUpdateServers checks that a membership change (UpdateServers)
// opens a window as a reload does, and that /metrics counts the warm-up.
func TestWarmupUpdateServers(t *testing.T) {
	const opts = "timeout: 1000\nwarmup: 60000"
	p, servers, moved, stayed := warmPool(t, opts, "member:", 20)
	c := dial(t, p.Addr("alpha").String())
	setMany(t, c, append(moved, stayed...))
	if err := p.UpdateServers("alpha", []config.Server{serverOf(t, servers[0]), serverOf(t, servers[1])}); err != nil {
		t.Fatal(err)
	}
	if got := getMany(t, c, append(moved, stayed...)); len(got) != len(moved)+len(stayed) {
		t.Errorf("after UpdateServers, %d of %d gets hit", len(got), len(moved)+len(stayed))
	}
	pl := p.pools["alpha"]
	waitCount(5*time.Second, pl.stats.warmHits.Load(), pl.stats.warmCopies.Load)
	rec := httptest.NewRecorder()
	p.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		fmt.Sprintf(`chash_proxy_warmup_reads_total{pool="alpha"} %d`, len(moved)),
		fmt.Sprintf(`chash_proxy_warmup_copies_total{pool="alpha"} %d`, len(moved)),
		`chash_proxy_warmup_window_open{pool="alpha"} 1`,
		`chash_proxy_warmup_windows_total{pool="alpha"} 1`,
		fmt.Sprintf(`chash_proxy_owed_deletes{pool="alpha",server=%q} 0`, servers[1].Addr),
		fmt.Sprintf(`chash_proxy_server_drained{pool="alpha",server=%q} 0`, servers[1].Addr),
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics has no line %q", want)
		}
	}
	rec = httptest.NewRecorder()
	p.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if want := fmt.Sprintf(": %d reads of previous servers, %d hits, %d copies.</p>", len(moved), len(moved), len(moved)); !strings.Contains(rec.Body.String(), "a warm-up window is open until ") || !strings.Contains(rec.Body.String(), want) {
		t.Errorf("the status page does not say a warm-up window is open, with %q:\n%s", want, rec.Body.String())
	}
}

// TestWarmupReweight: a reload that changes only a server's weight keeps
// the server (its connections and counters) and moves keys all the same:
// it opens a warm-up window, and every key set before reads back at once.
func TestWarmupReweight(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	lines := func(w int) []string {
		return []string{servers[0].Addr + ":1 s0", fmt.Sprintf("%s:%d s1", servers[1].Addr, w)}
	}
	const opts = "timeout: 1000\nwarmup: 60000"
	p := startProxy(t, poolOf(opts, lines(1)))
	keys := testKeys("weight:", 2000)
	c := dial(t, p.Addr("alpha").String())
	setMany(t, c, keys)
	reloadAlpha(t, p, poolOf(opts, lines(5)))
	pl := p.pools["alpha"]
	if n := pl.stats.windows.Load(); n != 1 {
		t.Errorf("after s1's weight went from 1 to 5: %d warm-up windows; want 1", n)
	}
	if got := getMany(t, c, keys); len(got) != len(keys) {
		t.Errorf("after s1's weight went from 1 to 5, %d of %d gets hit; want all", len(got), len(keys))
	}
}

// TestWarmupRejoin: a server that leaves and comes back while the window of
// its leaving is open (a restarted registration, a lease that lapsed, a
// reload that removes and adds it) is the same memcached as the one that
// window remembers, though the proxy made it anew. Neither a write to one of
// its keys nor the copy of a warm-up read may then delete the key there as
// the copy of a previous owner.
func TestWarmupRejoin(t *testing.T) {
	const opts = "timeout: 1000\nwarmup: 60000"
	p, servers, moved, _ := warmPool(t, opts, "rejoin:", 40)
	both, first := parseConfig(t, poolYAML(opts, servers...)), parseConfig(t, poolYAML(opts, servers[0]))
	c := dial(t, p.Addr("alpha").String())
	away, back := moved[:20], moved[20:]
	for _, cfg := range []*config.File{both, first} { // servers[1] joins, then leaves
		if err := p.Reload(cfg); err != nil {
			t.Fatal(err)
		}
	}
	setMany(t, c, away) // on servers[0], while servers[1] is away
	// servers[1] comes back.
	if err := p.Reload(both); err != nil {
		t.Fatal(err)
	}
	st := p.pools["alpha"].stats
	setMany(t, c, back)
	if found := getMany(t, c, away); len(found) != len(away) {
		t.Errorf("%d of %d keys written while the server was away read back; want all (warm-up reads)", len(found), len(away))
	}
	waitCount(10*time.Second, st.warmHits.Load(), st.warmCopies.Load)
	for _, tt := range []struct {
		what string
		keys []string
	}{{"written after it came back", back}, {"copied by warm-up reads", away}} {
		if got := getMany(t, c, tt.keys); len(got) != len(tt.keys) {
			t.Errorf("keys %s: %d of %d read back; want all", tt.what, len(got), len(tt.keys))
		}
		if on := holds(t, dial(t, servers[1].Addr), tt.keys); len(on) != len(tt.keys) {
			t.Errorf("keys %s: the server holds %d of %d; want all", tt.what, len(on), len(tt.keys))
		}
	}
}

// TestWarmupChainedShorter: a change whose window is shorter than the one
// still open before it (a reload that shortens warmup, a drain's long window
// then a join) chains to it; when the short window closes, the older one
// still warms its keys.
func TestWarmupChainedShorter(t *testing.T) {
	p, servers, moved, _ := warmPool(t, "timeout: 1000\nwarmup: 60000", "shorter:", 20)
	c := dial(t, p.Addr("alpha").String())
	setMany(t, c, moved) // on servers[0]
	if err := p.Reload(parseConfig(t, poolYAML("timeout: 1000\nwarmup: 60000", servers...))); err != nil {
		t.Fatal(err)
	}
	// servers[1] weighs 2 now, with a window of 200ms.
	short := poolOf("timeout: 1000\nwarmup: 200", []string{servers[0].Addr + ":1", servers[1].Addr + ":2"})
	if err := p.Reload(parseConfig(t, short)); err != nil {
		t.Fatal(err)
	}
	pl := p.pools["alpha"]
	if !waitFor(3*time.Second, func() bool { w := pl.state.Load().warm; return w != nil && len(w.older) == 0 }) {
		t.Fatal("the short window did not close, or closed the long one")
	}
	if !pl.state.Load().planned {
		t.Error("requests not planned while the long window is open")
	}
	if got := getMany(t, c, moved); len(got) != len(moved) {
		t.Errorf("after the short window closed, %d of %d gets hit; want all (the long window is open)", len(got), len(moved))
	}
}

// TestWarmupCopyRace: two proxies warm the same key at once, from the same
// previous server to the same new one. One's add stores its copy, the
// other's is not stored; the one whose add was not stored must leave the
// previous copy to the other, whose delete of it, conditioned on the cas
// both read, must then succeed. Were it deleted by the one that stored
// nothing, the other would see its delete fail, take its copy back as
// stale, and the key would be on no server.
func TestWarmupCopyRace(t *testing.T) {
	prev, next := memcachedtest.Start(t), memcachedtest.Start(t)
	p := startProxy(t, poolYAML("warmup: 60000", prev, next))
	pl := p.pools["alpha"]
	st := pl.state.Load()
	from, to := st.servers[prev.Addr], st.servers[next.Addr]
	pc, nc := dial(t, prev.Addr), dial(t, next.Addr)

	pc.mustDo("set race 5 0 2\r\nv1\r\n")
	line := pc.mustDo("mg race c\r\n") // HD c<cas>
	var cas uint64
	if _, err := fmt.Sscanf(line, "HD c%d", &cas); err != nil {
		t.Fatalf("mg race c: %q", line)
	}
	// The other proxy's copy is stored first.
	if got := nc.mustDo("add race 5 0 2\r\nv1\r\n"); got != "STORED\r\n" {
		t.Fatalf("the other proxy's add: %q", got)
	}
	// This proxy's copy: its add is not stored.
	job := &copyJob{key: []byte("race"), it: item{value: []byte("v1"), flags: 5, cas: cas}, from: from, to: []*server{to}, del: true}
	pl.copier.copy([]*copyJob{job})
	// The other proxy deletes the previous copy if it is unchanged.
	if got := pc.mustDo(fmt.Sprintf("md race C%d\r\n", cas)); got != "HD\r\n" {
		t.Errorf("the other proxy's delete of the previous copy: %q; want HD (deleted by the proxy whose copy was not stored)", got)
	}
	if got, want := nc.mustDo("get race\r\n"), "VALUE race 5 2\r\nv1\r\nEND\r\n"; got != want {
		t.Errorf("the new server holds %q; want %q", got, want)
	}
	if n := pl.stats.warmCopies.Load(); n != 0 {
		t.Errorf("copies counted: %d; want 0 (the add was not stored)", n)
	}
}

// TestWarmupTouchRace: a key is read in a window and its warm-up copy is
// stored at the new server (here another proxy's), then a client touches it
// before the copy's delete of the previous copy, conditioned on the cas read,
// is sent. The touch finds the copy there and leaves the previous copy to it:
// deleted by the touch, the copy's delete would fail and take back the copy,
// touched but with its cas unchanged, as stale, and the key would be on no
// server. A touch that copies the key itself deletes the previous copy
// (TestWarmupWrites).
func TestWarmupTouchRace(t *testing.T) {
	const opts = "timeout: 1000\nwarmup: 60000"
	p, servers, moved, _ := warmPool(t, opts, "touch:", 1)
	key := moved[0]
	c := dial(t, p.Addr("alpha").String())
	c.mustDo("set " + key + " 5 0 2\r\nv1\r\n")
	if err := p.Reload(parseConfig(t, poolYAML(opts, servers...))); err != nil {
		t.Fatal(err)
	}
	old, nw := dial(t, servers[0].Addr), dial(t, servers[1].Addr)
	var cas uint64
	if line := old.mustDo("mg " + key + " c\r\n"); !scanned(line, "HD c%d", &cas) {
		t.Fatalf("mg %s c at the previous server: %q", key, line)
	}
	// The copy is stored.
	if got := nw.mustDo("add " + key + " 5 0 2\r\nv1\r\n"); got != "STORED\r\n" {
		t.Fatalf("the copy's add: %q", got)
	}
	if got := c.mustDo("touch " + key + " 1000\r\n"); got != "TOUCHED\r\n" {
		t.Fatalf("touch %s: %q; want TOUCHED", key, got)
	}
	// The copy's delete of the previous copy.
	if got := old.mustDo(fmt.Sprintf("md %s C%d\r\n", key, cas)); got != "HD\r\n" {
		t.Errorf("the copy's delete of the previous copy: %q; want HD (the touch left it)", got)
	}
	var flags, ttl int
	if line := nw.mustDo("mg " + key + " f t\r\n"); !scanned(line, "HD f%d t%d", &flags, &ttl) || flags != 5 || ttl < 990 || ttl > 1000 {
		t.Errorf("the new server's copy: mg f t = %q; want flags 5, time to live 1000 (touched)", line)
	}
}

// TestWarmupCas: a client's cas read at a key's previous server, by a gets
// in the window or before the change, conditions its write on the copy made
// of that item at the new server, whose cas the new server chose: the write
// is stored, as it would be without the change, where the new server alone
// would answer EXISTS. A cas read at the new server, or one of no copy, is
// the client's own. A copy whose cas is not known yet (a warm-up copy not
// yet recorded, here another proxy's) is read: its cas is the client's if it
// holds the item the client read, not if it holds another value.
func TestWarmupCas(t *testing.T) {
	const opts = "timeout: 1000\nwarmup: 60000"
	p, servers, moved, _ := warmPool(t, opts, "cas:", 7)
	c := dial(t, p.Addr("alpha").String())
	for _, k := range moved {
		c.mustDo("set " + k + " 3 0 2\r\nv1\r\n")
	}
	nw := dial(t, servers[1].Addr)
	for range 50 { // the new server's cas counter goes its own way
		nw.mustDo("set other 0 0 1\r\nx\r\n")
	}
	gets := func(k string) uint64 {
		t.Helper()
		var key string
		var flags, n int
		var cas uint64
		if line, _, _ := strings.Cut(c.mustDo("gets "+k+"\r\n"), "\r\n"); !scanned(line, "VALUE %s %d %d %d", &key, &flags, &n, &cas) {
			t.Fatalf("gets %s: %q", k, line)
		}
		return cas
	}
	before := gets(moved[1]) // read before the change
	if err := p.Reload(parseConfig(t, poolYAML(opts, servers...))); err != nil {
		t.Fatal(err)
	}
	st := p.pools["alpha"].stats
	inWindow := gets(moved[0])
	waitCount(5*time.Second, 1, st.warmCopies.Load)
	var mgCas uint64
	if line := c.mustDo("mg " + moved[2] + " c\r\n"); !scanned(line, "HD c%d", &mgCas) {
		t.Fatalf("mg %s c: %q", moved[2], line)
	}
	waitCount(5*time.Second, 2, st.warmCopies.Load)
	gets(moved[3])
	waitCount(5*time.Second, 3, st.warmCopies.Load)
	ownCas := gets(moved[3]) // read at the new server, from the copy
	// Copies made by another proxy: of the item, and of a value written
	// since at the new server.
	old := dial(t, servers[0].Addr)
	prevCas := func(k string) uint64 {
		t.Helper()
		var cas uint64
		if line := old.mustDo("mg " + k + " c\r\n"); !scanned(line, "HD c%d", &cas) {
			t.Fatalf("mg %s c at the previous server: %q", k, line)
		}
		return cas
	}
	otherCopy, written := prevCas(moved[5]), prevCas(moved[6])
	nw.mustDo("add " + moved[5] + " 3 0 2\r\nv1\r\n")
	nw.mustDo("set " + moved[6] + " 3 0 2\r\nv9\r\n")
	for _, tt := range []struct {
		name, req, want, value string
		recast                 uint64
	}{
		{"gets in the window", fmt.Sprintf("cas %s 3 0 2 %d\r\nv2\r\n", moved[0], inWindow), "STORED\r\n", "v2", 1},
		{"gets before the change", fmt.Sprintf("cas %s 3 0 2 %d\r\nv2\r\n", moved[1], before), "STORED\r\n", "v2", 1},
		{"ms C", fmt.Sprintf("ms %s 2 C%d F3\r\nv2\r\n", moved[2], mgCas), "HD\r\n", "v2", 1},
		{"cas of the copy", fmt.Sprintf("cas %s 3 0 2 %d\r\nv2\r\n", moved[3], ownCas), "STORED\r\n", "v2", 0},
		{"a cas of no copy", fmt.Sprintf("cas %s 3 0 2 %d\r\nv2\r\n", moved[4], 1<<40), "EXISTS\r\n", "v1", 0},
		{"another proxy's copy", fmt.Sprintf("cas %s 3 0 2 %d\r\nv2\r\n", moved[5], otherCopy), "STORED\r\n", "v2", 1},
		{"written since", fmt.Sprintf("cas %s 3 0 2 %d\r\nv2\r\n", moved[6], written), "EXISTS\r\n", "v9", 0},
	} {
		n := st.warmRecast.Load()
		if got := c.mustDo(tt.req); got != tt.want {
			t.Errorf("%s: %q = %q; want %q", tt.name, tt.req, got, tt.want)
		}
		if got := st.warmRecast.Load() - n; got != tt.recast {
			t.Errorf("%s: %d writes recast; want %d", tt.name, got, tt.recast)
		}
		k := strings.Fields(tt.req)[1]
		if got, want := nw.mustDo("get "+k+"\r\n"), fmt.Sprintf("VALUE %s 3 2\r\n%s\r\nEND\r\n", k, tt.value); got != want {
			t.Errorf("%s: the new server has %q; want %q", tt.name, got, want)
		}
	}
}

// TestWarmupCopiesUndone: a copy whose previous copy changed while it was
// made is taken back, and counted in chash_proxy_warmup_copies_undone_total,
// only if the take-back deleted it. One written over since (the take-back's
// cas does not match: a client's write, which stays) was undone by nobody,
// and is not counted.
func TestWarmupCopiesUndone(t *testing.T) {
	for _, tt := range []struct {
		name, takeBack string // the new server's answer to the take-back
		undone         uint64
	}{
		{"deleted", "HD\r\n", 1},
		{"written over since", "EX\r\n", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prev := memcachedtest.Start(t)
			// The new server stores the copy with cas 77, then answers the
			// take-back as tt says.
			var (
				mu        sync.Mutex
				takeBacks []string
			)
			next := lineServer(t, func(c net.Conn, line string) bool {
				var reply string
				switch {
				case strings.HasPrefix(line, "ms "):
					return true // its value's line comes next
				case line == "v1\r\n":
					reply = "HD c77\r\n"
				case strings.HasPrefix(line, "md "):
					mu.Lock()
					takeBacks = append(takeBacks, strings.TrimSpace(line))
					mu.Unlock()
					reply = tt.takeBack
				default:
					reply = "ERROR\r\n"
				}
				_, err := io.WriteString(c, reply)
				return err == nil
			})
			p := startProxy(t, poolOf("warmup: 60000", []string{prev.Addr + ":1", next + ":1"}))
			pl := p.pools["alpha"]
			st := pl.state.Load()
			pc := dial(t, prev.Addr)
			pc.mustDo("set race 5 0 2\r\nv1\r\n")
			line := pc.mustDo("mg race c\r\n") // HD c<cas>
			var cas uint64
			if _, err := fmt.Sscanf(line, "HD c%d", &cas); err != nil {
				t.Fatalf("mg race c: %q", line)
			}
			// Written at the previous server while it is copied: its delete
			// of the previous copy fails, and the copy is taken back.
			pc.mustDo("set race 5 0 2\r\nv2\r\n")
			job := &copyJob{key: []byte("race"), it: item{value: []byte("v1"), flags: 5, cas: cas}, from: st.servers[prev.Addr], to: []*server{st.servers[next]}, del: true}
			pl.copier.copy([]*copyJob{job})
			mu.Lock()
			got := takeBacks
			mu.Unlock()
			if len(got) != 1 || got[0] != "md race C77" {
				t.Fatalf("take-backs at the new server: %q; want [\"md race C77\"]", got)
			}
			if n := pl.stats.warmUndone.Load(); n != tt.undone {
				t.Errorf("copies undone: %d; want %d", n, tt.undone)
			}
		})
	}
}

// TestWarmupPreviousHangs: a server hangs, and is taken out of the pool (as
// chash register --check takes it out of an etcd list). In the warm-up
// window, writes of the keys it had are stored on their new server, though
// the deletes of its copies time out (it owes them); they failed before, the
// write's time spent on the hanging server before it was sent, and the new
// server owed them too. Deletes answer as the new server does. Once the
// server answers again, no read brings its old values back.
func TestWarmupPreviousHangs(t *testing.T) {
	const opts = "timeout: 400\nwarmup: 60000"
	p, servers, moved, _ := warmPool(t, opts, "hang:", 6)
	if err := p.Reload(parseConfig(t, poolYAML(opts, servers...))); err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addr("alpha").String())
	setMany(t, c, moved) // on servers[1]
	servers[1].Freeze()
	if err := p.Reload(parseConfig(t, poolYAML(opts, servers[0]))); err != nil {
		t.Fatal(err)
	}
	sets, deletes := moved[:3], moved[3:]
	for _, k := range sets {
		if got := c.mustDo("set " + k + " 0 0 3\r\nnew\r\n"); got != "STORED\r\n" {
			t.Errorf("set %s while its previous server hangs = %q; want STORED", k, got)
		}
	}
	for _, k := range deletes {
		if got := c.mustDo("delete " + k + "\r\n"); got != "NOT_FOUND\r\n" {
			t.Errorf("delete %s while its previous server hangs = %q; want NOT_FOUND, the new server's answer", k, got)
		}
	}
	servers[1].Thaw()
	nw := dial(t, servers[0].Addr)
	for _, k := range sets {
		want := "VALUE " + k + " 0 3\r\nnew\r\nEND\r\n"
		if got := nw.mustDo("get " + k + "\r\n"); got != want {
			t.Errorf("the new server has %q; want %q", got, want)
		}
		if got := c.mustDo("get " + k + "\r\n"); got != want {
			t.Errorf("get %s = %q; want %q", k, got, want)
		}
	}
	for _, k := range deletes {
		if got := c.mustDo("get " + k + "\r\n"); got != "END\r\n" {
			t.Errorf("get %s, deleted while its previous server hung = %q; want a miss", k, got)
		}
	}
}

// scanned reports whether line, scanned with format, fills every one of args.
func scanned(line, format string, args ...any) bool {
	n, err := fmt.Sscanf(line, format, args...)
	return err == nil && n == len(args)
}

// TestWarmupPreviousHangsNoTimeout: in a pool without a timeout, a key's
// previous server that hangs (removed from the list while it hangs) must not
// make the key's requests wait for it: calls to a previous server have a
// second at most, and one that failed is not read again for a while, its
// deletes owed. With auto_eject_hosts, its failure ejects nothing: it is not
// in the ring.
func TestWarmupPreviousHangsNoTimeout(t *testing.T) {
	for _, opts := range []string{"warmup: 60000", "warmup: 60000\nauto_eject_hosts: true\nserver_failure_limit: 1"} {
		t.Run(strings.ReplaceAll(opts, "\n", ","), func(t *testing.T) { previousHangs(t, opts) })
	}
}

func previousHangs(t *testing.T, opts string) {
	p, servers, moved, _ := warmPool(t, opts, "hangs:", 4)
	if err := p.Reload(parseConfig(t, poolYAML(opts, servers...))); err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addr("alpha").String())
	setMany(t, c, moved) // on servers[1]
	servers[1].Freeze()
	defer servers[1].Thaw()
	if err := p.Reload(parseConfig(t, poolYAML(opts, servers[0]))); err != nil {
		t.Fatal(err)
	}
	st := p.pools["alpha"].stats
	if got := c.mustDo("get " + moved[0] + "\r\n"); got != "END\r\n" {
		t.Errorf("get %s while its previous server hangs = %q; want a miss", moved[0], got)
	}
	reads := st.warmReads.Load()
	if reads != 1 {
		t.Errorf("%d warm-up reads; want 1", reads)
	}
	if got := c.mustDo("get " + moved[1] + "\r\n"); got != "END\r\n" {
		t.Errorf("get %s after its previous server failed a warm-up read = %q; want a miss", moved[1], got)
	}
	if got := st.warmReads.Load(); got != reads {
		t.Errorf("%d more warm-up reads of a previous server that failed one; want none", got-reads)
	}
	if got := c.mustDo("set " + moved[2] + " 0 0 3\r\nnew\r\n"); got != "STORED\r\n" {
		t.Errorf("set %s = %q; want STORED", moved[2], got)
	}
	if got := c.mustDo("delete " + moved[3] + "\r\n"); got != "NOT_FOUND\r\n" {
		t.Errorf("delete %s = %q; want NOT_FOUND", moved[3], got)
	}
	if n := st.ejects.Load(); n != 0 {
		t.Errorf("%d ejections; want none (the failing server is not in the list)", n)
	}
}

// TestWarmupManyChanges: servers join one at a time, each while the windows
// of the joins before are open, and then weights change: a key set before
// the first change is read from where it was set, however many changes
// moved it since, as long as the first change's window is open.
func TestWarmupManyChanges(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	const opts = "timeout: 1000\nwarmup: 60000"
	var lines []string
	p := startProxy(t, poolOf(opts, []string{servers[0].Addr + ":1"}))
	keys := testKeys("many:", 2000)
	c := dial(t, p.Addr("alpha").String())
	setMany(t, c, keys)
	changes := 0
	for i := range servers[1:] {
		lines = []string{servers[0].Addr + ":1"}
		for _, o := range servers[1 : i+2] {
			lines = append(lines, o.Addr+":1")
		}
		reloadAlpha(t, p, poolOf(opts, lines))
		changes++
	}
	for w := 2; w <= 4; w++ {
		lines[0] = fmt.Sprintf("%s:%d", servers[0].Addr, w)
		reloadAlpha(t, p, poolOf(opts, lines))
		changes++
	}
	pl := p.pools["alpha"]
	if n := pl.stats.windows.Load(); n != uint64(changes) {
		t.Fatalf("%d warm-up windows after %d changes; want one each", n, changes)
	}
	if got := getMany(t, c, keys); len(got) != len(keys) {
		t.Errorf("after %d ring changes, %d of %d gets hit; want all", changes, len(got), len(keys))
	}
}

// TestWindowChainBound: a chain keeps at most maxWindows open windows; the
// windows past it, and those closed, are left out, the open ones counted.
func TestWindowChainBound(t *testing.T) {
	now := time.Now()
	var w *window
	for i := range maxWindows + 5 {
		older, dropped := w.chained(now)
		want := 0
		if i >= maxWindows {
			want = 1 // the oldest of the full chain
		}
		if dropped != want {
			t.Fatalf("window %d: %d dropped; want %d", i, dropped, want)
		}
		w = &window{until: now.Add(time.Minute), older: older}
	}
	if n := len(w.older) + 1; n != maxWindows {
		t.Errorf("a chain of %d windows; want %d", n, maxWindows)
	}
	w.older[0].until = now // closed: left out, not counted
	if older, dropped := w.chained(now); len(older) != maxWindows-1 || dropped != 0 {
		t.Errorf("with one window closed, %d chained and %d dropped; want %d and 0", len(older), dropped, maxWindows-1)
	}
}

// TestWarmupReplicaJoin: with replicas: 2, a server that joins becomes the
// first replica of some keys and the second of others. Reads of the first
// miss there and warm it up; reads of the others hit at their first replica,
// and must still copy the key to the new second one, or the key has one copy
// only until it is written again.
func TestWarmupReplicaJoin(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	const opts = "distribution: chash\nreplicas: 2\ntimeout: 1000\nwarmup: 60000"
	p := startProxy(t, poolYAML(opts, servers[:2]...))
	keys := testKeys("repjoin:", 2000)
	c := dial(t, p.Addr("alpha").String())
	setMany(t, c, keys)
	all := poolYAML(opts, servers...)
	reloadAlpha(t, p, all)
	set := replicaSet(t, all, 2)
	var first, second []string // keys of which the new server is the first, second replica
	for _, k := range keys {
		switch r := set(k); servers[2].Addr {
		case r[0]:
			first = append(first, k)
		case r[1]:
			second = append(second, k)
		}
	}
	t.Logf("the new server is the first replica of %d keys, the second of %d", len(first), len(second))
	if len(first) == 0 || len(second) == 0 {
		t.Fatal("the join made the new server no key's first or no key's second replica")
	}
	if got := getMany(t, c, keys); len(got) != len(keys) {
		t.Errorf("after the join, %d of %d gets hit; want all", len(got), len(keys))
	}
	owned := append(slices.Clone(first), second...)
	nw := dial(t, servers[2].Addr)
	if !waitFor(10*time.Second, func() bool { return len(holds(t, nw, owned)) == len(owned) }) {
		held := holds(t, nw, owned)
		t.Errorf("the new server holds %d of the %d keys of which it is the first replica, %d of the %d of which it is the second; want all",
			len(holds(t, nw, first)), len(first), len(held)-len(holds(t, nw, first)), len(second))
	}
	// Every key on its two replicas, and on no other server: the copies of
	// the servers a key's set lost are deleted.
	pl := p.pools["alpha"]
	waitCount(10*time.Second, pl.stats.warmHits.Load(), pl.stats.warmCopies.Load)
	dc := direct(t, servers)
	on := map[string]map[string]bool{}
	for addr, d := range dc {
		on[addr] = holds(t, d, keys)
	}
	misplaced := 0
	for _, k := range keys {
		r := set(k)
		for addr := range dc {
			if on[addr][k] != (addr == r[0] || addr == r[1]) {
				misplaced++
				if misplaced <= 3 {
					t.Errorf("key %s on %s: %v; its replicas are %v", k, addr, on[addr][k], r)
				}
			}
		}
	}
	if misplaced > 0 {
		t.Errorf("%d copies where a key's replicas are not, or missing where they are", misplaced)
	}
	// One fill for each key of which the new server is the second replica,
	// and no more when they are read again.
	if got := pl.stats.warmFills.Load(); got != uint64(len(second)) {
		t.Errorf("%d fills; want %d, one a key of which the new server is the second replica", got, len(second))
	}
	getMany(t, c, keys)
	if got := pl.stats.warmFills.Load(); got != uint64(len(second)) {
		t.Errorf("a second read of every key: %d fills; want %d still", got, len(second))
	}
}

// TestWarmupReplicasChange: a reload that changes a pool's replicas changes
// its keys' replica sets, as a resize does, and opens a window. From two
// replicas to one, writes delete the copies at the second replicas, which
// writes no longer reach; back to two, reads copy each key to its second
// replica. Without the windows, the second replicas kept the values of
// before the first change, which a read fails over to.
func TestWarmupReplicasChange(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	two := poolYAML("distribution: chash\nreplicas: 2\ntimeout: 1000\nwarmup: 60000", servers...)
	one := poolYAML("distribution: chash\nreplicas: 1\ntimeout: 1000\nwarmup: 60000", servers...)
	p := startProxy(t, two)
	pl := p.pools["alpha"]
	keys := testKeys("repchange:", 500)
	c := dial(t, p.Addr("alpha").String())
	setMany(t, c, keys)
	fp2 := p.Rings()["alpha"].Fingerprint
	reloadAlpha(t, p, one)
	if fp1 := p.Rings()["alpha"].Fingerprint; fp1 == fp2 {
		t.Errorf("fingerprint %s with one replica and two; want them to differ", fp1)
	}
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "set %s 0 0 2\r\nv2\r\n", k)
	}
	if got := c.mustDo(b.String()); got != strings.Repeat("STORED\r\n", len(keys)) {
		t.Fatalf("setting the keys with one replica: %.40q", got)
	}
	reloadAlpha(t, p, two)
	if got := pl.stats.windows.Load(); got != 2 {
		t.Errorf("%d warm-up windows opened; want 2, one a change of replicas", got)
	}
	for k, v := range getMany(t, c, keys) {
		if v != "v2" {
			t.Errorf("get %s: %q; want v2", k, v)
		}
	}
	waitCount(10*time.Second, pl.stats.warmFills.Load(), pl.stats.warmCopies.Load)
	set := replicaSet(t, two, 2)
	dc := direct(t, servers)
	vals := valuesOn(t, dc, keys)
	bad := 0
	for _, k := range keys {
		r := set(k)
		for addr := range dc {
			want := ""
			if addr == r[0] || addr == r[1] {
				want = "v2"
			}
			if got := vals[addr][k]; got != want {
				if bad++; bad <= 3 {
					t.Errorf("key %s at %s: %q; want %q (its replicas are %v)", k, addr, got, want, r)
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d copies of %d keys over %d servers are not what the key's replicas should hold", bad, len(keys), len(servers))
	}
}

// TestWarmupFillStale: a server that leaves a key's replica set keeps its
// copy; written after the window of that change closed, the key's value is
// new on its set and old there. When a change gives the key back to that
// server, a fill finds the old value where it would add: it deletes it
// (a read failing over would return it), and the next hit fills the key.
func TestWarmupFillStale(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	three := poolYAML("distribution: chash\nreplicas: 2\ntimeout: 1000\nwarmup: 60000", servers[:3]...)
	four := poolYAML("distribution: chash\nreplicas: 2\ntimeout: 1000\nwarmup: 100", servers...)
	set3, set4 := replicaSet(t, three, 2), replicaSet(t, four, 2)
	// Keys whose second replica over three servers left their set over
	// four, and whose first stayed in it.
	lost := map[string]string{} // key: the server it left
	var keys []string
	for i := 0; len(keys) < 200; i++ {
		k := fmt.Sprintf("fillstale:%d", i)
		r3, r4 := set3(k), set4(k)
		if slices.Contains(r4, r3[0]) && !slices.Contains(r4, r3[1]) {
			keys = append(keys, k)
			lost[k] = r3[1]
		}
	}
	p := startProxy(t, three)
	pl := p.pools["alpha"]
	c := dial(t, p.Addr("alpha").String())
	setMany(t, c, keys)
	reloadAlpha(t, p, four)
	if !waitFor(5*time.Second, func() bool { return pl.state.Load().warm == nil }) {
		t.Fatal("the window of the join did not close")
	}
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "set %s 0 0 2\r\nv2\r\n", k)
	}
	if got := c.mustDo(b.String()); got != strings.Repeat("STORED\r\n", len(keys)) {
		t.Fatalf("setting the keys over four servers: %.40q", got)
	}
	reloadAlpha(t, p, three) // the join undone
	dc := direct(t, servers)
	// atLost counts the keys whose server that left their set holds
	// want(key) ("": nothing).
	atLost := func(want func(k string) string) int {
		vals := valuesOn(t, dc, keys)
		n := 0
		for _, k := range keys {
			if vals[lost[k]][k] == want(k) {
				n++
			}
		}
		return n
	}
	none := func(string) string { return "" }
	v2 := func(string) string { return "v2" }
	if n := atLost(valueOf); n != len(keys) {
		t.Fatalf("before the reads, the servers the keys left hold %d of %d old values; want all", n, len(keys))
	}
	read := func() {
		for k, v := range getMany(t, c, keys) {
			if v != "v2" {
				t.Errorf("get %s: %q; want v2", k, v)
			}
		}
	}
	read()
	if !waitFor(10*time.Second, func() bool { return atLost(none) == len(keys) }) {
		t.Fatalf("after a read of every key, the servers that rejoined their sets hold %d old values (and nothing for %d keys); want none old",
			atLost(valueOf), atLost(none))
	}
	read()
	if !waitFor(10*time.Second, func() bool { return atLost(v2) == len(keys) }) {
		t.Errorf("after a second read, the servers that rejoined the keys' sets hold v2 for %d of %d keys; want all", atLost(v2), len(keys))
	}
}

// TestWarmupFillRace: a key read at its first replica is being filled to its
// new second replica when a client deletes it, after the fill read it and
// before the copy is made. The delete reaches both replicas, the second
// finding nothing; the copy then made must be taken back, or the deleted
// value comes back at the second replica.
func TestWarmupFillRace(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	const opts = "distribution: chash\nreplicas: 2\ntimeout: 1000\nwarmup: 60000"
	all := poolYAML(opts, servers...)
	set := replicaSet(t, all, 2)
	var k string
	for i := 0; k == ""; i++ {
		if c := fmt.Sprintf("race:%d", i); set(c)[1] == servers[2].Addr {
			k = c
		}
	}
	p := startProxy(t, poolYAML(opts, servers[:2]...))
	c := dial(t, p.Addr("alpha").String())
	setMany(t, c, []string{k})
	reloadAlpha(t, p, all)
	deleted := make(chan struct{})
	hook := func(batch []*copyJob) {
		for _, j := range batch {
			if j.fill != nil && string(j.key) == k {
				for _, s := range servers {
					dial(t, s.Addr).mustDo("delete " + k + "\r\n")
				}
				close(deleted)
			}
		}
	}
	testHookFilled.Store(&hook)
	t.Cleanup(func() { testHookFilled.Store(nil) })
	if got, want := c.mustDo("get "+k+"\r\n"), "VALUE "+k+" 0 "; !strings.HasPrefix(got, want) {
		t.Fatalf("get %s = %q; want a hit", k, got)
	}
	select {
	case <-deleted:
	case <-time.After(5 * time.Second):
		t.Fatal("no fill of the key")
	}
	pl := p.pools["alpha"]
	waitFor(5*time.Second, func() bool { return pl.stats.warmUndone.Load() > 0 })
	if got := dial(t, servers[2].Addr).mustDo("get " + k + "\r\n"); got != "END\r\n" {
		t.Errorf("the new replica holds %q after the key was deleted while filled; want nothing", got)
	}
	if got := c.mustDo("get " + k + "\r\n"); got != "END\r\n" {
		t.Errorf("get %s, deleted = %q; want a miss", k, got)
	}
}
