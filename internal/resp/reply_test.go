package resp

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readReplyTests lists replies, each followed by "+NEXT\r\n", and what reading
// them gives: the top-level value and its elements, or the error.
var readReplyTests = []struct {
	in    string
	kind  Kind
	str   string
	n     int64
	elems []string // AppendElems
	err   string   // the *Error's Reply
}{
	{in: "+OK\r\n", kind: KindSimple, str: "OK"},
	{in: "+\r\n", kind: KindSimple, str: ""},
	{in: "+a b\tc\r\n", kind: KindSimple, str: "a b\tc"},
	{in: "-ERR no\r\n", kind: KindError, str: "ERR no"},
	{in: "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", kind: KindError, str: "WRONGTYPE Operation against a key holding the wrong kind of value"},
	{in: ":0\r\n", kind: KindInteger, n: 0},
	{in: ":-1\r\n", kind: KindInteger, n: -1},
	{in: ":9223372036854775807\r\n", kind: KindInteger, n: 9223372036854775807},
	{in: ":-9223372036854775808\r\n", kind: KindInteger, n: -9223372036854775808},
	{in: "$0\r\n\r\n", kind: KindBulk, str: "", n: 0},
	{in: "$3\r\nabc\r\n", kind: KindBulk, str: "abc", n: 3},
	{in: "$4\r\na\r\nb\r\n", kind: KindBulk, str: "a\r\nb", n: 4},
	{in: "$-1\r\n", kind: KindBulk, n: -1},
	{in: "*0\r\n", kind: KindArray, n: 0},
	{in: "*-1\r\n", kind: KindArray, n: -1},
	{in: "*2\r\n$1\r\na\r\n$-1\r\n", kind: KindArray, n: 2, elems: []string{"$1\r\na\r\n", "$-1\r\n"}},
	{in: "*3\r\n:1\r\n*2\r\n+x\r\n*1\r\n-e\r\n*0\r\n", kind: KindArray, n: 3, elems: []string{":1\r\n", "*2\r\n+x\r\n*1\r\n-e\r\n", "*0\r\n"}},
	{in: "*2\r\n*-1\r\n*1\r\n$2\r\n\r\n\r\n", kind: KindArray, n: 2, elems: []string{"*-1\r\n", "*1\r\n$2\r\n\r\n\r\n"}},
	{in: "*1\r\n" + strings.Repeat("*1\r\n", 100) + ":7\r\n", kind: KindArray, n: 1, elems: []string{strings.Repeat("*1\r\n", 100) + ":7\r\n"}},

	{in: "\r\n", err: replyBadType},
	{in: "x\r\n", err: replyBadType},
	{in: "%1\r\n", err: replyBadType},
	{in: "_\r\n", err: replyBadType},
	{in: "+OK\n", err: replyBadLine},
	{in: "+O\rK\r\n", err: replyBadLine},
	{in: "+OK\r\r\n", err: replyBadLine},
	{in: ":\r\n", err: replyBadInt},
	{in: ":01\r\n", err: replyBadInt},
	{in: ":+1\r\n", err: replyBadInt},
	{in: ":-0\r\n", err: replyBadInt},
	{in: ":1.5\r\n", err: replyBadInt},
	{in: ":9223372036854775808\r\n", err: replyBadInt},
	{in: ":" + strings.Repeat("1", 30) + "\r\n", err: replyLongLine},
	{in: "$\r\n", err: replyBadBulk},
	{in: "$-2\r\n", err: replyBadBulk},
	{in: "$x\r\n", err: replyBadBulk},
	{in: "$3\r\nabcd\r\n", err: replyBadEnd},
	{in: "$3\r\nab\r\n", err: replyBadEnd},
	{in: "$536870913\r\n", err: replyBadBulk},
	{in: "*\r\n", err: replyBadArray},
	{in: "*-2\r\n", err: replyBadArray},
	{in: "*1\r\nx\r\n", err: replyBadType},
	{in: "*2\r\n:1\r\n:x\r\n", err: replyBadInt},
	{in: "*1000000000\r\n", err: replyTooBig},
}

func TestReadReply(t *testing.T) {
	for _, tt := range readReplyTests {
		for name, rd := range map[string]func(io.Reader) io.Reader{
			"whole": identity, "bytewise": iotest.OneByteReader, "halves": iotest.HalfReader, "dataerr": dataErr,
		} {
			r := NewReaderSize(rd(strings.NewReader(tt.in+"+NEXT\r\n")), Limits{}, 16)
			var rp Reply
			err := r.ReadReply(&rp)
			var e *Error
			switch {
			case tt.err != "":
				if !errors.As(err, &e) || e.Reply != tt.err {
					t.Errorf("%s ReadReply(%q) = %v; want %q", name, cut(tt.in), err, tt.err)
				}
				continue
			case err != nil:
				t.Errorf("%s ReadReply(%q): %v", name, cut(tt.in), err)
				continue
			}
			var elems []string
			for _, e := range rp.AppendElems(nil) {
				elems = append(elems, string(e))
			}
			if rp.Kind != tt.kind || string(rp.Str) != tt.str || rp.Int != tt.n || !equalStrings(elems, tt.elems) {
				t.Errorf("%s ReadReply(%q) = %v %q %d %q; want %v %q %d %q", name, cut(tt.in),
					rp.Kind, rp.Str, rp.Int, elems, tt.kind, tt.str, tt.n, tt.elems)
			}
			if (rp.Str == nil) != (tt.kind == KindInteger || tt.kind == KindArray || tt.n < 0) {
				t.Errorf("%s ReadReply(%q): Str is %q", name, cut(tt.in), rp.Str)
			}
			if string(rp.Bytes()) != tt.in || string(AppendReply([]byte("x"), &rp)) != "x"+tt.in {
				t.Errorf("%s ReadReply(%q): Bytes() = %q", name, cut(tt.in), rp.Bytes())
			}
			if err := r.ReadReply(&rp); err != nil || string(rp.Str) != "NEXT" {
				t.Errorf("%s ReadReply after %q = %q, %v; want \"NEXT\"", name, cut(tt.in), rp.Str, err)
			}
		}
	}
}

func TestReadReplyEOF(t *testing.T) {
	for in, want := range map[string]error{
		"":             io.EOF,
		"+OK":          io.ErrUnexpectedEOF,
		"+OK\r":        io.ErrUnexpectedEOF,
		"$3\r\nab":     io.ErrUnexpectedEOF,
		"$3\r\nabc\r":  io.ErrUnexpectedEOF,
		"*2\r\n:1\r\n": io.ErrUnexpectedEOF,
		"*1":           io.ErrUnexpectedEOF,
	} {
		var rp Reply
		if err := NewReader(strings.NewReader(in), Limits{}).ReadReply(&rp); err != want {
			t.Errorf("ReadReply(%q) = %v; want %v", in, err, want)
		}
	}
}

func TestReadReplyLimits(t *testing.T) {
	tests := []struct {
		in  string
		lim Limits
		err string
	}{
		{in: "$5\r\nhello\r\n", lim: Limits{MaxBulk: 5}},
		{in: "$6\r\nhello!\r\n", lim: Limits{MaxBulk: 5}, err: replyBadBulk},
		{in: "+hello\r\n", lim: Limits{MaxBulk: 5}},
		{in: "+hello!\r\n", lim: Limits{MaxBulk: 5}, err: replyLongLine},
		{in: "$5\r\nhello\r\n", lim: Limits{MaxSize: 11}},
		{in: "$5\r\nhello\r\n", lim: Limits{MaxSize: 10}, err: replyTooBig},
		{in: "+hello\r\n", lim: Limits{MaxSize: 7}, err: replyLongLine},
		{in: "*3\r\n:1\r\n:2\r\n:3\r\n", lim: Limits{MaxSize: 16}},
		{in: "*3\r\n:1\r\n:2\r\n:3\r\n", lim: Limits{MaxSize: 15}, err: replyTooBig},
		{in: "*4\r\n", lim: Limits{MaxSize: 15}, err: replyTooBig},
		{in: "*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", lim: Limits{MaxSize: 19}, err: replyTooBig},
		{in: "*2\r\n:10000\r\n:10000\r\n", lim: Limits{MaxSize: 20}},
		{in: "*2\r\n:10000\r\n:10000\r\n", lim: Limits{MaxSize: 19}, err: replyTooBig},
	}
	for _, tt := range tests {
		var rp Reply
		err := NewReader(strings.NewReader(tt.in), tt.lim).ReadReply(&rp)
		var e *Error
		switch {
		case tt.err == "" && err != nil, tt.err != "" && (!errors.As(err, &e) || e.Reply != tt.err):
			t.Errorf("ReadReply(%q) with %+v = %v; want %q", tt.in, tt.lim, err, tt.err)
		}
	}
}

// TestReadReplyBigBulk reads a bulk larger than the Reader's buffer in pieces.
func TestReadReplyBigBulk(t *testing.T) {
	const n = 3 << 20
	big := strings.Repeat("z", n)
	r := NewReader(iotest.HalfReader(strings.NewReader("$3145728\r\n"+big+"\r\n:1\r\n")), Limits{})
	var rp Reply
	if err := r.ReadReply(&rp); err != nil {
		t.Fatal(err)
	}
	if string(rp.Str) != big {
		t.Fatalf("read a bulk of %d bytes; want %d bytes of z", len(rp.Str), n)
	}
	if err := r.ReadReply(&rp); err != nil || rp.Int != 1 {
		t.Fatalf("ReadReply after the bulk = %d, %v; want 1", rp.Int, err)
	}
}

func TestAppendReplies(t *testing.T) {
	tests := []struct {
		got  []byte
		want string
	}{
		{AppendSimple(nil, "OK"), "+OK\r\n"},
		{AppendSimple(nil, "a\r\nb"), "+a  b\r\n"},
		{AppendError(nil, "ERR bad\nthing"), "-ERR bad thing\r\n"},
		{AppendError(nil, ""), "-\r\n"},
		{AppendInt(nil, 0), ":0\r\n"},
		{AppendInt(nil, 7), ":7\r\n"},
		{AppendInt(nil, -9223372036854775808), ":-9223372036854775808\r\n"},
		{AppendBulk(nil, []byte("a\r\nb")), "$4\r\na\r\nb\r\n"},
		{AppendBulk(nil, nil), "$0\r\n\r\n"},
		{AppendBulkString(nil, "0123456789"), "$10\r\n0123456789\r\n"},
		{AppendNull(nil), "$-1\r\n"},
		{AppendArray(nil, 12), "*12\r\n"},
		{AppendNullArray(nil), "*-1\r\n"},
		{AppendInt(AppendArray([]byte("x"), 1), 1), "x*1\r\n:1\r\n"},
	}
	for _, tt := range tests {
		if string(tt.got) != tt.want {
			t.Errorf("got %q; want %q", tt.got, tt.want)
		}
		// Each writes a reply that reads back.
		var rp Reply
		in := strings.TrimPrefix(tt.want, "x")
		if err := NewReader(strings.NewReader(in), Limits{}).ReadReply(&rp); err != nil && !strings.HasPrefix(in, "*12") {
			t.Errorf("ReadReply(%q): %v", in, err)
		}
	}
}

func TestSetError(t *testing.T) {
	var rp Reply
	rp.SetError("ERR server\r\ngone")
	if rp.Kind != KindError || string(rp.Str) != "ERR server  gone" || string(rp.Bytes()) != "-ERR server  gone\r\n" || !rp.IsError() {
		t.Errorf("SetError made %v %q %q", rp.Kind, rp.Str, rp.Bytes())
	}
	rp.Reset()
	if rp.Kind != 0 || rp.Str != nil || len(rp.Bytes()) != 0 {
		t.Errorf("Reset left %v %q %q", rp.Kind, rp.Str, rp.Bytes())
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindSimple: "simple string", KindError: "error", KindInteger: "integer",
		KindBulk: "bulk string", KindArray: "array", Kind('%'): "Kind('%')"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%q).String() = %q; want %q", byte(k), got, want)
		}
	}
}

// replies is a stream of the replies a proxy reads most: +OK, bulks, nulls,
// integers, and arrays of 10 bulks.
func replies() []byte {
	b := AppendSimple(nil, "OK")
	b = AppendBulkString(b, "some value of 32 bytes, or near.")
	b = AppendNull(b)
	b = AppendInt(b, 3)
	b = AppendArray(b, 10)
	for i := range 10 {
		if i%4 == 3 {
			b = AppendNull(b)
		} else {
			b = AppendBulkString(b, "value")
		}
	}
	return b
}

func TestReadReplyAllocs(t *testing.T) {
	r := NewReader(&loopReader{b: replies()}, Limits{})
	var rp Reply
	var elems [][]byte
	for range 20 {
		if err := r.ReadReply(&rp); err != nil {
			t.Fatal(err)
		}
		elems = rp.AppendElems(elems[:0])
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if err := r.ReadReply(&rp); err != nil {
			t.Fatal(err)
		}
		elems = rp.AppendElems(elems[:0])
	})
	if allocs != 0 {
		t.Errorf("ReadReply and AppendElems allocate %v times per reply; want 0", allocs)
	}
	dst := make([]byte, 0, 1024)
	allocs = testing.AllocsPerRun(1000, func() {
		dst = AppendBulkString(AppendInt(AppendSimple(AppendArray(dst[:0], 3), "OK"), 12345), "value")
		dst = AppendReply(AppendError(AppendNull(dst), "ERR x"), &rp)
	})
	if allocs != 0 {
		t.Errorf("the Append functions allocate %v times; want 0", allocs)
	}
}

func BenchmarkReadReply(b *testing.B) {
	for _, bc := range []struct {
		name string
		in   []byte
	}{
		{"ok", AppendSimple(nil, "OK")},
		{"bulk32", AppendBulkString(nil, "some value of 32 bytes, or near.")},
		{"bulk16k", AppendBulk(nil, bytes.Repeat([]byte("v"), 16<<10))},
		{"array10", replies()[bytes.IndexByte(replies(), '*'):]},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var rp Reply
			r := NewReader(&loopReader{b: bc.in}, Limits{})
			r.ReadReply(&rp)
			b.SetBytes(int64(len(bc.in)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := r.ReadReply(&rp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAppendReplies(b *testing.B) {
	var rp Reply
	NewReader(bytes.NewReader(AppendBulkString(nil, "value")), Limits{}).ReadReply(&rp)
	value := []byte("some value of 32 bytes, or near.")
	for _, bc := range []struct {
		name string
		f    func([]byte) []byte
	}{
		{"ok", func(d []byte) []byte { return AppendSimple(d, "OK") }},
		{"int", func(d []byte) []byte { return AppendInt(d, 1234567) }},
		{"bulk32", func(d []byte) []byte { return AppendBulk(d, value) }},
		{"array10", func(d []byte) []byte {
			d = AppendArray(d, 10)
			for range 10 {
				d = AppendBulk(d, value)
			}
			return d
		}},
		{"forward", func(d []byte) []byte { return AppendReply(d, &rp) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dst := bc.f(nil)
			b.SetBytes(int64(len(dst)))
			b.ReportAllocs()
			for range b.N {
				dst = bc.f(dst[:0])
			}
		})
	}
}
