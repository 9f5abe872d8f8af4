package memcache

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// readParts reads the requests of in with a Reader of lim, joining the parts
// of each line: it returns each request's command, exptime and keys (or its
// error's reply) as a line, and the longest part line AppendRequest wrote.
func readParts(t testing.TB, in string, lim Limits, size int) (got []string, longest int) {
	t.Helper()
	r := NewReaderSize(strings.NewReader(in), lim, size)
	var req Request
	var keys []string
	for {
		err := r.ReadRequest(&req)
		var e *Error
		switch {
		case errors.As(err, &e):
			got = append(got, e.Reply)
			keys = keys[:0]
			if e.Fatal {
				return got, longest
			}
			continue
		case err != nil:
			return got, longest
		}
		if req.More && !req.Command.IsRetrieval() {
			t.Fatalf("ReadRequest(%.40q...) = %v with More", in, req.Command)
		}
		if req.Command.IsRetrieval() && (len(req.Keys) > 0 || req.Command == CmdGat || req.Command == CmdGats) {
			if err := req.Validate(); err != nil {
				t.Fatalf("ReadRequest(%.40q...): part %q: Validate() = %v", in, AppendRequest(nil, &req), err)
			}
			longest = max(longest, len(AppendRequest(nil, &req)))
		}
		for _, k := range req.Keys {
			keys = append(keys, string(k))
		}
		if !req.More {
			got = append(got, fmt.Sprintf("%v %d %s", req.Command, req.Exptime, strings.Join(keys, " ")))
			keys = keys[:0]
		}
	}
}

func TestParts(t *testing.T) {
	many := func(n int, sep string) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(sep)
			}
			fmt.Fprintf(&b, "key:%06d", i)
		}
		return b.String()
	}
	long := Limits{MaxLine: 8 << 20, MaxValue: 1 << 20}
	tests := []struct {
		name string
		in   string
	}{
		{"short get", "get a b c\r\n"},
		{"1 MB get of 5000 keys", "get " + many(5000, strings.Repeat(" ", 200)) + "\r\n"},
		{"gets", "gets " + many(20000, " ") + "\r\nversion\r\n"},
		{"gat", "gat 30 " + many(3000, "  ") + "\r\n"},
		{"gats, negative exptime", "gats -1 " + many(3000, " ") + "\nget a\r\n"},
		{"long key at the end", "get " + many(10000, " ") + " " + strings.Repeat("k", 251) + "\r\nget b\r\n"},
		{"long key in the middle", "get " + many(5000, " ") + " " + strings.Repeat("k", 100000) + " " + many(5000, " ") + "\r\nget b\r\n"},
		{"control character", "get " + many(5000, " ") + "\x01 a\r\nget b\r\n"},
		{"bad exptime", "gat x" + many(5000, " ") + "\r\nget b\r\n"},
		{"gat without exptime", "gat" + strings.Repeat(" ", 70000) + "\r\nget b\r\n"},
		{"trailing spaces", "get " + many(5000, " ") + strings.Repeat(" ", 70000) + "\r\nget b\r\n"},
		{"unknown line, long", "foo " + many(5000, " ") + "\r\nget b\r\n"},
	}
	lim := Limits{Parts: true}
	for _, tt := range tests {
		got, longest := readParts(t, tt.in, lim, 4096)
		want, _ := readParts(t, tt.in, long, 4096)
		if len(want) > 0 && want[0] == ReplyLineTooLong && strings.HasPrefix(tt.in, "gat") {
			want = nil // without parts, a gat line over MaxCommandLine is refused
		}
		if want != nil && fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: ReadRequest = %.200q; want %.200q", tt.name, got, want)
		}
		if longest > DefaultMaxLine+2 {
			t.Errorf("%s: a part of %d bytes; want at most %d", tt.name, longest, DefaultMaxLine+2)
		}
	}
}

// TestPartsGat checks gat lines: read in parts of at most MaxCommandLine bytes,
// which memcached reads whole.
func TestPartsGat(t *testing.T) {
	var keys []string
	for i := range 3000 {
		keys = append(keys, fmt.Sprintf("k%d", i))
	}
	in := "gats -2147483648 " + strings.Join(keys, " ") + "\r\n"
	got, longest := readParts(t, in, Limits{Parts: true}, 512)
	want := "gats -2147483648 " + strings.Join(keys, " ")
	if len(got) != 1 || got[0] != want {
		t.Errorf("ReadRequest(%.40q...) = %.80q; want %.80q", in, got, want)
	}
	if longest > MaxCommandLine {
		t.Errorf("ReadRequest(%.40q...): a part of %d bytes; want at most %d", in, longest, MaxCommandLine)
	}
	// An exptime longer than a part is not cut into an exptime and a key.
	in = "gat " + strings.Repeat("0", 700) + " a\r\nget b\r\n"
	got, _ = readParts(t, in, Limits{MaxLine: 300, Parts: true}, 16)
	if len(got) != 1 || got[0] != ReplyLineTooLong {
		t.Errorf("ReadRequest(%.40q...) = %.80q; want %q, then nothing", in, got, ReplyLineTooLong)
	}
}

// TestPartsMemory checks that a Reader holds a bounded part of a long line.
func TestPartsMemory(t *testing.T) {
	in := "get " + strings.Repeat("abcdefgh ", 1<<20) + "\r\n" // 9 MiB
	r := NewReaderSize(strings.NewReader(in), Limits{Parts: true}, 4096)
	var req Request
	n, parts := 0, 0
	for {
		if err := r.ReadRequest(&req); err != nil {
			break
		}
		n += len(req.Keys)
		parts++
		if c := cap(r.pbuf) + cap(r.long) + cap(req.line); c > 4*DefaultMaxLine {
			t.Fatalf("part %d: the reader holds %d bytes of a line", parts, c)
		}
	}
	if n != 1<<20 {
		t.Errorf("ReadRequest read %d keys in %d parts; want %d", n, parts, 1<<20)
	}
}

// FuzzParts reads input with and without parts: the keys of a line's parts
// are the keys of the line read whole, and each part is a request memcached
// reads whole.
func FuzzParts(f *testing.F) {
	for _, tt := range readRequestTests {
		if len(tt.in) < 4096 {
			f.Add([]byte(tt.in), uint8(0))
		}
	}
	f.Add([]byte("get "+strings.Repeat("ab ", 400)+"\r\nget a\r\n"), uint8(3))
	f.Add([]byte("gat 1 "+strings.Repeat("a  ", 1000)+"\r\nget a\r\n"), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, size uint8) {
		in := string(data)
		parts := Limits{MaxLine: 300 + int(size), Parts: true}
		got, longest := readParts(t, in, parts, 16)
		want, _ := readParts(t, in, Limits{MaxLine: 1 << 20}, 16)
		if longest > parts.MaxLine+2 {
			t.Fatalf("ReadRequest(%q): a part of %d bytes; want at most %d", data, longest, parts.MaxLine+2)
		}
		for i := range min(len(got), len(want)) {
			if want[i] == ReplyLineTooLong || got[i] == ReplyLineTooLong {
				// A gat line too long to read whole is read in parts; a line
				// of another command longer than parts.MaxLine is refused.
				return
			}
			if got[i] != want[i] {
				t.Fatalf("ReadRequest(%q) = %q; want %q", data, got, want)
			}
		}
		// A last line without its end is nothing read whole, but its first
		// parts are answered (a bad key among them, say), as memcached answers
		// a long get line.
		cut := len(got) > len(want) && !bytes.HasSuffix(data, []byte("\n"))
		if len(got) != len(want) && !cut && !bytes.Contains(data, []byte("gat")) && !strings.Contains(fmt.Sprint(got), ReplyLineTooLong) {
			t.Fatalf("ReadRequest(%q) = %q; want %q", data, got, want)
		}
	})
}

// BenchmarkReadParts reads a get line of 1 MB, 5000 keys, in parts.
func BenchmarkReadParts(b *testing.B) {
	in := "get " + strings.Repeat(strings.Repeat("k", 200)+" ", 5000) + "\r\n"
	r := NewReaderSize(strings.NewReader(in), Limits{Parts: true}, 4096)
	src := strings.NewReader(in)
	var req Request
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		src.Reset(in)
		r.Reset(src)
		for {
			if err := r.ReadRequest(&req); err != nil || !req.More {
				break
			}
		}
	}
}

// TestPartsAllocs checks that reading a long line in parts allocates little:
// less than once a part, for buffers of 64 KiB and more that a Reader does not
// keep once the line is read.
func TestPartsAllocs(t *testing.T) {
	in := "get " + strings.Repeat(strings.Repeat("k", 200)+" ", 5000) + "\r\n"
	src := strings.NewReader(in)
	r := NewReaderSize(src, Limits{Parts: true}, 4096)
	var req Request
	parts := 0
	allocs := testing.AllocsPerRun(10, func() {
		src.Reset(in)
		r.Reset(src)
		for parts = 1; ; parts++ {
			if err := r.ReadRequest(&req); err != nil || !req.More {
				break
			}
		}
	})
	if parts < 10 || allocs >= float64(parts) {
		t.Errorf("reading a get line of %d bytes in %d parts: %.0f allocations; want fewer than parts", len(in), parts, allocs)
	}
}
