package memcache

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

var k250 = strings.Repeat("k", 250)
var k251 = strings.Repeat("k", 251)

// readRequestTests lists inputs of one request followed by "mn\r\n", and what
// reading them gives: the request written back (normalized), or memcached's reply
// to it. After a non-fatal error the reader must be at "mn", or where memcached
// reads the data block as commands, at that block.
var readRequestTests = []struct {
	in    string
	want  string // AppendRequest of the request read, if reply is empty
	reply string // the *Error's reply
	extra int    // data lines memcached then reads as commands, each answered ERROR
}{
	{in: "get a\r\n", want: "get a\r\n"},
	{in: "get a b  c\r\n", want: "get a b c\r\n"},
	{in: "  get   a \n", want: "get a\r\n"},
	{in: "gets a b\r\n", want: "gets a b\r\n"},
	{in: "gat 10 a b\r\n", want: "gat 10 a b\r\n"},
	{in: "gats -1 a\r\n", want: "gats -1 a\r\n"},
	{in: "gat 10\r\n", want: "gat 10\r\n"},
	{in: "get " + k250 + "\r\n", want: "get " + k250 + "\r\n"},
	{in: "set a 5 0 2\r\nhi\r\n", want: "set a 5 0 2\r\nhi\r\n"},
	{in: "set a 5 0 2 noreply\r\nhi\r\n", want: "set a 5 0 2 noreply\r\nhi\r\n"},
	{in: "set a 5 0 2 junk\r\nhi\r\n", want: "set a 5 0 2\r\nhi\r\n"},
	{in: "set a 4294967297 0 1\r\nx\r\n", want: "set a 1 0 1\r\nx\r\n"},
	{in: "set a 0 -1 0\r\n\r\n", want: "set a 0 -1 0\r\n\r\n"},
	{in: "add a 0 0 1\r\nx\r\n", want: "add a 0 0 1\r\nx\r\n"},
	{in: "replace a 0 0 1\r\nx\r\n", want: "replace a 0 0 1\r\nx\r\n"},
	{in: "append a 0 0 1\r\nx\r\n", want: "append a 0 0 1\r\nx\r\n"},
	{in: "prepend a 0 0 1\r\nx\r\n", want: "prepend a 0 0 1\r\nx\r\n"},
	{in: "cas a 0 0 1 99\r\nx\r\n", want: "cas a 0 0 1 99\r\nx\r\n"},
	{in: "cas a 0 0 1 99 noreply\r\nx\r\n", want: "cas a 0 0 1 99 noreply\r\nx\r\n"},
	{in: "set a 0 0 3\r\na\r\n\r\n", want: "set a 0 0 3\r\na\r\n\r\n"},
	{in: "delete a\r\n", want: "delete a\r\n"},
	{in: "delete a 0\r\n", want: "delete a\r\n"},
	{in: "delete a noreply\r\n", want: "delete a noreply\r\n"},
	{in: "delete a 0 noreply\r\n", want: "delete a noreply\r\n"},
	{in: "incr a 5\r\n", want: "incr a 5\r\n"},
	{in: "decr a 18446744073709551615 noreply\r\n", want: "decr a 18446744073709551615 noreply\r\n"},
	{in: "touch a 10\r\n", want: "touch a 10\r\n"},
	{in: "version\r\n", want: "version\r\n"},
	{in: "version 1\r\n", want: "version\r\n"},
	{in: "quit\r\n", want: "quit\r\n"},
	{in: "mg a v f t\r\n", want: "mg a v f t\r\n"},
	{in: "mg eA== b v\r\n", want: "mg eA== b v\r\n"},
	{in: "ms a 2 T0 F5 I\r\nhi\r\n", want: "ms a 2 T0 F5 I\r\nhi\r\n"},
	{in: "ms a 0\r\n\r\n", want: "ms a 0\r\n\r\n"},
	{in: "md a q\r\n", want: "md a q\r\n"},
	{in: "ma a D5 v\r\n", want: "ma a D5 v\r\n"},
	{in: "me a\r\n", want: "me a\r\n"},

	{in: "\r\n", reply: ReplyError},
	{in: "   \r\n", reply: ReplyError},
	{in: "foo\r\n", reply: ReplyError},
	{in: "GET a\r\n", reply: ReplyError},
	{in: "stats\r\n", reply: ReplyError},
	{in: "get\r\n", reply: ReplyError},
	{in: "gat\r\n", reply: ReplyError},
	{in: "gat x a\r\n", reply: ReplyBadExptime},
	{in: "get " + k251 + "\r\n", reply: ReplyBadFormat},
	{in: "get a " + k251 + " b\r\n", reply: ReplyBadFormat},
	{in: "set a 0 0\r\n", reply: ReplyError},
	{in: "set a 0 0 1 2 3\r\nx\r\n", reply: ReplyError, extra: 1},
	{in: "set " + k251 + " 0 0 1\r\nx\r\n", reply: ReplyBadFormat, extra: 1},
	{in: "set a -1 0 1\r\nx\r\n", reply: ReplyBadFormat, extra: 1},
	{in: "set a 0 0 -1\r\n", reply: ReplyBadFormat},
	{in: "set a 0 0 zz\r\n", reply: ReplyBadFormat},
	{in: "set a 0 x 1\r\nx\r\n", reply: ReplyBadFormat, extra: 1},
	{in: "cas a 0 0 1\r\nx\r\n", reply: ReplyError, extra: 1},
	{in: "set a 0 0 2\r\nhix\r\n", reply: ReplyBadChunk, extra: 1},
	{in: "set a 0 0 2000000\r\n" + strings.Repeat("v", 2000000) + "\r\n", reply: ReplyTooLarge},
	{in: "delete\r\n", reply: ReplyError},
	{in: "delete a 1\r\n", reply: ReplyBadDeleteUsage},
	{in: "delete a 0 0\r\n", reply: ReplyBadDeleteUsage},
	{in: "delete a 0 0 0\r\n", reply: ReplyBadDeleteUsage},
	{in: "incr a\r\n", reply: ReplyError},
	{in: "incr a x\r\n", reply: ReplyBadDelta},
	{in: "incr a -1\r\n", reply: ReplyBadDelta},
	{in: "touch a\r\n", reply: ReplyError},
	{in: "touch a x\r\n", reply: ReplyBadExptime},
	{in: "mg\r\n", reply: ReplyError},
	{in: "mg " + k251 + " v\r\n", reply: ReplyBadFormat},
	{in: "mg x b v\r\n", reply: ReplyBadKeyEncoding},
	{in: "mg a" + strings.Repeat(" v", 18) + "\r\n", reply: "CLIENT_ERROR options flags are too long"},
	{in: "md a" + strings.Repeat(" q", 18) + "\r\n", reply: "CLIENT_ERROR options flags too long"},
	{in: "ms a\r\n", reply: ReplyBadFormat},
	{in: "ms a S2\r\nhi\r\n", reply: ReplyBadFormat, extra: 1},
	{in: "ms x 2 b\r\nhi\r\n", reply: ReplyBadKeyEncoding},
	{in: "ms a 1" + strings.Repeat(" T1", 17) + "\r\nx\r\n", reply: "CLIENT_ERROR options flags too long", extra: 1},
	{in: "ms a 2\r\nhello\r\n", reply: ReplyBadChunk, extra: 1},
}

func TestReadRequest(t *testing.T) {
	for _, tt := range readRequestTests {
		r := NewReader(strings.NewReader(tt.in+"mn\r\n"), Limits{})
		var req Request
		err := r.ReadRequest(&req)
		if tt.reply != "" {
			var e *Error
			if !errors.As(err, &e) || e.Reply != tt.reply || e.Fatal {
				t.Errorf("ReadRequest(%q) = %v; want reply %q", tt.in, err, tt.reply)
				continue
			}
		} else {
			if err != nil {
				t.Errorf("ReadRequest(%q) = %v", tt.in, err)
				continue
			}
			if got := string(AppendRequest(nil, &req)); got != tt.want {
				t.Errorf("ReadRequest(%q) reads %q; want %q", tt.in, got, tt.want)
			}
		}
		for i := 0; i < tt.extra; i++ {
			var e *Error
			if err := r.ReadRequest(&req); !errors.As(err, &e) || e.Reply != ReplyError {
				t.Errorf("after %q, data read as %v; want reply %q", tt.in, err, ReplyError)
			}
		}
		if err := r.ReadRequest(&req); err != nil || req.Command != CmdMetaNoop {
			t.Errorf("after %q, next request %v, %v; want mn", tt.in, req.Command, err)
		}
	}
}

func TestReadRequestFields(t *testing.T) {
	in := "cas k 7 -3 2 11 noreply\r\nhi\r\nincr n 9\r\nmg eHl6 b v\r\ngat 5 a b\r\n"
	r := NewReader(strings.NewReader(in), Limits{})
	var req Request
	if err := r.ReadRequest(&req); err != nil {
		t.Fatal(err)
	}
	if req.Command != CmdCas || string(req.Key()) != "k" || req.Flags != 7 || req.Exptime != -3 ||
		req.Cas != 11 || !req.Noreply || string(req.Value) != "hi" {
		t.Errorf("cas: got %+v", req)
	}
	if err := r.ReadRequest(&req); err != nil || req.Command != CmdIncr || req.Delta != 9 || req.Noreply {
		t.Errorf("incr: got %+v, %v", req, err)
	}
	if err := r.ReadRequest(&req); err != nil || string(req.RouteKey(0)) != "xyz" || !req.HasMetaFlag('v') {
		t.Errorf("mg: got %+v, %v", req, err)
	}
	if !req.RemoveMetaFlag('v') || req.HasMetaFlag('v') || string(AppendRequest(nil, &req)) != "mg eHl6 b\r\n" {
		t.Errorf("RemoveMetaFlag: got %q", AppendRequest(nil, &req))
	}
	if err := r.ReadRequest(&req); err != nil || req.Exptime != 5 || len(req.Keys) != 2 || string(req.Keys[1]) != "b" {
		t.Errorf("gat: got %+v, %v", req, err)
	}
	if err := r.ReadRequest(&req); err != io.EOF {
		t.Errorf("at end: %v; want io.EOF", err)
	}
}

func TestReadRequestLimits(t *testing.T) {
	lim := Limits{MaxLine: 100, MaxValue: 10}
	tests := []struct {
		in    string
		reply string
		fatal bool
	}{
		{"get " + strings.Repeat("a", 96) + "\r\n", "", false},
		{"get " + strings.Repeat("a", 97) + "\r\n", ReplyLineTooLong, true},
		{"get " + strings.Repeat("a ", 1<<20), ReplyLineTooLong, true},
		{"set a 0 0 10\r\n0123456789\r\n", "", false},
		{"set a 0 0 11\r\n01234567890\r\n", ReplyTooLarge, false},
	}
	for _, tt := range tests {
		// A reader that fails past the first 64 KiB proves the bound on reads.
		src := io.MultiReader(strings.NewReader(tt.in), iotestErr{})
		r := NewReaderSize(src, lim, 16)
		var req Request
		err := r.ReadRequest(&req)
		var e *Error
		switch {
		case tt.reply == "" && err != nil:
			t.Errorf("ReadRequest(%.20q...) = %v", tt.in, err)
		case tt.reply != "" && (!errors.As(err, &e) || e.Reply != tt.reply || e.Fatal != tt.fatal):
			t.Errorf("ReadRequest(%.20q...) = %v; want %q, fatal %v", tt.in, err, tt.reply, tt.fatal)
		}
		if len(r.long) > 2*lim.MaxLine {
			t.Errorf("ReadRequest(%.20q...) buffered %d bytes", tt.in, len(r.long))
		}
	}
}

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errors.New("read past the end") }

func TestReadRequestEOF(t *testing.T) {
	for _, in := range []string{"get a", "set a 0 0 5\r\nab", "set a 0 0 5\r\n"} {
		r := NewReader(strings.NewReader(in), Limits{})
		var req Request
		if err := r.ReadRequest(&req); err != io.ErrUnexpectedEOF {
			t.Errorf("ReadRequest(%q) = %v; want io.ErrUnexpectedEOF", in, err)
		}
	}
}

func TestReadRequestAllocs(t *testing.T) {
	in := bytes.Repeat([]byte("get a b c\r\nset k 0 0 5\r\nhello\r\nmg k v\r\n"), 1000)
	var req Request
	if n := readAllocs(t, in, func(r *Reader) error { return r.ReadRequest(&req) }); n != 0 {
		t.Errorf("ReadRequest allocates %v times per request; want 0", n)
	}
}

// readAllocs reads in with read, starting over at its end, and returns the
// allocations per read once warm.
func readAllocs(t *testing.T, in []byte, read func(*Reader) error) float64 {
	rd := bytes.NewReader(in)
	r := NewReader(rd, Limits{})
	once := func() {
		if err := read(r); err == io.EOF {
			rd.Reset(in)
			r.Reset(rd)
		} else if err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		once()
	}
	return testing.AllocsPerRun(1000, once)
}

func BenchmarkReadRequest(b *testing.B) {
	for _, bc := range []struct{ name, in string }{
		{"get", "get some:key:1234\r\n"},
		{"get10", "get k0 k1 k2 k3 k4 k5 k6 k7 k8 k9\r\n"},
		{"set100", "set some:key:1234 0 0 100\r\n" + strings.Repeat("v", 100) + "\r\n"},
		{"mg", "mg some:key:1234 v f t\r\n"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			in := bytes.Repeat([]byte(bc.in), 1000)
			rd := bytes.NewReader(in)
			r := NewReader(rd, Limits{})
			var req Request
			b.SetBytes(int64(len(bc.in)))
			for b.Loop() {
				if err := r.ReadRequest(&req); err == io.EOF {
					rd.Reset(in)
					r.Reset(rd)
				}
			}
		})
	}
}
