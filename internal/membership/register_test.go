package membership

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chash-dev/chash/internal/membership/etcdtest"
	"github.com/chash-dev/chash/internal/testprog"
)

// abandon stops keeping the lease without revoking it, as when a registrar
// is killed with its server: the key stays until the lease lapses.
func (r *Registrar) abandon() {
	r.closed.Do(func() {
		r.stop()
		<-r.done
		r.cli.Close()
	})
}

// register registers line with quick settings, closed when the test ends.
func register(t *testing.T, e *etcdtest.Server, line string, ttl time.Duration, logs *testprog.Buffer) *Registrar {
	t.Helper()
	r, err := Register(ctxFor(t, wait), Registration{
		Endpoints:  []string{e.Endpoint},
		Prefix:     prefix,
		Server:     line,
		TTL:        ttl,
		Timeout:    1500 * time.Millisecond,
		MinBackoff: 50 * time.Millisecond,
		MaxBackoff: 400 * time.Millisecond,
		Logger:     slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		t.Fatalf("Register(%q): %v", line, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// lease returns the value of key and the ID of its lease, or "" if there is
// no key.
func lease(t *testing.T, e *etcdtest.Server, key string) (string, clientv3.LeaseID) {
	t.Helper()
	resp, err := e.Client().Get(ctxFor(t, wait), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return "", 0
	}
	return string(resp.Kvs[0].Value), clientv3.LeaseID(resp.Kvs[0].Lease)
}

// TestRegister registers two servers next to a source: the source lists them;
// Close removes a key at once.
func TestRegister(t *testing.T) {
	e := etcdtest.Start(t)
	w := open(t, etcdURL(e.Endpoint))
	logs := new(testprog.Buffer)
	a := register(t, e, " 10.0.0.1:11211:1 a ", 5*time.Second, logs)
	w.expect("a/1", 0)
	b := register(t, e, "10.0.0.2:11211:2", 5*time.Second, logs)
	w.expect("10.0.0.2:11211/2 a/1", 0) // "/chash/cache/10..." sorts before "/chash/cache/a"

	if got := a.Key(); got != prefix+"a" {
		t.Errorf("Key() = %q; want %q", got, prefix+"a")
	}
	v, id := lease(t, e, prefix+"a")
	if st := a.Status(); v != "10.0.0.1:11211:1 a" || id == 0 || int64(id) != st.Lease || !st.Registered || st.Registrations != 1 {
		t.Errorf("key %q under lease %x; status %+v; want the line under the status's lease, registered once", v, id, st)
	}
	ttl, err := e.Client().TimeToLive(ctxFor(t, wait), id)
	if err != nil || ttl.GrantedTTL != 5 {
		t.Errorf("lease %x: granted TTL %d, %v; want 5", id, ttl.GrantedTTL, err)
	}

	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if v, _ := lease(t, e, prefix+"10.0.0.2:11211"); v != "" {
		t.Errorf("after Close the key holds %q; want no key", v)
	}
	w.expect("a/1", 0)
	if err := b.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// TestRegisterLeaseLapses abandons a registrar, as a kill does: its lease
// lapses, etcd removes the key within TTL + 1s, and the source applies the
// shorter list.
func TestRegisterLeaseLapses(t *testing.T) {
	e := etcdtest.Start(t)
	w := open(t, etcdURL(e.Endpoint))
	const ttl = 2 * time.Second
	register(t, e, "10.0.0.1:11211:1 a", ttl, new(testprog.Buffer))
	r := register(t, e, "10.0.0.2:11211:1 b", ttl, new(testprog.Buffer))
	w.expect("a/1", 0)
	w.expect("a/1 b/1", 0)

	// Let a few keep-alives pass, so that the lease is not fresh.
	time.Sleep(ttl)
	r.abandon()
	start := time.Now()
	w.expect("a/1", 0)
	if d := time.Since(start); d > ttl+time.Second {
		t.Errorf("the abandoned server left the list %v after its registrar stopped; want at most TTL + 1s = %v", d.Round(time.Millisecond), ttl+time.Second)
	}
	// The other registrar's key stays.
	w.none(ttl + time.Second)
}

// TestRegisterLeaseLost revokes the registrar's lease behind its back, and
// wipes etcd: each time the registrar puts the key again under a new lease.
func TestRegisterLeaseLost(t *testing.T) {
	e := etcdtest.Start(t)
	w := open(t, etcdURL(e.Endpoint))
	logs := new(testprog.Buffer)
	r := register(t, e, "10.0.0.1:11211:1 a", 2*time.Second, logs)
	w.expect("a/1", 0)

	_, first := lease(t, e, r.Key())
	if _, err := e.Client().Revoke(ctxFor(t, wait), first); err != nil {
		t.Fatal(err)
	}
	w.expect("", 0)
	w.expect("a/1", 0)
	_, second := lease(t, e, r.Key())
	// The source may see the key before the registrar sees etcd's answer.
	deadline := time.Now().Add(wait)
	for r.Status().Registrations < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := r.Status(); second == first || second == 0 || st.Lease != int64(second) || st.Registrations != 2 || !st.Registered {
		t.Errorf("after the revoke: lease %x (was %x), status %+v; want a new lease, registered twice", second, first, st)
	}
	if lost, again := strings.Count(logs.String(), "lease lost"), strings.Count(logs.String(), "registered again"); lost != 1 || again != 1 {
		t.Errorf("logged %d lost leases and %d registrations; want 1 each:\n%s", lost, again, logs)
	}

	// A new etcd, without the lease: the key comes back in it.
	e.Wipe()
	deadline = time.Now().Add(wait)
	for {
		if v, id := lease(t, e, r.Key()); v == "10.0.0.1:11211:1 a" && id != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the key is not back %v after etcd was wiped; status %+v; logs:\n%s", wait, r.Status(), logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if v, _ := lease(t, e, r.Key()); v != "" {
		t.Errorf("after Close the key holds %q", v)
	}
}

// TestRegisterCanceled cancels Register as its key appears in etcd, racing
// the put's answer: whichever wins, a Register that fails leaves no key, and
// one that succeeds leaves the key until Close.
func TestRegisterCanceled(t *testing.T) {
	e := etcdtest.Start(t)
	for i := range 20 {
		key := fmt.Sprintf("%s%d", prefix, i)
		ctx, cancel := context.WithCancel(context.Background())
		wctx, stop := context.WithCancel(context.Background())
		watch := e.Client().Watch(wctx, key)
		go func() {
			<-watch // the key is in etcd
			cancel()
		}()
		r, err := Register(ctx, Registration{
			Endpoints: []string{e.Endpoint},
			Prefix:    prefix,
			Server:    fmt.Sprintf("10.0.0.1:%d:1 %d", 1000+i, i),
			Logger:    slog.New(slog.DiscardHandler),
		})
		stop()
		v, _ := lease(t, e, key)
		switch {
		case err != nil && v != "":
			t.Fatalf("Register %d failed (%v) and left its key, %q", i, err, v)
		case err == nil && v == "":
			t.Fatalf("Register %d succeeded and its key is gone", i)
		case err == nil:
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
	}
}

func TestRegisterErrors(t *testing.T) {
	f := newForwarder(t, "127.0.0.1:1")
	f.cut() // refuses connections
	tests := []struct {
		reg  Registration
		want string
	}{
		{Registration{Prefix: "/p/", Server: "h:1:1"}, "membership: no etcd endpoint"},
		{Registration{Endpoints: []string{"h"}, Prefix: "/p/", Server: "h:1:1"}, `membership: endpoint "h": want HOST:PORT`},
		{Registration{Endpoints: []string{"h:1"}, Prefix: "/p", Server: "h:1:1"}, `key prefix "/p" does not end in "/"`},
		{Registration{Endpoints: []string{"h:1"}, Prefix: "p/", Server: "h:1:1"}, `key prefix "p/" does not begin with "/"`},
		{Registration{Endpoints: []string{"h:1"}, Prefix: "/p/", Server: "h:1"}, `membership: server "h:1": want "host:port:weight [name]"`},
		{Registration{Endpoints: []string{"h:1"}, Prefix: "/p/", Server: ""}, `membership: server "": want`},
		{Registration{Endpoints: []string{"h:1"}, Prefix: "/p/", Server: "h:1:1", TTL: 500 * time.Millisecond}, "TTL 500ms is under etcd's unit of 1s"},
		{Registration{Endpoints: []string{f.addr}, Prefix: "/p/", Server: "h:1:1 x", Timeout: 200 * time.Millisecond},
			"membership: register /p/x: etcd at " + f.addr + " does not answer within "},
	}
	for _, tt := range tests {
		r, err := Register(ctxFor(t, time.Second), tt.reg)
		if err == nil {
			r.Close()
			t.Errorf("Register(%+v) succeeded; want an error containing %q", tt.reg, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Register(%+v): %v; want an error containing %q", tt.reg, err, tt.want)
		}
	}
}

// ExampleRegister is how chash register keeps a server in the lists of the
// proxies that watch its prefix.
func ExampleRegister() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := Register(ctx, Registration{
		Endpoints: []string{"127.0.0.1:2379"},
		Prefix:    "/chash/cache/",
		Server:    "10.0.0.1:11211:1 cache-1",
	})
	if err != nil {
		return // etcd did not answer within 10s
	}
	defer r.Close() // removes the key
	// ... until the server stops.
}

// TestRegisterGuardsKey: the key deleted behind the registrar's back (by
// hand, etcdctl del) is put back at once; a second registration of the same
// server takes the key over, the first says so, and when the second stops
// it hands the key back under the first's lease in one transaction before it
// revokes its own: the server never leaves the ring while a registrar of it
// runs, not even for the moment between a delete and a put back.
func TestRegisterGuardsKey(t *testing.T) {
	e := etcdtest.Start(t)
	w := open(t, etcdURL(e.Endpoint))
	logs := new(testprog.Buffer)
	r := register(t, e, "10.0.0.1:11211:1 a", 5*time.Second, logs)
	w.expect("a/1", 0)

	e.Delete(r.Key())
	w.expect("", 0)
	w.expect("a/1", 0)
	if _, id := lease(t, e, r.Key()); id != clientv3.LeaseID(r.Status().Lease) {
		t.Errorf("the key put back under lease %x; want the registrar's, %x", id, r.Status().Lease)
	}

	otherLogs := new(testprog.Buffer)
	other := register(t, e, "10.0.0.9:11211:1 a", 5*time.Second, otherLogs)
	w.expect("a/1", 0) // a's line, now at another address
	waitFor(t, "the takeover logged", func() bool { return strings.Contains(logs.String(), "took the key over") })
	// The registration that took it over warns: a's keys go elsewhere.
	if want := `took the key over from a registration of the name at another address; the proxies now send its keys here" key=/chash/cache/a was="10.0.0.1:11211:1 a" now="10.0.0.9:11211:1 a"`; !strings.Contains(otherLogs.String(), want) {
		t.Errorf("the second registration's log lacks %q:\n%s", want, otherLogs)
	}
	if v, _ := lease(t, e, r.Key()); v != "10.0.0.9:11211:1 a" {
		t.Errorf("after the second registration the key holds %q; want its line", v)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if !other.Status().HandedBack {
		t.Errorf("the second registration's status after Close: %+v; want HandedBack", other.Status())
	}
	if r.Status().HandedBack {
		t.Errorf("the first registration's status: %+v; want no HandedBack", r.Status())
	}
	// The next list has a at its first address again: none without it.
	if l := w.expect("a/1", 0); l.Servers[0].Host != "10.0.0.1" {
		t.Errorf("after the second registration stopped, a is at %s; want 10.0.0.1", l.Servers[0].Host)
	}
	waitFor(t, "the key back under the first lease", func() bool {
		v, id := lease(t, e, r.Key())
		return v == "10.0.0.1:11211:1 a" && id == clientv3.LeaseID(r.Status().Lease)
	})
	for _, want := range []string{"the key was deleted while registered; put it back", "the registration that took the key over has gone; it handed the key back"} {
		// Logged once the put is answered, which may come after the
		// key shows.
		waitFor(t, "logged: "+want, func() bool { return strings.Contains(logs.String(), want) })
		if strings.Count(logs.String(), want) != 1 {
			t.Errorf("logged %q %d times; want once:\n%s", want, strings.Count(logs.String(), want), logs)
		}
	}
	// Close still removes the key, and nothing puts it back.
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if v, _ := lease(t, e, r.Key()); v != "" {
		t.Errorf("after Close the key holds %q", v)
	}
}

// waitFor waits up to wait for cond, failing the test with what otherwise.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(wait); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not %s after %v", what, wait)
		}
	}
}

// TestRegisterNameTaken: a key of the prefix put by hand holds a server named
// what a registration's server is named (its host:port): registering it
// would give the proxies a list with a name twice, which they refuse whole.
// Register refuses instead, naming the key, and puts nothing; another
// server registers as before.
func TestRegisterNameTaken(t *testing.T) {
	e := etcdtest.Start(t)
	if _, err := e.Client().Put(ctxFor(t, wait), prefix+"cache-1", "10.0.0.1:11211:1"); err != nil {
		t.Fatal(err)
	}
	r, err := Register(ctxFor(t, wait), Registration{Endpoints: []string{e.Endpoint}, Prefix: prefix, Server: "10.0.0.1:11211:2"})
	if err == nil {
		r.Close()
		t.Fatal("Register of a server named as another key's succeeded; want an error")
	}
	if want := `key "` + prefix + `cache-1" holds "10.0.0.1:11211:1", a server of the same name "10.0.0.1:11211"`; !strings.Contains(err.Error(), want) {
		t.Errorf("Register: %v; want an error containing %q", err, want)
	}
	if v, _ := lease(t, e, prefix+"10.0.0.1:11211"); v != "" {
		t.Errorf("the refused registration put %q", v)
	}
	register(t, e, "10.0.0.2:11211:1", 5*time.Second, new(testprog.Buffer))
	if v, _ := lease(t, e, prefix+"10.0.0.2:11211"); v != "10.0.0.2:11211:1" {
		t.Errorf("another server's key holds %q; want its line", v)
	}
}

// Servers registering at once each see the others' puts change the prefix
// after their check: each looks at those keys, then puts its own.
func TestRegisterManyAtOnce(t *testing.T) {
	e := etcdtest.Start(t)
	const n = 30
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := Register(ctxFor(t, wait), Registration{Endpoints: []string{e.Endpoint}, Prefix: prefix, Server: fmt.Sprintf("10.0.1.%d:11211:1", i+1)})
			if err == nil {
				t.Cleanup(func() { r.Close() })
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	resp, err := e.Client().Get(ctxFor(t, wait), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != n {
		t.Errorf("%d keys under the prefix after %d registrations at once; want %d", resp.Count, n, n)
	}
}

// A key naming the server put after Register read the prefix, before its own
// put, is seen: the put compares the prefix with what was read.
func TestRegisterNameTakenMeanwhile(t *testing.T) {
	e := etcdtest.Start(t)
	puts := 0
	testHookNameChecked = func() {
		puts++
		if puts == 1 {
			if _, err := e.Client().Put(ctxFor(t, wait), prefix+"cache-1", "10.0.0.1:11211:1"); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(func() { testHookNameChecked = nil })
	r, err := Register(ctxFor(t, wait), Registration{Endpoints: []string{e.Endpoint}, Prefix: prefix, Server: "10.0.0.1:11211:2"})
	if err == nil {
		r.Close()
		t.Fatal("Register of a server named meanwhile by another key succeeded; want an error")
	}
	if !errors.Is(err, errNameTaken) || !strings.Contains(err.Error(), `key "`+prefix+`cache-1" holds "10.0.0.1:11211:1"`) {
		t.Errorf("Register: %v; want the name taken by %scache-1", err, prefix)
	}
	if v, _ := lease(t, e, prefix+"10.0.0.1:11211"); v != "" {
		t.Errorf("the refused registration put %q", v)
	}
	resp, err := e.Client().Leases(ctxFor(t, wait))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Leases) != 0 {
		t.Errorf("%d leases left after the refused registration; want its lease revoked", len(resp.Leases))
	}

	// A key of another name put meanwhile only makes the put look again.
	puts = 0
	testHookNameChecked = func() {
		puts++
		if puts == 1 {
			if _, err := e.Client().Put(ctxFor(t, wait), prefix+"cache-3", "10.0.0.3:11211:1"); err != nil {
				t.Error(err)
			}
		}
	}
	register(t, e, "10.0.0.2:11211:1", 5*time.Second, new(testprog.Buffer))
	if v, _ := lease(t, e, prefix+"10.0.0.2:11211"); v != "10.0.0.2:11211:1" {
		t.Errorf("the registration's key holds %q after a put of another name meanwhile; want its line", v)
	}
	if puts != 2 {
		t.Errorf("%d puts tried; want 2 (the first refused by the prefix's change)", puts)
	}
}
