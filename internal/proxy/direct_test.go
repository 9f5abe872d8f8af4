package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// readServerEnv names the variable that makes this test binary a read
// server (readServerMain) instead of running tests.
const readServerEnv = "CHASH_TEST_READ_SERVER"

// readServerMain runs instead of the tests when readServerEnv is set (see
// TestMain): a server on loopback, in a process of its own, that prints its
// address, then what each of its reads returned, one quoted line each, and
// answers every request read: END to a memcached line, a nil to a Redis
// array (the variable's value, memcache or redis). In its own process it
// reads the proxy's writes as they come even while the proxy runs Go code
// on one thread.
func readServerMain() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr())
	proto := os.Getenv(readServerEnv)
	reply := []byte("END\r\n")
	if proto == "redis" {
		reply = []byte("$-1\r\n")
	}
	var mu sync.Mutex // over stdout
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		go func() {
			defer c.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if err != nil {
					return
				}
				mu.Lock()
				fmt.Println(strconv.Quote(string(buf[:n])))
				mu.Unlock()
				// The requests of these tests come whole in one read.
				if _, err := c.Write(bytes.Repeat(reply, requests(proto, string(buf[:n])))); err != nil {
					return
				}
			}
		}()
	}
}

// requests counts the requests of these tests in b: lines, or Redis arrays
// (their keys have no '*').
func requests(proto, b string) int {
	if proto == "redis" {
		return strings.Count(b, "*")
	}
	return strings.Count(b, "\n")
}

// readServer is a readServerMain run by a test.
type readServer struct {
	proto string
	addr  string
	mu    sync.Mutex
	reads []string
}

func startReadServer(t *testing.T, proto string) *readServer {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), readServerEnv+"="+proto)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { cmd.Process.Kill(); <-done; cmd.Wait() })
	s := &readServer{proto: proto}
	addr := make(chan string, 1)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if s.addr == "" {
				s.addr = sc.Text()
				addr <- s.addr
				continue
			}
			r, err := strconv.Unquote(sc.Text())
			if err != nil {
				r = "unreadable: " + sc.Text()
			}
			s.mu.Lock()
			s.reads = append(s.reads, r)
			s.mu.Unlock()
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok || strings.HasPrefix(a, "error") {
			t.Fatalf("the read server did not start: %q", a)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the read server did not start in 10s")
	}
	return s
}

// take returns the reads of n requests, waiting for their records (printed
// after the server answered), and forgets them.
func (s *readServer) take(t *testing.T, n int) []string {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		got := 0
		for _, r := range s.reads {
			got += requests(s.proto, r)
		}
		if got >= n || time.Now().After(deadline) {
			r := s.reads
			s.reads = nil
			s.mu.Unlock()
			return r
		}
		s.mu.Unlock()
	}
}

// TestAloneKeepsPipelines: with Go code on one thread, a request that no
// other can join (its client is the pool's only one and sent nothing more)
// is written by its client's goroutine, but a pipelining client's requests,
// read together, still reach their server in one write, in both protocols.
func TestAloneKeepsPipelines(t *testing.T) {
	defer SetProcs(SetProcs(1))
	for _, tt := range []struct {
		proto, extra, get, reply string
	}{
		{"memcache", "", "get %s\r\n", "END\r\n"},
		{"redis", "redis: true", "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", "$-1\r\n"},
	} {
		t.Run(tt.proto, func(t *testing.T) {
			get := func(key string) string {
				if tt.proto == "redis" {
					return fmt.Sprintf(tt.get, len(key), key)
				}
				return fmt.Sprintf(tt.get, key)
			}
			srv := startReadServer(t, tt.proto)
			p := startProxy(t, poolOf(tt.extra, []string{srv.addr + ":1"}))
			c := dial(t, p.Addr("alpha").String())
			// Nothing follows the requests (conn.do sends a no-op after
			// them), so that the last is alone.
			do := func(req string, want string) string {
				t.Helper()
				c.c.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := io.WriteString(c.c, req); err != nil {
					t.Fatal(err)
				}
				got := make([]byte, len(want))
				n, err := io.ReadFull(c.br, got)
				if err != nil {
					t.Fatalf("%q: %v after %q", req, err, got[:n])
				}
				return string(got)
			}
			if got := do(get("a"), tt.reply); got != tt.reply {
				t.Fatalf("get a = %q", got)
			}
			if r := srv.take(t, 1); len(r) != 1 || r[0] != get("a") {
				t.Fatalf("the server read %q; want one get", r)
			}
			var batch strings.Builder
			for i := range 16 {
				batch.WriteString(get(fmt.Sprintf("k%d", i)))
			}
			for round := range 20 {
				if got := do(batch.String(), strings.Repeat(tt.reply, 16)); got != strings.Repeat(tt.reply, 16) {
					t.Fatalf("round %d: %q", round, got)
				}
				if r := srv.take(t, 16); len(r) != 1 || r[0] != batch.String() {
					t.Fatalf("round %d: 16 pipelined gets reached the server in %d reads %q; want one", round, len(r), r)
				}
			}
		})
	}
}
