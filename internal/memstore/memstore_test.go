package memstore

import (
	"bufio"
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
	"set a 0 0 2\r\nabc\r\n",
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
	c  net.Conn
	br *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{c, bufio.NewReader(c)}
}

// do sends req and "mn", returning what comes before "MN".
func (c *client) do(t *testing.T, req string) string {
	c.c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c.c, req+"mn\r\n")
	var b strings.Builder
	for {
		line, err := c.br.ReadString('\n')
		if err != nil {
			t.Fatalf("%q: %v", req, err)
		}
		if line == "MN\r\n" {
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
