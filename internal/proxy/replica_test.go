package proxy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
)

// replicaOpts are the settings of the replica tests' pools: chash's ring with
// two replicas, servers ejected after one failure and probed every 300ms.
const replicaOpts = "distribution: chash\nreplicas: 2\ntimeout: 300\nauto_eject_hosts: true\nserver_failure_limit: 1\nserver_retry_timeout: 300"

// TestReplicas is issue 14's proof for replicas: four servers with replicas:
// 2. Every key is on exactly its two replica servers; with one server frozen
// every get hits; keys deleted while it was frozen are gone from it once it
// thaws and is readmitted; killed and restarted empty, reads get no error.
func TestReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	yaml := poolYAML(replicaOpts, servers...)
	set := replicaSet(t, yaml, 2)
	p := startProxy(t, yaml)
	c := dial(t, p.Addr("alpha").String())
	keys := testKeys("rep:", 1000)
	setMany(t, c, keys)

	// Every key on exactly its two replicas.
	dc := direct(t, servers)
	on := map[string]map[string]bool{}
	for addr, d := range dc {
		on[addr] = holds(t, d, keys)
	}
	for _, k := range keys {
		want := set(k)
		for addr := range dc {
			if got, w := on[addr][k], addr == want[0] || addr == want[1]; got != w {
				t.Errorf("key %s on %s: %v; its replicas are %v", k, addr, got, want)
			}
		}
	}

	// One server frozen: every get hits, and deletes succeed.
	victim := servers[1]
	victim.Freeze()
	if got := getMany(t, c, keys); len(got) != len(keys) {
		t.Errorf("with %s frozen, %d of %d gets hit; want all", victim.Addr, len(got), len(keys))
	}
	if !p.ejected("alpha", victim.Addr) {
		t.Error("the frozen server was not ejected")
	}
	var deleted []string
	for _, k := range keys {
		if r := set(k); r[0] == victim.Addr || r[1] == victim.Addr {
			if len(deleted) < 100 {
				deleted = append(deleted, k)
			}
		}
	}
	for _, k := range deleted {
		if got := c.mustDo("delete " + k + "\r\n"); got != "DELETED\r\n" {
			t.Fatalf("delete %s with %s frozen: %q", k, victim.Addr, got)
		}
	}
	vs := p.pools["alpha"].state.Load().servers[victim.Addr]
	if n := vs.owed.n.Load(); n != int64(len(deleted)) {
		t.Errorf("the frozen server owes %d deletes; want %d", n, len(deleted))
	}

	// Thawed and readmitted: the deleted keys are gone from it too.
	victim.Thaw()
	if !waitFor(5*time.Second, func() bool { return !p.ejected("alpha", victim.Addr) }) {
		t.Fatal("the thawed server was not readmitted")
	}
	if n := vs.owed.n.Load(); n != 0 {
		t.Errorf("readmitted, it owes %d deletes; want 0", n)
	}
	if got := holds(t, dial(t, victim.Addr), deleted); len(got) != 0 {
		t.Errorf("%d keys deleted while the server was frozen are back on it", len(got))
	}
	if got := getMany(t, c, deleted); len(got) != 0 {
		t.Errorf("%d deleted keys read back through the proxy", len(got))
	}
	live := keys[:0:0]
	for _, k := range keys {
		if !contains(deleted, k) {
			live = append(live, k)
		}
	}
	if got := getMany(t, c, live); len(got) != len(live) {
		t.Errorf("after the thaw, %d of %d gets hit", len(got), len(live))
	}

	// Killed, then restarted empty: no error for reads.
	victim.Stop()
	if got := getMany(t, c, live); len(got) != len(live) {
		t.Errorf("with %s killed, %d of %d gets hit; want all", victim.Addr, len(got), len(live))
	}
	victim.Restart()
	if !waitFor(5*time.Second, func() bool { return !p.ejected("alpha", victim.Addr) }) {
		t.Fatal("the restarted server was not readmitted")
	}
	for batch := range slicesChunk(live, 100) {
		var b strings.Builder
		for _, k := range batch {
			b.WriteString("get " + k + "\r\n")
		}
		if got := c.mustDo(b.String()); strings.Contains(got, "ERROR") {
			t.Fatalf("after the restart, reads answered errors: %q", got)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestReplicaCommands checks each write of a pool with replicas on both
// replicas, as the first replica decides: the conditional commands, cas
// across replicas (the first replica's token), incr and decr, the meta
// commands, noreply and quiet modes.
func TestReplicaCommands(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	yaml := poolYAML(replicaOpts, servers...)
	set := replicaSet(t, yaml, 2)
	p := startProxy(t, yaml)
	c := dial(t, p.Addr("alpha").String())
	dc := direct(t, servers)
	// onBoth checks that both replicas of key answer req alike, want.
	onBoth := func(step, key, req, want string) {
		t.Helper()
		for _, addr := range set(key) {
			if got := dc[addr].mustDo(req); got != want {
				t.Errorf("%s: replica %s: %q = %q; want %q", step, addr, req, got, want)
			}
		}
	}
	casOf := func(key string) string {
		t.Helper()
		line, _, _ := strings.Cut(c.mustDo("gets "+key+"\r\n"), "\r\n")
		f := strings.Fields(line)
		if len(f) != 5 {
			t.Fatalf("gets %s: %q", key, line)
		}
		return f[4]
	}
	steps := []struct {
		name, req, reply string
		check, want      string // a request to each replica, and its reply
	}{
		{"set", "set k 5 0 1\r\na\r\n", "STORED\r\n", "mg k v f\r\n", "VA 1 f5\r\na\r\n"},
		{"add existing", "add k 0 0 1\r\nb\r\n", "NOT_STORED\r\n", "mg k v\r\n", "VA 1\r\na\r\n"},
		{"append", "append k 0 0 2\r\nbc\r\n", "STORED\r\n", "mg k v f\r\n", "VA 3 f5\r\nabc\r\n"},
		{"prepend", "prepend k 0 0 1\r\nz\r\n", "STORED\r\n", "mg k v\r\n", "VA 4\r\nzabc\r\n"},
		{"replace", "replace k 6 100 1\r\nr\r\n", "STORED\r\n", "mg k v f\r\n", "VA 1 f6\r\nr\r\n"},
		{"touch", "touch k 0\r\n", "TOUCHED\r\n", "mg k t\r\n", "HD t-1\r\n"},
		{"incr missing", "incr n 1\r\n", "NOT_FOUND\r\n", "mg n\r\n", "EN\r\n"},
		{"add", "add n 3 0 2\r\n10\r\n", "STORED\r\n", "mg n v f\r\n", "VA 2 f3\r\n10\r\n"},
		{"incr", "incr n 5\r\n", "15\r\n", "mg n v f\r\n", "VA 2 f3\r\n15\r\n"},
		// memcached's decr keeps the value's length, padding with spaces,
		// when it changes the item in place, which it does only if no other
		// connection holds it: an incr of 0 reads the number either way.
		{"decr", "decr n 20\r\n", "0\r\n", "incr n 0\r\n", "0\r\n"},
		{"incr noreply", "incr n 7 noreply\r\n", "", "incr n 0\r\n", "7\r\n"},
		{"ma", "ma n D3 v\r\n", "VA 2\r\n10\r\n", "mg n v\r\n", "VA 2\r\n10\r\n"},
		{"ma quiet", "ma n q\r\n", "", "mg n v\r\n", "VA 2\r\n11\r\n"},
		{"ms add existing", "ms n 1 ME\r\nx\r\n", "NS\r\n", "mg n v\r\n", "VA 2\r\n11\r\n"},
		{"ms append", "ms n 1 MA\r\n9\r\n", "HD\r\n", "mg n v\r\n", "VA 3\r\n119\r\n"},
		{"ms", "ms m 2 F4 T0\r\nmm\r\n", "HD\r\n", "mg m v f\r\n", "VA 2 f4\r\nmm\r\n"},
		{"md", "md m\r\n", "HD\r\n", "mg m\r\n", "EN\r\n"},
		{"delete", "delete n\r\n", "DELETED\r\n", "mg n\r\n", "EN\r\n"},
		{"delete missing", "delete n\r\n", "NOT_FOUND\r\n", "mg n\r\n", "EN\r\n"},
		{"set noreply", "set q 0 0 1 noreply\r\nq\r\n", "", "mg q v\r\n", "VA 1\r\nq\r\n"},
		// A request every replica refuses changes nothing, and is owed by
		// none.
		{"incr of text", "incr q 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n", "mg q v\r\n", "VA 1\r\nq\r\n"},
	}
	for _, s := range steps {
		key := strings.Fields(s.req)[1]
		if got := c.mustDo(s.req); got != s.reply {
			t.Errorf("%s: %q = %q; want %q", s.name, s.req, got, s.reply)
		}
		onBoth(s.name, key, s.check, s.want)
	}

	// cas: gets gives the first replica's token, which cas takes; a stale
	// one changes no replica.
	c.mustDo("set c 0 0 1\r\n1\r\n")
	token := casOf("c")
	if got := c.mustDo("cas c 2 0 1 " + token + "\r\n2\r\n"); got != "STORED\r\n" {
		t.Errorf("cas with the token of gets: %q; want STORED", got)
	}
	onBoth("cas", "c", "mg c v f\r\n", "VA 1 f2\r\n2\r\n")
	if got := c.mustDo("cas c 0 0 1 " + token + "\r\n3\r\n"); got != "EXISTS\r\n" {
		t.Errorf("cas with a stale token: %q; want EXISTS", got)
	}
	onBoth("stale cas", "c", "mg c v\r\n", "VA 1\r\n2\r\n")
	if got := c.mustDo("md c C" + casOf("c") + "\r\n"); got != "HD\r\n" {
		t.Errorf("md with the token: %q; want HD", got)
	}
	onBoth("md with cas", "c", "mg c\r\n", "EN\r\n")
	if p.pools["alpha"].stats.failovers.Load() != 0 {
		t.Errorf("%d failovers with every server up", p.pools["alpha"].stats.failovers.Load())
	}
	for _, s := range p.pools["alpha"].state.Load().list {
		if n := s.owed.total.Load(); n != 0 {
			t.Errorf("%s owed %d deletes with every server up", s.name, n)
		}
	}
}

// TestReadMissFailover checks read_miss_failover: a key only the second
// replica holds (a first replica restarted empty, say) misses without it and
// hits with it, in a get of one key and of many.
func TestReadMissFailover(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	yaml := poolYAML(replicaOpts, servers...)
	set := replicaSet(t, yaml, 2)
	dc := direct(t, servers)
	keys := testKeys("second:", 20)
	for _, k := range keys {
		dc[set(k)[1]].mustDo(fmt.Sprintf("set %s 0 0 %d\r\n%s\r\n", k, len(valueOf(k)), valueOf(k)))
	}
	multi := "get " + strings.Join(keys, " ") + "\r\n"
	for _, tt := range []struct {
		opts string
		hits int
	}{
		{"", 0},
		{"read_miss_failover: true", len(keys)},
	} {
		p := startProxy(t, poolYAML(replicaOpts+"\n"+tt.opts, servers...))
		c := dial(t, p.Addr("alpha").String())
		if got := getMany(t, c, keys); len(got) != tt.hits {
			t.Errorf("%q: %d of %d gets hit; want %d", tt.opts, len(got), len(keys), tt.hits)
		}
		if got := strings.Count(c.mustDo(multi), "VALUE "); got != tt.hits {
			t.Errorf("%q: a get of %d keys finds %d; want %d", tt.opts, len(keys), got, tt.hits)
		}
	}
}

// TestReplicaConfig checks that replicas are refused where they cannot be
// served: a distribution without replica sets, a Redis pool.
func TestReplicaConfig(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{poolOf("replicas: 2", []string{"127.0.0.1:1:1"}),
			`config: test.yml:3: pool "alpha": replicas 2: distribution ketama has no replica sets (those with: chash, rendezvous, multiprobe and balanced)`},
		{poolOf("redis: true\ndistribution: chash\nreplicas: 2", []string{"127.0.0.1:1:1"}),
			`proxy: test.yml:5: pool "alpha": replicas is served in memcached pools only, not in Redis pools (redis: true)`},
		{poolOf("redis: true\nwarmup: 100", []string{"127.0.0.1:1:1"}),
			`proxy: test.yml:4: pool "alpha": warmup is served in memcached pools only, not in Redis pools (redis: true)`},
	} {
		if err := Validate(parseConfig(t, tt.yaml)); err == nil || err.Error() != tt.want {
			t.Errorf("Validate(%q) = %v; want %s", tt.yaml, err, tt.want)
		}
	}
}

// TestReplicaWriteFrozenRedial: a replica frozen (SIGSTOP) that timed out
// once, below server_failure_limit, and so owes the key it missed, is dialed
// again by the next write, which replays its deletes first and waits the
// timeout. The write must still reach the other replica and answer its
// STORED: the other replica's call must not time out unsent behind the
// frozen one's dial, nor owe the key, whose delete would then take the new
// value from every replica.
func TestReplicaWriteFrozenRedial(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	yaml := poolYAML("distribution: chash\nreplicas: 2\ntimeout: 300\nauto_eject_hosts: true\nserver_failure_limit: 3\nserver_retry_timeout: 300", servers...)
	set := replicaSet(t, yaml, 2)
	victim := servers[0]
	var key, other string
	for _, k := range testKeys("redial:", 200) {
		if r := set(k); r[0] == victim.Addr {
			key, other = k, r[1]
			break
		}
	}
	if key == "" {
		t.Fatal("no key whose first replica is the victim")
	}
	p := startProxy(t, yaml)
	c := dial(t, p.Addr("alpha").String())
	c.mustDo("set " + key + " 0 0 2\r\nv0\r\n")
	victim.Freeze()
	defer victim.Thaw()
	od := dial(t, other)
	for _, v := range []string{"v1", "v2"} {
		if got := c.mustDo("set " + key + " 0 0 2\r\n" + v + "\r\n"); got != "STORED\r\n" {
			t.Errorf("set %s %s with its first replica frozen: %q; want STORED", key, v, got)
		}
		want := "VALUE " + key + " 0 2\r\n" + v + "\r\nEND\r\n"
		if got := od.mustDo("get " + key + "\r\n"); got != want {
			t.Errorf("after set %s %s, the other replica holds %q; want %q", key, v, got, want)
		}
	}
	if p.ejected("alpha", victim.Addr) {
		t.Fatal("the victim was ejected: the test needs it failing, not ejected")
	}
	// Whatever it owes is replayed; the other replica keeps the value.
	time.Sleep(100 * time.Millisecond)
	want := "VALUE " + key + " 0 2\r\nv2\r\nEND\r\n"
	if got := od.mustDo("get " + key + "\r\n"); got != want {
		t.Errorf("later, the other replica holds %q; want %q", got, want)
	}
}

// TestReplicasFlushAll: flush_all in a pool with replicas, or in a warm-up
// window, goes to every server, as in any pool; it went to one replica set
// of the empty key, answered OK, and the others kept their values (a
// review read back 3,774 of 6,666 keys after it).
func TestReplicasFlushAll(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	for _, opts := range []string{replicaOpts, "timeout: 1000\nwarmup: 60000"} {
		var p *Proxy
		if opts == replicaOpts {
			p = startProxy(t, poolYAML(opts, servers...))
		} else {
			// A window open: the pool grows from one server to three.
			p = startProxy(t, poolYAML(opts, servers[0]))
			if err := p.Reload(parseConfig(t, poolYAML(opts, servers...))); err != nil {
				t.Fatal(err)
			}
		}
		c := dial(t, p.Addr("alpha").String())
		keys := make([]string, 60)
		for i := range keys {
			keys[i] = fmt.Sprint("fl:", i)
		}
		setMany(t, c, keys)
		if got := c.mustDo("flush_all\r\n"); got != "OK\r\n" {
			t.Fatalf("%q: flush_all = %q", opts, got)
		}
		for i, s := range servers {
			if left := holds(t, dial(t, s.Addr), keys); len(left) > 0 {
				t.Errorf("%q: after flush_all, server %d holds %d of the keys", opts, i, len(left))
			}
		}
	}
}
