package proxy

import (
	"io"
	"net"
	"runtime"
	"testing"

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
