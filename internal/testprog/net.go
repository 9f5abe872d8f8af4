package testprog

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
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
// ("host:port", or the path of a Unix socket) accepts connections.
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
		}
		return nil
	}
}
