package proxy

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/testprog"
)

// ejectFast ejects a server of pool alpha at its first failure, a timeout
// of 300 ms, and probes it every 300 ms.
const ejectFast = "timeout: 300\nauto_eject_hosts: true\nserver_failure_limit: 1\nserver_retry_timeout: 300"

// freezeEjected freezes victim, a server of p's pool alpha (ejectFast), and
// returns once a get of key, one of victim's keys, failed on c and the
// server is ejected.
func freezeEjected(t *testing.T, p *Proxy, c *conn, victim *memcachedtest.Server, key string) {
	t.Helper()
	victim.Freeze()
	if got := c.mustDo("get " + key + "\r\n"); !strings.HasPrefix(got, "SERVER_ERROR") {
		t.Fatalf("get from the frozen server: %q; want a timeout", got)
	}
	if !waitFor(2*time.Second, func() bool { return p.ejected("alpha", victim.Addr) }) {
		t.Fatal("the frozen server was not ejected")
	}
}

// thawReadmitted thaws victim and returns once p readmitted it.
func thawReadmitted(t *testing.T, p *Proxy, victim *memcachedtest.Server) {
	t.Helper()
	victim.Thaw()
	if !waitFor(5*time.Second, func() bool { return !p.ejected("alpha", victim.Addr) }) {
		t.Fatal("the thawed server was not readmitted")
	}
}

// TestEjectionOwes checks twemproxy #604 in a pool without replicas: while a
// frozen server is ejected its keys go to another server, and what is
// written or deleted there meanwhile is owed by it; readmitted, it has
// forgotten those keys, and warm-up reads them from where they were written.
// So neither a stale value nor a deleted key comes back.
func TestEjectionOwes(t *testing.T) {
	const opts = ejectFast + "\nwarmup: 60000"
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	yaml := poolYAML(opts, servers...)
	victim := servers[0]
	keys := keysOf(t, yaml, victim.Addr, "owe:", 3) // keys of the victim: updated, deleted, left alone
	updated, deleted, kept := keys[0], keys[1], keys[2]
	p := startProxy(t, yaml)
	c := dial(t, p.Addr("alpha").String())
	setMany(t, c, keys)

	freezeEjected(t, p, c, victim, kept)
	// Its keys now go to the other server.
	for _, tt := range []struct{ req, want string }{
		{"set " + updated + " 0 0 3\r\nnew\r\n", "STORED\r\n"},
		{"set " + deleted + " 0 0 3\r\nnew\r\n", "STORED\r\n"},
		{"delete " + deleted + "\r\n", "DELETED\r\n"},
	} {
		if got := c.mustDo(tt.req); got != tt.want {
			t.Errorf("while ejected: %q = %q; want %q", tt.req, got, tt.want)
		}
	}
	vs := p.pools["alpha"].state.Load().servers[victim.Addr]
	if n := vs.owed.n.Load(); n != 2 {
		t.Errorf("the ejected server owes %d deletes; want 2 (%s, %s)", n, updated, deleted)
	}

	thawReadmitted(t, p, victim)
	for _, tt := range []struct{ key, want string }{
		{updated, "VALUE " + updated + " 0 3\r\nnew\r\nEND\r\n"}, // warmed from the other server
		{deleted, "END\r\n"},
		{kept, fmt.Sprintf("VALUE %s 0 %d\r\n%s\r\nEND\r\n", kept, len(valueOf(kept)), valueOf(kept))},
	} {
		if got := c.mustDo("get " + tt.key + "\r\n"); got != tt.want {
			t.Errorf("readmitted: get %s = %q; want %q", tt.key, got, tt.want)
		}
	}
	st := p.pools["alpha"].stats
	waitCount(5*time.Second, st.warmHits.Load(), st.warmCopies.Load)
	v := dial(t, victim.Addr)
	if got := v.mustDo("mg " + updated + " v\r\n"); got != "VA 3\r\nnew\r\n" {
		t.Errorf("the readmitted server's %s: %q; want the value written while it was out", updated, got)
	}
	if got := v.mustDo("mg " + deleted + " v\r\n"); got != "EN\r\n" {
		t.Errorf("the readmitted server's %s: %q; want none", deleted, got)
	}
}

// TestEjectedOwesFlush: a flush_all while a server is ejected fails for it,
// as it could not be done, and the server owes it: readmitted, it has
// forgotten the items it held, which came back before.
func TestEjectedOwesFlush(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	yaml := poolYAML(ejectFast, servers...)
	owner := ownerFunc(t, yaml)
	victim := servers[0]
	var keys []string // keys of each server
	for i := 0; len(keys) < 4; i++ {
		k := fmt.Sprint("flush:", i)
		if (owner(k) == victim.Addr) == (len(keys)%2 == 0) {
			keys = append(keys, k)
		}
	}
	p := startProxy(t, yaml)
	c := dial(t, p.Addr("alpha").String())
	setMany(t, c, keys)

	freezeEjected(t, p, c, victim, keys[0])
	if got := c.mustDo("flush_all\r\n"); got != "SERVER_ERROR "+victim.Addr+": server ejected\r\n" {
		t.Errorf("flush_all while a server is ejected: %q; want its error", got)
	}
	thawReadmitted(t, p, victim)
	for _, k := range keys {
		if got := c.mustDo("get " + k + "\r\n"); got != "END\r\n" {
			t.Errorf("after the flush_all and the readmission: get %s = %q; want a miss", k, got)
		}
	}
	if got := dial(t, victim.Addr).mustDo("mg " + keys[0] + " v\r\n"); got != "EN\r\n" {
		t.Errorf("the readmitted server's %s: %q; want none", keys[0], got)
	}
	if got := p.pools["alpha"].state.Load().servers[victim.Addr].owed.flushes.Load(); got != 1 {
		t.Errorf("the readmitted server was emptied %d times; want 1", got)
	}
}

// TestOwedReconnect checks that a server that owes deletes replays them on a
// new connection before it serves a read, and that a write failing on a
// connection makes the server's other connections reconnect first.
func TestOwedReconnect(t *testing.T) {
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("timeout: 1000\nserver_connections: 2", s))
	c := dial(t, p.Addr("alpha").String())
	keys := testKeys("reconnect:", 10)
	setMany(t, c, keys)
	srv := p.pools["alpha"].state.Load().servers[s.Addr]
	for _, k := range keys {
		srv.owe([]byte(k), true)
	}
	// The next reads reconnect, each connection replaying first; the
	// background replay waits 10ms before it tries.
	if got := getMany(t, c, keys); len(got) != 0 {
		t.Errorf("%d keys owed read back; want none", len(got))
	}
	if n := srv.owed.n.Load(); n != 0 {
		t.Errorf("%d deletes still owed", n)
	}
	if got := srv.owed.replayed.Load(); got != uint64(len(keys)) {
		t.Errorf("%d deletes replayed; want %d", got, len(keys))
	}
}

// TestOwedBound checks that a server owing more deletes than the bound is
// emptied before it serves again: no key it held comes back.
func TestOwedBound(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	yaml := poolYAML(replicaOpts, servers...)
	set := replicaSet(t, yaml, 2)
	p := startProxy(t, yaml, func(p *Proxy) { p.maxOwed = 3 })
	c := dial(t, p.Addr("alpha").String())
	keys := testKeys("bound:", 200)
	setMany(t, c, keys)
	victim := servers[2]
	var mine []string
	for _, k := range keys {
		if r := set(k); r[0] == victim.Addr || r[1] == victim.Addr {
			mine = append(mine, k)
		}
	}
	victim.Freeze()
	c.mustDo("get " + mine[0] + "\r\n") // times out on the victim if it is first, and ejects it
	if !waitFor(2*time.Second, func() bool { return p.ejected("alpha", victim.Addr) }) {
		// Not a replica first in line for that key: a write ejects it.
		c.mustDo("set " + mine[0] + " 0 0 1\r\nx\r\n")
		if !waitFor(2*time.Second, func() bool { return p.ejected("alpha", victim.Addr) }) {
			t.Fatal("the frozen server was not ejected")
		}
	}
	for _, k := range mine[1:6] {
		c.mustDo("delete " + k + "\r\n")
	}
	victim.Thaw()
	if !waitFor(5*time.Second, func() bool { return !p.ejected("alpha", victim.Addr) }) {
		t.Fatal("the thawed server was not readmitted")
	}
	vs := p.pools["alpha"].state.Load().servers[victim.Addr]
	if got := vs.owed.flushes.Load(); got != 1 {
		t.Errorf("%d flushes; want 1", got)
	}
	if got := holds(t, dial(t, victim.Addr), keys); len(got) != 0 {
		t.Errorf("the emptied server holds %d keys", len(got))
	}
}

// TestOwedErrorReply checks a write a replica refuses with an error (a value
// larger than its item size limit): it owes the key, so it serves no read
// while it may hold the older value, and the background replay makes it
// forget it.
func TestOwedErrorReply(t *testing.T) {
	small := memcachedtest.Start(t, "-I", "2k", "-o", "slab_chunk_max=2048")
	large := memcachedtest.Start(t, "-I", "2m")
	yaml := poolYAML(replicaOpts, small, large)
	p := startProxy(t, yaml)
	c := dial(t, p.Addr("alpha").String())
	c.mustDo("set big 0 0 3\r\nold\r\n")
	value := strings.Repeat("v", 4000)
	if got := c.mustDo("set big 0 0 4000\r\n" + value + "\r\n"); got != "STORED\r\n" {
		t.Fatalf("set of a value one replica refuses: %q; want the other's STORED", got)
	}
	// The value stored, or a miss once the refusing replica forgot the old
	// value, if it is the first; never the old value.
	want := "VALUE big 0 4000\r\n" + value + "\r\nEND\r\n"
	if got := c.mustDo("get big\r\n"); got != want && got != "END\r\n" {
		t.Errorf("get big = %.40q...; want the value stored", got)
	}
	srv := p.pools["alpha"].state.Load().servers[small.Addr]
	if !waitFor(3*time.Second, func() bool { return !srv.owes() }) {
		t.Fatal("the refusing replica still owes the key")
	}
	if got := dial(t, small.Addr).mustDo("get big\r\n"); got != "END\r\n" {
		t.Errorf("the refusing replica still holds the old value: %q", got)
	}
}

// TestOwedLeaveReturn: a server that owes deletes and leaves the pool (a
// reload, a membership list without it) is the same memcached when a server
// of its address joins again, later than the grace its old self was kept for:
// the deletes are replayed before the new one serves, so neither a stale
// value nor a deleted key comes back.
func TestOwedLeaveReturn(t *testing.T) {
	const opts = "timeout: 300\nauto_eject_hosts: true\nserver_failure_limit: 1\nserver_retry_timeout: 300"
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	yaml := poolYAML(opts, servers...)
	victim := servers[1]
	keys := keysOf(t, yaml, victim.Addr, "leave:", 2) // of the victim: updated, deleted
	updated, deleted := keys[0], keys[1]
	p := startProxy(t, yaml)
	c := dial(t, p.Addr("alpha").String())
	setMany(t, c, keys)
	victim.Freeze()
	c.mustDo("get " + updated + "\r\n") // times out: ejected
	if !waitFor(2*time.Second, func() bool { return p.ejected("alpha", victim.Addr) }) {
		t.Fatal("the frozen server was not ejected")
	}
	for _, req := range []string{"set " + updated + " 0 0 3\r\nnew\r\n", "delete " + deleted + "\r\n"} {
		c.mustDo(req)
	}
	if n := p.pools["alpha"].state.Load().servers[victim.Addr].owed.n.Load(); n != 2 {
		t.Fatalf("the ejected server owes %d deletes; want 2", n)
	}
	// It leaves, is closed after its grace (a second at this timeout), and
	// comes back.
	for _, y := range []string{poolYAML(opts, servers[0]), yaml} {
		reloadAlpha(t, p, y)
		if y != yaml {
			time.Sleep(1500 * time.Millisecond)
			victim.Thaw()
		}
	}
	for _, k := range keys {
		if got := c.mustDo("get " + k + "\r\n"); got != "END\r\n" {
			t.Errorf("back: get %s = %q; want a miss (the value it held is stale)", k, got)
		}
	}
	if got := dial(t, victim.Addr).mustDo("mg " + updated + " v\r\n"); got != "EN\r\n" {
		t.Errorf("the server back holds %s: %q; want none", updated, got)
	}
}

// TestLeftOwedBound checks the deletes kept for servers that left: by
// address, handed whole to the next server of the address, and past the
// bound kept as a flush of the largest sets.
func TestLeftOwedBound(t *testing.T) {
	p := startProxy(t, poolYAML("timeout: 1000", memcachedtest.Start(t)))
	pl := p.pools["alpha"]
	owing := func(port int, keys ...string) *server {
		s := newServer(pl, config.Server{Host: "127.0.0.1", Port: port, Weight: 1}, 1)
		t.Cleanup(s.close)
		s.ejected.Store(true) // no replay: nothing listens there
		for _, k := range keys {
			s.owe([]byte(k), false)
		}
		return s
	}
	owed := func(s *server) (keys []string, flush bool) {
		s.owed.mu.Lock()
		defer s.owed.mu.Unlock()
		return slices.Sorted(maps.Keys(s.owed.keys)), s.owed.flushSeq != 0
	}
	var l leftOwed
	l.keep(owing(1, "a", "b"), 3, false)
	l.keep(owing(1, "b", "c"), 3, false) // the same address again
	l.keep(owing(2), 3, false)           // owes nothing: not kept
	if l.keys != 3 || len(l.sets) != 1 {
		t.Fatalf("kept %d keys at %d addresses; want 3 at 1", l.keys, len(l.sets))
	}
	l.keep(owing(3, "d"), 3, false) // past the bound: the largest set becomes a flush
	if l.keys != 1 || !l.sets["127.0.0.1:1"].flush {
		t.Errorf("past the bound: %d keys, 127.0.0.1:1 a flush %v; want 1 and true", l.keys, l.sets["127.0.0.1:1"].flush)
	}
	back := owing(3)
	l.take(back)
	if keys, flush := owed(back); !slices.Equal(keys, []string{"d"}) || flush || back.owed.n.Load() != 1 {
		t.Errorf("127.0.0.1:3 back owes %q, flush %v; want [d] and no flush", keys, flush)
	}
	back = owing(1, "e")
	l.take(back)
	if keys, flush := owed(back); len(keys) != 0 || !flush || back.owed.n.Load() != 1 {
		t.Errorf("127.0.0.1:1 back owes %q, flush %v; want a flush", keys, flush)
	}
	if l.keys != 0 || len(l.sets) != 0 {
		t.Errorf("after both came back, %d keys kept at %d addresses; want none", l.keys, len(l.sets))
	}
	back = owing(2)
	l.take(back) // nothing kept for it
	if back.owes() {
		t.Error("127.0.0.1:2 owes deletes it never owed")
	}
	// A server that left the list owes a flush, though it owed nothing.
	l.keep(owing(4), 3, true)
	back = owing(4)
	l.take(back)
	if keys, flush := owed(back); len(keys) != 0 || !flush {
		t.Errorf("127.0.0.1:4, back after it left, owes %q, flush %v; want a flush", keys, flush)
	}
}

// TestOwedPoolRestart: deletes a server of a pool comes to owe while the pool
// finishes after a reload that restarts it (new TLS files) are owed by
// the new pool's server of that address once the old pool stops; and deletes
// kept for an address are not handed to a Redis pool's server, which cannot
// replay them.
func TestOwedPoolRestart(t *testing.T) {
	const opts = "distribution: chash\nreplicas: 2\ntimeout: 300"
	s, s2 := memcachedtest.Start(t), memcachedtest.Start(t)
	p := startProxy(t, poolYAML(opts, s, s2))
	// A set in flight to a frozen replica when the reload comes: it times
	// out after the reload, and the old pool's server owes the key.
	c := dial(t, p.Addr("alpha").String())
	s.Freeze()
	defer s.Thaw()
	io.WriteString(c.c, "set late 0 0 1\r\nv\r\n")
	time.Sleep(50 * time.Millisecond)
	// TLS files restart the pool where it listens.
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeCert(t, certFile, keyFile)
	if err := p.Reload(parseConfig(t, poolYAML(opts+"\ntls_cert_file: "+certFile+"\ntls_key_file: "+keyFile, s, s2))); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	nw := p.pools["alpha"].state.Load().servers[s.Addr]
	p.mu.Unlock()
	nw.ejected.Store(true) // no replay: the server is frozen
	if !waitFor(5*time.Second, func() bool {
		nw.owed.mu.Lock()
		defer nw.owed.mu.Unlock()
		_, ok := nw.owed.keys["late"]
		return ok
	}) {
		t.Error("a delete the old pool's server came to owe after the reload is not owed by the new one's once it stops")
	}

	var l leftOwed
	mc := newServer(p.pools["alpha"], config.Server{Host: "127.0.0.1", Port: 1, Weight: 1}, 1)
	defer mc.close()
	mc.ejected.Store(true)
	mc.owe([]byte("k"), false)
	l.keep(mc, 10, false)
	rp := startProxy(t, poolOf("redis: true", []string{"127.0.0.1:1:1"}))
	rs := newServer(rp.pools["alpha"], config.Server{Host: "127.0.0.1", Port: 1, Weight: 1}, 1)
	defer rs.close()
	l.take(rs)
	if rs.owes() || l.keys != 1 {
		t.Errorf("a Redis pool's server took the deletes kept for its address (owes %v, %d kept)", rs.owes(), l.keys)
	}
}

// TestRemovedServerRejoinsEmptied: a server taken out of the list by a
// reload misses the writes of its keys, which go to the other server, and
// owes none of them: added again, it is emptied before it serves, so that
// its old values do not come back (a review read the old value). A reload
// that only gives it more connections, keeping its address in the list,
// empties nothing.
func TestRemovedServerRejoinsEmptied(t *testing.T) {
	const opts = "timeout: 1000"
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	yaml := poolYAML(opts, servers...)
	keys := keysOf(t, yaml, servers[1].Addr, "rejoin:", 3) // of servers[1]: updated, deleted, kept
	updated, deleted, kept := keys[0], keys[1], keys[2]
	logs := new(testprog.Buffer)
	p := startProxy(t, yaml, func(p *Proxy) { p.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	c := dial(t, p.Addr("alpha").String())
	setMany(t, c, keys[:2])
	reloadAlpha(t, p, poolYAML(opts, servers[0]))
	c.mustDo("set " + updated + " 0 0 3\r\nnew\r\n") // on servers[0]
	c.mustDo("delete " + deleted + "\r\n")
	reloadAlpha(t, p, yaml)
	for _, k := range []string{updated, deleted} {
		if got := c.mustDo("get " + k + "\r\n"); got != "END\r\n" {
			t.Errorf("back: get %s = %q; want a miss, not the value it held before it left", k, got)
		}
	}
	if !logged(logs, "server joins again after it left; emptied (flush_all) before it serves") {
		t.Errorf("the emptying is not logged:\n%s", logs)
	}
	// More connections for it: the same memcached, kept in the list.
	c.mustDo("set " + kept + " 0 0 4\r\nkept\r\n")
	reloadAlpha(t, p, poolYAML(opts+"\nserver_connections: 2", servers...))
	if got, want := c.mustDo("get "+kept+"\r\n"), "VALUE "+kept+" 0 4\r\nkept\r\nEND\r\n"; got != want {
		t.Errorf("after a reload that gives it more connections, get %s = %q; want %q", kept, got, want)
	}
}

// TestAutoEjectTurnedOff: a reload that turns auto_eject_hosts off puts a
// server ejected meanwhile back in the ring at once: its keys go to it again,
// as routing (chash route) says, not to the server they moved to (a review
// wrote a key there and lost it at the server's readmission). What it owes
// is replayed before it serves.
func TestAutoEjectTurnedOff(t *testing.T) {
	const opts = "timeout: 300\nauto_eject_hosts: true\nserver_failure_limit: 1\nserver_retry_timeout: 60000"
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	yaml := poolYAML(opts, servers...)
	victim := servers[1]
	keys := keysOf(t, yaml, victim.Addr, "off:", 2) // of the victim: read, written while it was ejected
	read, written := keys[0], keys[1]
	p := startProxy(t, yaml)
	c := dial(t, p.Addr("alpha").String())
	setMany(t, c, keys)
	freezeEjected(t, p, c, victim, read)
	victim.Thaw()
	c.mustDo("set " + written + " 0 0 3\r\nnew\r\n") // elsewhere; the victim owes it
	reloadAlpha(t, p, poolYAML("timeout: 300\nauto_eject_hosts: false", servers...))
	if p.ejected("alpha", victim.Addr) {
		t.Error("after auto_eject_hosts was turned off, the server is still ejected")
	}
	if got, want := c.mustDo("get "+read+"\r\n"), fmt.Sprintf("VALUE %s 0 %d\r\n%s\r\nEND\r\n", read, len(valueOf(read)), valueOf(read)); got != want {
		t.Errorf("get %s = %q; want %q, from the server the ring names", read, got, want)
	}
	// The victim holds its old value of written, owed as a delete when
	// the write went elsewhere: replayed first, a miss.
	if got := c.mustDo("get " + written + "\r\n"); got != "END\r\n" {
		t.Errorf("get %s, written while the server was ejected = %q; want a miss (its old value deleted)", written, got)
	}
}

// keysOf returns n keys, prefix followed by a number, that the pool of yaml
// routes to the server at addr.
func keysOf(t *testing.T, yaml, addr, prefix string, n int) []string {
	owner := ownerFunc(t, yaml)
	var keys []string
	for i := 0; len(keys) < n; i++ {
		if k := fmt.Sprint(prefix, i); owner(k) == addr {
			keys = append(keys, k)
		}
	}
	return keys
}
