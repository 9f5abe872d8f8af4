// Package live starts the real programs that package compat copies — memcached,
// nutcracker (twemproxy), nginx, and small client programs against libmemcached,
// spymemcached and the npm package hashring — on loopback addresses, and asks each
// where it sends keys. compat's interop tests and the golden-file generator in
// compat/testdata/gen use it.
//
// Everything listens on 127.0.0.0/8 only. Every process is started through package
// testprog and stopped by its PID; nothing is killed by name. The errors about a
// program or package that is not installed wrap testprog.ErrMissing.
package live

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/chash-dev/chash/internal/testprog"
)

// Timeout bounds each wait of this package: for a server to listen, for a client
// program to answer.
var Timeout = 20 * time.Second

// start starts p with this package's Timeout and waits until it is ready.
func start(p testprog.Program) (*testprog.Proc, error) {
	p.Timeout = Timeout
	return p.Start()
}

// dial connects to addr: a Unix socket if it starts with "/", else TCP.
func dial(addr string, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout(testprog.Network(addr), addr, timeout)
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
