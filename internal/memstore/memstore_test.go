package memstore

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
)

// script is sent to a Store and to a real memcached; the replies must match.
var script = []string{
	"set a 5 0 2\r\nhi\r\n",
	"get a\r\n",
	"gets a\r\n",
	"get a a nokey a\r\n",
	"add a 0 0 1\r\nx\r\n",
	"add b 0 0 1\r\nx\r\n",
	"replace a 7 0 3\r\nabc\r\n",
	"replace zz 0 0 1\r\nx\r\n",
	"append a 0 0 2\r\nde\r\n",
	"prepend a 0 0 2\r\n01\r\n",
	"append zz 0 0 2\r\nde\r\n",
	"gets a b\r\n",
	"cas a 0 0 1 999\r\nx\r\n",
	"cas a 0 0 1 5\r\ny\r\n",
	"cas nokey 0 0 1 5\r\ny\r\n",
	"set n 0 0 2\r\n10\r\n",
	"incr n 5\r\n",
	"decr n 100\r\n",
	"get n\r\n",
	"incr n 18446744073709551615\r\n",
	"incr a 1\r\n",
	"incr nokey 1\r\n",
	"touch n 100\r\n",
	"touch nokey 100\r\n",
	"gat 100 n a\r\n",
	"gats 0 n\r\n",
	"delete b\r\n",
	"delete b\r\n",
	"set q 0 0 1 noreply\r\nq\r\n",
	"get q\r\n",
	"delete q noreply\r\n",
	"get q\r\n",
	"set e 0 -1 1\r\nx\r\n",
	"get e\r\n",
	"ms m 2 T0 F3\r\nhi\r\n",
	"mg m v f t\r\n",
	"mg m v k c s O99\r\n",
	"mg m s f\r\n",
	"mg m\r\n",
	"mg nokey v\r\n",
	"mg nokey v q\r\n",
	"mg nokey v k O5\r\n",
	"ms m 1 q\r\nx\r\n",
	"ms m 1 ME\r\nx\r\n",
	"ms m 1 MA\r\ny\r\n",
	"ms m 1 MP\r\nw\r\n",
	"ms zz 1 MR\r\nx\r\n",
	"mg m v\r\n",
	"ms c 1\r\n5\r\n",
	"ma c\r\n",
	"ma c D10 v\r\n",
	"ma c MD D100 v\r\n",
	"ma nokey\r\n",
	"ma nokey N0 J13 v\r\n",
	"md c q\r\n",
	"md c q\r\n",
	"md c\r\n",
	"ms eHl6 2 b\r\nhi\r\n",
	"mg eHl6 b v k\r\n",
	"get xyz\r\n",
	"mn\r\n",
	"bogus\r\n",
	"get " + strings.Repeat("k", 251) + "\r\n",
	"mg m v u\r\n",
	"mg m s P/path/ Lhint\r\n",
	"mg m v O" + strings.Repeat("o", 31) + "\r\n",
	"md nokey T30\r\n",
	"ms m 1 F4294967295\r\nx\r\n",
	"mg m f\r\n",
	"incr n x noreply\r\n",
	"delete a 1 noreply\r\n",
	"get n\r\n",
	// Errors the Reader answers as memcached does.
	"mg m v v\r\n",
	"mg m x\r\n",
	"mg m O" + strings.Repeat("o", 32) + "\r\n",
	"ms m 1 Mx\r\nx\r\n",
	"ms m 1 F-1\r\nx\r\n",
	"ma c Mx\r\n",
	"md c q q\r\n",
	"mg " + strings.Repeat("eHh4", 63) + " b v\r\n",
	"incr a -1\r\n",
	"touch a x\r\n",
	"gat x a\r\n",
	"flush_all\r\n",
	"get a n m b\r\n",
	"set a 0 0 1\r\nx\r\n",
	"flush_all noreply\r\nget a\r\n",
	"set a 0 0 1\r\nx\r\n",
	"flush_all -1\r\nget a\r\n",
	"flush_all 0 noreply\r\n",
	"flush_all x\r\n",
	"flush_all 1 2 3\r\n",
}

// strictTests are requests that memcached reads otherwise than they are
// written, so that the bytes after them run as a command: the store refuses
// them, never runs the hidden "delete keep", and closes the connection where
// the next bytes cannot be known to be a request. want is the answer to the
// request and "mn\r\n", and closed if the store closes the connection.
var strictTests = []struct{ in, want string }{
	{"set k\x00 0 0 13\r\ndelete keep\r\n\r\n", "CLIENT_ERROR bad command line format\r\nMN\r\n"},
	{"ms " + strings.Repeat("eHh4", 80) + " 13 b\r\ndelete keep\r\n\r\n", "CLIENT_ERROR bad command line format\r\nMN\r\n"},
	{"set " + strings.Repeat("k", 251) + " 0 0 13 noreply\r\ndelete keep\r\n\r\n", "MN\r\n"},
	{"set a +0 0 13\r\ndelete keep\r\n\r\n", "CLIENT_ERROR bad command line format\r\nMN\r\n"},
	{"set a -1 0 13\r\ndelete keep\r\n\r\n", "CLIENT_ERROR bad command line format\r\nMN\r\n"},
	{"set a 0 0 0\r\nZZdelete keep\r\n", "CLIENT_ERROR bad data chunk\r\n" + closed},
	{"set a 0 0 4294967309\r\ndelete keep\r\n", "CLIENT_ERROR bad command line format\r\n" + closed},
	{"set a 0 0 1 2 3\r\ndelete keep\r\n", "ERROR\r\n" + closed},
	{"mg keep v O" + strings.Repeat("o", 20000) + "\r\n", "CLIENT_ERROR line too long\r\nMN\r\n"},
	{"set keep 0 0 13 " + strings.Repeat(" ", 20000) + "\r\ndelete keep\r\n\r\n", "CLIENT_ERROR line too long\r\nMN\r\n"},
	{"get keep " + strings.Repeat("k", 70000) + "\r\n", "CLIENT_ERROR line too long\r\n" + closed},
	{"\x80\x07" + strings.Repeat("\x00", 22), "CLIENT_ERROR binary protocol is not supported\r\n" + closed},
}

const closed = "<closed>"

func TestStrict(t *testing.T) {
	addr := startStore(t, &Store{})
	for _, tt := range strictTests {
		dial(t, addr).do(t, "set keep 0 0 4\r\nkept\r\n")
		c := dial(t, addr)
		c.c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c.c, tt.in+"mn\r\n")
		var got []byte
		for !bytes.HasSuffix(got, []byte("MN\r\n")) {
			b, err := c.br.ReadByte()
			if err == io.EOF {
				got = append(got, closed...)
				break
			}
			if err != nil {
				t.Fatalf("%.80q: %q, %v", tt.in, got, err)
			}
			got = append(got, b)
		}
		if string(got) != tt.want {
			t.Errorf("%.80q: store answers %q; want %q", tt.in, got, tt.want)
		}
		if got := dial(t, addr).do(t, "get keep\r\n"); got != "VALUE keep 0 4\r\nkept\r\nEND\r\n" {
			t.Errorf("after %.80q, keep is %q", tt.in, got)
		}
	}
}

func startStore(t *testing.T, s *Store) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { ln.Close(); s.Close() })
	return ln.Addr().String()
}

type client struct {
	c   net.Conn
	br  *bufio.Reader
	seq int
}

func dial(t *testing.T, addr string) *client {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{c: c, br: bufio.NewReader(c)}
}

// do sends req and a get of a missing key with an opaque of its own, and
// returns what comes before the miss: unlike mn, it cannot be confused with the
// answer to a request of the script.
func (c *client) do(t *testing.T, req string) string {
	c.c.SetDeadline(time.Now().Add(5 * time.Second))
	c.seq++
	end := "EN O" + strconv.Itoa(c.seq) + "\r\n"
	io.WriteString(c.c, req+"mg __end__ O"+strconv.Itoa(c.seq)+"\r\n")
	var b strings.Builder
	for {
		line, err := c.br.ReadString('\n')
		if err != nil {
			t.Fatalf("%q: %v", req, err)
		}
		if line == end {
			return b.String()
		}
		b.WriteString(line)
	}
}

func TestMatchesMemcached(t *testing.T) {
	mc := dial(t, memcachedtest.Start(t).Addr)
	st := dial(t, startStore(t, &Store{}))
	for _, req := range script {
		if got, want := st.do(t, req), mc.do(t, req); got != want {
			t.Errorf("%q: store answers %q; memcached %q", req, got, want)
		}
	}
}

func TestEviction(t *testing.T) {
	s := &Store{MaxBytes: 10000}
	c := dial(t, startStore(t, s))
	v := strings.Repeat("v", 100)
	for i := range 200 {
		c.do(t, "set k"+strconv.Itoa(i)+" 0 0 100\r\n"+v+"\r\n")
		c.do(t, "get k0\r\n") // k0 stays recently used
	}
	if s.used > s.MaxBytes {
		t.Errorf("store uses %d bytes; limit %d", s.used, s.MaxBytes)
	}
	if got := c.do(t, "get k0\r\n"); !strings.HasPrefix(got, "VALUE k0") {
		t.Errorf("recently used k0 evicted: %q", got)
	}
	if got := c.do(t, "get k1\r\n"); got != "END\r\n" {
		t.Errorf("least recently used k1 kept: %q", got)
	}
}

// TestFlushDelay checks flush_all with a delay: the items stored before its
// time, including those stored after the command, go at that time.
func TestFlushDelay(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	s := &Store{Now: func() time.Time { return now }}
	c := dial(t, startStore(t, s))
	c.do(t, "set a 0 0 1\r\nx\r\n")
	if got := c.do(t, "flush_all 10\r\n"); got != "OK\r\n" {
		t.Fatalf("flush_all 10 = %q; want OK", got)
	}
	c.do(t, "set b 0 0 1\r\ny\r\n")
	now = now.Add(5 * time.Second)
	if got := c.do(t, "get a b\r\n"); got != "VALUE a 0 1\r\nx\r\nVALUE b 0 1\r\ny\r\nEND\r\n" {
		t.Errorf("5s after flush_all 10: %q; want both items", got)
	}
	now = now.Add(5 * time.Second)
	if got := c.do(t, "get a b\r\n"); got != "END\r\n" {
		t.Errorf("10s after flush_all 10: %q; want none", got)
	}
	c.do(t, "set c 0 0 1\r\nz\r\n")
	now = now.Add(time.Hour)
	if got := c.do(t, "get c\r\n"); got != "VALUE c 0 1\r\nz\r\nEND\r\n" {
		t.Errorf("an item stored after the flush's time: %q; want it kept", got)
	}
}

func TestExpiry(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	s := &Store{Now: func() time.Time { return now }}
	c := dial(t, startStore(t, s))
	c.do(t, "set a 0 10 1\r\nx\r\nset b 0 1700000020 1\r\nx\r\n")
	now = now.Add(11 * time.Second)
	if got := c.do(t, "get a b\r\n"); got != "VALUE b 0 1\r\nx\r\nEND\r\n" {
		t.Errorf("after 11s: %q", got)
	}
	now = now.Add(10 * time.Second)
	if got := c.do(t, "get b\r\n"); got != "END\r\n" {
		t.Errorf("after 21s: %q", got)
	}
}

// TestTooLargeSetDropsStale checks a set or ms of a value too large: it is
// refused, and the key's old value goes, as memcached drops it (the proxy's
// TestTooLargeSetDropsStale holds memcached to this); an add leaves it.
func TestTooLargeSetDropsStale(t *testing.T) {
	c := dial(t, startStore(t, &Store{MaxBytes: 2000})) // values up to 1000 bytes
	big := strings.Repeat("x", 1500)
	const refused, had = "SERVER_ERROR object too large for cache\r\n", "VALUE k 0 2\r\nva\r\nEND\r\n"
	for _, tt := range []struct{ req, reply, after string }{
		{"set k 0 0 1500\r\n" + big + "\r\n", refused, "END\r\n"},
		{"set k 0 0 1500 noreply\r\n" + big + "\r\n", "", "END\r\n"},
		{"ms k 1500 T0\r\n" + big + "\r\n", refused, "END\r\n"},
		{"add k 0 0 1500\r\n" + big + "\r\n", refused, had},
		{"set k 0 0 990\r\n" + big[:990] + "\r\n", "SERVER_ERROR object too large for cache\r\n", "END\r\n"}, // with the item's overhead
		{"ms k 990 T0\r\n" + big[:990] + "\r\n", "SERVER_ERROR object too large for cache\r\n", "END\r\n"},
	} {
		if got := c.do(t, "set k 0 0 2\r\nva\r\n"); got != "STORED\r\n" {
			t.Fatalf("set: %q", got)
		}
		if got := c.do(t, tt.req+"get k\r\n"); got != tt.reply+tt.after {
			t.Errorf("%.20q, then get: %q; want %q", tt.req, got, tt.reply+tt.after)
		}
	}
}
