package proxy

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/dist"
	"github.com/chash-dev/chash/internal/memcachedtest"
)

// testKeys returns n keys named prefix0, prefix1, ....
func testKeys(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = prefix + strconv.Itoa(i)
	}
	return keys
}

// valueOf is the value the tests store under key.
func valueOf(key string) string { return "value-of-" + key }

// setMany stores valueOf(k) under each key through c, pipelined, and fails
// the test unless each is STORED.
func setMany(t testing.TB, c *conn, keys []string) {
	t.Helper()
	for batch := range slicesChunk(keys, 200) {
		var b strings.Builder
		for _, k := range batch {
			fmt.Fprintf(&b, "set %s 0 0 %d\r\n%s\r\n", k, len(valueOf(k)), valueOf(k))
		}
		want := strings.Repeat("STORED\r\n", len(batch))
		if got := c.mustDo(b.String()); got != want {
			t.Fatalf("setting %d keys: %q", len(batch), got)
		}
	}
}

// getMany gets each key through c with a get of its own, pipelined, and
// returns the values found. A reply other than a value or END fails the
// test.
func getMany(t testing.TB, c *conn, keys []string) map[string]string {
	t.Helper()
	found := map[string]string{}
	for batch := range slicesChunk(keys, 200) {
		var b strings.Builder
		for _, k := range batch {
			b.WriteString("get " + k + "\r\n")
		}
		c.c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c.c, b.String()); err != nil {
			t.Fatal(err)
		}
		for _, k := range batch {
			k2, v, ok, err := readGet(c.br)
			if err != nil {
				t.Fatalf("get %s: %v", k, err)
			}
			if ok {
				if k2 != k {
					t.Fatalf("get %s: value of %q", k, k2)
				}
				found[k] = v
			}
		}
	}
	return found
}

// readGet reads the reply to a get of one key.
func readGet(br *bufio.Reader) (key, value string, ok bool, err error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return "", "", false, err
	}
	if line == "END\r\n" {
		return "", "", false, nil
	}
	var flags, n int
	if _, err := fmt.Sscanf(line, "VALUE %s %d %d", &key, &flags, &n); err != nil {
		return "", "", false, fmt.Errorf("reply %q", line)
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(br, buf); err != nil {
		return "", "", false, err
	}
	if end, err := br.ReadString('\n'); err != nil || end != "END\r\n" {
		return "", "", false, fmt.Errorf("after the value: %q, %v", end, err)
	}
	return key, string(buf[:n]), true, nil
}

func slicesChunk(keys []string, n int) func(func([]string) bool) {
	return func(yield func([]string) bool) {
		for len(keys) > 0 {
			k := min(n, len(keys))
			if !yield(keys[:k]) {
				return
			}
			keys = keys[k:]
		}
	}
}

// direct returns a connection to each server, by address.
func direct(t testing.TB, servers []*memcachedtest.Server) map[string]*conn {
	m := map[string]*conn{}
	for _, s := range servers {
		m[s.Addr] = dial(t, s.Addr)
	}
	return m
}

// holds returns the keys of keys the server on c holds.
func holds(t testing.TB, c *conn, keys []string) map[string]bool {
	t.Helper()
	m := map[string]bool{}
	for k := range getMany(t, c, keys) {
		m[k] = true
	}
	return m
}

// valuesOn returns, by server address, the values the servers on dc hold of
// keys, by key.
func valuesOn(t testing.TB, dc map[string]*conn, keys []string) map[string]map[string]string {
	t.Helper()
	vals := map[string]map[string]string{}
	for addr, d := range dc {
		vals[addr] = getMany(t, d, keys)
	}
	return vals
}

// routerOf builds the router of the first pool of yaml over its servers.
func routerOf(t testing.TB, yaml string) (*config.Pool, dist.Router) {
	t.Helper()
	cfg := parseConfig(t, yaml).Pools[0]
	r, err := dist.Build(cfg, cfg.Servers)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, r
}

// replicaSet returns the names of the first n servers of key's replica set
// in the first pool of yaml.
func replicaSet(t testing.TB, yaml string, n int) func(key string) []string {
	cfg, r := routerOf(t, yaml)
	rr := r.(dist.ReplicaRouter)
	return func(key string) []string {
		idx, err := rr.AppendN(nil, []byte(key), n)
		if err != nil {
			t.Fatal(err)
		}
		names := make([]string, len(idx))
		for i, j := range idx {
			names[i] = cfg.Servers[j].Name()
		}
		return names
	}
}

// waitCount waits until f returns want, for at most d, and returns f's last
// value.
func waitCount(d time.Duration, want uint64, f func() uint64) uint64 {
	deadline := time.Now().Add(d)
	for {
		n := f()
		if n == want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}
