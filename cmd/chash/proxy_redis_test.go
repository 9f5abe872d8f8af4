package main

import (
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/redistest"
	"github.com/chash-dev/chash/internal/testprog"
)

// TestProxyBinaryRedis runs the chash binary with a file of a memcached pool
// and a Redis pool with a password, as an operator does: each Redis key
// lands on the server "chash route" names for it, and only there; the
// memcached pool serves beside it; --max-bulk bounds a Redis client's bulk
// strings; SIGTERM ends it with status 0.
func TestProxyBinaryRedis(t *testing.T) {
	servers := []*redistest.Server{
		redistest.Start(t, "--requirepass", "sesame"),
		redistest.Start(t, "--requirepass", "sesame"),
		redistest.Start(t, "--requirepass", "sesame"),
	}
	mc := memcachedtest.Start(t)
	bin := buildChash(t)
	redisListen, mcListen := testprog.FreeAddr(t), testprog.FreeAddr(t)
	rp := config.NewPool("cache")
	rp.Listen, rp.Redis, rp.RedisAuth, rp.RedisDB, rp.HashTag = redisListen, true, "sesame", 1, "{}"
	for i, s := range servers {
		rp.Servers = append(rp.Servers, serverLine(t, s.Addr, fmt.Sprintf("s%d", i+1)))
	}
	mp := config.NewPool("sessions")
	mp.Listen = mcListen
	mp.Servers = []config.Server{serverLine(t, mc.Addr, "")}
	y, err := config.Marshal(&config.File{Pools: []*config.Pool{rp, mp}})
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "nutcracker.yml")
	writeFile(t, conf, string(y))
	p := testprog.Start(t, testprog.Program{
		Name:  bin,
		Args:  []string{"proxy", "--config", conf, "--admin", "", "--stats-port", "0", "--max-bulk", "1000"},
		Env:   chashEnv(),
		Ready: testprog.Listening(redisListen, mcListen),
	})

	c := redistest.Dial(t, redisListen)
	if got := c.Do("AUTH", "sesame"); got != "+OK\r\n" {
		t.Fatalf("AUTH = %q", got)
	}
	keys := []string{"{user:1}:name", "{user:1}:mail"}
	for i := range 60 {
		keys = append(keys, fmt.Sprint("key:", i))
	}
	for _, k := range keys {
		if got := c.Do("SET", k, k); got != "+OK\r\n" {
			t.Fatalf("SET %s = %q", k, got)
		}
	}
	owners := route(t, bin, conf, keys, "--pool", "cache")
	for i, s := range servers {
		name := fmt.Sprintf("s%d", i+1)
		var want []string
		for _, k := range keys {
			if owners[k] == name {
				want = append(want, k)
			}
		}
		slices.Sort(want)
		if got := s.KeysOf(1); !slices.Equal(got, want) {
			t.Errorf("keys in database 1 of %s = %q; chash route names %q", name, got, want)
		}
	}
	if got := c.Do("RENAME", "{user:1}:name", "{user:1}:first"); got != "+OK\r\n" {
		t.Errorf("RENAME of keys of one hash tag = %q", got)
	}
	c.Send(redistest.Request("SET", "big", strings.Repeat("x", 1001)))
	if got := c.Read(); got != "-ERR Protocol error: invalid bulk length\r\n" || !c.Closed() {
		t.Errorf("a bulk over --max-bulk = %q; want Redis's refusal and a close", got)
	}
	m := dialText(t, mcListen)
	if got := m.roundTrip("set a 0 0 1\r\nx\r\n"); got != "STORED\r\n" {
		t.Errorf("memcached pool beside the Redis pool: set = %q", got)
	}

	sendSignal(t, p, syscall.SIGTERM)
	if err := p.Wait(10 * time.Second); err != nil {
		t.Errorf("chash proxy after SIGTERM: %v\n%s", err, p.Output())
	}
}

// serverLine returns the server at addr with weight 1 and the name, if any.
func serverLine(t *testing.T, addr, name string) config.Server {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return config.Server{Host: host, Port: n, Weight: 1, Alias: name}
}
