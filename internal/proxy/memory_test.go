package proxy

import (
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
)

// inUse returns the bytes of heap and goroutine stacks in use after a
// collection.
func inUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}

// TestIdleClientsMemory checks what an idle client costs the proxy: it holds
// neither a read nor a write buffer while it waits. The figure includes the
// test's end of each connection, in the same process. A client used to cost
// 40 KB (a 16 KiB read and a 16 KiB write buffer each), nutcracker's about 3.
func TestIdleClientsMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's memory would count")
	}
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("", s))
	addr := p.Addr("alpha").String()
	before := inUse()
	const n = 2000
	conns := make([]net.Conn, n)
	reply := make([]byte, len("STORED\r\n"))
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
		if _, err := io.WriteString(c, "set k 0 0 1000\r\n"+string(make([]byte, 1000))+"\r\n"); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, reply); err != nil || string(reply) != "STORED\r\n" {
			t.Fatalf("client %d: %q, %v", i, reply, err)
		}
	}
	perClient := (int64(inUse()) - int64(before)) / n
	t.Logf("an idle client costs %d bytes of heap and stack", perClient)
	if perClient > 9<<10 {
		t.Errorf("an idle client costs %d bytes of heap and stack; want at most 9 KiB", perClient)
	}
}

// TestMemoryBudget has a client pipeline 40 gets of a 512 KiB value and not
// read the replies, so that the proxy holds 20 MiB it cannot write. With a
// budget of 8 MiB, another client is not read until the first reads its
// replies; with the default budget, it is served at once. Either way the proxy
// holds nothing once every reply is written.
func TestMemoryBudget(t *testing.T) {
	s := memcachedtest.Start(t)
	const gets, size = 40, 512 << 10
	for _, budget := range []int64{8 << 20, 0} {
		p := startProxy(t, poolYAML("timeout: 20000", s), func(p *Proxy) { p.MaxMemory = budget })
		addr := p.Addr("alpha").String()
		dial(t, addr).mustDo(fmt.Sprintf("set big 0 0 %d\r\n%s\r\n", size, strings.Repeat("v", size)))
		greedy := dial(t, addr)
		if _, err := io.WriteString(greedy.c, strings.Repeat("get big\r\n", gets)); err != nil {
			t.Fatal(err)
		}
		if !waitFor(10*time.Second, func() bool { return p.mem.held.Load() > 16<<20 }) {
			t.Fatalf("budget %d: the proxy holds %d bytes; want the replies it cannot write", budget, p.mem.held.Load())
		}
		waits := p.mem.waits.Load()
		other := dial(t, addr)
		if _, err := io.WriteString(other.c, "get small\r\n"); err != nil {
			t.Fatal(err)
		}
		if budget > 0 {
			// The other client waits for memory, its request unread.
			if !waitFor(10*time.Second, func() bool { return p.mem.waits.Load() > waits }) {
				t.Fatalf("budget %d: no client waits while the proxy holds %d bytes", budget, p.mem.held.Load())
			}
			other.c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			if line, err := other.br.ReadString('\n'); err == nil {
				t.Errorf("budget %d: a client is answered %q while the proxy is over its budget", budget, line)
			}
		}
		other.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		answered := make(chan string, 1)
		go func() {
			line, _ := other.br.ReadString('\n')
			answered <- line
		}()
		if budget == 0 {
			if line := <-answered; line != "END\r\n" {
				t.Errorf("default budget: the other client is answered %q; want END", line)
			}
		}
		want := fmt.Sprintf("VALUE big 0 %d\r\n%s\r\nEND\r\n", size, strings.Repeat("v", size))
		greedy.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for i := range gets {
			got := make([]byte, len(want))
			if _, err := io.ReadFull(greedy.br, got); err != nil || string(got) != want {
				t.Fatalf("budget %d: reply %d to the greedy client: %v", budget, i, err)
			}
		}
		if budget > 0 {
			if line := <-answered; line != "END\r\n" {
				t.Errorf("budget %d: once memory is free, the other client is answered %q; want END", budget, line)
			}
		}
		if !waitFor(5*time.Second, func() bool { return p.mem.held.Load() == 0 }) {
			t.Errorf("budget %d: %d bytes held once every reply is written; want 0", budget, p.mem.held.Load())
		}
	}
}
