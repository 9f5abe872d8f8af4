package membership

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/redistest"
	"github.com/chash-dev/chash/internal/testprog"
)

// lineListener reads the request of each connection, answers reply (which
// may be empty) and closes it; it returns its address.
func lineListener(t *testing.T, reply string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 64)
			c.Read(buf)
			c.Write([]byte(reply))
			c.Close()
		}
	}()
	return ln.Addr().String()
}

func TestCheckServer(t *testing.T) {
	mc := memcachedtest.Start(t)
	frozen := memcachedtest.Start(t)
	frozen.Freeze()
	rs := redistest.Start(t)
	locked := redistest.Start(t, "--requirepass", "sesame")
	tests := []struct {
		line, protocol string
		err            string // a part of the error; empty for none
	}{
		{mc.Addr + ":1 a", "memcached", ""},
		{rs.Addr + ":1", "redis", ""},
		{locked.Addr + ":1", "redis", ""}, // NOAUTH: it answers
		{rs.Addr + ":1", "memcached", `memcached server ` + rs.Addr + `: version answered "-ERR unknown command 'version'`},
		{mc.Addr + ":1", "redis", `redis server ` + mc.Addr + `: PING answered "ERROR"`},
		{frozen.Addr + ":1", "memcached", "no answer to version within 300ms"},
		{testprog.FreeAddr(t) + ":1", "redis", "connection refused"},
		{lineListener(t, "") + ":1", "memcached", "closed the connection without answering version"},
		{lineListener(t, strings.Repeat("x", 300)+"\r\n") + ":1", "redis", "answered with a line of more than 256 bytes"},
		{lineListener(t, "-LOADING Redis is loading the dataset in memory\r\n") + ":1", "redis", `PING answered "-LOADING Redis is loading`},
		{mc.Addr, "memcached", `membership: check: server "` + mc.Addr + `"`},
		{mc.Addr + ":1", "http", `protocol "http" is unknown (known: memcached, redis)`},
	}
	for _, tt := range tests {
		err := CheckServer(context.Background(), tt.line, tt.protocol, 300*time.Millisecond)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("CheckServer(%q, %s): %v; want nil", tt.line, tt.protocol, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("CheckServer(%q, %s): %v; want an error containing %q", tt.line, tt.protocol, err, tt.err)
		}
	}
	// A context that ends stops a check at once.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	if err := CheckServer(ctx, frozen.Addr+":1", "memcached", time.Minute); err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("check of a frozen server, its context cancelled at 50ms: %v after %v", err, time.Since(start))
	}
}

// TestFlushServer: FlushServer empties a memcached server, and fails on one
// that does not answer.
func TestFlushServer(t *testing.T) {
	mc := memcachedtest.Start(t)
	c, err := net.Dial("tcp", mc.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	do := func(req string) string {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 256)
		n, err := c.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		return string(buf[:n])
	}
	if got := do("set k 0 0 1\r\nv\r\n"); got != "STORED\r\n" {
		t.Fatalf("set: %q", got)
	}
	if err := FlushServer(context.Background(), mc.Addr+":1", time.Second); err != nil {
		t.Errorf("FlushServer: %v", err)
	}
	if got := do("get k\r\n"); got != "END\r\n" {
		t.Errorf("get k after FlushServer: %q; want END", got)
	}
	mc.Freeze()
	defer mc.Thaw()
	if err := FlushServer(context.Background(), mc.Addr+":1", 200*time.Millisecond); err == nil || !strings.Contains(err.Error(), "no answer to flush_all") {
		t.Errorf("FlushServer of a frozen server: %v; want no answer to flush_all", err)
	}
}
