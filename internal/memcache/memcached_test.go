package memcache

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
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

// metaEchoTests are meta requests whose replies echo keys and flags, after a
// setup that stores the items they find: n with set, b with ms in base64
// ("Yg=="), so that memcached marks its key binary. mc is memcached's reply,
// with the numbers that vary masked (see maskEcho); "" if its quiet mode hides
// it. "bg==" is n in base64, "eg==" is z, a key never stored.
var metaEchoTests = []struct {
	setup   string // requests sent after metaEchoSetup
	req, mc string
}{
	// mg echoes the key of the item found: in base64, with b, if ms stored
	// it with b; as it is otherwise, whatever the request.
	{req: "mg n k v", mc: "VA 1 kn\r\n5\r\n"},
	{req: "mg bg== b k v", mc: "VA 1 kn\r\n5\r\n"},
	{req: "mg bg== T3600 b k v", mc: "VA 1 kn\r\n5\r\n"},
	{req: "mg Yg== b k v", mc: "VA 1 kYg== b\r\nx\r\n"},
	{req: "mg b k v", mc: "VA 1 kYg== b\r\nx\r\n"},
	{req: "mg b k c s O1", mc: "HD kYg== b c* s1 O1\r\n"},
	{req: "mg n s t c f l h O1 k v", mc: "VA 1 s1 t-1 c* f7 l* h0 O1 kn\r\n5\r\n"},
	{req: "mg n q k v", mc: "VA 1 kn\r\n5\r\n"},
	// A miss echoes the request's key, in base64 if it had b.
	{req: "mg z k O1", mc: "EN kz O1\r\n"},
	{req: "mg eg== b k O1", mc: "EN keg== b O1\r\n"},
	{req: "mg z q k O1", mc: ""},
	// N makes the item, with a key not marked binary, even with b.
	{req: "mg eg== b N30 k c", mc: "HD kz c* W\r\n"},
	{req: "mg eg== b N30 q k", mc: "HD kz W\r\n"},
	// ms echoes the key as sent: ms marks it binary if it had b.
	{req: "ms Yg== 1 b k c O5\r\nx", mc: "HD kYg== b c* O5\r\n"},
	{req: "ms Yg== 1 b k C1\r\nx", mc: "EX kYg== b\r\n"},
	{req: "ms z 1 k c q MR\r\nx", mc: "NS kz c*\r\n"},
	{req: "ms z 1 k q\r\nx", mc: ""},
	{req: "ms bg== 1 b q k O2 C1\r\nx", mc: "EX kbg== b O2\r\n"},
	// md and ma echo the request's key.
	{req: "md Yg== b k O1", mc: "HD kYg== b O1\r\n"},
	{req: "md bg== b k", mc: "HD kbg== b\r\n"},
	{req: "md b k q", mc: ""},
	{req: "md eg== b k q", mc: "NF keg== b\r\n"},
	{req: "md n C1 k", mc: "EX kn\r\n"},
	{req: "ma bg== b k v t c", mc: "VA 1 kbg== b t-1 c*\r\n6\r\n"},
	{req: "ma n O1 c t k", mc: "HD O1 c* t-1 kn\r\n"},
	{req: "ma z k O1", mc: "NF kz O1\r\n"},
	{req: "ma n C1 k", mc: "EX kn\r\n"},
	{req: "ma bg== b q v", mc: ""},
	{req: "ma n q", mc: ""},
	{req: "ma eg== b N0 q k", mc: "HD keg== b\r\n"},
	{req: "ma z N0 J5 q v", mc: "VA 1\r\n5\r\n"},
	{req: "ma b q", mc: "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
	// me writes the key of the item found, as mg does.
	{req: "me b", mc: "ME Yg== exp=-1 la=* cas=* fetch=no cls=1 size=61\r\n"},
	{req: "me Yg== b", mc: "ME Yg== exp=-1 la=* cas=* fetch=no cls=1 size=61\r\n"},
	{req: "me bg== b", mc: "ME n exp=-1 la=* cas=* fetch=no cls=1 size=65\r\n"},
	{req: "me n", mc: "ME n exp=-1 la=* cas=* fetch=no cls=1 size=65\r\n"},
	{req: "me z", mc: "EN\r\n"},
	// W, Z and X come last, in this order.
	{req: "mg n T10 R30 c", mc: "HD c* W\r\n"},
	{setup: "mg n T10 R30\r\n", req: "mg n R30 s", mc: "HD s1 Z\r\n"},
	{setup: "md n I T30\r\n", req: "mg n s v", mc: "VA 1 s1 X W\r\n5\r\n"},
	{setup: "md n I T30\r\nmg n\r\n", req: "mg n s O v", mc: "VA 1 s1 O Z X\r\n5\r\n"},
}

// metaEchoSetup stores the items metaEchoTests find.
const metaEchoSetup = "set n 7 0 1\r\n5\r\nms Yg== 1 b\r\nx\r\n"

// echoMaskRE matches what varies between runs in metaEchoTests' replies.
var echoMaskRE = regexp.MustCompile(` (c|l|la=|cas=)[0-9]+`)

func maskEcho(s string) string { return echoMaskRE.ReplaceAllString(s, " $1*") }

// TestMetaEchoMemcached sends metaEchoTests to a real memcached: its replies
// are the ones recorded, and ReadReply reads each against its request (and the
// setup's replies against theirs), so that no reply memcached sends resets a
// proxy's connection to it.
func TestMetaEchoMemcached(t *testing.T) {
	s := startMemcached(t)
	for _, tt := range metaEchoTests {
		script := metaEchoSetup + tt.setup + tt.req + "\r\n"
		reqs := readScript(t, script)
		raw := mcDo(t, s.Addr, script) // ends with the MN of the mn after the script
		r := NewReader(strings.NewReader(raw), Limits{})
		var resp Response
		for i, req := range reqs {
			if err := r.ReadReply(&resp, req); err != nil {
				t.Errorf("ReadReply to %q: %v (memcached's replies: %q)", AppendRequest(nil, req), err, raw)
				break
			}
			if i < len(reqs)-1 {
				continue
			}
			got := string(AppendResponse(nil, &resp))
			if !strings.HasSuffix(raw, got+"MN\r\n") {
				t.Errorf("%q: ReadReply reads %q; memcached sent %q", tt.req, got, raw)
			}
			if maskEcho(got) != tt.mc {
				t.Errorf("memcached answers %q with %q; the table says %q", tt.req, maskEcho(got), tt.mc)
			}
			// ReadReply reads the MN after a quiet request.
			want := "MN\r\n"
			if req.HasMetaFlag('q') {
				want = ""
			}
			if rest, _ := io.ReadAll(r.br); string(rest) != want {
				t.Errorf("%q: after its reply, %q is left; want %q", tt.req, rest, want)
			}
		}
	}
}

// readScript returns the requests of script, which must all be good.
func readScript(t *testing.T, script string) []*Request {
	t.Helper()
	var reqs []*Request
	for r := NewReader(strings.NewReader(script), Limits{}); ; {
		req := new(Request)
		err := r.ReadRequest(req)
		if err == io.EOF {
			return reqs
		}
		if err != nil {
			t.Fatalf("%.200q, request %d: %v", script, len(reqs)+1, err)
		}
		reqs = append(reqs, req)
	}
}
