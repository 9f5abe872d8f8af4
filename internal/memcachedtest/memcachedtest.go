// Package memcachedtest starts real memcached servers on free 127.0.0.1 ports
// for tests, and stops them by PID, in the manner of net/http/httptest.
//
// A test that needs memcached is skipped where it is not installed, except in
// CI: when the environment variable CI is set to anything (.ci/run and CI
// services set CI=true), a missing memcached fails the test, because a skip
// there would hide a missing install. LookPath applies the same rule to the
// programs such tests run beside memcached, such as nutcracker.
//
// Nothing is ever killed by name: each server is stopped through the process
// this package started, when the test ends at the latest.
package memcachedtest

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startTimeout bounds the wait for a new memcached to accept connections; it
// takes milliseconds, but a loaded machine running tests under -race is slow.
const startTimeout = 10 * time.Second

// LookPath returns the path of the named program, as exec.LookPath finds it.
// If the program is missing the test is skipped, or fails when CI is set.
func LookPath(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("memcachedtest: %s not installed (CI must install it: .ci/apt-packages): %v", name, err)
		}
		t.Skipf("%s not installed", name)
	}
	return path
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("memcachedtest: free port on 127.0.0.1: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// A Server is a memcached process started by Start. Its methods must not be
// called concurrently.
type Server struct {
	// Addr is the server's "127.0.0.1:port", or its socket's path if started
	// by StartUnix; it stays the same across Restart.
	Addr string
	// Network is "tcp", or "unix" if started by StartUnix.
	Network string

	t      testing.TB
	bin    string
	args   []string
	cmd    *exec.Cmd     // nil while stopped
	done   chan struct{} // closed when cmd has exited
	stderr bytes.Buffer  // cmd's; read only once done is closed
}

// Start starts memcached on a free port of 127.0.0.1, with args after its own
// (-l, -p, -U 0, and -u nobody when run as root, which memcached requires),
// and waits until it accepts connections. The server is stopped when the test
// ends.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	return launch(t, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t))), args)
}

// StartUnix is Start for a server on a Unix socket (memcached's -s), in a
// directory of its own that the test's end removes.
func StartUnix(t testing.TB, args ...string) *Server {
	t.Helper()
	// Not t.TempDir: memcached run as nobody must be able to create the
	// socket, and a path must stay under the 108 bytes a socket name allows.
	dir, err := os.MkdirTemp("", "memcachedtest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return launch(t, "unix", filepath.Join(dir, "memcached.sock"), args)
}

// launch starts a server on addr, stopped when the test ends.
func launch(t testing.TB, network, addr string, args []string) *Server {
	t.Helper()
	s := &Server{Addr: addr, Network: network, t: t, bin: LookPath(t, "memcached"), args: args}
	t.Cleanup(s.Stop)
	s.start()
	return s
}

func (s *Server) start() {
	s.t.Helper()
	var args []string
	if s.Network == "unix" {
		os.Remove(s.Addr) // a killed server leaves its socket behind
		args = []string{"-s", s.Addr}
	} else {
		_, port, _ := net.SplitHostPort(s.Addr)
		args = []string{"-l", "127.0.0.1", "-p", port, "-U", "0"}
	}
	if os.Geteuid() == 0 {
		args = append(args, "-u", "nobody")
	}
	s.stderr.Reset()
	cmd := exec.Command(s.bin, append(args, s.args...)...)
	cmd.Stderr = &s.stderr
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("memcachedtest: start memcached on %s: %v", s.Addr, err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) {
		cmd.Wait()
		close(done)
	}(s.done)

	deadline := time.Now().Add(startTimeout)
	for {
		c, err := net.DialTimeout(s.Network, s.Addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-s.done:
			s.cmd = nil
			s.t.Fatalf("memcachedtest: memcached on %s exited before accepting connections (%v): %s",
				s.Addr, cmd.ProcessState, strings.TrimSpace(s.stderr.String()))
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			s.t.Fatalf("memcachedtest: memcached on %s does not accept connections after %v: %v: %s",
				s.Addr, startTimeout, err, strings.TrimSpace(s.stderr.String()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Signal sends sig to the running server: fault tests freeze it with SIGSTOP,
// thaw it with SIGCONT or kill it with SIGKILL. It fails the test if the server
// is stopped or has exited.
func (s *Server) Signal(sig os.Signal) {
	s.t.Helper()
	if s.cmd == nil {
		s.t.Fatalf("memcachedtest: signal %v to memcached on %s: stopped", sig, s.Addr)
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("memcachedtest: signal %v to memcached on %s (pid %d): %v", sig, s.Addr, s.cmd.Process.Pid, err)
	}
}

// Stop kills the server (SIGKILL, which also ends a frozen one) by its PID and
// waits for it to exit. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill() // fails only if it has exited already, as Signal(SIGKILL) makes it
	<-s.done
	s.cmd = nil
}

// Restart stops the server if it runs and starts memcached again on the same
// address with the same arguments, as a crashed server comes back.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}
