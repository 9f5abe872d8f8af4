package main

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/membership/etcdtest"
	"github.com/chash-dev/chash/internal/memcachedtest"
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
		{append(ok, "--ttl", "500ms"), "chash register: membership: register: TTL 500ms is under etcd's unit of 1s"},
		{append(ok, "--wait", "0s"), "chash register: --wait 0s: want a positive duration"},
		{append(ok[:2:2], "h", "--prefix", "/p/", "--server", "h:1:1"), `chash register: membership: register: endpoint "h": want HOST:PORT`},
		{append(ok[:2:2], "a:1,b", "--prefix", "/p/", "--server", "h:1:1"), `endpoint "b": want HOST:PORT`},
		{append(ok[:4:4], "/p", "--server", "h:1:1"), `key prefix "/p" does not end in "/"`},
		{append(ok[:6:6], "h:1"), `membership: register: server "h:1": want "host:port:weight [name]"`},
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
	start := func(line string) *process {
		t.Helper()
		p := startProcess(t, chashEnv(), bin, "register", "--etcd", e.Endpoint, "--prefix", "/chash/cache/", "--server", line, "--ttl", "2s")
		name := line[strings.LastIndexByte(line, ' ')+1:]
		if !poll(10*time.Second, func() bool { return key("/chash/cache/"+name) == line }) {
			t.Fatalf("chash register --server %q: no key after 10s\n%s", line, p.logs)
		}
		return p
	}

	a := start("10.0.0.1:11211:1 a")
	a.signal(syscall.SIGTERM)
	select {
	case <-a.done:
		if a.err != nil {
			t.Errorf("after SIGTERM chash register: %v\n%s", a.err, a.logs)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("chash register still running 5s after SIGTERM\n%s", a.logs)
	}
	if v := key("/chash/cache/a"); v != "" {
		t.Errorf("after SIGTERM the key holds %q; want it removed", v)
	}
	if logs := a.logs.String(); !strings.Contains(logs, `msg="membership: registered"`) || !strings.Contains(logs, "key removed") {
		t.Errorf("chash register's log lacks the registration or the removal:\n%s", logs)
	}

	b := start("10.0.0.2:11211:1 b")
	b.signal(syscall.SIGKILL)
	<-b.done
	if !poll(3*time.Second, func() bool { return key("/chash/cache/b") == "" }) {
		t.Errorf("3s (TTL + 1s) after chash register was killed, its key is still there")
	}
}

// TestRegisterUnreachable: with no etcd, register gives up after --wait and
// names the endpoint.
func TestRegisterUnreachable(t *testing.T) {
	etcdtest.LookPath(t)
	addr := "127.0.0.1:" + strconv.Itoa(memcachedtest.FreePort(t))
	start := time.Now()
	_, stderr, code := runChash(t, nil, "register", "--etcd", addr, "--prefix", "/p/", "--server", "h:1:1 x", "--wait", "1s")
	want := "chash register: membership: register /p/x: etcd at " + addr + " does not answer"
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("exit status %d, stderr\n%s\nwant 1 and\n%s", code, stderr, want)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("chash register --wait 1s took %v", d)
	}
}
