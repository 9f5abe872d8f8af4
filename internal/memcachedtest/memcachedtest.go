// Package memcachedtest starts real memcached servers on free 127.0.0.1 ports
// for tests, and stops them by PID, in the manner of net/http/httptest. It is
// package testprog's launcher with memcached's arguments.
//
// A test that needs memcached is skipped where it is not installed, naming the
// command that installs it, except in CI (the environment variable CI set to
// anything), where it fails: see testprog.
package memcachedtest

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/chash-dev/chash/internal/testprog"
)

// LookPath returns the path of the named program; it is testprog.LookPath,
// kept for the tests that look up nutcracker through this package.
func LookPath(t testing.TB, name string) string {
	t.Helper()
	return testprog.LookPath(t, name)
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago; it is
// testprog.FreePort.
func FreePort(t testing.TB) int {
	t.Helper()
	return testprog.FreePort(t)
}

// A Server is a memcached process started by Start. Its methods must not be
// called concurrently.
type Server struct {
	// Addr is the server's "127.0.0.1:port", or its socket's path if started
	// by StartUnix; it stays the same across Restart.
	Addr string
	// Network is "tcp", or "unix" if started by StartUnix.
	Network string

	t    testing.TB
	proc *testprog.Proc
}

// Start starts memcached on a free port of 127.0.0.1, with args after its own
// (-l, -p, -U 0, and -u root when run as root, which memcached requires),
// and waits until it accepts connections. The server is stopped when the test
// ends.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	proc, addrs := testprog.StartOnFreePorts(t, 1, func(addrs []string) testprog.Program {
		_, port, _ := net.SplitHostPort(addrs[0])
		return program(addrs[0], append([]string{"-l", "127.0.0.1", "-p", port, "-U", "0"}, args...))
	})
	return &Server{Addr: addrs[0], Network: "tcp", t: t, proc: proc}
}

// StartUnix is Start for a server on a Unix socket (memcached's -s), in a
// directory of its own that the test's end removes.
func StartUnix(t testing.TB, args ...string) *Server {
	t.Helper()
	// Not t.TempDir: a path must stay under the 108 bytes a socket name
	// allows; and the directory is open to all, for a memcached run as
	// another user.
	dir, err := os.MkdirTemp("", "memcachedtest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "memcached.sock")
	proc := testprog.Start(t, program(sock, append([]string{"-s", sock}, args...)))
	return &Server{Addr: sock, Network: "unix", t: t, proc: proc}
}

// program returns memcached with args, ready once addr accepts connections.
func program(addr string, args []string) testprog.Program {
	if os.Geteuid() == 0 {
		// As root, memcached wants a user to become. Root itself: a
		// change of user would clear the parent-death signal that stops
		// memcached when the test binary dies (a -timeout panic, say),
		// and "-u nobody" left such memcacheds running.
		args = append(args, "-u", "root")
	}
	return testprog.Program{Name: "memcached", Args: args, Ready: testprog.Listening(addr)}
}

// Pid returns the server's process ID.
func (s *Server) Pid() int { return s.proc.Pid() }

// Signal sends sig to the running server, SIGKILL in fault tests (Freeze and
// Thaw stop and resume it). It fails the test if the server has exited.
func (s *Server) Signal(sig os.Signal) { s.check(s.proc.Signal(sig)) }

// Freeze stops the server with SIGSTOP, as a hung server: it keeps its
// connections and answers nothing until Thaw. It returns once the server has
// stopped (see testprog.Proc.Freeze).
func (s *Server) Freeze() { s.check(s.proc.Freeze()) }

// Thaw resumes a frozen server with SIGCONT.
func (s *Server) Thaw() { s.check(s.proc.Thaw()) }

func (s *Server) check(err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatalf("memcachedtest: memcached on %s: %v", s.Addr, err)
	}
}

// Stop ends the server by its PID and waits for it to exit; a frozen server
// is thawed to receive SIGTERM. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.t.Helper()
	if err := s.proc.Stop(); err != nil {
		s.t.Fatalf("memcachedtest: memcached on %s: %v", s.Addr, err)
	}
}

// Restart stops the server if it runs and starts memcached again on the same
// address with the same arguments, as a crashed server comes back.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.proc.Restart(); err != nil {
		s.t.Fatalf("memcachedtest: memcached on %s: %v", s.Addr, err)
	}
}
