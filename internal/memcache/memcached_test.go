package memcache

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
)

// mcVersion is the memcached whose answers the tables record.
const mcVersion = "VERSION 1.6.18"

// startMemcached starts a memcached for the tables' checks, of the version they
// record.
func startMemcached(t *testing.T) *memcachedtest.Server {
	t.Helper()
	s := memcachedtest.Start(t)
	c := mcDial(t, s.Addr)
	io.WriteString(c, "version\r\n")
	if got := mcAnswer(t, c, "\n"); got != mcVersion+"\r\n" {
		t.Fatalf("memcached answers version with %q; the tables record %s", got, mcVersion)
	}
	return s
}

// mcDo empties the cache of the memcached at addr, sends in, "mn\r\n" and
// "version\r\n" on a new connection, and returns the answer up to "MN\r\n",
// or up to the end of the stream followed by closed.
func mcDo(t *testing.T, addr, in string) string {
	t.Helper()
	c := mcDial(t, addr)
	io.WriteString(c, "flush_all\r\n")
	if got := mcAnswer(t, c, "\n"); got != "OK\r\n" {
		t.Fatalf("memcached answers flush_all with %q", got)
	}
	c.Close()
	// A new connection: memcached reads the binary protocol on one that starts
	// with byte 0x80. Written concurrently: memcached may close the connection,
	// or answer before it has read everything.
	c = mcDial(t, addr)
	go io.WriteString(c, in+"mn\r\nversion\r\n")
	out := mcAnswer(t, c, "MN\r\n"+mcVersion+"\r\n")
	if strings.HasSuffix(out, timedOut) {
		t.Fatalf("memcached's answer to %.80q: %q", in, out)
	}
	return strings.TrimSuffix(out, mcVersion+"\r\n")
}

func mcDial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// timedOut ends an answer that memcached did not finish.
const timedOut = "<timed out>"

// mcAnswer reads from c up to end, or to the end of the stream, then returns
// what it read followed by closed, or timedOut and the error if the read
// failed.
func mcAnswer(t *testing.T, c net.Conn, end string) string {
	t.Helper()
	var out []byte
	buf := make([]byte, 4096)
	for !bytes.HasSuffix(out, []byte(end)) {
		n, err := c.Read(buf)
		out = append(out, buf[:n]...)
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return string(out) + closed
		}
		if err != nil {
			return fmt.Sprintf("%s%s: %v", out, timedOut, err)
		}
	}
	return string(out)
}

// TestReadRequestMemcached checks readRequestTests against a real memcached:
// its answer to each input is the one recorded, and a request the Reader takes
// is answered the same when written by AppendRequest.
func TestReadRequestMemcached(t *testing.T) {
	s := startMemcached(t)
	for _, tt := range readRequestTests {
		if got := mcDo(t, s.Addr, tt.in); got != tt.mc {
			t.Errorf("memcached answers %.80q with %.200q; the table says %.200q", tt.in, got, tt.mc)
		}
		if tt.reply == "" {
			if got := mcDo(t, s.Addr, tt.want); got != tt.mc {
				t.Errorf("memcached answers %.80q, written as %.80q, with %.200q; want %.200q", tt.in, tt.want, got, tt.mc)
			}
		}
	}
}

// TestMemcachedLineLimit checks MaxCommandLine against a real memcached: it
// waits for the rest of a line of 2048 bytes without a newline, and closes the
// connection at 2049 bytes, whatever the command, except get and gets.
func TestMemcachedLineLimit(t *testing.T) {
	s := startMemcached(t)
	for _, tt := range []struct {
		head   string
		n      int
		closes bool
	}{
		{"mg a v", MaxCommandLine, false},
		{"mg a v", MaxCommandLine + 1, true},
		{"set a 0 0 1", MaxCommandLine + 1, true},
		{"gat 0 a", MaxCommandLine + 1, true},
		{"get a", MaxCommandLine + 1, false},
		{"gets a", 3 * MaxCommandLine, false},
	} {
		c := mcDial(t, s.Addr)
		// The line so far: the command, then spaces, which memcached skips.
		io.WriteString(c, tt.head+strings.Repeat(" ", tt.n-len(tt.head)))
		if tt.closes {
			// Never ended: memcached must close it on its own.
			if got := mcAnswer(t, c, "\n"); got != closed {
				t.Errorf("memcached given %d bytes of %q without a newline answers %q; want it closed", tt.n, tt.head, got)
			}
			continue
		}
		io.WriteString(c, "\nmn\r\n")
		if got := mcAnswer(t, c, "MN\r\n"); strings.HasSuffix(got, closed) || strings.HasPrefix(got, "ERROR") {
			t.Errorf("memcached given %d bytes of %q, then a newline, answers %q; want the line read", tt.n, tt.head, got)
		}
	}
}
