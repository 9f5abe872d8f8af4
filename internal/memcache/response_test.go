package memcache

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// readResponseTests lists replies read knowing only the command.
var readResponseTests = []struct {
	cmd   Command
	in    string
	items int // number of VALUE items
	fatal bool
}{
	{cmd: CmdGet, in: "END\r\n"},
	{cmd: CmdGet, in: "VALUE a 0 2\r\nhi\r\nEND\r\n", items: 1},
	{cmd: CmdGets, in: "VALUE a 5 2 99\r\nhi\r\nVALUE b 0 0 3\r\n\r\nEND\r\n", items: 2},
	{cmd: CmdGat, in: "VALUE a 0 4\r\n\r\n\r\n\r\nEND\r\n", items: 1},
	{cmd: CmdGet, in: "SERVER_ERROR out of memory\r\n"},
	{cmd: CmdGet, in: "CLIENT_ERROR bad command line format\r\n"},
	{cmd: CmdSet, in: "STORED\r\n"},
	{cmd: CmdAdd, in: "NOT_STORED\r\n"},
	{cmd: CmdCas, in: "EXISTS\r\n"},
	{cmd: CmdCas, in: "NOT_FOUND\r\n"},
	{cmd: CmdDelete, in: "DELETED\r\n"},
	{cmd: CmdDelete, in: ReplyBadDeleteUsage + "\r\n"},
	{cmd: CmdIncr, in: "42\r\n"},
	{cmd: CmdDecr, in: "NOT_FOUND\r\n"},
	{cmd: CmdTouch, in: "TOUCHED\r\n"},
	{cmd: CmdVersion, in: "VERSION 1.6.18\r\n"},
	{cmd: CmdMetaGet, in: "VA 2 f5 t-1\r\nhi\r\n"},
	{cmd: CmdMetaGet, in: "HD W X Z\r\n"},
	{cmd: CmdMetaGet, in: "EN\r\n"},
	{cmd: CmdMetaSet, in: "HD O12\r\n"},
	{cmd: CmdMetaSet, in: "NS c0 kx\r\n"},
	{cmd: CmdMetaDelete, in: "NF\r\n"},
	{cmd: CmdMetaArithmetic, in: "VA 1\r\n7\r\n"},
	{cmd: CmdMetaDebug, in: "ME a exp=-1 la=0 cas=2 fetch=no cls=1 size=63\r\n"},
	{cmd: CmdMetaNoop, in: "MN\r\n"},
	{cmd: CmdMetaNoop, in: "ERROR\r\n"},

	{cmd: CmdGet, in: "STORED\r\n", fatal: true},
	{cmd: CmdGet, in: "VALUE a 0 2\r\nhix\r\nEND\r\n", fatal: true},
	{cmd: CmdGet, in: "VALUE a 0\r\nEND\r\n", fatal: true},
	{cmd: CmdGet, in: "VALUE a 0 -1\r\nEND\r\n", fatal: true},
	{cmd: CmdGet, in: "VALUE a 0 1 5\r\nx\r\nEND\r\n", fatal: true},
	{cmd: CmdGets, in: "VALUE a 0 1\r\nx\r\nEND\r\n", fatal: true},
	{cmd: CmdGet, in: "VALUE a 4294967296 1\r\nx\r\nEND\r\n", fatal: true},
	{cmd: CmdGet, in: "VALUE a  0 1\r\nx\r\nEND\r\n", fatal: true},
	{cmd: CmdGet, in: "VALUE a 0 1\r\nx\r\nVALUE b 0 1\r\nx\r\nVALUE c 0 1\r\nx\r\nEND\r\n", fatal: true},
	{cmd: CmdGet, in: "VALUE a 0 1\r\nx\r\nSERVER_ERROR out of memory\r\n", fatal: true},
	{cmd: CmdGet, in: "END \r\n", fatal: true},
	{cmd: CmdSet, in: "HELLO GARBAGE\r\n", fatal: true},
	{cmd: CmdSet, in: "DELETED\r\n", fatal: true},
	{cmd: CmdSet, in: "STORED\x00\r\n", fatal: true},
	{cmd: CmdSet, in: "SERVER_ERROR\r\n", fatal: true},
	{cmd: CmdSet, in: "VALUE a 0 1\r\nx\r\nEND\r\n", fatal: true},
	{cmd: CmdSet, in: "VA 1\r\nx\r\n", fatal: true},
	{cmd: CmdSet, in: "\r\n", fatal: true},
	{cmd: CmdDelete, in: "STORED\r\n", fatal: true},
	{cmd: CmdIncr, in: "-1\r\n", fatal: true},
	{cmd: CmdIncr, in: "18446744073709551616\r\n", fatal: true},
	{cmd: CmdIncr, in: "1 2\r\n", fatal: true},
	{cmd: CmdTouch, in: "STORED\r\n", fatal: true},
	{cmd: CmdVersion, in: "VERSION\r\n", fatal: true},
	{cmd: CmdVersion, in: "VERSION \r\n", fatal: true},
	{cmd: CmdQuit, in: "OK\r\n", fatal: true},
	{cmd: CmdUnknown, in: "OK\r\n", fatal: true},
	{cmd: CmdMetaGet, in: "VA\r\n", fatal: true},
	{cmd: CmdMetaGet, in: "VA 2000000\r\n", fatal: true},
	{cmd: CmdMetaGet, in: "VA 1 t5 t5\r\nx\r\n", fatal: true},
	{cmd: CmdMetaGet, in: "VA 1 tx\r\nx\r\n", fatal: true},
	{cmd: CmdMetaGet, in: "HD h2\r\n", fatal: true},
	{cmd: CmdMetaGet, in: "HDX\r\n", fatal: true},
	{cmd: CmdMetaGet, in: "EN f1\r\n", fatal: true},
	{cmd: CmdMetaGet, in: "NS\r\n", fatal: true},
	{cmd: CmdMetaGet, in: "HD O" + o32 + "\r\n", fatal: true},
	{cmd: CmdMetaSet, in: "EN\r\n", fatal: true},
	{cmd: CmdMetaSet, in: "HD t5\r\n", fatal: true},
	{cmd: CmdMetaDelete, in: "NS\r\n", fatal: true},
	{cmd: CmdMetaArithmetic, in: "VA 1\r\nx\r\n", fatal: true},
	{cmd: CmdMetaArithmetic, in: "NF t5\r\n", fatal: true},
	{cmd: CmdMetaDebug, in: "MEa\r\n", fatal: true},
	{cmd: CmdMetaNoop, in: "HD\r\n", fatal: true},
}

func TestReadResponse(t *testing.T) {
	for _, tt := range readResponseTests {
		r := NewReader(strings.NewReader(tt.in), Limits{})
		var resp Response
		err := r.ReadResponse(&resp, tt.cmd, 2)
		var e *Error
		switch {
		case tt.fatal:
			if !errors.As(err, &e) || !e.Fatal {
				t.Errorf("ReadResponse(%q, %v) = %v; want a fatal *Error", tt.in, tt.cmd, err)
			}
			continue
		case err != nil:
			t.Errorf("ReadResponse(%q, %v) = %v", tt.in, tt.cmd, err)
			continue
		}
		if got := string(AppendResponse(nil, &resp)); got != tt.in {
			t.Errorf("ReadResponse(%q, %v) reads %q", tt.in, tt.cmd, got)
		}
		if len(resp.Items) != tt.items {
			t.Errorf("ReadResponse(%q, %v) has %d items; want %d", tt.in, tt.cmd, len(resp.Items), tt.items)
		}
		if err := r.ReadResponse(&resp, tt.cmd, 2); err != io.EOF {
			t.Errorf("after %q: %v; want io.EOF", tt.in, err)
		}
	}
}

// readReplyTests lists replies read against the request they answer.
var readReplyTests = []struct {
	req, in string
	fatal   bool
}{
	{req: "get a b", in: "VALUE a 0 1\r\nx\r\nVALUE b 0 1\r\ny\r\nEND\r\n"},
	{req: "get a b", in: "VALUE b 0 1\r\ny\r\nEND\r\n"},
	{req: "get a a", in: "VALUE a 0 1\r\nx\r\nVALUE a 0 1\r\nx\r\nEND\r\n"},
	{req: "get a b", in: "VALUE b 0 1\r\ny\r\nVALUE a 0 1\r\nx\r\nEND\r\n", fatal: true},
	{req: "get a", in: "VALUE c 0 1\r\nx\r\nEND\r\n", fatal: true},
	{req: "get a", in: "VALUE a 0 1\r\nx\r\nVALUE a 0 1\r\nx\r\nEND\r\n", fatal: true},
	{req: "gats 0 a", in: "VALUE a 0 1 7\r\nx\r\nEND\r\n"},
	{req: "set a 0 0 1\r\nx", in: "STORED\r\n"},
	{req: "set a 0 0 1\r\nx", in: "HELLO GARBAGE\r\n", fatal: true},
	{req: "incr a 1", in: "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
	{req: "mg a v", in: "VA 1\r\nx\r\n"},
	{req: "mg a v", in: "EN\r\n"},
	{req: "mg a v", in: "HD\r\n", fatal: true},
	{req: "mg a v", in: "VA 1 t5\r\nx\r\n", fatal: true},
	{req: "mg a", in: "HD W X Z\r\n"},
	{req: "mg a", in: "VA 1\r\nx\r\n", fatal: true},
	{req: "mg a v t s f c h l", in: "VA 1 t5 s1 f0 c9 h1 l3\r\nx\r\n"},
	{req: "mg a O1 k", in: "EN O1 ka\r\n"},
	{req: "mg a O1 k", in: "EN O2 ka\r\n", fatal: true},
	{req: "mg a O1 k", in: "EN O1 kb\r\n", fatal: true},
	{req: "mg a O1 k", in: "EN O1 ka b\r\n", fatal: true},
	{req: "mg eA== b k", in: "EN keA== b\r\n"},
	{req: "mg eA== b", in: "EN b\r\n", fatal: true},
	// A hit echoes the item's key: in base64, with b, if ms stored it with b.
	{req: "mg a k v", in: "VA 1 ka\r\nx\r\n"},
	{req: "mg a k v", in: "VA 1 kYQ== b\r\nx\r\n"},
	{req: "mg YQ== b k v", in: "VA 1 ka\r\nx\r\n"},
	{req: "mg YQ== b k v", in: "VA 1 kYQ== b\r\nx\r\n"},
	{req: "mg a k v", in: "VA 1 kYg== b\r\nx\r\n", fatal: true},
	{req: "mg a k v", in: "VA 1 kYQ==\r\nx\r\n", fatal: true},
	{req: "mg a k v", in: "VA 1 kYQ== b b\r\nx\r\n", fatal: true},
	{req: "mg a k v", in: "VA 1 kYQ b\r\nx\r\n", fatal: true},
	{req: "mg YQ== b k v", in: "VA 1 kYQ==\r\nx\r\n", fatal: true},
	{req: "mg YQ== b v", in: "VA 1 ka\r\nx\r\n", fatal: true},
	{req: "mg a k O1", in: "HD O1 b ka\r\n", fatal: true},
	// Other replies echo the request's key.
	{req: "mg a k", in: "EN kYQ== b\r\n", fatal: true},
	{req: "md a k", in: "HD ka b\r\n", fatal: true},
	{req: "md YQ== b k", in: "HD ka\r\n", fatal: true},
	{req: "ms YQ== 1 b k\r\nx", in: "HD kYQ== b\r\n"},
	{req: "ms YQ== 1 b k\r\nx", in: "HD ka\r\n", fatal: true},
	{req: "ma YQ== b k", in: "NF kYQ== b\r\n"},
	{req: "ms a 1 c k\r\nx", in: "HD c5 ka\r\n"},
	{req: "ms a 1 c k\r\nx", in: "NS c0 ka\r\n"},
	{req: "ms a 1\r\nx", in: "HD c5\r\n", fatal: true},
	{req: "md a O7", in: "NF O7\r\n"},
	{req: "md a", in: "HD O7\r\n", fatal: true},
	{req: "ma a v", in: "VA 1\r\n5\r\n"},
	{req: "ma a v", in: "HD\r\n", fatal: true},
	{req: "ma a t c", in: "HD t-1 c3\r\n"},
	{req: "ma a t", in: "NF t-1\r\n", fatal: true},
	{req: "me a", in: "ME a exp=-1 la=0 cas=2 fetch=no cls=1 size=63\r\n"},
	{req: "me a", in: "ME b exp=-1 la=0 cas=2 fetch=no cls=1 size=63\r\n", fatal: true},
	{req: "me eA== b", in: "ME x exp=-1\r\n"},
	{req: "me eA== b", in: "ME eA== exp=-1\r\n"},
	{req: "me a", in: "ME YQ== exp=-1\r\n"},
	{req: "me a", in: "ME YQ exp=-1\r\n", fatal: true},
	{req: "me a", in: "ME Yg== exp=-1\r\n", fatal: true},
	{req: "mn", in: "MN\r\n"},
	{req: "version", in: "VERSION 1.6.18\r\n"},
}

func TestReadReply(t *testing.T) {
	for _, tt := range readReplyTests {
		var req Request
		if err := NewReader(strings.NewReader(tt.req+"\r\n"), Limits{}).ReadRequest(&req); err != nil {
			t.Fatalf("ReadRequest(%q): %v", tt.req, err)
		}
		var resp Response
		err := NewReader(strings.NewReader(tt.in), Limits{}).ReadReply(&resp, &req)
		var e *Error
		switch {
		case tt.fatal && (!errors.As(err, &e) || !e.Fatal):
			t.Errorf("ReadReply(%q) to %q = %v; want a fatal *Error", tt.in, tt.req, err)
		case !tt.fatal && err != nil:
			t.Errorf("ReadReply(%q) to %q = %v", tt.in, tt.req, err)
		case !tt.fatal && string(AppendResponse(nil, &resp)) != tt.in:
			t.Errorf("ReadReply(%q) to %q reads %q", tt.in, tt.req, AppendResponse(nil, &resp))
		}
	}
	// Requests that may get no reply, with nothing after them to tell, are
	// refused, not waited for.
	for _, in := range []string{"set a 0 0 1 noreply\r\nx\r\n", "quit\r\n"} {
		var req Request
		NewReader(strings.NewReader(in), Limits{}).ReadRequest(&req)
		var resp Response
		if err := NewReader(strings.NewReader("STORED\r\n"), Limits{}).ReadReply(&resp, &req); err == nil {
			t.Errorf("ReadReply to %q: no error; want the request refused", in)
		}
	}
}

// quietReplyTests lists replies to meta requests with the flag q, followed by
// mn: out is the reply read, "" if q hid it.
var quietReplyTests = []struct {
	req, in, out string
	fatal        bool
}{
	{req: "mg a q v", in: "MN\r\n", out: ""},
	{req: "mg a q v", in: "VA 1\r\nx\r\nMN\r\n", out: "VA 1\r\nx\r\n"},
	{req: "mg a q v k", in: "VA 1 ka\r\nx\r\nMN\r\n", out: "VA 1 ka\r\nx\r\n"},
	{req: "ms a 1 q\r\nx", in: "NS\r\nMN\r\n", out: "NS\r\n"},
	{req: "md a q", in: "MN\r\n", out: ""},
	{req: "ma a q v", in: "MN\r\n", out: ""},
	{req: "ma a q v N0", in: "VA 1\r\n0\r\nMN\r\n", out: "VA 1\r\n0\r\n"},
	{req: "ma a q", in: "CLIENT_ERROR cannot increment or decrement non-numeric value\r\nMN\r\n",
		out: "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
	{req: "mg a q v", in: "VA 1\r\nx\r\nEN\r\n", fatal: true},
	{req: "mg a q v", in: "VA 1\r\nx\r\nVA 1\r\nx\r\nMN\r\n", fatal: true},
	{req: "mg a q v", in: "MN 1\r\n", fatal: true},
	{req: "md a q", in: "HD\r\nHD\r\n", fatal: true},
}

// TestReadReplyQuiet reads quietReplyTests: ReadReply reads a quiet request's
// reply, if there is one, and the MN that follows.
func TestReadReplyQuiet(t *testing.T) {
	for _, tt := range quietReplyTests {
		var req Request
		if err := NewReader(strings.NewReader(tt.req+"\r\n"), Limits{}).ReadRequest(&req); err != nil {
			t.Fatalf("ReadRequest(%q): %v", tt.req, err)
		}
		r := NewReader(strings.NewReader(tt.in), Limits{})
		var resp Response
		err := r.ReadReply(&resp, &req)
		var e *Error
		switch {
		case tt.fatal && (!errors.As(err, &e) || !e.Fatal):
			t.Errorf("ReadReply(%q) to %q = %v; want a fatal *Error", tt.in, tt.req, err)
		case tt.fatal:
		case err != nil:
			t.Errorf("ReadReply(%q) to %q = %v", tt.in, tt.req, err)
		case string(AppendResponse(nil, &resp)) != tt.out || resp.Quiet != (tt.out == ""):
			t.Errorf("ReadReply(%q) to %q reads %q (quiet %v); want %q", tt.in, tt.req, AppendResponse(nil, &resp), resp.Quiet, tt.out)
		case r.Buffered() != 0:
			t.Errorf("ReadReply(%q) to %q leaves %d bytes", tt.in, tt.req, r.Buffered())
		}
	}
}

// replyScript is a session of requests whose replies cover what memcached
// answers: hits and misses of every command, and every meta return flag.
const replyScript = `set a 5 0 1
x
set n 0 0 1
5
get a b n
gets a n
gat 100 a
gats 100 a b
add a 0 0 1
y
replace b 0 0 1
y
append a 0 0 2
yz
prepend a 0 0 1
w
cas a 0 0 1 1
y
cas b 0 0 1 1
y
incr n 3
decr n 100
incr a 1
incr b 1
touch n 10
touch b 10
delete n
delete n
version
mn
mg a v f t s c k O1 h l
mg a
mg b v k O2
mg b N30 v
mg b N30 c
mg b R30 v t
ms x 2 c k O3
hi
ms x 2 ME
hi
ms x 2 C1
hi
ms y 2 C1 k
hi
ms y 2 MA
hi
ms eHl6 1 b k T0 F7 I
z
mg eHl6 b k v f
md eHl6 b k
md x k O4
md x
md a C1
md a I T30
mg a v c
ma n v t c O5 k
set n 0 0 2
41
ma n v t c O5 k
ma n T0 t
ma z N0 J7 v
ma z MD D100 v
ma z C1
me a
me z
me eHl6 b
mg a s v O` + "\xc3\xa9" + `
`

// TestReadReplyMemcached reads a real memcached's replies to replyScript with
// ReadReply, each against its request, and checks that they are written back as
// memcached sent them.
func TestReadReplyMemcached(t *testing.T) {
	s := startMemcached(t)
	reqs := readScript(t, strings.ReplaceAll(replyScript, "\n", "\r\n"))
	var sent []byte
	for _, req := range reqs {
		sent = AppendRequest(sent, req)
	}
	raw := strings.TrimSuffix(mcDo(t, s.Addr, string(sent)), "MN\r\n")
	r := NewReader(strings.NewReader(raw), Limits{})
	var back []byte
	var resp Response
	for _, req := range reqs {
		if err := r.ReadReply(&resp, req); err != nil {
			t.Fatalf("ReadReply to %q: %v (memcached's replies: %q)", AppendRequest(nil, req), err, raw)
		}
		back = AppendResponse(back, &resp)
	}
	if string(back) != raw {
		t.Errorf("memcached's replies read and written: %q; memcached sent %q", back, raw)
	}
	for _, want := range []string{"VA 0 W", "X W", "Z", "EX", "NF", "NS", "ME a ", "c"} {
		if !strings.Contains(raw, want) {
			t.Errorf("replyScript's replies lack %q: %q", want, raw)
		}
	}
}

func TestResponseFields(t *testing.T) {
	r := NewReader(strings.NewReader("VALUE k1 7 3 42\r\none\r\nVALUE k2 0 0 43\r\n\r\nEND\r\nVA 2 f1\r\nhi\r\n"), Limits{})
	var resp Response
	if err := r.ReadResponse(&resp, CmdGets, 10); err != nil {
		t.Fatal(err)
	}
	it := resp.Items[0]
	if string(it.Key) != "k1" || it.Flags != 7 || it.Cas != 42 || !it.HasCas || string(it.Value) != "one" {
		t.Errorf("item 0 = %+v", it)
	}
	if it := resp.Items[1]; string(it.Key) != "k2" || len(it.Value) != 0 || it.Cas != 43 {
		t.Errorf("item 1 = %+v", it)
	}
	if err := r.ReadResponse(&resp, CmdMetaGet, 10); err != nil {
		t.Fatal(err)
	}
	if string(resp.Status()) != "VA" || string(resp.Value) != "hi" || len(resp.Items) != 0 {
		t.Errorf("mg: status %q, value %q, %d items", resp.Status(), resp.Value, len(resp.Items))
	}
}

// TestReplyGrowsAsItArrives checks that a reply announcing a large value costs
// what arrived.
func TestReplyGrowsAsItArrives(t *testing.T) {
	const announced = 100 << 20
	lim := Limits{MaxValue: 128 << 20}
	for _, tt := range []struct {
		cmd Command
		in  string
	}{
		{CmdGet, "VALUE a 0 104857600\r\n0123456789"},
		{CmdMetaGet, "VA 104857600\r\n0123456789"},
	} {
		var resp Response
		r := NewReader(strings.NewReader(tt.in), lim)
		if got := allocated(func() { r.ReadResponse(&resp, tt.cmd, 1) }); got > 1<<20 {
			t.Errorf("ReadResponse(%q) allocates %d bytes; want much less than the %d announced", tt.in, got, announced)
		}
	}
}

func TestReadResponseAllocs(t *testing.T) {
	in := bytes.Repeat([]byte("VALUE k1 0 5\r\nhello\r\nVALUE k2 0 5\r\nworld\r\nEND\r\n"), 1000)
	var resp Response
	if n := readAllocs(t, in, func(r *Reader) error { return r.ReadResponse(&resp, CmdGet, 10) }); n != 0 {
		t.Errorf("ReadResponse allocates %v times per response; want 0", n)
	}
	var req Request
	NewReader(strings.NewReader("mg k1 v t f O123 k\r\n"), Limits{}).ReadRequest(&req)
	in = bytes.Repeat([]byte("VA 5 t-1 f0 O123 kk1\r\nhello\r\n"), 1000)
	if n := readAllocs(t, in, func(r *Reader) error { return r.ReadReply(&resp, &req) }); n != 0 {
		t.Errorf("ReadReply allocates %v times per response; want 0", n)
	}
	// A quiet request's reply, hidden or not, and its MN.
	NewReader(strings.NewReader("mg k1 v q\r\n"), Limits{}).ReadRequest(&req)
	in = bytes.Repeat([]byte("MN\r\nVA 5\r\nhello\r\nMN\r\n"), 1000)
	if n := readAllocs(t, in, func(r *Reader) error { return r.ReadReply(&resp, &req) }); n != 0 {
		t.Errorf("ReadReply of a quiet request allocates %v times per response; want 0", n)
	}
	// A key echoed in base64 is decoded to compare.
	NewReader(strings.NewReader("mg k1 v k\r\n"), Limits{}).ReadRequest(&req)
	in = bytes.Repeat([]byte("VA 5 kazE= b\r\nhello\r\n"), 1000)
	if n := readAllocs(t, in, func(r *Reader) error { return r.ReadReply(&resp, &req) }); n != 0 {
		t.Errorf("ReadReply of a key in base64 allocates %v times per response; want 0", n)
	}
}

func BenchmarkReadResponse(b *testing.B) {
	for _, bc := range []struct {
		name string
		cmd  Command
		in   string
	}{
		{"get", CmdGet, "VALUE some:key:1234 0 100\r\n" + strings.Repeat("v", 100) + "\r\nEND\r\n"},
		{"get10", CmdGet, strings.Repeat("VALUE some:key:1234 0 10\r\n0123456789\r\n", 10) + "END\r\n"},
		{"miss", CmdGet, "END\r\n"},
		{"set", CmdSet, "STORED\r\n"},
		{"mg", CmdMetaGet, "VA 100 f0 t-1\r\n" + strings.Repeat("v", 100) + "\r\n"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			in := bytes.Repeat([]byte(bc.in), 1000)
			rd := bytes.NewReader(in)
			r := NewReader(rd, Limits{})
			var resp Response
			b.SetBytes(int64(len(bc.in)))
			for b.Loop() {
				if err := r.ReadResponse(&resp, bc.cmd, 10); err == io.EOF {
					rd.Reset(in)
					r.Reset(rd)
				}
			}
		})
	}
}

func BenchmarkReadReply(b *testing.B) {
	for _, bc := range []struct{ name, req, in string }{
		{"get", "get some:key:1234", "VALUE some:key:1234 0 100\r\n" + strings.Repeat("v", 100) + "\r\nEND\r\n"},
		{"get10", "get k0 k1 k2 k3 k4 k5 k6 k7 k8 k9", "VALUE k0 0 1\r\nx\r\nVALUE k5 0 1\r\nx\r\nVALUE k9 0 1\r\nx\r\nEND\r\n"},
		{"mg", "mg some:key:1234 v f t O12 k", "VA 100 f0 t-1 O12 ksome:key:1234\r\n" + strings.Repeat("v", 100) + "\r\n"},
		{"mg-quiet-miss", "mg some:key:1234 v q", "MN\r\n"},
		{"mg-quiet-hit", "mg some:key:1234 v q", "VA 100\r\n" + strings.Repeat("v", 100) + "\r\nMN\r\n"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var req Request
			if err := NewReader(strings.NewReader(bc.req+"\r\n"), Limits{}).ReadRequest(&req); err != nil {
				b.Fatal(err)
			}
			in := bytes.Repeat([]byte(bc.in), 1000)
			rd := bytes.NewReader(in)
			r := NewReader(rd, Limits{})
			var resp Response
			b.SetBytes(int64(len(bc.in)))
			for b.Loop() {
				if err := r.ReadReply(&resp, &req); err == io.EOF {
					rd.Reset(in)
					r.Reset(rd)
				}
			}
		})
	}
}

// TestWait checks that Wait returns once a byte can be read, can be retried
// after a deadline, and consumes nothing.
func TestWait(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	r := NewReader(a, Limits{})
	a.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if err := r.Wait(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Wait with nothing sent = %v; want a deadline error", err)
	}
	a.SetReadDeadline(time.Time{})
	go b.Write([]byte("STORED\r\n"))
	if err := r.Wait(); err != nil {
		t.Fatalf("Wait after a reply was sent: %v", err)
	}
	var resp Response
	if err := r.ReadResponse(&resp, CmdSet, 0); err != nil || string(resp.Line) != "STORED" {
		t.Fatalf("ReadResponse after Wait = %q, %v; want STORED", resp.Line, err)
	}
	b.Close()
	if err := r.Wait(); !errors.Is(err, io.EOF) {
		t.Fatalf("Wait on a closed stream = %v; want EOF", err)
	}
}
