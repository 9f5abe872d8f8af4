package testprog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// FreePort returns a TCP port of 127.0.0.1 that was free a moment ago. Tests
// never use fixed ports: several test binaries, and several checkouts, run at
// once on one machine.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := FreePortOn("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// FreeAddr returns "127.0.0.1:PORT" with a port that was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
}

// portTries is how many sets of free ports StartOnFreePorts tries.
const portTries = 3

// StartOnFreePorts is Start for a program that listens on n TCP ports of
// 127.0.0.1: prog returns the program for addresses ("127.0.0.1:PORT") whose
// ports were free a moment ago, and Start starts it. A port can be taken by
// another process between the two, as by a test binary running beside this
// one; a program that then exits before it is ready is started again on new
// ports, up to three times in all. It returns the process and the addresses
// it listens on.
func StartOnFreePorts(t testing.TB, n int, prog func(addrs []string) Program) (*Proc, []string) {
	t.Helper()
	for try := 1; ; try++ {
		addrs := make([]string, n)
		for i := range addrs {
			addrs[i] = FreeAddr(t)
		}
		proc, err := startFor(t, prog(addrs))
		if errors.Is(err, errExited) && try < portTries {
			t.Logf("%v; trying other ports", err)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return proc, addrs
	}
}

// FreePortOn returns a TCP port that was free on the address ip a moment ago.
func FreePortOn(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("testprog: free port on %s: %w", ip, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Network returns the network of addr: "unix" if it is a path (it starts with
// '/'), else "tcp".
func Network(addr string) string {
	if strings.HasPrefix(addr, "/") {
		return "unix"
	}
	return "tcp"
}

// Listening returns a Program.Ready check that holds once every one of addrs
// ("host:port", or the path of a Unix socket) accepts connections. On Linux a
// TCP port must also be the started program's: a port taken by another
// process between FreePort and the start (a test binary running beside this
// one) accepts connections too, and the program is then not ready (it exits,
// failing to listen, and StartOnFreePorts tries other ports).
func Listening(addrs ...string) func(context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		for _, addr := range addrs {
			c, err := d.DialContext(ctx, Network(addr), addr)
			if err != nil {
				var op *net.OpError
				if errors.As(err, &op) {
					err = op.Err // the address is in the message already
				}
				return fmt.Errorf("%s: %w", addr, err)
			}
			c.Close()
			pid, ok := ctx.Value(pidKey{}).(int)
			if !ok || Network(addr) != "tcp" {
				continue
			}
			if port := c.RemoteAddr().(*net.TCPAddr).Port; !ownsListener(pid, port) {
				return fmt.Errorf("%s: another process listens there", addr)
			}
		}
		return nil
	}
}

// pidKey is the key of the started process's ID in the context of its
// Program.Ready check.
type pidKey struct{}

// ownsListener reports whether the process pid holds the socket that listens
// on TCP port, or it cannot be told.
func ownsListener(pid, port int) bool {
	held, known := listenerOf(pid, port)
	return held || !known
}

// Exchange sends in to addr (TCP) on a connection of its own, ends the
// connection's writing side and returns all that comes back before the other
// side closes the connection, within d: the replies to the requests in, as a
// server answers a client that has sent all it will. A reset connection ends
// what comes back; any other error fails the test.
func Exchange(t testing.TB, addr, in string, d time.Duration) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, d)
	if err != nil {
		t.Fatalf("testprog: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(d))
	done := make(chan struct{})
	go func() { // the server may close before it reads all; its reply is read meanwhile
		defer close(done)
		io.WriteString(c, in)
		c.(*net.TCPConn).CloseWrite()
	}()
	var out bytes.Buffer
	_, err = io.Copy(&out, c)
	<-done
	if err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("testprog: read from %s: %v (read %q)", addr, err, out.Bytes())
	}
	return out.String()
}
