package resp

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// byFirstLetter routes a key to the server of its first letter: a to 0, b to
// 1, ...; x is an error.
func byFirstLetter(key []byte) (int, error) {
	if len(key) == 0 || key[0] == 'x' {
		return 0, errors.New("no server for x")
	}
	return int(key[0] - 'a'), nil
}

// replyOf reads the reply in.
func replyOf(t testing.TB, in string) *Reply {
	t.Helper()
	var rp Reply
	if err := NewReader(strings.NewReader(in), Limits{}).ReadReply(&rp); err != nil {
		t.Fatalf("ReadReply(%q): %v", in, err)
	}
	return &rp
}

func TestSplit(t *testing.T) {
	tests := []struct {
		args    string
		subs    []string // server: request, as quoteArgs reads them
		replies []string // of each sub; "" for none
		want    string   // merged
	}{
		{
			args:    "MGET a1 b1 a2 c1 b2",
			subs:    []string{`0: "MGET" "a1" "a2"`, `1: "MGET" "b1" "b2"`, `2: "MGET" "c1"`},
			replies: []string{"*2\r\n$2\r\nA1\r\n$-1\r\n", "*2\r\n$2\r\nB1\r\n$2\r\nB2\r\n", "*1\r\n$2\r\nC1\r\n"},
			want:    "*5\r\n$2\r\nA1\r\n$2\r\nB1\r\n$-1\r\n$2\r\nC1\r\n$2\r\nB2\r\n",
		},
		{
			args:    "mget b a b",
			subs:    []string{`1: "mget" "b" "b"`, `0: "mget" "a"`},
			replies: []string{"*2\r\n$1\r\nB\r\n$1\r\nB\r\n", "*1\r\n$-1\r\n"},
			want:    "*3\r\n$1\r\nB\r\n$-1\r\n$1\r\nB\r\n",
		},
		{
			// One server: its reply is the client's, as it came.
			args:    "MGET a1 a2",
			subs:    []string{`0: "MGET" "a1" "a2"`},
			replies: []string{"*2\r\n$1\r\n1\r\n$1\r\n2\r\n"},
			want:    "*2\r\n$1\r\n1\r\n$1\r\n2\r\n",
		},
		{
			args:    "MSET a1 1 b1 2 a2 3",
			subs:    []string{`0: "MSET" "a1" "1" "a2" "3"`, `1: "MSET" "b1" "2"`},
			replies: []string{"+OK\r\n", "+OK\r\n"},
			want:    "+OK\r\n",
		},
		{
			args:    "DEL a b c",
			subs:    []string{`0: "DEL" "a"`, `1: "DEL" "b"`, `2: "DEL" "c"`},
			replies: []string{":1\r\n", ":0\r\n", ":1\r\n"},
			want:    ":2\r\n",
		},
		{
			args:    "EXISTS a a b",
			subs:    []string{`0: "EXISTS" "a" "a"`, `1: "EXISTS" "b"`},
			replies: []string{":2\r\n", ":1\r\n"},
			want:    ":3\r\n",
		},
		{
			args:    "UNLINK a b",
			subs:    []string{`0: "UNLINK" "a"`, `1: "UNLINK" "b"`},
			replies: []string{":1\r\n", ":1\r\n"},
			want:    ":2\r\n",
		},
		{
			args:    "TOUCH a b",
			subs:    []string{`0: "TOUCH" "a"`, `1: "TOUCH" "b"`},
			replies: []string{":0\r\n", ":1\r\n"},
			want:    ":1\r\n",
		},
		// A server's error is the client's: the first in the order of Subs.
		{
			args:    "MGET a b c",
			subs:    []string{`0: "MGET" "a"`, `1: "MGET" "b"`, `2: "MGET" "c"`},
			replies: []string{"*1\r\n$-1\r\n", "-LOADING Redis is loading the dataset in memory\r\n", "-ERR other\r\n"},
			want:    "-LOADING Redis is loading the dataset in memory\r\n",
		},
		{
			args:    "DEL a b",
			subs:    []string{`0: "DEL" "a"`, `1: "DEL" "b"`},
			replies: []string{":1\r\n", ""},
			want:    "-ERR no reply from a server\r\n",
		},
		{
			args:    "MSET a 1 b 2",
			subs:    []string{`0: "MSET" "a" "1"`, `1: "MSET" "b" "2"`},
			replies: []string{"+OK\r\n", "-OOM command not allowed when used memory > 'maxmemory'.\r\n"},
			want:    "-OOM command not allowed when used memory > 'maxmemory'.\r\n",
		},
		// Replies of the wrong shape.
		{
			args:    "MGET a b",
			subs:    []string{`0: "MGET" "a"`, `1: "MGET" "b"`},
			replies: []string{"*1\r\n$-1\r\n", "*2\r\n$-1\r\n$-1\r\n"},
			want:    "-ERR unexpected reply to 'mget' from a server\r\n",
		},
		{
			args:    "MGET a",
			subs:    []string{`0: "MGET" "a"`},
			replies: []string{"$1\r\nA\r\n"},
			want:    "-ERR unexpected reply to 'mget' from a server\r\n",
		},
		{
			args:    "DEL a b",
			subs:    []string{`0: "DEL" "a"`, `1: "DEL" "b"`},
			replies: []string{":1\r\n", "+OK\r\n"},
			want:    "-ERR unexpected reply to 'del' from a server\r\n",
		},
		{
			args:    "MSET a 1",
			subs:    []string{`0: "MSET" "a" "1"`},
			replies: []string{"+QUEUED\r\n"},
			want:    "-ERR unexpected reply to 'mset' from a server\r\n",
		},
	}
	var s Split // reused, as a proxy reuses it
	for _, tt := range tests {
		args := splitArgs(tt.args)
		c, err := Check(args)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Build(c, args, byFirstLetter); err != nil {
			t.Fatalf("Build(%q): %v", tt.args, err)
		}
		var subs []string
		keys := 0
		for _, sub := range s.Subs {
			q := readOne(t, sub.Request)
			subs = append(subs, fmt.Sprintf("%d: %s", sub.Server, quoteArgs(q.Args)))
			if step := c.keyStep(); sub.Keys != (len(q.Args)-1)/step {
				t.Errorf("Build(%q): sub %q has Keys %d", tt.args, sub.Request, sub.Keys)
			}
			keys += sub.Keys
		}
		if !equalStrings(subs, tt.subs) {
			t.Errorf("Build(%q) = %q; want %q", tt.args, subs, tt.subs)
			continue
		}
		if want := (len(args) - 1) / c.keyStep(); keys != want {
			t.Errorf("Build(%q): %d keys in all; want %d", tt.args, keys, want)
		}
		replies := make([]*Reply, len(tt.replies))
		for i, in := range tt.replies {
			if in != "" {
				replies[i] = replyOf(t, in)
			}
		}
		if got := s.Merge([]byte("x"), replies); string(got) != "x"+tt.want {
			t.Errorf("Merge of %q for %q = %q; want %q", tt.replies, tt.args, got, "x"+tt.want)
		}
	}
}

func readOne(t testing.TB, req []byte) *Request {
	t.Helper()
	var q Request
	if err := NewReader(strings.NewReader(string(req)), Limits{}).ReadRequest(&q); err != nil {
		t.Fatalf("ReadRequest(%q): %v", req, err)
	}
	return &q
}

func TestSplitErrors(t *testing.T) {
	var s Split
	if err := s.Build(Lookup([]byte("get")), splitArgs("GET a"), byFirstLetter); err == nil {
		t.Error("Build of GET: no error")
	}
	args := splitArgs("MGET a x b")
	err := s.Build(Lookup(args[0]), args, byFirstLetter)
	if err == nil || err.Error() != "no server for x" {
		t.Errorf("Build(%q) = %v; want the route's error", args, err)
	}
	err = s.Build(Lookup(args[0]), args, func([]byte) (int, error) { return -1, nil })
	if err == nil {
		t.Errorf("Build with a negative server index: no error")
	}
	// After errors, the next Build starts clean.
	args = splitArgs("MGET b a")
	if err := s.Build(Lookup(args[0]), args, byFirstLetter); err != nil || len(s.Subs) != 2 || s.Subs[0].Server != 1 {
		t.Fatalf("Build(%q) after errors = %v, %+v", args, err, s.Subs)
	}
	// Fewer replies than Subs: the missing ones gave none.
	if got := string(s.Merge(nil, []*Reply{replyOf(t, "*1\r\n$-1\r\n")})); got != "-ERR no reply from a server\r\n" {
		t.Errorf("Merge with a reply missing = %q", got)
	}
	var rp Reply
	rp.SetError("ERR server ejected")
	if got := string(s.Merge(nil, []*Reply{replyOf(t, "*1\r\n$-1\r\n"), &rp})); got != "-ERR server ejected\r\n" {
		t.Errorf("Merge with a stand-in error = %q", got)
	}
}

// TestParts splits requests as a proxy that routes keys itself does, with
// AppendPart and MergeParts.
func TestParts(t *testing.T) {
	tests := []struct {
		args    string
		parts   []int
		reqs    []string // AppendPart of each part, as quoteArgs reads it
		replies []string // "" for none
		want    string
	}{
		{
			args:    "MGET a b c d",
			parts:   []int{1, 0, 1, 2},
			reqs:    []string{`"MGET" "b"`, `"MGET" "a" "c"`, `"MGET" "d"`},
			replies: []string{"*1\r\n$1\r\nB\r\n", "*2\r\n$1\r\nA\r\n*1\r\n:3\r\n", "*1\r\n$-1\r\n"},
			want:    "*4\r\n$1\r\nA\r\n$1\r\nB\r\n*1\r\n:3\r\n$-1\r\n",
		},
		{
			// A part without keys is not sent, and its reply not read.
			args:    "DEL a b",
			parts:   []int{2, 0},
			reqs:    []string{`"DEL" "b"`, `"DEL"`, `"DEL" "a"`},
			replies: []string{":1\r\n", "", ":1\r\n"},
			want:    ":2\r\n",
		},
		{
			// A key no server took fails the request.
			args:    "MGET a b",
			parts:   []int{0, -1},
			reqs:    []string{`"MGET" "a"`},
			replies: []string{"*1\r\n$1\r\nA\r\n"},
			want:    "-ERR no reply from a server\r\n",
		},
		{
			// The error of the first key's part, in the request's order.
			args:    "MSET a 1 b 2 c 3",
			parts:   []int{0, 1, 2},
			reqs:    []string{`"MSET" "a" "1"`, `"MSET" "b" "2"`, `"MSET" "c" "3"`},
			replies: []string{"+OK\r\n", "-ERR second\r\n", "-ERR third\r\n"},
			want:    "-ERR second\r\n",
		},
		{
			args:    "MSET a 1 b 2 c 3",
			parts:   []int{2, 1, 0},
			reqs:    []string{`"MSET" "c" "3"`, `"MSET" "b" "2"`, `"MSET" "a" "1"`},
			replies: []string{"-ERR third\r\n", "-ERR second\r\n", "+OK\r\n"},
			want:    "-ERR second\r\n",
		},
	}
	for _, tt := range tests {
		args := splitArgs(tt.args)
		c, err := Check(args)
		if err != nil {
			t.Fatal(err)
		}
		for part, want := range tt.reqs {
			if got := quoteArgs(readOne(t, AppendPart(nil, c, args, tt.parts, part)).Args); got != want {
				t.Errorf("AppendPart(%q, %v, %d) = %s; want %s", tt.args, tt.parts, part, got, want)
			}
		}
		replies := make([]*Reply, len(tt.replies))
		for i, in := range tt.replies {
			if in != "" {
				replies[i] = replyOf(t, in)
			}
		}
		if got := string(MergeParts(nil, c, tt.parts, replies)); got != tt.want {
			t.Errorf("MergeParts(%q, %v, %q) = %q; want %q", tt.args, tt.parts, tt.replies, got, tt.want)
		}
	}
}

// TestMergeManyParts merges an MGET split into more parts than MergeParts
// keeps on its stack.
func TestMergeManyParts(t *testing.T) {
	args := [][]byte{[]byte("MGET")}
	var parts []int
	var replies []*Reply
	want := AppendArray(nil, 40)
	for i := range 40 {
		args = append(args, fmt.Appendf(nil, "k%d", i))
		parts = append(parts, i)
		replies = append(replies, replyOf(t, string(AppendBulk(AppendArray(nil, 1), args[i+1]))))
		want = AppendBulk(want, args[i+1])
	}
	if got := MergeParts(nil, Lookup(args[0]), parts, replies); string(got) != string(want) {
		t.Errorf("MergeParts of 40 parts = %q; want %q", got, want)
	}
}

// mgetSplit is a split MGET of n keys over 3 servers, with its replies.
func mgetSplit(t testing.TB, n int) (*Command, [][]byte, func([]byte) (int, error), []*Reply) {
	args := [][]byte{[]byte("MGET")}
	for i := range n {
		args = append(args, fmt.Appendf(nil, "%c:%d", 'a'+i%3, i))
	}
	var s Split
	c := Lookup(args[0])
	if err := s.Build(c, args, byFirstLetter); err != nil {
		t.Fatal(err)
	}
	var replies []*Reply
	for _, sub := range s.Subs {
		b := AppendArray(nil, sub.Keys)
		for range sub.Keys {
			b = AppendBulkString(b, "some value of 32 bytes, or near.")
		}
		replies = append(replies, replyOf(t, string(b)))
	}
	return c, args, byFirstLetter, replies
}

func TestSplitAllocs(t *testing.T) {
	c, args, route, replies := mgetSplit(t, 10)
	var s Split
	var dst []byte
	for range 3 {
		s.Build(c, args, route)
		dst = s.Merge(dst[:0], replies)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if err := s.Build(c, args, route); err != nil {
			t.Fatal(err)
		}
		dst = s.Merge(dst[:0], replies)
	})
	if allocs != 0 {
		t.Errorf("Build and Merge of an MGET of 10 keys allocate %v times; want 0", allocs)
	}
}

func BenchmarkSplit(b *testing.B) {
	for _, n := range []int{2, 10, 100} {
		b.Run(fmt.Sprintf("mget%d", n), func(b *testing.B) {
			c, args, route, replies := mgetSplit(b, n)
			var s Split
			var dst []byte
			b.ReportAllocs()
			for range b.N {
				s.Build(c, args, route)
				dst = s.Merge(dst[:0], replies)
			}
		})
	}
}
