package proxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/redistest"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a.(*net.TCPConn), b.(*net.TCPConn)
}

func TestRawIO(t *testing.T) {
	a, b := tcpPair(t)
	rw := socketIO(a)
	if _, ok := rw.(*rawIO); !ok {
		t.Fatalf("socketIO(TCP) = %T; want *rawIO", rw)
	}
	// A write larger than the socket buffers waits for the reader, in pieces.
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	got := make(chan []byte)
	go func() {
		var buf bytes.Buffer
		time.Sleep(50 * time.Millisecond) // let the writer fill the buffers
		io.CopyN(&buf, b, int64(len(big)))
		got <- buf.Bytes()
	}()
	if n, err := rw.Write(big); n != len(big) || err != nil {
		t.Fatalf("Write of 4 MiB = %d, %v", n, err)
	}
	if g := <-got; !bytes.Equal(g, big) {
		t.Fatalf("the peer read %d bytes, not the ones written", len(g))
	}

	// Reads wait for data, honour deadlines and end with EOF.
	a.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	buf := make([]byte, 64)
	if _, err := rw.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past the deadline = %v; want a deadline error", err)
	}
	a.SetReadDeadline(time.Time{})
	go b.Write([]byte("hello"))
	if n, err := rw.Read(buf); string(buf[:n]) != "hello" || err != nil {
		t.Fatalf("Read = %q, %v; want hello", buf[:n], err)
	}
	b.Close()
	if n, err := rw.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("Read after the peer closed = %d, %v; want EOF", n, err)
	}
	a.Close()
	if _, err := rw.Read(buf); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read after Close = %v; want net.ErrClosed", err)
	}
}

func TestRawIOReset(t *testing.T) {
	a, b := tcpPair(t)
	rw := socketIO(a)
	b.SetLinger(0) // close with a reset
	b.Close()
	time.Sleep(20 * time.Millisecond)
	_, err := rw.Read(make([]byte, 8))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("Read after a reset = %v; want ECONNRESET", err)
	}
	if dialError(err).Error() != "Connection reset by peer" {
		t.Errorf("dialError(%v) = %v", err, dialError(err))
	}
}

// TestRawIOErrorText checks that rawIO's errors read as net.Conn's, naming
// the operation and the connection's addresses: they are what the log says
// of a failing server.
func TestRawIOErrorText(t *testing.T) {
	a, b := tcpPair(t)
	rw := socketIO(a)
	conn := a.LocalAddr().String() + "->" + a.RemoteAddr().String()
	a.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, err := rw.Read(make([]byte, 8))
	if want := "read tcp " + conn + ": i/o timeout"; err == nil || err.Error() != want {
		t.Errorf("Read past the deadline = %v; want %s", err, want)
	}
	a.SetReadDeadline(time.Time{})
	b.SetLinger(0) // close with a reset
	b.Close()
	time.Sleep(20 * time.Millisecond)
	_, err = rw.Read(make([]byte, 8))
	if want := "read tcp " + conn + ": read: connection reset by peer"; err == nil || err.Error() != want {
		t.Errorf("Read after a reset = %v; want %s", err, want)
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("Read after a reset = %v; want ECONNRESET", err)
	}
}

// TestServerReaderNoEmptyRead: a server connection's reader waits for the
// next replies, after a burst that left nothing on the socket, without a read
// that finds nothing (serverConn.readWithin): one request and its reply cost
// one read of the server's socket, not two, in a memcached pool as in a Redis
// pool.
func TestServerReaderNoEmptyRead(t *testing.T) {
	const n = 200
	empty := func(p *Proxy, name string) *atomic.Uint64 {
		t.Helper()
		ss := p.pools["alpha"].state.Load().servers[name].conns[0].live.Load()
		if ss == nil {
			t.Fatal("no server connection")
		}
		r, ok := ss.rw.(*rawIO)
		if !ok {
			t.Fatalf("server connection read with %T; want *rawIO", ss.rw)
		}
		return &r.empty
	}
	t.Run("memcached", func(t *testing.T) {
		s := memcachedtest.Start(t)
		p := startProxy(t, poolYAML("", s))
		c := dial(t, p.Addr("alpha").String())
		c.mustDo("set k 0 0 1\r\nx\r\n")
		e := empty(p, s.Addr)
		before := e.Load()
		for range n {
			if got := c.mustDo("get k\r\n"); got != "VALUE k 0 1\r\nx\r\nEND\r\n" {
				t.Fatalf("get k: %q", got)
			}
		}
		if got := e.Load() - before; got > n/10 {
			t.Errorf("%d reads of the server's socket found nothing in %d requests; want at most %d", got, n, n/10)
		}
	})
	t.Run("redis", func(t *testing.T) {
		s := redistest.Start(t)
		p := startProxy(t, redisPoolYAML("", s))
		c := redistest.Dial(t, p.Addr("alpha").String())
		c.Do("SET", "k", "x")
		e := empty(p, "s1")
		before := e.Load()
		for range n {
			if got := c.Do("GET", "k"); got != "$1\r\nx\r\n" {
				t.Fatalf("GET k: %q", got)
			}
		}
		if got := e.Load() - before; got > n/10 {
			t.Errorf("%d reads of the server's socket found nothing in %d requests; want at most %d", got, n, n/10)
		}
	})
}
