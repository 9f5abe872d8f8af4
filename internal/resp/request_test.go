package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll reads requests from in until an error, and returns them (each as its
// arguments, quoted and joined by spaces) and the error: "-" and the Reply of
// an *Error, or the error's text.
func readAll(in []byte, lim Limits, rd func(io.Reader) io.Reader) (reqs []string, end string) {
	r := NewReaderSize(rd(bytes.NewReader(in)), lim, 16)
	var q Request
	for {
		err := r.ReadRequest(&q)
		var e *Error
		switch {
		case errors.As(err, &e):
			return reqs, "-" + e.Reply
		case err != nil:
			return reqs, err.Error()
		}
		reqs = append(reqs, quoteArgs(q.Args))
	}
}

func quoteArgs(args [][]byte) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%q", a)
	}
	return b.String()
}

func identity(r io.Reader) io.Reader { return r }

// dataErr returns a reader of r that returns its error with the last data,
// and fails a read after that with errReadAfterError: a Reader must report the
// error, not ask again.
func dataErr(r io.Reader) io.Reader { return &stopAtErr{r: iotest.DataErrReader(r)} }

var errReadAfterError = errors.New("read after an error")

type stopAtErr struct {
	r   io.Reader
	err bool
}

func (s *stopAtErr) Read(p []byte) (int, error) {
	if s.err {
		return 0, errReadAfterError
	}
	n, err := s.r.Read(p)
	s.err = err != nil
	return n, err
}

// readRequestTests lists input streams and the requests a Reader reads from
// them, then how the stream ends. Every one of them is also sent to a real
// redis-server by TestRequestsMatchRedis, which checks that Redis answers the
// same requests and the same error.
var readRequestTests = []struct {
	in   string
	reqs []string // quoteArgs of each request
	end  string   // "-" and the Reply of an *Error, or the read error
}{
	// Multibulk.
	{in: "*1\r\n$4\r\nPING\r\n", reqs: []string{`"PING"`}, end: "EOF"},
	{in: "*2\r\n$4\r\nECHO\r\n$3\r\na b\r\n", reqs: []string{`"ECHO" "a b"`}, end: "EOF"},
	{in: "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", reqs: []string{`"ECHO" ""`}, end: "EOF"},
	{in: "*2\r\n$4\r\nECHO\r\n$4\r\na\r\nb\r\n", reqs: []string{`"ECHO" "a\r\nb"`}, end: "EOF"},
	{in: "*2\r\n$4\r\nECHO\r\n$1\r\n\x00\r\n", reqs: []string{`"ECHO" "\x00"`}, end: "EOF"},
	{in: "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n", reqs: []string{`"PING"`, `"PING"`}, end: "EOF"},
	{in: "*0\r\n*-1\r\n*-7\r\n*1\r\n$4\r\nPING\r\n", reqs: []string{`"PING"`}, end: "EOF"},
	{in: "*1\rX$4\rXPINGXY", reqs: []string{`"PING"`}, end: "EOF"},
	{in: "*1\r\n$4\r\nPINGXY*1\r\n$4\r\nPING\r\n", reqs: []string{`"PING"`, `"PING"`}, end: "EOF"},
	{in: "*1\r\n$4\r\nPING", end: "unexpected EOF"},
	{in: "*1\r\n$4\r\nPI", end: "unexpected EOF"},
	{in: "*2\r\n$4\r\nECHO\r\n", end: "unexpected EOF"},
	{in: "*1\r\n$4\r", end: "unexpected EOF"},
	{in: "*1\r", end: "unexpected EOF"},
	{in: "*1", end: "unexpected EOF"},
	{in: "*", end: "unexpected EOF"},
	{in: "*2147483647\r\n$4\r\nPING\r\n", end: "unexpected EOF"},
	{in: "*2\r\n$4\r\nECHO\r\n$40\r\n" + strings.Repeat("x", 40) + "\r\n", reqs: []string{`"ECHO" "` + strings.Repeat("x", 40) + `"`}, end: "EOF"},
	{in: "*2\r\n$4\r\nECHO\r\n$100\r\n" + strings.Repeat("x", 50), end: "unexpected EOF"},

	// Multibulk errors, with the requests before them.
	{in: "*\r\n", end: "-" + ReplyInvalidMultibulk},
	{in: "*x\r\n", end: "-" + ReplyInvalidMultibulk},
	{in: "*01\r\n", end: "-" + ReplyInvalidMultibulk},
	{in: "*+1\r\n", end: "-" + ReplyInvalidMultibulk},
	{in: "*-0\r\n", end: "-" + ReplyInvalidMultibulk},
	{in: "*1 \r\n", end: "-" + ReplyInvalidMultibulk},
	{in: "*2147483648\r\n", end: "-" + ReplyInvalidMultibulk},
	{in: "*99999999999999999999\r\n", end: "-" + ReplyInvalidMultibulk},
	{in: "*1\r\n\r\n", end: "-" + ReplyExpectedDollar + " '"},
	{in: "*1\r\n\n$4\r\n", end: "-" + ReplyExpectedDollar + " '"},
	{in: "*1\r\nx\r\n", end: "-" + ReplyExpectedDollar + "x'"},
	{in: "*1\r\n\xff\r\n", end: "-" + ReplyExpectedDollar + "\xff'"},
	{in: "*2\r\n$4\r\nECHO\r\n:1\r\n", end: "-" + ReplyExpectedDollar + ":'"},
	{in: "*1\r\n$4\r\nPING\r\n*1\r\n*\r\n", reqs: []string{`"PING"`}, end: "-" + ReplyExpectedDollar + "*'"},
	{in: "*1\r\n$\r\n", end: "-" + ReplyInvalidBulk},
	{in: "*1\r\n$-1\r\n", end: "-" + ReplyInvalidBulk},
	{in: "*1\r\n$01\r\n", end: "-" + ReplyInvalidBulk},
	{in: "*1\r\n$+4\r\nPING\r\n", end: "-" + ReplyInvalidBulk},
	{in: "*1\r\n$4 \r\n", end: "-" + ReplyInvalidBulk},
	{in: "*1\r\n$536870913\r\n", end: "-" + ReplyInvalidBulk},
	{in: "*1\r\n$536870912\r\n", end: "unexpected EOF"},

	// A NUL hides the end of a line from Redis: it waits for more, and past
	// 64 KiB answers that the line is too big.
	{in: "*1\x00\r\n", end: "unexpected EOF"},
	{in: "*1\x00\r\n" + strings.Repeat("x", 65531), end: "unexpected EOF"},
	{in: "*1\x00\r\n" + strings.Repeat("x", 65532), end: "-" + ReplyTooBigMultibulk},
	{in: "*1\r\n\x00\r\n*1\r\n$4\r\nPING\r\n", end: "unexpected EOF"},
	{in: "*1\r\n$1\x00\r\n" + strings.Repeat("x", 65532), end: "-" + ReplyTooBigBulk},
	{in: "PING\x00\r\nPING\r\n", end: "unexpected EOF"},
	{in: "PING\x00\r\n" + strings.Repeat("x", 65530), end: "-" + ReplyTooBigInline},
	{in: "*" + strings.Repeat("1", 65535), end: "unexpected EOF"},
	{in: "*" + strings.Repeat("1", 65536), end: "-" + ReplyTooBigMultibulk},
	{in: "*" + strings.Repeat("1", 65535) + "\r\n", end: "-" + ReplyInvalidMultibulk},
	{in: "*1\r\n$" + strings.Repeat("1", 65536), end: "-" + ReplyTooBigBulk},

	// Inline.
	{in: "PING\r\n", reqs: []string{`"PING"`}, end: "EOF"},
	{in: "ping\n", reqs: []string{`"ping"`}, end: "EOF"},
	{in: "ECHO a\r\r\n", reqs: []string{`"ECHO" "a"`}, end: "EOF"},
	{in: "PING\rPING\r\n", reqs: []string{`"PING" "PING"`}, end: "EOF"},
	{in: "\r\n\n   \r\n\t\r\nPING\r\n", reqs: []string{`"PING"`}, end: "EOF"},
	{in: "  ECHO \t  x  \r\n", reqs: []string{`"ECHO" "x"`}, end: "EOF"},
	{in: " *1\r\n", reqs: []string{`"*1"`}, end: "EOF"},
	{in: "ECHO \va\r\n", reqs: []string{`"ECHO" "a"`}, end: "EOF"},
	{in: "ECHO a\vb\r\n", reqs: []string{`"ECHO" "a\vb"`}, end: "EOF"},
	{in: "ECHO a\fb\r\n", reqs: []string{`"ECHO" "a\fb"`}, end: "EOF"},
	{in: `ECHO "a b"` + "\r\n", reqs: []string{`"ECHO" "a b"`}, end: "EOF"},
	{in: `ECHO "a\x41\n\r\t\b\a\q\\\""` + "\r\n", reqs: []string{`"ECHO" "aA\n\r\t\b\aq\\\""`}, end: "EOF"},
	{in: `ECHO "\xZZ" "\x4" "\x4g"` + "\r\n", reqs: []string{`"ECHO" "xZZ" "x4" "x4g"`}, end: "EOF"},
	{in: `ECHO 'a\'b' 'c\d' ''` + "\r\n", reqs: []string{`"ECHO" "a'b" "c\\d" ""`}, end: "EOF"},
	{in: `ECHO a"b c"d` + "\r\n", end: "-" + ReplyUnbalancedQuotes},
	{in: `ECHO a"b c"` + "\r\n", reqs: []string{`"ECHO" "ab c"`}, end: "EOF"},
	{in: `ECHO a'b c'` + "\r\n", reqs: []string{`"ECHO" "ab c"`}, end: "EOF"},
	{in: `ECHO "a"` + "\t\r\n", reqs: []string{`"ECHO" "a"`}, end: "EOF"},
	{in: `ECHO "a"` + "\v1\r\n", reqs: []string{`"ECHO" "a" "1"`}, end: "EOF"},
	{in: "ECHO \"a\"\r\r\n", reqs: []string{`"ECHO" "a"`}, end: "EOF"},
	{in: "PING\r\n" + `ECHO "a`, reqs: []string{`"PING"`}, end: "unexpected EOF"},
	{in: `ECHO "a` + "\r\n", end: "-" + ReplyUnbalancedQuotes},
	{in: `ECHO 'a` + "\r\n", end: "-" + ReplyUnbalancedQuotes},
	{in: `ECHO "a\"` + "\r\n", end: "-" + ReplyUnbalancedQuotes},
	{in: `ECHO "a\` + "\r\n", end: "-" + ReplyUnbalancedQuotes},
	{in: `ECHO "a"b` + "\r\n", end: "-" + ReplyUnbalancedQuotes},
	{in: `ECHO 'a'b` + "\r\n", end: "-" + ReplyUnbalancedQuotes},
	{in: `ECHO ""x` + "\r\n", end: "-" + ReplyUnbalancedQuotes},
	{in: "PING\r\n" + `"a"b` + "\r\nPING\r\n", reqs: []string{`"PING"`}, end: "-" + ReplyUnbalancedQuotes},
	{in: "ECHO " + strings.Repeat("x", 65531) + "\n", reqs: []string{`"ECHO" "` + strings.Repeat("x", 65531) + `"`}, end: "EOF"},
	{in: strings.Repeat("x", 65536), end: "unexpected EOF"},
	{in: strings.Repeat("x", 65537), end: "-" + ReplyTooBigInline},
	{in: "PING", end: "unexpected EOF"},
	{in: "PING\r", end: "unexpected EOF"},
	{in: "", end: "EOF"},
	{in: "\r\n", end: "EOF"},
	{in: "*0\r\n", end: "EOF"},
}

func TestReadRequest(t *testing.T) {
	for _, tt := range readRequestTests {
		for name, rd := range map[string]func(io.Reader) io.Reader{
			"whole": identity, "bytewise": iotest.OneByteReader, "halves": iotest.HalfReader, "dataerr": dataErr,
		} {
			reqs, end := readAll([]byte(tt.in), Limits{}, rd)
			if !equalStrings(reqs, tt.reqs) || end != tt.end {
				t.Errorf("%s ReadRequest(%q) = %q, %q; want %q, %q", name, cut(tt.in), reqs, end, tt.reqs, tt.end)
			}
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// cut shortens a long test input for a message.
func cut(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%s...(%d bytes)", s[:60], len(s))
	}
	return s
}

func TestReadRequestFields(t *testing.T) {
	r := NewReader(strings.NewReader("SET k v\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"), Limits{})
	var q Request
	if err := r.ReadRequest(&q); err != nil {
		t.Fatal(err)
	}
	if !q.Inline || string(q.Name()) != "SET" || len(q.Args) != 3 || q.Size() != 5+3*32 {
		t.Errorf("inline request read as Inline %v, Name %q, %d args, Size %d; want true, SET, 3, %d", q.Inline, q.Name(), len(q.Args), q.Size(), 5+3*32)
	}
	// An argument's capacity ends with it: appending to one must not write
	// over the next.
	_ = append(q.Args[1], 'X')
	if string(q.Args[2]) != "v" {
		t.Errorf("appending to Args[1] changed Args[2] to %q", q.Args[2])
	}
	if err := r.ReadRequest(&q); err != nil {
		t.Fatal(err)
	}
	if q.Inline || string(q.Name()) != "GET" || len(q.Args) != 2 {
		t.Errorf("multibulk request read as Inline %v, Name %q, %d args; want false, GET, 2", q.Inline, q.Name(), len(q.Args))
	}
	q.Reset()
	if q.Name() != nil || q.Inline {
		t.Errorf("Reset left Name %q, Inline %v", q.Name(), q.Inline)
	}
}

func TestReadRequestLimits(t *testing.T) {
	tests := []struct {
		in   string
		lim  Limits
		auth bool
		reqs []string
		end  string
	}{
		{in: "*1\r\n$5\r\nhello\r\n", lim: Limits{MaxBulk: 5}, reqs: []string{`"hello"`}, end: "EOF"},
		{in: "*1\r\n$6\r\nhello!\r\n", lim: Limits{MaxBulk: 5}, end: "-" + ReplyInvalidBulk},
		// An inline request's limit counts its "\r", as Redis counts it.
		{in: "PING 123456\r\n", lim: Limits{MaxInline: 12}, reqs: []string{`"PING" "123456"`}, end: "EOF"},
		{in: "PING 1234567\r\n", lim: Limits{MaxInline: 12}, end: "-" + ReplyTooBigInline},
		{in: "PING 1234567\n", lim: Limits{MaxInline: 12}, reqs: []string{`"PING" "1234567"`}, end: "EOF"},
		{in: "*1\r\n$1\r\na\r\n", lim: Limits{MaxInline: 2}, reqs: []string{`"a"`}, end: "EOF"},
		{in: "*10\r\n", lim: Limits{MaxInline: 2}, end: "-" + ReplyTooBigMultibulk},
		{in: "*1\r\n$10\r\n", lim: Limits{MaxInline: 2}, end: "-" + ReplyTooBigBulk},
		// MaxSize counts a request's bytes as sent and 32 per argument: this
		// one is 4 + 8 + 32 bytes.
		{in: "*1\r\n$2\r\nab\r\n", lim: Limits{MaxSize: 44}, reqs: []string{`"ab"`}, end: "EOF"},
		{in: "*1\r\n$2\r\nab\r\n", lim: Limits{MaxSize: 43}, end: "-" + ReplyTooBig},
		{in: "*1000\r\n" + strings.Repeat("$0\r\n\r\n", 1000), lim: Limits{MaxSize: 10000}, end: "-" + ReplyTooBig},
		{in: "*1\r\n$100000000\r\n", lim: Limits{MaxSize: 1 << 20}, end: "-" + ReplyTooBig},

		// A client yet to authenticate, as Redis with requirepass reads it.
		{in: "*10\r\n", auth: true, end: "unexpected EOF"},
		{in: "*11\r\n", auth: true, end: "-" + ReplyUnauthMultibulk},
		{in: "*1\r\n$16384\r\n", auth: true, end: "unexpected EOF"},
		{in: "*1\r\n$16385\r\n", auth: true, end: "-" + ReplyUnauthBulk},
		{in: "*1\r\n$x\r\n", auth: true, end: "-" + ReplyInvalidBulk},
		{in: "PING " + strings.Repeat("x", 20000) + "\r\n", auth: true, reqs: []string{`"PING" "` + strings.Repeat("x", 20000) + `"`}, end: "EOF"},
	}
	for _, tt := range tests {
		r := NewReaderSize(strings.NewReader(tt.in), tt.lim, 16)
		r.SetAuthRequired(tt.auth)
		var reqs []string
		var end string
		var q Request
		for end == "" {
			err := r.ReadRequest(&q)
			var e *Error
			switch {
			case errors.As(err, &e):
				end = "-" + e.Reply
			case err != nil:
				end = err.Error()
			default:
				reqs = append(reqs, quoteArgs(q.Args))
			}
		}
		if !equalStrings(reqs, tt.reqs) || end != tt.end {
			t.Errorf("ReadRequest(%q) with %+v, auth %v = %q, %q; want %q, %q", cut(tt.in), tt.lim, tt.auth, reqs, end, tt.reqs, tt.end)
		}
	}
}

// TestReadRequestBigBulk reads a bulk larger than the Reader's buffer, in
// pieces, and checks that the Request's memory grew with the bytes that came,
// not with the length announced.
func TestReadRequestBigBulk(t *testing.T) {
	const n = 1 << 20
	in := fmt.Sprintf("*2\r\n$3\r\nSET\r\n$%d\r\n%s\r\n", n, strings.Repeat("v", n))
	r := NewReader(iotest.HalfReader(strings.NewReader(in)), Limits{})
	var q Request
	if err := r.ReadRequest(&q); err != nil {
		t.Fatal(err)
	}
	if len(q.Args) != 2 || len(q.Args[1]) != n || strings.Count(string(q.Args[1]), "v") != n {
		t.Fatalf("read %d args, the second of %d bytes; want 2, %d bytes of v", len(q.Args), len(q.Args[1]), n)
	}
	if c := cap(q.data); c > 2*(n+3) {
		t.Errorf("a %d-byte bulk grew the request to %d bytes; want at most twice", n, c)
	}

	// A bulk announced large but cut short holds only what came.
	in = fmt.Sprintf("*1\r\n$%d\r\n%s", 500<<20, strings.Repeat("v", 1000))
	r = NewReader(strings.NewReader(in), Limits{})
	q = Request{}
	if err := r.ReadRequest(&q); err != io.ErrUnexpectedEOF {
		t.Fatalf("ReadRequest of a truncated bulk = %v; want %v", err, io.ErrUnexpectedEOF)
	}
	if c := cap(q.data); c > 64<<10 {
		t.Errorf("1000 bytes of a bulk announced as 500 MiB grew the request to %d bytes", c)
	}
}

func TestErrorText(t *testing.T) {
	_, err := readAllErr("*1\r\n$x\r\n")
	if got, want := err.Error(), `resp: ERR Protocol error: invalid bulk length: near "$x"`; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	if got, want := (&Error{Reply: "ERR x"}).Error(), "resp: ERR x"; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
}

func readAllErr(in string) (int, error) {
	r := NewReader(strings.NewReader(in), Limits{})
	var q Request
	for n := 0; ; n++ {
		if err := r.ReadRequest(&q); err != nil {
			return n, err
		}
	}
}

func TestAppendRequest(t *testing.T) {
	tests := []struct{ in, want string }{
		{"PING\r\n", "*1\r\n$4\r\nPING\r\n"},
		{"SET k \"a b\"\r\n", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\na b\r\n"},
		{"*2\r\n$3\r\nGET\r\n$10\r\n0123456789\r\n", "*2\r\n$3\r\nGET\r\n$10\r\n0123456789\r\n"},
		{"*1\r\n$0\r\n\r\n", "*1\r\n$0\r\n\r\n"},
	}
	for _, tt := range tests {
		r := NewReader(strings.NewReader(tt.in), Limits{})
		var q Request
		if err := r.ReadRequest(&q); err != nil {
			t.Fatalf("ReadRequest(%q): %v", tt.in, err)
		}
		if got := AppendRequest(nil, &q); string(got) != tt.want {
			t.Errorf("AppendRequest(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestWait(t *testing.T) {
	r := NewReader(iotest.TimeoutReader(strings.NewReader("PING\r\n")), Limits{})
	if err := r.Wait(); err != nil || r.Buffered() != 6 {
		t.Fatalf("Wait() = %v with %d bytes buffered; want nil, 6", err, r.Buffered())
	}
	var q Request
	if err := r.ReadRequest(&q); err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(); err != iotest.ErrTimeout {
		t.Fatalf("Wait() = %v; want %v", err, iotest.ErrTimeout)
	}
	r.Reset(strings.NewReader("ECHO x\r\n"))
	if err := r.ReadRequest(&q); err != nil || quoteArgs(q.Args) != `"ECHO" "x"` {
		t.Fatalf("after Reset, ReadRequest = %q, %v; want \"ECHO\" \"x\", nil", quoteArgs(q.Args), err)
	}
}

// TestResetShrinks checks that a Reader whose buffer a long line grew gets
// its first size back on Reset, and the authentication state too.
func TestResetShrinks(t *testing.T) {
	long := "ECHO " + strings.Repeat("x", 50000) + "\r\n"
	r := NewReaderSize(strings.NewReader(long), Limits{}, 512)
	r.SetAuthRequired(true)
	var q Request
	if err := r.ReadRequest(&q); err != nil {
		t.Fatal(err)
	}
	if len(r.buf) <= 512 {
		t.Fatalf("a 50000-byte line left a buffer of %d bytes", len(r.buf))
	}
	r.Reset(nil)
	if len(r.buf) != 512 || r.auth {
		t.Errorf("after Reset: a buffer of %d bytes, auth %v; want 512, false", len(r.buf), r.auth)
	}
}

// pipeline is a stream of requests a proxy sees most: SETs and GETs of small
// values, and MGETs of 10 keys.
func pipeline(n int) []byte {
	var b []byte
	var q Request
	for i := range n {
		key := fmt.Appendf(nil, "key:%06d", i)
		switch i % 3 {
		case 0:
			q.Args = [][]byte{[]byte("SET"), key, []byte("some value of 32 bytes, or near.")}
		case 1:
			q.Args = [][]byte{[]byte("GET"), key}
		default:
			q.Args = [][]byte{[]byte("MGET")}
			for j := range 10 {
				q.Args = append(q.Args, fmt.Appendf(nil, "key:%06d", i+j))
			}
		}
		b = AppendRequest(b, &q)
	}
	return b
}

// loopReader reads b over and over.
type loopReader struct {
	b []byte
	i int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.b[l.i:])
	l.i = (l.i + n) % len(l.b)
	return n, nil
}

// mget is a request of MGET of n keys.
func mget(n int) []byte {
	q := Request{Args: [][]byte{[]byte("MGET")}}
	for i := range n {
		q.Args = append(q.Args, fmt.Appendf(nil, "key:%06d", i))
	}
	return AppendRequest(nil, &q)
}

func TestReadRequestAllocs(t *testing.T) {
	in := pipeline(30)
	in = append(in, "GET key:1\r\nSET key:2 \"quoted value\"\r\n"...)
	r := NewReader(&loopReader{b: in}, Limits{})
	var q Request
	for range 100 { // warm up q's memory
		if err := r.ReadRequest(&q); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if err := r.ReadRequest(&q); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("ReadRequest allocates %v times per request; want 0", allocs)
	}
}

func BenchmarkReadRequest(b *testing.B) {
	for _, bc := range []struct {
		name string
		in   []byte
		reqs int // in in
	}{
		{"get", AppendRequest(nil, &Request{Args: [][]byte{[]byte("GET"), []byte("key:000001")}}), 1},
		{"set", AppendRequest(nil, &Request{Args: [][]byte{[]byte("SET"), []byte("key:000001"), bytes.Repeat([]byte("v"), 32)}}), 1},
		{"mget10", mget(10), 1},
		{"pipeline", pipeline(300), 300},
		{"inline", []byte("SET key:000001 \"some value\"\r\n"), 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var q Request
			r := NewReader(&loopReader{b: bc.in}, Limits{})
			for range 10 {
				r.ReadRequest(&q)
			}
			b.SetBytes(int64(len(bc.in) / bc.reqs))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := r.ReadRequest(&q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
