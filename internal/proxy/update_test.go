package proxy

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/dist"
	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/testprog"
)

// serverOf returns the config.Server of a memcached started by memcachedtest.
func serverOf(t testing.TB, s *memcachedtest.Server) config.Server {
	t.Helper()
	host, port, err := net.SplitHostPort(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return config.Server{Host: host, Port: n, Weight: 1}
}

// TestUpdateServers changes a pool's servers without a file: keys go where the
// router over the new list says, a server that stays keeps its connections,
// the moved fraction is logged, and a bad list changes nothing.
func TestUpdateServers(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	var logs testprog.Buffer
	p := startProxy(t, poolYAML("hash: md5", servers[0]), func(p *Proxy) { p.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	c := dial(t, p.Addr("alpha").String())
	c.mustDo("set before 0 0 1\r\nx\r\n")
	kept := p.pools["alpha"].state.Load().servers[servers[0].Addr]

	list := []config.Server{serverOf(t, servers[0]), serverOf(t, servers[1]), serverOf(t, servers[2])}
	list[2].Alias = "third"
	if err := p.UpdateServers("alpha", list); err != nil {
		t.Fatal(err)
	}
	if got := p.pools["alpha"].state.Load().servers[servers[0].Addr]; got != kept {
		t.Error("a server in both lists did not keep its connections")
	}
	if !logged(&logs, `msg="servers updated: key space moved" pool=alpha moved=0.`) {
		t.Errorf("the update does not log the moved fraction:\n%s", logs.String())
	}
	// Each key is stored where a router over the new list puts it.
	pc := parseConfig(t, poolYAML("hash: md5", servers[0])).Pools[0]
	pc.Servers = list
	r, err := dist.Build(pc, list)
	if err != nil {
		t.Fatal(err)
	}
	direct := map[string]*conn{}
	for i, s := range servers {
		direct[list[i].Name()] = dial(t, s.Addr)
	}
	used := map[string]bool{}
	for i := range 60 {
		key := fmt.Sprintf("u%d", i)
		if got := c.mustDo("set " + key + " 0 0 1\r\nx\r\n"); got != "STORED\r\n" {
			t.Fatalf("set %s: %q", key, got)
		}
		j, err := r.Lookup([]byte(key))
		if err != nil {
			t.Fatal(err)
		}
		owner := list[j].Name()
		used[owner] = true
		for name, dc := range direct {
			has := dc.mustDo("get "+key+"\r\n") != "END\r\n"
			if has != (name == owner) {
				t.Errorf("key %s on %s: %v; the router over the new list says %s", key, name, has, owner)
			}
		}
	}
	if len(used) != 3 {
		t.Errorf("keys on %d servers of 3", len(used))
	}

	// Bad lists are refused and change nothing.
	dup := []config.Server{list[0], list[0]}
	bad := []struct {
		pool    string
		servers []config.Server
		want    string
	}{
		{"alpha", dup, `proxy: pool "alpha": server 2 ("` + servers[0].Addr + `"): the name of server 1 too`},
		{"alpha", []config.Server{{Host: "127.0.0.1", Port: 70000, Weight: 1}}, "port 70000 is not from 1 to 65535"},
		{"alpha", []config.Server{{Host: "127.0.0.1", Port: 1, Weight: 0}}, "weight 0 is not a positive integer"},
		{"alpha", []config.Server{{Port: 1, Weight: 1}}, "no host"},
		{"alpha", []config.Server{{Host: "relative.sock", Weight: 1}}, "port 0 is for a Unix socket"},
		{"beta", list, `proxy: no pool "beta"`},
	}
	for _, tt := range bad {
		if err := p.UpdateServers(tt.pool, tt.servers); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("UpdateServers(%q, %v) = %v; want an error with %q", tt.pool, tt.servers, err, tt.want)
		}
	}
	if n := len(p.pools["alpha"].state.Load().list); n != 3 {
		t.Errorf("after refused updates, %d servers; want 3", n)
	}

	// An empty list: requests get an error at once, whole or split.
	if err := p.UpdateServers("alpha", nil); err != nil {
		t.Fatal(err)
	}
	for _, req := range []string{"get a\r\n", "get a b c\r\n", "set a 0 0 1\r\nx\r\n"} {
		if got := c.mustDo(req); got != "SERVER_ERROR no live servers\r\n" {
			t.Errorf("%q with no servers: %q", req, got)
		}
	}
	if err := p.UpdateServers("alpha", list[:1]); err != nil {
		t.Fatal(err)
	}
	if got := c.mustDo("get before\r\n"); got != "VALUE before 0 1\r\nx\r\nEND\r\n" {
		t.Errorf("get after the servers came back: %q", got)
	}
}

// TestUpdateKeepsLatencySeries removes a server and adds it back before the
// removed one is retired: its latency series survives the retirement. (md5
// spreads the keys k0 ... k39 over both servers; the default fnv1a_64, which
// twemproxy cuts to 32 bits, puts them all on one.)
func TestUpdateKeepsLatencySeries(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	p := startProxy(t, poolYAML("timeout: 100\nhash: md5", servers...), func(p *Proxy) { p.Admin = "127.0.0.1:0" })
	both := []config.Server{serverOf(t, servers[0]), serverOf(t, servers[1])}
	if err := p.UpdateServers("alpha", both[:1]); err != nil {
		t.Fatal(err)
	}
	if err := p.UpdateServers("alpha", both); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // past the retirement of the removed server (1s)
	c := dial(t, p.Addr("alpha").String())
	for i := range 40 {
		c.mustDo(fmt.Sprintf("set k%d 0 0 1\r\nx\r\n", i))
	}
	body := scrape(t, p)
	for _, s := range servers {
		series := `chash_proxy_server_request_duration_seconds_count{pool="alpha",server="` + s.Addr + `"}`
		if !strings.Contains(string(body), series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}
}

// TestStartWithoutServers starts a pool built in code with no servers, as one
// whose servers come from a membership service that has none yet: its
// requests get an error at once, until UpdateServers gives it a server.
func TestStartWithoutServers(t *testing.T) {
	s := memcachedtest.Start(t)
	pool := config.NewPool("alpha")
	pool.Listen = "127.0.0.1:0"
	f := &config.File{Path: "(in code)", Pools: []*config.Pool{pool}}
	p := &Proxy{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := p.Start(f); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := dial(t, p.Addr("alpha").String())
	if got := c.mustDo("get a b\r\nset a 0 0 1\r\nx\r\n"); got != "SERVER_ERROR no live servers\r\nSERVER_ERROR no live servers\r\n" {
		t.Errorf("a pool without servers answers %q", got)
	}
	if err := p.UpdateServers("alpha", []config.Server{serverOf(t, s)}); err != nil {
		t.Fatal(err)
	}
	if got := c.mustDo("set a 0 0 1\r\nx\r\nget a\r\n"); got != "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n" {
		t.Errorf("once it has a server: %q", got)
	}
	// Servers built in code are checked as a file's are. (A copy: the
	// proxy keeps the configuration it started with, and reads it when it
	// logs how keys moved.)
	bad := *pool
	f = &config.File{Path: "(in code)", Pools: []*config.Pool{&bad}}
	bad.Servers = []config.Server{{Host: "127.0.0.1", Port: 1, Weight: 0}}
	if err := Validate(f); err == nil || !strings.Contains(err.Error(), "weight 0") {
		t.Errorf("Validate of a server of weight 0 = %v", err)
	}
	bad.Servers, bad.Distribution = nil, "nosuch"
	if err := Validate(f); err == nil {
		t.Error("Validate of a pool without servers of an unknown distribution = nil")
	}
}
