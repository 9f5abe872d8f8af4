package proxy

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/testprog"
)

// startNutcracker runs twemproxy with the configuration yaml, its pool listening
// on a free port of 127.0.0.1 and its stats on another; it is stopped by PID when
// the test ends. It returns the pool's address.
func startNutcracker(t testing.TB, yaml string) string {
	t.Helper()
	addr := testprog.FreeAddr(t)
	yaml = strings.Replace(yaml, "listen: 127.0.0.1:22121", "listen: "+addr, 1)
	dir := t.TempDir()
	conf := filepath.Join(dir, "nutcracker.yml")
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	testprog.Start(t, testprog.Program{
		Name: "nutcracker",
		Args: []string{"-c", conf, "-s", strconv.Itoa(testprog.FreePort(t)), "-a", "127.0.0.1",
			"-o", filepath.Join(dir, "nutcracker.log"), "-p", filepath.Join(dir, "nutcracker.pid")},
		Ready: testprog.Listening(addr),
	})
	return addr
}

// TestPlacementMatchesNutcracker stores keys through chash proxy and reads them
// through nutcracker with the same configuration and servers: every key is
// found, so both put every key on the same server.
func TestPlacementMatchesNutcracker(t *testing.T) {
	for _, opts := range []string{
		"",
		"hash: md5\nhash_tag: \"{}\"",
		"hash: murmur\ndistribution: modula",
		"hash: crc32a",
	} {
		t.Run(strings.ReplaceAll(opts, "\n", ","), func(t *testing.T) {
			servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
			yaml := poolYAML(opts, servers...)
			p := startProxy(t, yaml)
			nc := dial(t, startNutcracker(t, yaml))
			c := dial(t, p.Addr("alpha").String())
			owner := ownerFunc(t, yaml)
			used := map[string]bool{}
			const n = 300
			for i := range n {
				key := fmt.Sprintf("user:%d", i)
				if i%3 == 0 {
					key = fmt.Sprintf("{tag%d}:%d", i%10, i)
				}
				used[owner(key)] = true
				if got := c.mustDo(fmt.Sprintf("set %s 0 0 1\r\nx\r\n", key)); got != "STORED\r\n" {
					t.Fatalf("set %s: %q", key, got)
				}
				got, err := nc.get(key)
				if want := "VALUE " + key + " 0 1\r\nx\r\nEND\r\n"; err != nil || got != want {
					t.Fatalf("nutcracker: get %s = %q, %v; want %q", key, got, err, want)
				}
			}
			if len(used) < 3 {
				t.Errorf("keys on %d servers of 4", len(used))
			}
		})
	}
}

// get sends "get key" and reads the reply up to END, for servers that do not
// know mn.
func (c *conn) get(key string) (string, error) {
	c.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(c.c, "get %s\r\n", key); err != nil {
		return "", err
	}
	var out strings.Builder
	for {
		line, err := c.br.ReadString('\n')
		out.WriteString(line)
		if err != nil || line == "END\r\n" || strings.Contains(line, "ERROR") {
			return out.String(), err
		}
	}
}
