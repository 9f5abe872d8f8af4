package proxy

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
)

// TestStatsQueues checks /stats's queues of a server against what waits for
// a frozen memcached: gets written and waiting for replies (out_queue), then
// large sets that fill the connection's socket and wait to be written
// (in_queue), each with its bytes; all empty once memcached thaws and answers.
func TestStatsQueues(t *testing.T) {
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("timeout: 30000", s), func(p *Proxy) { p.Admin = "127.0.0.1:0" })
	addr := p.Addr("alpha").String()
	dial(t, addr).mustDo("get warm\r\n") // open the server connection
	queues := func() (in, inBytes, out, outBytes float64) {
		st := adminServerStats(t, p, "alpha", s.Addr)
		in, _ = st["in_queue"].(float64)
		inBytes, _ = st["in_queue_bytes"].(float64)
		out, _ = st["out_queue"].(float64)
		outBytes, _ = st["out_queue_bytes"].(float64)
		return
	}
	s.Freeze()
	var wg sync.WaitGroup
	send := func(req, want string) {
		c := dial(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.c.SetDeadline(time.Now().Add(30 * time.Second))
			if _, err := io.WriteString(c.c, req); err != nil {
				t.Error(err)
				return
			}
			got := make([]byte, len(want))
			if _, err := io.ReadFull(c.br, got); err != nil || string(got) != want {
				t.Errorf("%.30q: %.30q, %v; want %.30q", req, got, err, want)
			}
		}()
	}
	gets, getBytes := 10, 0
	for i := range gets {
		req := fmt.Sprintf("get k%d\r\n", i)
		getBytes += len(req)
		send(req, "END\r\n")
	}
	if !waitFor(10*time.Second, func() bool { _, _, out, _ := queues(); return out == float64(gets) }) {
		in, inBytes, out, outBytes := queues()
		t.Fatalf("%d gets waiting on a frozen server: in_queue %v (%v bytes), out_queue %v (%v bytes)", gets, in, inBytes, out, outBytes)
	}
	if in, inBytes, _, outBytes := queues(); in != 0 || inBytes != 0 || outBytes != float64(getBytes) {
		t.Errorf("%d gets written: in_queue %v (%v bytes), out_queue_bytes %v; want 0, 0, %d", gets, in, inBytes, outBytes, getBytes)
	}
	const size = 512 << 10
	value := strings.Repeat("v", size)
	for i := range 16 {
		send(fmt.Sprintf("set big%d 0 0 %d\r\n%s\r\n", i, size, value), "STORED\r\n")
	}
	if !waitFor(10*time.Second, func() bool { in, inBytes, _, _ := queues(); return in > 0 && inBytes > size }) {
		in, inBytes, out, outBytes := queues()
		t.Errorf("16 sets of 512 KiB to a frozen server: in_queue %v (%v bytes), out_queue %v (%v bytes); want some waiting to be written", in, inBytes, out, outBytes)
	}
	s.Thaw()
	wg.Wait()
	if !waitFor(5*time.Second, func() bool { in, inBytes, out, outBytes := queues(); return in+inBytes+out+outBytes == 0 }) {
		in, inBytes, out, outBytes := queues()
		t.Errorf("all answered: in_queue %v (%v bytes), out_queue %v (%v bytes); want 0", in, inBytes, out, outBytes)
	}
}

// TestStatsPoolRestartKeepsCounts checks that a reload that restarts a pool
// (new TLS files here; a new listener or protocol alike) keeps its counters,
// as a reload that keeps the pool does: the pool's, its refusals' and those
// of the servers it keeps, with what the old pool counted while it finished
// its clients.
func TestStatsPoolRestartKeepsCounts(t *testing.T) {
	const opts = "timeout: 300"
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML(opts, s), func(p *Proxy) { p.Admin = "127.0.0.1:0" })
	c := dial(t, p.Addr("alpha").String())
	c.mustDo("set k 0 0 1\r\nv\r\n")
	c.mustDo("get k\r\n")
	c.mustDo("bogus\r\n")
	requests := func() float64 { n, _ := adminServerStats(t, p, "alpha", s.Addr)["requests"].(float64); return n }
	if got := requests(); got != 2 {
		t.Fatalf("requests before the reload = %v; want 2", got)
	}
	// A get in flight to a frozen server when the reload comes, answered by
	// the old pool.
	s.Freeze()
	io.WriteString(c.c, "get late\r\n")
	time.Sleep(50 * time.Millisecond)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeCert(t, certFile, keyFile)
	if err := p.Reload(parseConfig(t, poolYAML(opts+"\ntls_cert_file: "+certFile+"\ntls_key_file: "+keyFile, s))); err != nil {
		t.Fatal(err)
	}
	if got := requests(); got < 2 {
		t.Errorf("requests once the pool restarted = %v; want at least the 2 before", got)
	}
	s.Thaw()
	if !waitFor(5*time.Second, func() bool { return requests() == 3 }) {
		t.Errorf("requests once the old pool stopped = %v; want 3, the get it finished included", requests())
	}
	metrics := adminGet(t, p, "/metrics")
	for _, want := range []string{
		`chash_proxy_refused_requests_total{class="error",pool="alpha"} 1`,
		`chash_proxy_client_connections_total{pool="alpha"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics once the pool restarted has no %s", want)
		}
	}
}
