package proxy

import (
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/testprog"
)

// TestAdminReloadGuards checks that POST /reload refuses what a browser can be
// made to send from another site (no Chash-Admin header; a Host that is a
// name rebound to the listener), and that reloads are at least a second apart.
func TestAdminReloadGuards(t *testing.T) {
	s := memcachedtest.Start(t)
	conf := filepath.Join(t.TempDir(), "nutcracker.yml")
	if err := os.WriteFile(conf, []byte(poolYAML("", s)), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs testprog.Buffer
	p := startProxy(t, poolYAML("", s), func(p *Proxy) {
		p.Admin, p.ConfigPath = "127.0.0.1:0", conf
		p.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	addr := p.AdminAddr().String()
	_, port, _ := strings.Cut(addr, ":")
	post := func(host string, header map[string]string) *http.Response {
		t.Helper()
		req, err := http.NewRequest("POST", "http://"+addr+"/reload", strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	tests := []struct {
		name   string
		host   string
		header map[string]string
		want   int
	}{
		{"a form of another site", addr, map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}, http.StatusForbidden},
		{"a form of another site, by name", "evil.example:" + port, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, http.StatusForbidden},
		{"a name rebound to the listener", "evil.example:" + port, map[string]string{AdminHeader: "1"}, http.StatusForbidden},
		{"localhost", "localhost:" + port, map[string]string{AdminHeader: "1"}, http.StatusOK},
		{"again at once", addr, map[string]string{AdminHeader: "1"}, http.StatusTooManyRequests},
	}
	for _, tt := range tests {
		if resp := post(tt.host, tt.header); resp.StatusCode != tt.want {
			t.Errorf("%s: POST /reload = %d; want %d", tt.name, resp.StatusCode, tt.want)
		} else if tt.want == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "1" {
			t.Errorf("%s: Retry-After %q; want 1", tt.name, resp.Header.Get("Retry-After"))
		}
	}

	// A flood of reloads for 1.5s runs at most two more.
	time.Sleep(time.Second)
	before := strings.Count(logs.String(), "configuration reloaded")
	var ok atomic.Int32
	var wg sync.WaitGroup
	stop := time.Now().Add(1500 * time.Millisecond)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				if post(addr, map[string]string{AdminHeader: "1"}).StatusCode == http.StatusOK {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	ran := strings.Count(logs.String(), "configuration reloaded") - before
	if ok.Load() > 2 || ran != int(ok.Load()) {
		t.Errorf("a flood of reloads over 1.5s: %d answered 200, %d ran; want at most 2, each answered", ok.Load(), ran)
	}
}
