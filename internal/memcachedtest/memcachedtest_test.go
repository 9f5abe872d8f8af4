//go:build unix

package memcachedtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// version sends "version" to addr (a TCP address, or a socket's path) and
// returns the reply line, or an error if none comes within wait.
func version(addr string, wait time.Duration) (string, error) {
	network := "tcp"
	if strings.HasPrefix(addr, "/") {
		network = "unix"
	}
	c, err := net.DialTimeout(network, addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(wait))
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
	if got, err := version(addr, 10*time.Second); err != nil || !strings.HasPrefix(got, "VERSION ") {
		t.Fatalf("version on %s = %q, %v; want VERSION ...", addr, got, err)
	}

	s.Freeze()
	if got, err := version(addr, 300*time.Millisecond); err == nil {
		t.Errorf("version on %s after SIGSTOP = %q; want a timeout", addr, got)
	}
	s.Thaw()
	if got, err := version(addr, 10*time.Second); err != nil || !strings.HasPrefix(got, "VERSION ") {
		t.Errorf("version on %s after SIGCONT = %q, %v; want VERSION ...", addr, got, err)
	}

	s.Freeze() // Stop must end a frozen server too
	s.Stop()
	if got, err := version(addr, 10*time.Second); err == nil {
		t.Errorf("version on %s after Stop = %q; want an error", addr, got)
	}
	s.Stop() // a second Stop does nothing

	s.Restart()
	if s.Addr != addr {
		t.Errorf("Addr after Restart = %q; want %q", s.Addr, addr)
	}
	if got, err := version(addr, 10*time.Second); err != nil || !strings.HasPrefix(got, "VERSION ") {
		t.Errorf("version on %s after Restart = %q, %v; want VERSION ...", addr, got, err)
	}

	s.Signal(syscall.SIGKILL)
	s.Restart() // after a kill, as after a crash
	if got, err := version(addr, 10*time.Second); err != nil || !strings.HasPrefix(got, "VERSION ") {
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
	if got, err := version(s.Addr, 10*time.Second); err != nil || !strings.HasPrefix(got, "VERSION ") {
		t.Fatalf("version on %s = %q, %v; want VERSION ...", s.Addr, got, err)
	}
	s.Signal(syscall.SIGKILL)
	s.Restart()
	if got, err := version(s.Addr, 10*time.Second); err != nil || !strings.HasPrefix(got, "VERSION ") {
		t.Errorf("version on %s after SIGKILL and Restart = %q, %v; want VERSION ...", s.Addr, got, err)
	}
}

// TestCleanup checks that a server is gone, by its PID, once its test ends.
func TestCleanup(t *testing.T) {
	LookPath(t, "memcached") // the subtest would skip, leaving nothing to check
	var pid int
	t.Run("start", func(t *testing.T) {
		pid = Start(t).Pid()
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

func TestParseStats(t *testing.T) {
	got, err := ParseStats("STAT pid 7\r\nSTAT version 1.6.18\r\nEND\r\n")
	if err != nil || len(got) != 2 || got["pid"] != "7" || got["version"] != "1.6.18" {
		t.Errorf("ParseStats = %v, %v; want pid 7, version 1.6.18", got, err)
	}
	if got, err := ParseStats("END\r\n"); err != nil || len(got) != 0 {
		t.Errorf("ParseStats(END) = %v, %v; want no stats", got, err)
	}
	for _, bad := range []string{"", "STAT pid 7\r\n", "STAT pid\r\nEND\r\n", "ERROR\r\nEND\r\n"} {
		if _, err := ParseStats(bad); err == nil {
			t.Errorf("ParseStats(%q) = nil error; want one", bad)
		}
	}
}

// TestDiesWithTestBinary runs this test binary again as a child that starts
// memcached and exits without stopping it, as a binary that go test's
// -timeout ends does: the memcached must go with it (on Linux, where
// testprog sets the parent-death signal; memcached as root used to become
// nobody, which cleared it).
func TestDiesWithTestBinary(t *testing.T) {
	if os.Getenv("MEMCACHEDTEST_CHILD") != "" {
		s := Start(t)
		fmt.Println("pid", s.Pid())
		os.Exit(0) // no cleanup: the memcached is left to the parent-death signal
	}
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	LookPath(t, "memcached") // the child would skip, leaving nothing to check
	cmd := exec.Command(os.Args[0], "-test.run=^TestDiesWithTestBinary$")
	cmd.Env = append(os.Environ(), "MEMCACHEDTEST_CHILD=1")
	out, err := cmd.CombinedOutput()
	var pid int
	if _, serr := fmt.Sscanf(string(out), "pid %d", &pid); err != nil || serr != nil {
		t.Fatalf("child: %v, %v:\n%s", err, serr, out)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("memcached (pid %d) runs 5s after the test binary that started it exited", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid is a process that has not exited (a zombie has).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) STATE ...: the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}
