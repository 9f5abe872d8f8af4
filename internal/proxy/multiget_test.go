package proxy

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/testprog"
)

// TestLongMultiget sends get, gets and gat lines of 1 MB, 5000 keys, through a
// pool of three servers, and through a pool of one server and to the server
// itself: memcached reads such lines, and the proxy answers them as memcached
// does.
func TestLongMultiget(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	p := startProxy(t, poolsYAML(map[string]string{
		"three": poolYAML("hash: fnv1a_64", servers...),
		"one":   poolYAML("", servers[0]),
	}))
	three := dial(t, p.Addr("three").String())
	one := dial(t, p.Addr("one").String())
	direct := dial(t, servers[0].Addr)

	// 5000 keys of 200 bytes, every third stored.
	const n = 5000
	keys := make([]string, n)
	want := map[string]string{}
	var line strings.Builder
	for i := range keys {
		keys[i] = fmt.Sprintf("%06d:%s", i, strings.Repeat("k", 193))
		if i%3 == 0 {
			v := fmt.Sprintf("value %d", i)
			req := fmt.Sprintf("set %s %d 0 %d\r\n%s\r\n", keys[i], i, len(v), v)
			if got := three.mustDo(req); got != "STORED\r\n" {
				t.Fatalf("set %.10s: %q", keys[i], got)
			}
			if got := one.mustDo(req); got != "STORED\r\n" {
				t.Fatalf("set %.10s: %q", keys[i], got)
			}
			want[keys[i]] = fmt.Sprintf("VALUE %s %d %d\r\n%s\r\n", keys[i], i, len(v), v)
		}
		line.WriteString(" " + keys[i])
	}
	var wantGet strings.Builder
	for _, k := range keys {
		wantGet.WriteString(want[k])
	}
	wantGet.WriteString("END\r\n")
	get := "get" + line.String() + "\r\n"
	if len(get) < 1e6 {
		t.Fatalf("the get line is %d bytes; want 1 MB", len(get))
	}

	if got := three.mustDo(get); got != wantGet.String() {
		t.Errorf("get of %d keys (%d bytes) through three servers: %d bytes, %.100q...; want %d bytes", n, len(get), len(got), got, wantGet.Len())
	}
	for _, req := range []string{get, "gets" + line.String() + "\r\n"} {
		got, wantDirect := maskCas(one.mustDo(req)), maskCas(direct.mustDo(req))
		if got != wantDirect {
			t.Errorf("%.4s of %d keys: %d bytes, %.100q...; memcached answers %d bytes, %.100q...", req, n, len(got), got, len(wantDirect), wantDirect)
		}
	}
	// memcached closes the connection of a gat line it cannot read at once;
	// the proxy sends it in parts memcached reads.
	if got := three.mustDo("gat 0" + line.String() + "\r\n"); got != wantGet.String() {
		t.Errorf("gat of %d keys through three servers: %d bytes, %.100q...; want %d bytes", n, len(got), got, wantGet.Len())
	}

	// A key too long ends the line, and the connection serves on.
	bad := "get" + line.String() + " " + strings.Repeat("x", 251) + line.String() + "\r\n"
	got := three.mustDo(bad)
	if !strings.HasSuffix(got, "CLIENT_ERROR bad command line format\r\n") {
		t.Errorf("get with a key of 251 bytes after 1 MB: %.100q...%q; want the error at the end", got, got[max(0, len(got)-60):])
	}
	if got := three.mustDo("get " + keys[0] + "\r\n"); got != want[keys[0]]+"END\r\n" {
		t.Errorf("get after a refused line: %q", got)
	}
}

// TestMemcslapMget runs libmemcached's memcslap mget test, which gets its
// 10000 keys in one get line of 300 kB, against memcached and through the
// proxy: both answer every key.
func TestMemcslapMget(t *testing.T) {
	memcslap := testprog.LookPath(t, "memcslap")
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	p := startProxy(t, poolYAML("", servers...))
	keysRe := regexp.MustCompile(`Time to mget\s+(\d+) keys`)
	for _, addr := range []string{servers[0].Addr, p.Addr("alpha").String()} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, memcslap, "--servers="+addr, "--test=mget").CombinedOutput()
		cancel()
		m := keysRe.FindSubmatch(out)
		if err != nil || m == nil || string(m[1]) != "10000" || strings.Contains(string(out), "Failed") {
			t.Errorf("memcslap --servers=%s --test=mget: %v\n%s", addr, err, out)
		}
	}
}
