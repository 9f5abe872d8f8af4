package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
)

// TestShutdownAnswersWhatItRead sends 5000 pipelined sets and shuts the proxy
// down once the first is answered: the proxy stops reading, so not all are
// answered, but every set memcached ran was answered, in order, and the stream
// then ends cleanly (no reset destroys a reply).
func TestShutdownAnswersWhatItRead(t *testing.T) {
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("timeout: 5000", s))
	conn, err := net.DialTimeout("tcp", p.Addr("alpha").String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const n = 5000
	var burst []byte
	for i := range n {
		burst = fmt.Appendf(burst, "set drain:%d 0 0 1\r\nx\r\n", i)
	}
	go conn.Write(burst) // may fail once the proxy stops reading
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	line, err := br.ReadString('\n')
	if err != nil || line != "STORED\r\n" {
		t.Fatalf("first reply = %q, %v", line, err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Shutdown(context.Background()) }()
	answered := 1
	for {
		line, err = br.ReadString('\n')
		if err != nil {
			break
		}
		if line != "STORED\r\n" {
			t.Fatalf("reply %d = %q", answered, line)
		}
		answered++
	}
	if err != io.EOF {
		t.Errorf("after %d replies: %v; want the end of the stream", answered, err)
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	// memcached holds exactly the keys whose sets were answered.
	direct := dial(t, s.Addr)
	for _, i := range []int{0, answered - 1, answered, n - 1} {
		got := direct.mustDo(fmt.Sprintf("get drain:%d\r\n", i))
		if stored := got != "END\r\n"; stored != (i < answered) {
			t.Errorf("drain:%d stored: %v; %d of %d sets were answered", i, stored, answered, n)
		}
	}
	if items := memcachedStats(t, s.Addr)["curr_items"]; items != strconv.Itoa(answered) {
		t.Errorf("memcached holds %s items; %d sets were answered", items, answered)
	}
	t.Logf("%d of %d pipelined sets read and answered before the shutdown", answered, n)
}

// TestShutdownUnderLoad shuts the proxy down while clients send batches of
// incr without pause: every incr memcached ran was answered (each counter's
// final value is the number of replies its client got), and every client
// sees the end of the stream after its last reply.
func TestShutdownUnderLoad(t *testing.T) {
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("timeout: 5000", s))
	const clients, batch = 8, 10
	answered := make([]int, clients)
	var wg sync.WaitGroup
	for i := range clients {
		c := dial(t, p.Addr("alpha").String())
		if got := c.mustDo(fmt.Sprintf("set counter:%d 0 0 1\r\n0\r\n", i)); got != "STORED\r\n" {
			t.Fatalf("set counter:%d: %q", i, got)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := []byte(strings.Repeat(fmt.Sprintf("incr counter:%d 1\r\n", i), batch))
			c.c.SetDeadline(time.Now().Add(20 * time.Second))
			for {
				if _, err := c.c.Write(req); err != nil {
					break // the proxy closed: the replies already sent are still read
				}
				for range batch {
					line, err := c.br.ReadString('\n')
					if err != nil {
						if err != io.EOF {
							t.Errorf("client %d after %d replies: %v; want the end of the stream", i, answered[i], err)
						}
						return
					}
					if n, err := strconv.Atoi(strings.TrimSuffix(line, "\r\n")); err != nil || n != answered[i]+1 {
						t.Errorf("client %d: reply %q after %d replies", i, line, answered[i])
						return
					}
					answered[i]++
				}
			}
			// Read what is left after a failed write.
			for {
				line, err := c.br.ReadString('\n')
				if err != nil {
					return
				}
				if n, err := strconv.Atoi(strings.TrimSuffix(line, "\r\n")); err == nil && n == answered[i]+1 {
					answered[i]++
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	if err := p.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	wg.Wait()
	direct := dial(t, s.Addr)
	total := 0
	for i := range clients {
		want := fmt.Sprintf("VALUE counter:%d 0 %d\r\n%d\r\nEND\r\n", i, len(strconv.Itoa(answered[i])), answered[i])
		if got := direct.mustDo(fmt.Sprintf("get counter:%d\r\n", i)); got != want {
			t.Errorf("counter:%d = %q; its client got %d replies", i, got, answered[i])
		}
		total += answered[i]
	}
	if total == 0 {
		t.Error("no incr answered before the shutdown")
	}
}

// TestReloadRemovedPoolAnswers removes a pool by a reload while a request of
// one of its clients waits on a frozen server: the client gets its reply, then
// the end of the stream; the pool's address takes no new client.
func TestReloadRemovedPoolAnswers(t *testing.T) {
	s := memcachedtest.Start(t)
	pools := map[string]string{"alpha": poolYAML("timeout: 5000", s), "beta": poolYAML("timeout: 5000", s)}
	p := startProxy(t, poolsYAML(pools))
	addr := p.Addr("beta").String()
	c := dial(t, addr)
	c.mustDo("set a 0 0 1\r\nx\r\n")
	s.Freeze()
	c.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c.c, "get a\r\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the get is in flight
	delete(pools, "beta")
	if err := p.Reload(parseConfig(t, poolsYAML(pools))); err != nil {
		t.Fatal(err)
	}
	if nc, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		nc.Close()
		t.Error("a removed pool accepts clients")
	}
	s.Thaw()
	got, err := io.ReadAll(c.br)
	if string(got) != "VALUE a 0 1\r\nx\r\nEND\r\n" || err != nil {
		t.Errorf("a request in flight when its pool was removed: %q, %v; want its reply and the end of the stream", got, err)
	}
}
