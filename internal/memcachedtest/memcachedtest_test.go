//go:build unix

package memcachedtest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// version sends "version" to addr (a TCP address, or a socket's path) and
// returns the reply line.
func version(addr string) (string, error) {
	network := "tcp"
	if strings.HasPrefix(addr, "/") {
		network = "unix"
	}
	c, err := net.DialTimeout(network, addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("version\r\n")); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

// TestServer freezes, thaws, stops and restarts a server, and checks that it
// answers, or does not, at each step and always on the same address.
func TestServer(t *testing.T) {
	s := Start(t, "-m", "16")
	addr := s.Addr
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("Addr = %q; want 127.0.0.1:port", addr)
	}
	if got, err := version(addr); err != nil || !strings.HasPrefix(got, "VERSION ") {
		t.Fatalf("version on %s = %q, %v; want VERSION ...", addr, got, err)
	}

	s.Signal(syscall.SIGSTOP)
	if got, err := version(addr); err == nil {
		t.Errorf("version on %s after SIGSTOP = %q; want a timeout", addr, got)
	}
	s.Signal(syscall.SIGCONT)
	if got, err := version(addr); err != nil || !strings.HasPrefix(got, "VERSION ") {
		t.Errorf("version on %s after SIGCONT = %q, %v; want VERSION ...", addr, got, err)
	}

	s.Signal(syscall.SIGSTOP) // Stop must end a frozen server too
	s.Stop()
	if got, err := version(addr); err == nil {
		t.Errorf("version on %s after Stop = %q; want an error", addr, got)
	}
	s.Stop() // a second Stop does nothing

	s.Restart()
	if s.Addr != addr {
		t.Errorf("Addr after Restart = %q; want %q", s.Addr, addr)
	}
	if got, err := version(addr); err != nil || !strings.HasPrefix(got, "VERSION ") {
		t.Errorf("version on %s after Restart = %q, %v; want VERSION ...", addr, got, err)
	}

	s.Signal(syscall.SIGKILL)
	s.Restart() // after a kill, as after a crash
	if got, err := version(addr); err != nil || !strings.HasPrefix(got, "VERSION ") {
		t.Errorf("version on %s after SIGKILL and Restart = %q, %v; want VERSION ...", addr, got, err)
	}
}

// TestStartUnix starts a server on a Unix socket, kills it and restarts it on
// the same path.
func TestStartUnix(t *testing.T) {
	s := StartUnix(t)
	if s.Network != "unix" || !strings.HasSuffix(s.Addr, ".sock") {
		t.Fatalf("StartUnix: Network %q, Addr %q; want unix and a socket path", s.Network, s.Addr)
	}
	if got, err := version(s.Addr); err != nil || !strings.HasPrefix(got, "VERSION ") {
		t.Fatalf("version on %s = %q, %v; want VERSION ...", s.Addr, got, err)
	}
	s.Signal(syscall.SIGKILL)
	s.Restart()
	if got, err := version(s.Addr); err != nil || !strings.HasPrefix(got, "VERSION ") {
		t.Errorf("version on %s after SIGKILL and Restart = %q, %v; want VERSION ...", s.Addr, got, err)
	}
}

// TestCleanup checks that a server is gone, by its PID, once its test ends.
func TestCleanup(t *testing.T) {
	var pid int
	t.Run("start", func(t *testing.T) {
		pid = Start(t).cmd.Process.Pid
	})
	if pid == 0 {
		t.Fatal("no server started")
	}
	// The cleanup waited for the process, so its PID is free (or reused by
	// another process, which is very unlikely this soon).
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("memcached (pid %d) after its test ended: kill -0 = %v; want ESRCH", pid, err)
	}
}

// TestStartFailure starts memcached with a chunk size it refuses (-n 0): the
// test fails and says that memcached exited.
func TestStartFailure(t *testing.T) {
	LookPath(t, "memcached")
	tb := &recorder{TB: t}
	tb.run(func() { Start(tb, "-n", "0") })
	if !tb.failed || !strings.Contains(tb.msg, "exited before accepting connections") {
		t.Errorf(`Start(t, "-n", "0"): failed %v, %q; want a failure saying memcached exited`, tb.failed, tb.msg)
	}
}

// TestLookPath checks the rule for a missing program: skip, unless CI is set
// to anything.
func TestLookPath(t *testing.T) {
	const missing = "memcachedtest-no-such-program"
	for _, tt := range []struct {
		ci           string
		skip, failed bool
	}{
		{"", true, false},
		{"true", false, true},
		{"1", false, true},
	} {
		t.Run("CI="+tt.ci, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			tb := &recorder{TB: t}
			tb.run(func() { LookPath(tb, missing) })
			if tb.skipped != tt.skip || tb.failed != tt.failed {
				t.Errorf("LookPath(%q) with CI=%q: skipped %v, failed %v (%q); want skipped %v, failed %v",
					missing, tt.ci, tb.skipped, tb.failed, tb.msg, tt.skip, tt.failed)
			}
		})
	}
	want, err := exec.LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	if got := LookPath(t, "sh"); got != want {
		t.Errorf("LookPath(%q) = %q; want %q", "sh", got, want)
	}
}

// recorder is a testing.TB whose Fatalf and Skipf record the outcome and end
// the goroutine of run, as the real ones end the test's; the rest is the
// test's own TB, cleanups included.
type recorder struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f in a goroutine of its own, as Fatalf and Skipf end it.
func (r *recorder) run(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}
