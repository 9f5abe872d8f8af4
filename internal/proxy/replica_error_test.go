package proxy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
)

// bigValue is larger than memcached's default item size limit (-I 1m), and
// smaller than that of the servers started with -I 2m: a server that cannot
// store it answers SERVER_ERROR object too large for cache.
var bigValue = strings.Repeat("v", 1500000)

// keyWithReplicas returns a key whose replica set (set) starts with first, then
// second, named by prefix and a number.
func keyWithReplicas(t *testing.T, set func(string) []string, prefix, first, second string) string {
	t.Helper()
	for i := range 10000 {
		k := fmt.Sprint(prefix, i)
		if r := set(k); r[0] == first && r[1] == second {
			return k
		}
	}
	t.Fatalf("no key of %s... on %s then %s", prefix, first, second)
	return ""
}

// TestReplicaServerError checks writes to replicas that answer errors: a
// SERVER_ERROR (here memcached's "object too large for cache", from a
// server with a smaller item size limit than its peer) is the server's
// failure: the other replica answers, the server owes the key, and a
// conditional write fails over to the next replica not tried, even when that
// one comes first in the replica set; an error about the request (incr of a
// value that is not a number) is the client's answer, owed by no one.
func TestReplicaServerError(t *testing.T) {
	small := memcachedtest.Start(t)             // -I 1m: refuses bigValue
	large := memcachedtest.Start(t, "-I", "2m") // stores it
	servers := []*memcachedtest.Server{small, large}
	// A timeout long enough for a value of 1.5 MB under the race detector.
	opts := strings.Replace(replicaOpts, "timeout: 300", "timeout: 5000", 1)
	yaml := poolYAML(opts+"\nread_miss_failover: true", servers...)
	set := replicaSet(t, yaml, 2)
	// The proxy takes values as large as the larger server does.
	p := startProxy(t, yaml, func(p *Proxy) { p.Limits.MaxValue = 2 << 20 })
	c := dial(t, p.Addr("alpha").String())
	st := p.pools["alpha"].state.Load()
	ss, ls := st.servers[small.Addr], st.servers[large.Addr]
	dc := direct(t, servers)

	// A set the first replica cannot store: the second's STORED answers,
	// and the first owes the key (and forgets it when it replays).
	k := keyWithReplicas(t, set, "big:", small.Addr, large.Addr)
	req := fmt.Sprintf("set %s 0 0 %d\r\n%s\r\n", k, len(bigValue), bigValue)
	if got := c.mustDo(req); got != "STORED\r\n" {
		t.Errorf("set of %d bytes, its first replica too small: %q; want STORED", len(bigValue), got)
	}
	if got := ss.owed.total.Load(); got != 1 {
		t.Errorf("the replica that refused the set owed %d deletes; want 1", got)
	}
	if got := dc[large.Addr].mustDo("mg " + k + " s\r\n"); got != fmt.Sprintf("HD s%d\r\n", len(bigValue)) {
		t.Errorf("the second replica's %s: %q; want the value", k, got)
	}
	if got := c.mustDo("get " + k + "\r\n"); !strings.HasPrefix(got, fmt.Sprintf("VALUE %s 0 %d\r\n", k, len(bigValue))) {
		t.Errorf("get %s (read_miss_failover): %.60q; want the value", k, got)
	}

	// A conditional write whose decider fails: the next replica not tried
	// decides. The first replica (large) owes a delete, held unreplayed, so
	// small decides first; it cannot store the value, and large, first in
	// the replica set, must decide then.
	k = keyWithReplicas(t, set, "add:", large.Addr, small.Addr)
	c.mustDo("get " + k + "\r\n") // a connection to each server, made now
	failovers := p.pools["alpha"].stats.failovers.Load()
	ls.owed.replayMu.Lock()
	ls.owe([]byte("unrelated"), false)
	req = fmt.Sprintf("add %s 0 0 %d\r\n%s\r\n", k, len(bigValue), bigValue)
	got := c.mustDo(req)
	ls.owed.replayMu.Unlock()
	if got != "STORED\r\n" {
		t.Errorf("add of %d bytes, its second replica deciding first and too small: %q; want STORED", len(bigValue), got)
	}
	if got := dc[large.Addr].mustDo("mg " + k + " s\r\n"); got != fmt.Sprintf("HD s%d\r\n", len(bigValue)) {
		t.Errorf("the replica that decided after the failure holds %s: %q; want the value", k, got)
	}
	if got := p.pools["alpha"].stats.failovers.Load() - failovers; got != 1 {
		t.Errorf("the add failed over %d times; want 1", got)
	}
	if !waitFor(5*time.Second, func() bool { return !ls.owes() && !ss.owes() }) {
		t.Errorf("owed deletes not replayed: %d and %d", ls.owed.n.Load(), ss.owed.n.Load())
	}

	// An error about the request is the answer; no replica owes it.
	before := ss.owed.total.Load() + ls.owed.total.Load()
	c.mustDo("set t 0 0 4\r\ntext\r\n")
	if got, want := c.mustDo("incr t 1\r\n"), "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"; got != want {
		t.Errorf("incr of text: %q; want %q", got, want)
	}
	if got := ss.owed.total.Load() + ls.owed.total.Load(); got != before {
		t.Errorf("incr of text: %d deletes owed; want none", got-before)
	}
	if p.ejected("alpha", small.Addr) || p.ejected("alpha", large.Addr) {
		t.Error("a server was ejected for error replies")
	}
}

// TestReplicaReadServerError checks that a read fails over on a replica's
// SERVER_ERROR reply, in a get of one key and of many: the first replica is
// another proxy whose own server is down, which answers every request so.
func TestReplicaReadServerError(t *testing.T) {
	down := memcachedtest.Start(t)
	inner := startProxy(t, poolYAML("timeout: 1000", down))
	down.Stop()
	m := memcachedtest.Start(t)
	yaml := poolOf("distribution: chash\nreplicas: 2\ntimeout: 1000", []string{inner.Addr("alpha").String() + ":1", m.Addr + ":1"})
	set := replicaSet(t, yaml, 2)
	var keys []string
	for i := 0; len(keys) < 20; i++ {
		if k := fmt.Sprint("err:", i); set(k)[0] != m.Addr {
			keys = append(keys, k)
		}
	}
	setMany(t, dial(t, m.Addr), keys)
	c := dial(t, inner.Addr("alpha").String())
	if got := c.mustDo("get " + keys[0] + "\r\n"); !strings.HasPrefix(got, "SERVER_ERROR ") {
		t.Fatalf("the inner proxy's get: %q; want a SERVER_ERROR", got)
	}
	p := startProxy(t, yaml)
	c = dial(t, p.Addr("alpha").String())
	if got := getMany(t, c, keys); len(got) != len(keys) {
		t.Errorf("%d of %d gets hit; want all from the second replica", len(got), len(keys))
	}
	if got := strings.Count(c.mustDo("get "+strings.Join(keys, " ")+"\r\n"), "VALUE "); got != len(keys) {
		t.Errorf("a get of %d keys finds %d; want all", len(keys), got)
	}
	if got, want := p.pools["alpha"].stats.failovers.Load(), uint64(2*len(keys)); got != want {
		t.Errorf("%d failovers; want %d", got, want)
	}
}

// TestReplyClass checks which memcached replies a replicated pool takes as a
// server's failure and which as the answer to a bad request.
func TestReplyClass(t *testing.T) {
	for _, tt := range []struct {
		line            string
		failed, refused bool
	}{
		{"SERVER_ERROR out of memory storing object", true, false},
		{"SERVER_ERROR object too large for cache", true, false},
		{"CLIENT_ERROR cannot increment or decrement non-numeric value", false, true},
		{"CLIENT_ERROR bad data chunk", false, true},
		{"ERROR", false, true},
		{"STORED", false, false},
		{"NOT_STORED", false, false},
		{"END", false, false},
		{"EN", false, false},
		{"SERVER_ERRORS", false, false},
	} {
		rep := &mcReply{}
		rep.resp.Line = []byte(tt.line)
		r := &mcRequest{}
		if got := r.failed(rep); got != tt.failed {
			t.Errorf("failed(%q) = %v; want %v", tt.line, got, tt.failed)
		}
		if got := r.refused(rep); got != tt.refused {
			t.Errorf("refused(%q) = %v; want %v", tt.line, got, tt.refused)
		}
	}
}
