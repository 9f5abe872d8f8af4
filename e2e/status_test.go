package e2e

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/proxy"
	"github.com/chash-dev/chash/internal/redistest"
	"github.com/chash-dev/chash/internal/testprog"
)

var update = flag.Bool("update", false, "write the screenshot of the status page to testdata/status-page.png")

// browser starts headless Chromium with the flags this machine needs and
// returns a context that drives it, closed when the test ends, and the
// console errors, exceptions and error log entries the pages raise.
func browser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	path := testprog.LookPath(t, "chromium")
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	var mu sync.Mutex
	var errs []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value))
				}
				errs = append(errs, fmt.Sprintf("console %s: %s", ev.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			errs = append(errs, "exception: "+ev.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
				errs = append(errs, fmt.Sprintf("log %s: %s %s", ev.Entry.Level, ev.Entry.Text, ev.Entry.URL))
			}
		}
	}); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	for _, enable := range []cdp.Command[cdp.Empty, cdp.Empty]{cdplog.Enable, runtime.Enable} {
		if _, err := chromedp.Call(ctx, enable, cdp.Empty{}); err != nil {
			t.Fatalf("chromium: %v", err)
		}
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), errs...)
	}
}

// TestStatusPageInChromium loads the status page of a proxy in front of real
// memcached and Redis servers in headless Chromium: it renders with no
// console error, shows every pool and server in its table and in its ring's
// SVG and each pool's ring fingerprint, and, reloading itself, shows a server
// ejected once it is stopped and a server added by UpdateServers.
// With -update it writes the screenshot the README shows.
func TestStatusPageInChromium(t *testing.T) {
	ctx, consoleErrors := browser(t)
	mc := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	rd := []*redistest.Server{redistest.Start(t), redistest.Start(t)}

	cache := config.NewPool("cache")
	cache.Listen = "127.0.0.1:0"
	cache.Hash, cache.Distribution = "fnv1a_64", "ketama"
	cache.AutoEjectHosts, cache.ServerFailureLimit, cache.ServerRetryTimeout = true, 1, time.Hour
	cache.Timeout = 500 * time.Millisecond
	cache.Warmup = time.Hour // the page says a window is open, after the ejection
	for i, s := range mc {
		cache.Servers = append(cache.Servers, server(t, s.Addr, fmt.Sprintf("cache-%d", i+1)))
	}
	sessions := config.NewPool("sessions")
	sessions.Listen, sessions.Redis = "127.0.0.1:0", true
	sessions.Hash, sessions.Distribution = "murmur", "ketama"
	for i, s := range rd {
		sessions.Servers = append(sessions.Servers, server(t, s.Addr, fmt.Sprintf("redis-%d", i+1)))
	}
	p := &proxy.Proxy{
		Admin:   "127.0.0.1:0",
		Version: "v1.0.0-test",
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if err := p.Start(&config.File{Path: "(test)", Pools: []*config.Pool{cache, sessions}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	// Some traffic, for the rates and the hits and misses.
	mcClient := dial(t, p.Addr("cache").String())
	for i := range 200 {
		k := fmt.Sprintf("user:%08x", uint32(i)*0x9e3779b9)
		mcClient.roundTrip(t, fmt.Sprintf("set %s 0 0 1\r\nx\r\n", k), "STORED\r\n")
		mcClient.roundTrip(t, "get "+k+"\r\n", "")
		mcClient.roundTrip(t, "get missing:"+k+"\r\n", "END\r\n")
	}
	rdClient := dial(t, p.Addr("sessions").String())
	for i := range 50 {
		rdClient.roundTrip(t, fmt.Sprintf("*3\r\n$3\r\nSET\r\n$6\r\ns:%04d\r\n$1\r\nv\r\n", i), "+OK\r\n")
	}

	url := "http://" + p.AdminAddr().String() + "/"
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("main"))); err != nil {
		t.Fatalf("load %s: %v", url, err)
	}
	title, err := chromedp.Run(ctx, chromedp.Title())
	if err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("tbody th[scope=row]")].map(e => e.textContent.trim())`))
	if err != nil {
		t.Fatal(err)
	}
	ringText, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("svg text")].map(e => e.textContent.trim())`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(title, "chash proxy on ") {
		t.Errorf("title %q", title)
	}
	for _, name := range []string{"cache-1", "cache-2", "cache-3", "cache-4", "redis-1", "redis-2"} {
		if !contains(rows, name) {
			t.Errorf("the servers' tables %q have no %s", rows, name)
		}
		if !contains(ringText, name) {
			t.Errorf("the rings' text %q has no %s", ringText, name)
		}
	}

	// Each pool's ring fingerprint, as /ring has it: what an operator
	// compares across proxies.
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range p.Rings() {
		if want := "ring fingerprint " + r.Fingerprint; r.Fingerprint == "" || !strings.Contains(text, want) {
			t.Errorf("pool %s: the page lacks %q:\n%s", name, want, text)
		}
	}
	// cache's fnv1a_64 sends similar keys to one server, sessions' murmur
	// does not: one warning.
	if n := strings.Count(text, "Warning: hash fnv1a_64 sends keys that differ only in their last character to one server"); n != 1 {
		t.Errorf("the page warns %d times of pool cache's hash; want once:\n%s", n, text)
	}

	// Stop a server and fail a request to it: it is ejected, and the page
	// shows it at its next reload (every 5 seconds), with no help.
	mc[2].Stop()
	for i := range 200 {
		k := fmt.Sprintf("user:%08x", uint32(i)*0x9e3779b9)
		mcClient.send(t, "get "+k+"\r\n")
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if text, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main"))); err != nil {
			// The page reloads itself every 5 seconds: a read in that
			// instant finds the old page's context gone. Read again.
			if time.Now().After(deadline) {
				t.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if strings.Contains(text, "ejected since") || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !strings.Contains(text, "ejected since") {
		t.Errorf("20 s after cache-3 was ejected, the page does not say so:\n%s", text)
	}
	// A new server through UpdateServers, as a membership source or a
	// reload adds one: the page shows it at its next reload.
	extra := memcachedtest.Start(t)
	if err := p.UpdateServers("cache", append(slices.Clone(cache.Servers), server(t, extra.Addr, "cache-5"))); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(20 * time.Second)
	for !contains(rows, "cache-5") && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		if rows, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("tbody th[scope=row]")].map(e => e.textContent.trim())`)); err != nil {
			t.Fatal(err)
		}
	}
	if !contains(rows, "cache-5") {
		t.Errorf("20 s after cache-5 joined pool cache, the page's servers are %q", rows)
	}
	// The ejection and the join each opened a warm-up window.
	deadline = time.Now().Add(10 * time.Second)
	for text, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main"))); err != nil; text, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main"))) {
		if time.Now().After(deadline) {
			t.Fatal(err) // not a reload's moment: the page is gone
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(text, "2 warm-up windows are open until ") {
		t.Errorf("after an ejection and a join in pool cache, with warmup, the page does not say 2 warm-up windows are open:\n%s", text)
	}

	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("the page raised errors:\n%s", strings.Join(errs, "\n"))
	}

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.ArtifactDir(), "status-page.png")
	if *update {
		out = filepath.Join("testdata", "status-page.png")
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", out)
}

func server(t *testing.T, addr, name string) config.Server {
	t.Helper()
	s, err := config.ParseServer(addr + ":1 " + name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }
