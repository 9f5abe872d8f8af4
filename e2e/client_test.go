package e2e

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// client is a raw text client of a proxy pool.
type client struct {
	c  net.Conn
	br *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{c: c, br: bufio.NewReader(c)}
}

// roundTrip sends req and reads its reply up to END, +OK, or one line; if
// want is not empty, the reply must be it.
func (c *client) roundTrip(t *testing.T, req, want string) string {
	t.Helper()
	got := c.send(t, req)
	if want != "" && got != want {
		t.Fatalf("%q = %q; want %q", req, got, want)
	}
	return got
}

// send sends req and returns its reply, as roundTrip reads it.
func (c *client) send(t *testing.T, req string) string {
	t.Helper()
	c.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c.c, req); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for {
		line, err := c.br.ReadString('\n')
		b.WriteString(line)
		if err != nil {
			t.Fatalf("%q: %v after %q", req, err, b.String())
		}
		if !strings.HasPrefix(req, "get ") || line == "END\r\n" || strings.Contains(line, "ERROR") {
			return b.String()
		}
	}
}
