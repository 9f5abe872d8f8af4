package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/testprog"
)

// TestDrainEndpoint drains a server through POST /drain: its keys move to
// the other servers and are warmed from it, so that every key still hits;
// the drain survives a reload of a file that lists the server, ends when its
// window closes, and DELETE /drain gives the server its keys back. Requests
// without the admin header, or naming what the pool lacks, are refused.
func TestDrainEndpoint(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	yaml := poolYAML("timeout: 1000", servers...)
	owner := ownerFunc(t, yaml)
	p := startProxy(t, yaml, func(p *Proxy) { p.Admin = "127.0.0.1:0" })
	admin := "http://" + p.AdminAddr().String()
	do := func(method, query string, header bool) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, admin+"/drain?"+query, nil)
		if err != nil {
			t.Fatal(err)
		}
		if header {
			req.Header.Set(AdminHeader, "1")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	c := dial(t, p.Addr("alpha").String())
	keys := testKeys("drain:", 600)
	setMany(t, c, keys)
	victim := servers[1].Addr
	var theirs []string
	for _, k := range keys {
		if owner(k) == victim {
			theirs = append(theirs, k)
		}
	}

	for _, tt := range []struct {
		name, method, query string
		header              bool
		code                int
		body                string
	}{
		{"no header", "POST", "pool=alpha&server=" + victim, false, http.StatusForbidden, "needs the header"},
		{"no server", "POST", "pool=alpha", true, http.StatusBadRequest, "needs pool and server"},
		{"unknown pool", "POST", "pool=beta&server=" + victim, true, http.StatusBadRequest, `proxy: no pool "beta" (pools: ["alpha"])`},
		{"unknown server", "POST", "pool=alpha&server=10.0.0.9:1", true, http.StatusBadRequest, `proxy: pool "alpha" has no server "10.0.0.9:1"`},
		{"bad ms", "POST", "pool=alpha&server=" + victim + "&ms=soon", true, http.StatusBadRequest, `ms "soon" is not a number in 1..2147483647`},
		{"ms past the warmup key's bound", "POST", "pool=alpha&server=" + victim + "&ms=9223372036854775807", true, http.StatusBadRequest, `ms "9223372036854775807" is not a number in 1..2147483647`},
		{"ms past the bound, undrain", "DELETE", "pool=alpha&server=" + victim + "&ms=2147483648", true, http.StatusBadRequest, `ms "2147483648" is not a number in 1..2147483647`},
		{"undrain of a server not drained", "DELETE", "pool=alpha&server=" + victim, true, http.StatusBadRequest, "is not drained"},
		{"drain", "POST", "pool=alpha&server=" + victim + "&ms=1500", true, http.StatusOK, "draining server " + victim},
		{"again", "POST", "pool=alpha&server=" + victim, true, http.StatusBadRequest, "is drained already"},
		{"another", "POST", "pool=alpha&server=" + servers[0].Addr + "&ms=1500", true, http.StatusOK, "draining"},
		{"the last", "POST", "pool=alpha&server=" + servers[2].Addr, true, http.StatusBadRequest, "is the last one not drained"},
		{"undrain", "DELETE", "pool=alpha&server=" + servers[0].Addr + "&ms=1500", true, http.StatusOK, "owns keys again"},
	} {
		code, body := do(tt.method, tt.query, tt.header)
		if code != tt.code || !strings.Contains(body, tt.body) {
			t.Errorf("%s: %s /drain?%s = %d %q; want %d with %q", tt.name, tt.method, tt.query, code, body, tt.code, tt.body)
		}
	}
	// The undrain of the other server moved its keys back, with warm-up
	// from the servers that had them a moment: every key still hits.
	if got := getMany(t, c, keys); len(got) != len(keys) {
		t.Errorf("during the drain, %d of %d gets hit; want all", len(got), len(keys))
	}
	pl := p.pools["alpha"]
	waitCount(5*time.Second, pl.stats.warmHits.Load(), pl.stats.warmCopies.Load)
	if got := holds(t, dial(t, victim), theirs); len(got) != 0 {
		t.Errorf("the drained server still holds %d of its %d keys read", len(got), len(theirs))
	}
	// A reload of the file, which lists the server, keeps the drain.
	if err := p.Reload(parseConfig(t, poolYAML("timeout: 900", servers...))); err != nil {
		t.Fatal(err)
	}
	if st := pl.state.Load(); !st.drained[victim] || len(st.live) != 2 {
		t.Errorf("after a reload, drained %v, %d servers own keys; want %s drained", st.drained, len(st.live), victim)
	}
	if !waitFor(5*time.Second, func() bool { return pl.state.Load().warm == nil }) {
		t.Error("the drain's window did not close")
	}
	if code, body := do("DELETE", "pool=alpha&server="+victim, true); code != http.StatusOK {
		t.Fatalf("undrain: %d %q", code, body)
	}
	if st := pl.state.Load(); st.drained[victim] || len(st.live) != 3 {
		t.Errorf("undrained: drained %v, %d servers own keys; want 3", st.drained, len(st.live))
	}
}

// TestDrainConfig drains a server by reloading a file whose drain: names
// it: its keys are warmed onto the other servers, and a file without it
// takes it back.
func TestDrainConfig(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	const opts = "timeout: 1000\nwarmup: 60000"
	yaml := poolYAML(opts, servers...)
	owner := ownerFunc(t, yaml)
	p := startProxy(t, yaml)
	c := dial(t, p.Addr("alpha").String())
	keys := testKeys("drainconf:", 600)
	setMany(t, c, keys)
	victim := servers[2].Addr
	moved := 0
	for _, k := range keys {
		if owner(k) == victim {
			moved++
		}
	}
	if err := p.Reload(parseConfig(t, poolYAML(opts+"\ndrain: ["+victim+"]", servers...))); err != nil {
		t.Fatal(err)
	}
	if got := getMany(t, c, keys); len(got) != len(keys) {
		t.Errorf("during the drain, %d of %d gets hit; want all", len(got), len(keys))
	}
	st := p.pools["alpha"].stats
	if got := st.warmReads.Load(); got != uint64(moved) {
		t.Errorf("%d warm-up reads; want %d, the drained server's keys", got, moved)
	}
	waitCount(5*time.Second, st.warmHits.Load(), st.warmCopies.Load)
	if got := holds(t, dial(t, victim), keys); len(got) != 0 {
		t.Errorf("the drained server still holds %d keys", len(got))
	}
	// Undrained by the file: its keys come back, warmed from the others.
	if err := p.Reload(parseConfig(t, yaml)); err != nil {
		t.Fatal(err)
	}
	if got := getMany(t, c, keys); len(got) != len(keys) {
		t.Errorf("after the undrain, %d of %d gets hit; want all", len(got), len(keys))
	}
}

// TestRingShowsDrained: GET /ring lists a pool's drained servers with their
// state, "draining" while their keys are warmed from them and "drained" once
// they may leave, in the pool's order; they stay out of the ring's servers
// and of its fingerprint.
func TestRingShowsDrained(t *testing.T) {
	lines := []string{"127.0.0.1:34011:1 a", "127.0.0.1:34012:1 b", "127.0.0.1:34013:1 c"}
	yaml := poolOf("warmup: 60000\ndrain: [c]", lines)
	p := startProxy(t, yaml, func(p *Proxy) { p.Admin = "127.0.0.1:0" })
	ring := func() PoolRing {
		t.Helper()
		var r struct{ Pools map[string]PoolRing }
		if err := json.Unmarshal([]byte(adminGet(t, p, "/ring")), &r); err != nil {
			t.Fatal(err)
		}
		return r.Pools["alpha"]
	}
	check := func(when string, r PoolRing, want []DrainedServer) {
		t.Helper()
		if !slices.Equal(r.Drained, want) {
			t.Errorf("%s: /ring drained %+v; want %+v", when, r.Drained, want)
		}
		if fp := fingerprintOf(t, parseConfig(t, yaml).Pools[0], lines[0]); !slices.Equal(r.Servers, []string{"a"}) || r.Fingerprint != fp {
			t.Errorf("%s: /ring servers %q, fingerprint %s; want [a] and %s, the ring's without the drained", when, r.Servers, r.Fingerprint, fp)
		} // The status page's health column says it too.
		page := adminGet(t, p, "/")
		for _, d := range want {
			row := regexp.MustCompile(`(?s)</span>` + d.Server + `</th>.*?</tr>`).FindString(page)
			if !strings.Contains(row, `<span class="drained">`+d.State+`</span>`) {
				t.Errorf("%s: the status page's row of %s does not say %s:\n%s", when, d.Server, d.State, row)
			}
		}
	}

	// Drained by the file from the start: no key to warm from it.
	if r := ring(); !slices.Equal(r.Drained, []DrainedServer{{Server: "c", State: "drained"}}) {
		t.Errorf("at start: /ring drained %+v; want c drained", r.Drained)
	}
	if _, err := p.Drain("alpha", "b", 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// c owned no keys before b's drain: nothing is warmed from it.
	check("while b drains", ring(), []DrainedServer{{Server: "b", State: "draining"}, {Server: "c", State: "drained"}})
	time.Sleep(time.Second)
	check("once b's window closed", ring(), []DrainedServer{{Server: "b", State: "drained"}, {Server: "c", State: "drained"}})
}

// TestDrainCompleteLogged: a drain of the drain: list is logged complete
// once, when the window that read its keys closes; another window closing
// later (a drain of POST /drain) logs that drain, not the first again.
func TestDrainCompleteLogged(t *testing.T) {
	lines := []string{"127.0.0.1:34021:1 a", "127.0.0.1:34022:1 b", "127.0.0.1:34023:1 c"}
	var logs testprog.Buffer
	p := startProxy(t, poolOf("warmup: 300", lines), func(p *Proxy) {
		p.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	done := func(server string) int {
		n := 0
		for _, rec := range jsonLogs(t, &logs, "drain complete: the server may leave the pool") {
			if rec["server"] == server {
				n++
			}
		}
		return n
	}
	if err := p.Reload(parseConfig(t, poolOf("warmup: 300\ndrain: [c]", lines))); err != nil {
		t.Fatal(err)
	}
	if !pollFor(5*time.Second, func() bool { return done("c") == 1 }) {
		t.Fatalf("c drained by the file: %d lines saying its drain is complete; want 1:\n%s", done("c"), logs.String())
	}
	if _, err := p.Drain("alpha", "b", 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if !pollFor(5*time.Second, func() bool { return done("b") == 1 }) {
		t.Fatalf("b drained: %d lines saying its drain is complete; want 1:\n%s", done("b"), logs.String())
	}
	time.Sleep(100 * time.Millisecond)
	if n := done("c"); n != 1 {
		t.Errorf("after b's window closed, %d lines say c's drain is complete; want still 1:\n%s", n, logs.String())
	}
}

// TestUndrainForgetsWrites: keys written or deleted while a server is
// drained go to other servers; undrained, the server owns them again and
// must not answer the values it held before (1,708 of 2,000 keys read back
// stale in a review, with replicas). So the writes are owed by it, with and
// without replicas.
func TestUndrainForgetsWrites(t *testing.T) {
	for _, tt := range []struct{ name, opts string }{
		{"ketama", "timeout: 1000"},
		{"replicas", "timeout: 1000\ndistribution: chash\nreplicas: 2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
			p := startProxy(t, poolYAML(tt.opts, servers...))
			c := dial(t, p.Addr("alpha").String())
			keys := testKeys("undrain:", 400)
			setMany(t, c, keys) // valueOf(k)
			victim := servers[1].Addr
			if _, err := p.Drain("alpha", victim, 200*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			// Past the drain's window, whose writes delete the previous
			// server's copy.
			pl := p.pools["alpha"]
			if !waitFor(5*time.Second, func() bool { return pl.state.Load().warm == nil }) {
				t.Fatal("the drain's window did not close")
			}
			for i, k := range keys {
				if i%4 == 0 {
					if got := c.mustDo("delete " + k + "\r\n"); got != "DELETED\r\n" && got != "NOT_FOUND\r\n" {
						t.Fatalf("while drained: delete %s = %q", k, got)
					}
					continue
				}
				if got := c.mustDo(fmt.Sprintf("set %s 0 0 3\r\nnew\r\n", k)); got != "STORED\r\n" {
					t.Fatalf("while drained: set %s = %q", k, got)
				}
			}
			// A window that outlasts the reads, however slow the machine:
			// a key of the victim read after it closes would miss.
			if err := p.Undrain("alpha", victim, time.Minute); err != nil {
				t.Fatal(err)
			}
			stale := 0
			for i, k := range keys {
				got := c.mustDo("get " + k + "\r\n")
				want := "VALUE " + k + " 0 3\r\nnew\r\nEND\r\n"
				if i%4 == 0 {
					want = "END\r\n"
				}
				if got != want {
					stale++
					if stale <= 3 {
						t.Errorf("undrained: get %s = %q; want %q", k, got, want)
					}
				}
			}
			if stale > 0 {
				t.Errorf("undrained: %d of %d keys read back other than last written", stale, len(keys))
			}
		})
	}
}
