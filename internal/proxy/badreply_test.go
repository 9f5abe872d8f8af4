package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/chash-dev/chash/internal/memcachedtest"
)

// fakeServer answers every line it reads with reply: a server out of the
// protocol, which memcached never is.
func fakeServer(t *testing.T, reply string) string {
	t.Helper()
	return lineServer(t, func(c net.Conn, line string) bool {
		_, err := io.WriteString(c, reply)
		return err == nil
	})
}

// lineServer is a TCP server of the test on loopback that calls answer with
// each line a connection sends, until answer returns false or the
// connection ends; it returns its address.
func lineServer(t *testing.T, answer func(c net.Conn, line string) bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil || !answer(c, line) {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// TestBadReplies puts a server that answers out of the protocol beside a real
// memcached: its replies never reach a client, whose requests get
// SERVER_ERROR instead; each bad reply resets the connection and is counted in
// /metrics and /stats; the memcached's keys are served throughout.
func TestBadReplies(t *testing.T) {
	for _, garbage := range []string{"HELLO GARBAGE\r\n", "END\r\n", "VALUE\r\n", "STORED\x00\r\n"} {
		t.Run(fmt.Sprintf("%q", garbage), func(t *testing.T) {
			good := memcachedtest.Start(t)
			bad := fakeServer(t, garbage)
			yaml := "alpha:\n  listen: 127.0.0.1:22121\n  hash: md5\n  timeout: 1000\n  servers:\n   - " + good.Addr + ":1\n   - " + bad + ":1\n"
			p := startProxy(t, yaml, func(p *Proxy) { p.Admin = "127.0.0.1:0" })
			owner := ownerFunc(t, yaml)
			var wg sync.WaitGroup
			for w := range 4 {
				c := dial(t, p.Addr("alpha").String())
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 50 {
						key := fmt.Sprintf("w%d:%d", w, i)
						got, err := c.do(fmt.Sprintf("set %s 0 0 1\r\nx\r\nget %s\r\n", key, key))
						if err != nil {
							t.Errorf("%s: %v", key, err)
							return
						}
						want := "STORED\r\nVALUE " + key + " 0 1\r\nx\r\nEND\r\n"
						if owner(key) == bad {
							// The set's reply, and the get's unless the get
							// went out on a new connection, where "END" is a
							// miss.
							set, get, _ := strings.Cut(got, "\r\n")
							if !strings.HasPrefix(set, "SERVER_ERROR ") ||
								!strings.HasPrefix(get, "SERVER_ERROR ") && !(garbage == "END\r\n" && get == "END\r\n") {
								t.Errorf("%s, a key of the bad server: %q; want SERVER_ERRORs", key, got)
							}
						} else if got != want {
							t.Errorf("%s, a key of memcached: %q; want %q", key, got, want)
						}
					}
				}()
			}
			wg.Wait()
			base := "http://" + p.AdminAddr().String()
			if n, _ := adminServerStats(t, p, "alpha", bad)["server_protocol_errors"].(float64); n < 1 {
				t.Errorf("/stats: server_protocol_errors of the bad server = %v; want at least 1", n)
			}
			if n := adminServerStats(t, p, "alpha", good.Addr)["server_protocol_errors"]; n != 0.0 {
				t.Errorf("/stats: server_protocol_errors of memcached = %v; want 0", n)
			}
			resp, err := http.Get(base + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			series := `chash_proxy_server_protocol_errors_total{pool="alpha",server="` + bad + `"} `
			if !strings.Contains(string(body), series) || strings.Contains(string(body), series+"0\n") {
				t.Errorf("/metrics: no bad reply counted in %s", series)
			}
		})
	}
}

// adminServerStats returns the server's counters in the proxy's /stats.
func adminServerStats(t testing.TB, p *Proxy, pool, server string) map[string]any {
	t.Helper()
	var stats map[string]any
	if err := json.Unmarshal([]byte(adminGet(t, p, "/stats")), &stats); err != nil {
		t.Fatal(err)
	}
	ps, _ := stats[pool].(map[string]any)
	s, _ := ps[server].(map[string]any)
	return s
}
