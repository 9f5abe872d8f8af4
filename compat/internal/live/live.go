// Package live starts the real programs that package compat copies — memcached,
// nutcracker (twemproxy), nginx, and small client programs against libmemcached,
// spymemcached and the npm package hashring — on loopback addresses, and asks each
// where it sends keys. compat's interop tests and the golden-file generator in
// compat/testdata/gen use it.
//
// Everything listens on 127.0.0.0/8 only. Every process is started by this package
// and stopped by its PID (Proc.Stop); nothing is killed by name.
package live

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Timeout bounds each wait of this package: for a server to listen, for a client
// program to answer.
var Timeout = 20 * time.Second

// ErrMissing is wrapped by the errors of programs that are not installed.
var ErrMissing = errors.New("not installed")

// Binary returns the path of the named program, looking in PATH and then in the
// sbin directories where Debian puts nutcracker and nginx.
func Binary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("live: %s: %w", name, ErrMissing)
}

// A Proc is a process started by this package.
type Proc struct {
	// Name is the program's name, for messages.
	Name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	once sync.Once
}

// Start starts the program at path with args; its output is kept for Output.
func Start(path string, args ...string) (*Proc, error) {
	cmd := exec.Command(path, args...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("live: start %s: %w", filepath.Base(path), err)
	}
	p := &Proc{Name: filepath.Base(path), cmd: cmd, out: out, done: make(chan struct{})}
	go p.wait()
	return p, nil
}

func (p *Proc) wait() {
	p.cmd.Wait()
	close(p.done)
}

// PID returns the process ID.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Output returns what the process has written so far.
func (p *Proc) Output() string { return p.out.String() }

// Stop ends the process by its PID (SIGKILL) and waits for it. It is safe to call
// more than once.
func (p *Proc) Stop() {
	p.once.Do(func() {
		if !p.Exited() {
			p.cmd.Process.Kill()
		}
		select {
		case <-p.done:
		case <-time.After(Timeout):
		}
	})
}

// WaitListen waits until addr accepts TCP connections, failing early if p exits.
func (p *Proc) WaitListen(addr string) error {
	deadline := time.Now().Add(Timeout)
	for {
		c, err := dial(addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if p.Exited() {
			return fmt.Errorf("live: %s exited before listening on %s: %s", p.Name, addr, strings.TrimSpace(p.Output()))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("live: %s did not listen on %s within %v: %s", p.Name, addr, Timeout, strings.TrimSpace(p.Output()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.b.Len() > 1<<20 {
		return len(p), nil // keep the start, drop floods
	}
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// FreePort returns a TCP port that is free on ip now.
func FreePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("live: free port on %s: %w", ip, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// LoopbackIP returns a random address in 127.0.0.0/8 other than 127.0.0.1, on
// which port is free: servers on distinct loopback addresses can share a port
// such as memcached's 11211, and their names differ in length.
func LoopbackIP(r *rand.Rand, port int) (string, error) {
	var last error
	for range 50 {
		ip := fmt.Sprintf("127.%d.%d.%d", r.IntN(256), r.IntN(256), 1+r.IntN(254))
		if ip == "127.0.0.1" {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			last = err
			continue
		}
		l.Close()
		return ip, nil
	}
	return "", fmt.Errorf("live: no loopback address with port %d free: %w", port, last)
}

// run runs path with args and stdin, returning its stdout; stderr goes into the
// error.
func run(ctx context.Context, env []string, stdin []byte, path string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout*3)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("live: %s %s: %w: %s", filepath.Base(path), strings.Join(args, " "), err, tail(stderr.String()))
	}
	return stdout.Bytes(), nil
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 2000 {
		s = "..." + s[len(s)-2000:]
	}
	return s
}

// Version returns the first line the program prints for args (such as "-V").
func Version(path string, args ...string) string {
	out, err := exec.Command(path, args...).CombinedOutput()
	if err != nil && len(out) == 0 {
		return "unknown"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(line)
}

// DebVersion returns the installed version of a Debian package, or "unknown".
func DebVersion(pkg string) string {
	out, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", pkg).Output()
	if err != nil || len(out) == 0 {
		return "unknown"
	}
	return string(out)
}

// dial connects to addr: a Unix socket if it starts with "/", else TCP.
func dial(addr string, timeout time.Duration) (net.Conn, error) {
	if strings.HasPrefix(addr, "/") {
		return net.DialTimeout("unix", addr, timeout)
	}
	return net.DialTimeout("tcp", addr, timeout)
}
