// Package redistest starts real redis-server processes on free 127.0.0.1
// ports for tests, stops them by PID, and talks to them (or to a proxy in
// front of them) with a small RESP client, in the manner of
// net/http/httptest. It is package testprog's launcher with redis-server's
// arguments.
//
// A test that needs redis-server is skipped where it is not installed,
// naming the command that installs it, except in CI (the environment
// variable CI set to anything), where it fails: see testprog.
package redistest

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/resp"
	"github.com/chash-dev/chash/internal/testprog"
)

// A Server is a redis-server process started by Start. Its methods must not
// be called concurrently.
type Server struct {
	// Addr is the server's "127.0.0.1:port"; it stays the same across
	// Restart.
	Addr string
	// Password is the password of Start's "--requirepass" argument, which
	// the Server's own requests (Do, Keys) give; empty if none.
	Password string

	t    testing.TB
	proc *testprog.Proc
}

// Start starts redis-server on a free port of 127.0.0.1 without persistence
// (no RDB, no AOF, its files in a directory of the test's), with args after
// its own ("--requirepass", "sesame", say), and waits until it accepts
// connections. The server is stopped when the test ends.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	dir := t.TempDir()
	proc, addrs := testprog.StartOnFreePorts(t, 1, func(addrs []string) testprog.Program {
		_, port, _ := net.SplitHostPort(addrs[0])
		return testprog.Program{
			Name: "redis-server",
			Args: append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
				"--dir", dir, "--loglevel", "warning"}, args...),
			Ready: testprog.Listening(addrs[0]),
		}
	})
	srv := &Server{Addr: addrs[0], t: t, proc: proc}
	if i := slices.Index(args, "--requirepass"); i >= 0 && i+1 < len(args) {
		srv.Password = args[i+1]
	}
	return srv
}

// dial connects to the server and authenticates with its Password.
func (s *Server) dial() *Conn {
	s.t.Helper()
	c := Dial(s.t, s.Addr)
	if s.Password != "" {
		if got := c.Do("AUTH", s.Password); got != "+OK\r\n" {
			s.t.Fatalf("redistest: AUTH: %q", got)
		}
	}
	return c
}

// Pid returns the server's process ID.
func (s *Server) Pid() int { return s.proc.Pid() }

// Signal sends sig to the running server (os.Kill, as a crash); it fails
// the test if the server has exited.
func (s *Server) Signal(sig os.Signal) { s.check(s.proc.Signal(sig)) }

// Freeze stops the server with SIGSTOP and returns once it is stopped: it
// accepts connections (the kernel does) but answers nothing.
func (s *Server) Freeze() { s.check(s.proc.Freeze()) }

// Thaw lets a frozen server run again (SIGCONT).
func (s *Server) Thaw() { s.check(s.proc.Thaw()) }

// Stop ends the server by its PID and waits for it to exit. Stopping a
// stopped server does nothing.
func (s *Server) Stop() { s.check(s.proc.Stop()) }

// Restart stops the server if it runs and starts redis-server again on the
// same address with the same arguments, empty, as a crashed server comes
// back.
func (s *Server) Restart() { s.check(s.proc.Restart()) }

func (s *Server) check(err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatalf("redistest: redis-server on %s: %v", s.Addr, err)
	}
}

// Do sends one request to the server on a connection of its own, which has
// given the server's Password, and returns the reply as it came; see
// Conn.Do.
func (s *Server) Do(args ...string) string {
	s.t.Helper()
	c := s.dial()
	defer c.Close()
	return c.Do(args...)
}

// Conn is a client connection to a Redis server or proxy. Its methods fail
// the test on a network error or a reply that is not RESP.
type Conn struct {
	t  testing.TB
	c  net.Conn
	r  *resp.Reader
	rp resp.Reply
}

// Timeout bounds each exchange of a Conn: a reply that does not come within
// it fails the test rather than hang it.
const Timeout = 10 * time.Second

// Dial connects to addr; the connection is closed when the test ends.
func Dial(t testing.TB, addr string) *Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, Timeout)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return NewConn(t, c)
}

// NewConn returns a Conn over c, a connection made some other way (TLS, say).
func NewConn(t testing.TB, c net.Conn) *Conn {
	return &Conn{t: t, c: c, r: resp.NewReader(c, resp.Limits{})}
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Do sends args as a multibulk request and returns the reply, as it came:
// "+OK\r\n", "$-1\r\n", ...
func (c *Conn) Do(args ...string) string {
	c.t.Helper()
	c.Send(Request(args...))
	return c.Read()
}

// Request returns args as a multibulk request.
func Request(args ...string) string {
	out := resp.AppendArray(nil, len(args))
	for _, a := range args {
		out = resp.AppendBulkString(out, a)
	}
	return string(out)
}

// Send writes raw bytes, which may be many requests or bad input.
func (c *Conn) Send(raw string) {
	c.t.Helper()
	c.c.SetDeadline(time.Now().Add(Timeout))
	if _, err := io.WriteString(c.c, raw); err != nil {
		c.t.Fatalf("redistest: write to %s: %v", c.c.RemoteAddr(), err)
	}
}

// Read reads one reply and returns it as it came.
func (c *Conn) Read() string {
	c.t.Helper()
	s, err := c.ReadErr()
	if err != nil {
		c.t.Fatalf("redistest: read from %s: %v", c.c.RemoteAddr(), err)
	}
	return s
}

// ReadErr reads one reply and returns it as it came, or the error that ended
// the read: io.EOF once the other side closed the connection.
func (c *Conn) ReadErr() (string, error) {
	c.c.SetDeadline(time.Now().Add(Timeout))
	if err := c.r.ReadReply(&c.rp); err != nil {
		return "", err
	}
	return string(c.rp.Bytes()), nil
}

// Closed reports whether the other side has closed the connection: a read
// ends in EOF (or a reset) within a second, with no reply before it. A reply
// that comes instead fails the test.
func (c *Conn) Closed() bool {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(time.Second))
	err := c.r.ReadReply(&c.rp)
	var ne net.Error
	switch {
	case err == nil:
		c.t.Fatalf("redistest: reply %q where the connection was to close", c.rp.Bytes())
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), strings.Contains(err.Error(), "connection reset"):
		return true
	case errors.As(err, &ne) && ne.Timeout():
		return false
	default:
		c.t.Fatalf("redistest: read from %s: %v", c.c.RemoteAddr(), err)
	}
	return false
}

// Keys returns the keys of the server's database 0, sorted, as KEYS * lists
// them (for tests of where keys went: the server's keys are few).
func (s *Server) Keys() []string {
	s.t.Helper()
	return s.KeysOf(0)
}

// KeysOf returns the keys of the server's database db, sorted.
func (s *Server) KeysOf(db int) []string {
	s.t.Helper()
	c := s.dial()
	defer c.Close()
	if db != 0 {
		if got := c.Do("SELECT", strconv.Itoa(db)); got != "+OK\r\n" {
			s.t.Fatalf("redistest: SELECT %d: %q", db, got)
		}
	}
	reply := c.Do("KEYS", "*")
	var rp resp.Reply
	if err := resp.NewReader(strings.NewReader(reply), resp.Limits{}).ReadReply(&rp); err != nil || rp.Kind != resp.KindArray {
		s.t.Fatalf("redistest: KEYS * answered %q", reply)
	}
	var keys []string
	for _, e := range rp.AppendElems(nil) {
		keys = append(keys, string(e[bytes.IndexByte(e, '\n')+1:len(e)-2]))
	}
	slices.Sort(keys)
	return keys
}

// Exchange sends in to addr on a connection of its own, ends the
// connection's writing side and returns all that comes back before the other
// side closes the connection: the replies to the requests in, and the error
// reply to bad input after which Redis closes the connection.
func Exchange(t testing.TB, addr, in string) string {
	t.Helper()
	return testprog.Exchange(t, addr, in, Timeout)
}
