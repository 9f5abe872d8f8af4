package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/membership/etcdtest"
	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/testprog"
)

func TestRegisterUsage(t *testing.T) {
	ok := []string{"register", "--etcd", "127.0.0.1:2379", "--prefix", "/chash/cache/", "--server", "10.0.0.1:11211:1 a"}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"register"}, "chash register: --etcd is required\nusage: chash register --etcd"},
		{[]string{"register", "--etcd", "h:1"}, "chash register: --prefix is required"},
		{[]string{"register", "--etcd", "h:1", "--prefix", "/p/"}, "chash register: --server is required"},
		{append(ok, "extra"), `chash register: unexpected arguments ["extra"]`},
		{append(ok, "--ttl", "0s"), "chash register: --ttl 0s: want at least 1s"},
		{append(ok, "--ttl", "500ms"), "chash register: TTL 500ms is under etcd's unit of 1s"},
		{append(ok, "--ttl", "1500ms"), "chash register: --ttl 1.5s: want whole seconds (etcd's leases count in seconds)"},
		{append(ok, "--wait", "0s"), "chash register: --wait 0s: want a positive duration"},
		{append(ok[:2:2], "h", "--prefix", "/p/", "--server", "h:1:1"), `chash register: endpoint "h": want HOST:PORT`},
		{append(ok[:2:2], "a:1,b", "--prefix", "/p/", "--server", "h:1:1"), `endpoint "b": want HOST:PORT`},
		{append(ok[:4:4], "/p", "--server", "h:1:1"), `key prefix "/p" does not end in "/"`},
		{append(ok[:6:6], "h:1"), `chash register: server "h:1": want "host:port:weight [name]"`},
		{append(ok, "--check-every", "2s"), "chash register: --check-every needs --check"},
		{append(ok, "--check-fails", "2"), "chash register: --check-fails needs --check"},
		{append(ok, "--keep-values"), "chash register: --keep-values needs --check"},
		{append(ok, "--check", "redis", "--keep-values"), "chash register: --keep-values needs --check memcached"},
		{append(ok, "--check", "http"), `chash register: --check "http": want memcached or redis`},
		{append(ok, "--check", "redis", "--check-every", "0s"), "chash register: --check-every 0s: want a positive duration"},
		{append(ok, "--check", "redis", "--check-fails", "0"), "chash register: --check-fails 0: want at least 1"},
	}
	for _, tt := range tests {
		stdout, stderr, code := runChash(t, nil, tt.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tt.want) {
			t.Errorf("chash %q: exit status %d, stdout %q, stderr\n%s\nwant status 2 and stderr containing\n%s", tt.args, code, stdout, stderr, tt.want)
		}
	}
}

// TestRegisterBinary runs chash register as an operator does, next to a
// server: the key is there while it runs, SIGTERM removes it at once, and
// after SIGKILL the lease lapses and etcd removes it within the TTL.
func TestRegisterBinary(t *testing.T) {
	bin := buildChash(t)
	e := etcdtest.Start(t)
	key := func(k string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := e.Client().Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return ""
		}
		return string(resp.Kvs[0].Value)
	}
	start := func(line string) *testprog.Proc {
		t.Helper()
		name := line[strings.LastIndexByte(line, ' ')+1:]
		return testprog.Start(t, testprog.Program{
			Name: bin,
			Args: []string{"register", "--etcd", e.Endpoint, "--prefix", "/chash/cache/", "--server", line, "--ttl", "2s"},
			Env:  chashEnv(),
			Ready: func(context.Context) error {
				if v := key("/chash/cache/" + name); v != line {
					return fmt.Errorf("key /chash/cache/%s holds %q", name, v)
				}
				return nil
			},
		})
	}

	a := start("10.0.0.1:11211:1 a")
	// The key is in etcd before etcd's answer reaches chash register: a
	// signal between the two stops it while it registers (it revokes the
	// lease, and logs nothing). Wait until it has registered.
	if !poll(10*time.Second, func() bool { return strings.Contains(a.Output(), `msg="register: registered"`) }) {
		t.Fatalf("chash register never logs that it registered:\n%s", a.Output())
	}
	sendSignal(t, a, syscall.SIGTERM)
	if err := a.Wait(5 * time.Second); err != nil {
		t.Fatalf("after SIGTERM chash register: %v\n%s", err, a.Output())
	}
	if v := key("/chash/cache/a"); v != "" {
		t.Errorf("after SIGTERM the key holds %q; want it removed", v)
	}
	if logs := a.Output(); !strings.Contains(logs, `msg="register: registered"`) || !strings.Contains(logs, "key removed") {
		t.Errorf("chash register's log lacks the registration or the removal:\n%s", logs)
	}

	b := start("10.0.0.2:11211:1 b")
	sendSignal(t, b, syscall.SIGKILL)
	b.Wait(5 * time.Second)
	if !poll(3*time.Second, func() bool { return key("/chash/cache/b") == "" }) {
		t.Errorf("3s (TTL + 1s) after chash register was killed, its key is still there")
	}
}

// TestRegisterLogPrefix: every line of chash register's log, the
// registrar's (registered, a key put back) and the command's own (removed),
// begins with one prefix, "register: ".
func TestRegisterLogPrefix(t *testing.T) {
	bin := buildChash(t)
	e := etcdtest.Start(t)
	p := testprog.Start(t, testprog.Program{
		Name: bin,
		Args: []string{"register", "--etcd", e.Endpoint, "--prefix", "/chash/cache/", "--server", "10.0.0.1:11211:1 a"},
		Env:  chashEnv(),
	})
	wait := func(what string) {
		t.Helper()
		if !poll(10*time.Second, func() bool { return strings.Contains(p.Output(), what) }) {
			t.Fatalf("chash register never logs %q:\n%s", what, p.Output())
		}
	}
	wait("registered")
	e.Delete("/chash/cache/a")
	wait("put it back")
	sendSignal(t, p, syscall.SIGTERM)
	if err := p.Wait(5 * time.Second); err != nil {
		t.Fatalf("after SIGTERM chash register: %v\n%s", err, p.Output())
	}
	lines := strings.Split(strings.TrimSpace(p.Output()), "\n")
	if len(lines) < 3 {
		t.Errorf("chash register logged %d lines; want at least 3 (registered, put back, removed):\n%s", len(lines), p.Output())
	}
	for _, line := range lines {
		if !strings.Contains(line, ` msg="register: `) {
			t.Errorf("chash register's log line\n%s\nwant its message to begin \"register: \"", line)
		}
	}
}

// TestRegisterStoppedEarly: a signal while chash register still tries to
// reach etcd ends it at once, with status 0 and a line saying that nothing
// stays registered.
func TestRegisterStoppedEarly(t *testing.T) {
	bin := buildChash(t)
	p := testprog.Start(t, testprog.Program{
		Name: bin,
		Args: []string{"register", "--etcd", testprog.FreeAddr(t), "--prefix", "/p/", "--server", "h:1:1 x", "--wait", "1m"},
		Env:  chashEnv(),
	})
	if !poll(10*time.Second, func() bool { return strings.Contains(p.Output(), "retrying the registration") }) {
		t.Fatalf("chash register never logs that it retries:\n%s", p.Output())
	}
	start := time.Now()
	sendSignal(t, p, syscall.SIGTERM)
	if err := p.Wait(5 * time.Second); err != nil {
		t.Fatalf("after SIGTERM chash register: %v\n%s", err, p.Output())
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("chash register took %v to stop after SIGTERM", d)
	}
	want := `msg="register: stopped before the registration completed; nothing stays registered" key=/p/x`
	if !strings.Contains(p.Output(), want) {
		t.Errorf("chash register's log lacks\n%s\n%s", want, p.Output())
	}
}

// TestRegisterUnreachable: with no etcd, register gives up after --wait and
// names the endpoint.
func TestRegisterUnreachable(t *testing.T) {
	addr := testprog.FreeAddr(t)
	start := time.Now()
	_, stderr, code := runChash(t, nil, "register", "--etcd", addr, "--prefix", "/p/", "--server", "h:1:1 x", "--wait", "1s")
	want := "chash register: register /p/x: etcd at " + addr + " does not answer"
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("exit status %d, stderr\n%s\nwant 1 and\n%s", code, stderr, want)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("chash register --wait 1s took %v", d)
	}
}

// TestRegisterCheck: with --check, register keeps a memcached server's key
// only while it answers: it waits for the server to start before it
// registers, removes the key when the server freezes (SIGSTOP) and puts it
// back when it thaws, emptied first (its values may be stale), a log line
// each, and removes it at SIGTERM.
func TestRegisterCheck(t *testing.T) {
	bin := buildChash(t)
	e := etcdtest.Start(t)
	mc := memcachedtest.Start(t)
	mc.Stop()
	line := mc.Addr + ":1 m"
	has := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := e.Client().Get(ctx, "/chash/cache/m")
		if err != nil {
			t.Fatal(err)
		}
		return len(resp.Kvs) == 1 && string(resp.Kvs[0].Value) == line
	}
	p := testprog.Start(t, testprog.Program{
		Name: bin,
		Args: []string{"register", "--etcd", e.Endpoint, "--prefix", "/chash/cache/", "--server", line, "--ttl", "2s",
			"--check", "memcached", "--check-every", "200ms", "--check-fails", "2"},
		Env: chashEnv(),
	})
	step := func(what string, want bool, logLine string) {
		t.Helper()
		if !poll(10*time.Second, func() bool { return has() == want && strings.Contains(p.Output(), logLine) }) {
			t.Fatalf("%s: key there %v, want %v; or the log lacks %q:\n%s", what, has(), want, logLine, p.Output())
		}
	}
	step("memcached not started", false, "waiting for the server to answer before registering")
	time.Sleep(time.Second)
	if has() {
		t.Fatal("registered before memcached started")
	}
	mc.Restart()
	step("memcached started", true, "registered")
	mcDo := func(req string) string {
		t.Helper()
		c, err := net.DialTimeout("tcp", mc.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, req)
		line, _ := bufio.NewReader(c).ReadString('\n')
		return line
	}
	if got := mcDo("set old 0 0 1\r\nv\r\n"); got != "STORED\r\n" {
		t.Fatalf("set old: %q", got)
	}
	mc.Freeze()
	frozen := time.Now()
	step("memcached frozen", false, "the server does not answer; removing its key until it does")
	t.Logf("key removed %v after the freeze", time.Since(frozen).Round(10*time.Millisecond))
	mc.Thaw()
	step("memcached thawed", true, "the server answers again; emptied (flush_all) and registered")
	if got := mcDo("get old\r\n"); got != "END\r\n" {
		t.Errorf("the server registered again still holds a value set before it was taken out: %q", got)
	}
	sendSignal(t, p, syscall.SIGTERM)
	if err := p.Wait(5 * time.Second); err != nil {
		t.Fatalf("after SIGTERM chash register: %v\n%s", err, p.Output())
	}
	if has() {
		t.Error("after SIGTERM the key is still there")
	}
	if n := strings.Count(p.Output(), "waiting for the server"); n != 1 {
		t.Errorf("%d lines saying register waits for the server; want 1:\n%s", n, p.Output())
	}
}
