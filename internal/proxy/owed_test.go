package proxy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
)

// TestEjectionOwes checks twemproxy #604 in a pool without replicas: while a
// frozen server is ejected its keys go to another server, and what is
// written or deleted there meanwhile is owed by it; readmitted, it has
// forgotten those keys, and warm-up reads them from where they were written.
// So neither a stale value nor a deleted key comes back.
func TestEjectionOwes(t *testing.T) {
	const opts = "timeout: 300\nauto_eject_hosts: true\nserver_failure_limit: 1\nserver_retry_timeout: 300\nwarmup: 60000"
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	yaml := poolYAML(opts, servers...)
	owner := ownerFunc(t, yaml)
	victim := servers[0]
	var keys []string // keys of the victim: updated, deleted, left alone
	for i := 0; len(keys) < 3; i++ {
		if k := fmt.Sprint("owe:", i); owner(k) == victim.Addr {
			keys = append(keys, k)
		}
	}
	updated, deleted, kept := keys[0], keys[1], keys[2]
	p := startProxy(t, yaml)
	c := dial(t, p.Addr("alpha").String())
	setMany(t, c, keys)

	victim.Freeze()
	if got := c.mustDo("get " + kept + "\r\n"); !strings.HasPrefix(got, "SERVER_ERROR") {
		t.Fatalf("get from the frozen server: %q; want a timeout", got)
	}
	if !waitFor(2*time.Second, func() bool { return p.ejected("alpha", victim.Addr) }) {
		t.Fatal("the frozen server was not ejected")
	}
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

	victim.Thaw()
	if !waitFor(5*time.Second, func() bool { return !p.ejected("alpha", victim.Addr) }) {
		t.Fatal("the thawed server was not readmitted")
	}
	for _, tt := range []struct{ key, want string }{
		{updated, "VALUE " + updated + " 0 3\r\nnew\r\nEND\r\n"}, // warmed from the other server
		{deleted, "END\r\n"},
		{kept, fmt.Sprintf("VALUE %s 0 %d\r\n%s\r\nEND\r\n", kept, len(valueOf(kept)), valueOf(kept))},
	} {
		if got := c.mustDo("get " + tt.key + "\r\n"); got != tt.want {
			t.Errorf("readmitted: get %s = %q; want %q", tt.key, got, tt.want)
		}
	}
	st := &p.pools["alpha"].stats
	waitCount(5*time.Second, st.warmHits.Load(), st.warmCopies.Load)
	v := dial(t, victim.Addr)
	if got := v.mustDo("mg " + updated + " v\r\n"); got != "VA 3\r\nnew\r\n" {
		t.Errorf("the readmitted server's %s: %q; want the value written while it was out", updated, got)
	}
	if got := v.mustDo("mg " + deleted + " v\r\n"); got != "EN\r\n" {
		t.Errorf("the readmitted server's %s: %q; want none", deleted, got)
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
