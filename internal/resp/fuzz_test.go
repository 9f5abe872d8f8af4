package resp

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
	"testing/iotest"
)

// fuzzLimits are small, so that the fuzzer reaches them.
var fuzzLimits = Limits{MaxBulk: 1000, MaxInline: 100, MaxSize: 4000}

// readStream reads requests from data (through rd) until an error, returning
// each re-encoded and the error: the Reply of an *Error, or the error's text.
func readStream(data []byte, auth bool, rd func(io.Reader) io.Reader) (reqs [][]byte, end string, maxData int) {
	r := NewReaderSize(rd(bytes.NewReader(data)), fuzzLimits, 16)
	r.SetAuthRequired(auth)
	var q Request
	for {
		err := r.ReadRequest(&q)
		maxData = max(maxData, cap(q.data))
		var e *Error
		switch {
		case errors.As(err, &e):
			return reqs, "-" + e.Reply, maxData
		case err != nil:
			return reqs, err.Error(), maxData
		}
		reqs = append(reqs, AppendRequest(nil, &q))
		if len(q.Args) == 0 {
			reqs = append(reqs, []byte("(a request without arguments)"))
		}
	}
}

// FuzzReadRequest reads requests from arbitrary input. It checks that how the
// input arrives (whole, a byte at a time) changes nothing; that a request
// read, written and read again is the same; that memory grows with the input,
// not with the lengths it announces; and that Check, AppendKeys and Split take
// whatever comes.
func FuzzReadRequest(f *testing.F) {
	for _, tt := range readRequestTests {
		if len(tt.in) < 1000 {
			f.Add([]byte(tt.in), false)
		}
	}
	f.Add([]byte("*1\r\n$11\r\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, auth bool) {
		reqs, end, maxData := readStream(data, auth, identity)
		reqs2, end2, _ := readStream(data, auth, iotest.OneByteReader)
		if end != end2 || len(reqs) != len(reqs2) {
			t.Fatalf("%q read whole gives %d requests and %q; a byte at a time %d and %q", data, len(reqs), end, len(reqs2), end2)
		}
		for i := range reqs {
			if !bytes.Equal(reqs[i], reqs2[i]) {
				t.Fatalf("%q read whole gives request %q; a byte at a time %q", data, reqs[i], reqs2[i])
			}
		}
		if maxData > 2*len(data)+64 {
			t.Fatalf("%d bytes of input grew a request to %d bytes", len(data), maxData)
		}
		var s Split
		for _, out := range reqs {
			q := Request{}
			r := NewReader(bytes.NewReader(out), Limits{})
			if err := r.ReadRequest(&q); err != nil {
				t.Fatalf("request written as %q reads back with %v", out, err)
			}
			if again := AppendRequest(nil, &q); !bytes.Equal(again, out) || r.Buffered() != 0 {
				t.Fatalf("request written as %q reads back as %q, %d bytes left", out, again, r.Buffered())
			}
			c, err := Check(q.Args)
			if err != nil {
				continue
			}
			keys, ok := c.AppendKeys(nil, q.Args)
			for _, k := range keys {
				if k <= 0 || k >= len(q.Args) {
					t.Fatalf("AppendKeys(%q) = %v: out of range", q.Args, keys)
				}
			}
			if ok && len(keys) == 0 && c.Route == RouteKeys && c.keys.kind != keyNumkey {
				t.Fatalf("AppendKeys(%q) finds no key", q.Args)
			}
			if c.Route == RouteKeys {
				c.ServerOf(q.Args, func(k []byte) (int, error) { return len(k) % 3, nil })
			}
			if c.Patterned() {
				// Patterns: options' arguments, never the key or a
				// store key, each with a '*'.
				for _, i := range AppendSortPatterns(nil, q.Args) {
					if i < 3 || i >= len(q.Args) || !bytes.Contains(q.Args[i], []byte("*")) || slices.Contains(keys, i) {
						t.Fatalf("AppendSortPatterns(%q) names argument %d, keys %v", q.Args, i, keys)
					}
				}
			}
			if c.Route == RouteSplit {
				if err := s.Build(c, q.Args, func(k []byte) (int, error) { return len(k) % 3, nil }); err != nil {
					t.Fatalf("Build(%q): %v", q.Args, err)
				}
				checkMerge(t, c, q.Args, &s)
			}
		}
	})
}

// checkMerge merges replies of the right shape to the parts of s, a split of
// args, and checks the client's reply: as many values as keys for MGET, the
// sum of the parts' counts for DEL and the others, +OK for MSET.
func checkMerge(t *testing.T, c *Command, args [][]byte, s *Split) {
	var replies []*Reply
	keys := 0
	for _, sub := range s.Subs {
		var b []byte
		switch c.Name {
		case "mget":
			b = AppendArray(nil, sub.Keys)
			for range sub.Keys {
				b = AppendBulkString(b, "v")
			}
		case "mset":
			b = AppendSimple(nil, "OK")
		default:
			b = AppendInt(nil, int64(sub.Keys))
		}
		var rp Reply
		if err := NewReader(bytes.NewReader(b), Limits{}).ReadReply(&rp); err != nil {
			t.Fatal(err)
		}
		replies = append(replies, &rp)
		keys += sub.Keys
	}
	var rp Reply
	out := s.Merge(nil, replies)
	if err := NewReader(bytes.NewReader(out), Limits{}).ReadReply(&rp); err != nil || len(rp.Bytes()) != len(out) {
		t.Fatalf("merged reply %q to %q: %v", out, args, err)
	}
	if want := map[string]Kind{"mget": KindArray, "mset": KindSimple}[c.Name]; want != 0 && rp.Kind != want ||
		c.Name != "mset" && rp.Int != int64(keys) {
		t.Fatalf("merged reply to %q, split %d keys over %d servers: %q", args, keys, len(s.Subs), out)
	}
}

// readReplies reads replies from data (through rd) until an error, returning
// the bytes each was read from and the error: the Reply of an *Error, or the
// error's text.
func readReplies(data []byte, rd func(io.Reader) io.Reader) (reps [][]byte, end string) {
	r := NewReaderSize(rd(bytes.NewReader(data)), fuzzLimits, 16)
	var rp Reply
	for {
		err := r.ReadReply(&rp)
		var e *Error
		switch {
		case errors.As(err, &e):
			return reps, "-" + e.Reply
		case err != nil:
			return reps, err.Error()
		}
		reps = append(reps, append([]byte{}, rp.Bytes()...))
	}
}

// FuzzReadReply reads replies from arbitrary input. It checks that how the
// input arrives changes nothing, that the replies read are the input, one
// after another, and that writing each from its values with AppendSimple,
// AppendBulk, AppendArray and the rest gives the same bytes again.
func FuzzReadReply(f *testing.F) {
	for _, tt := range readReplyTests {
		f.Add([]byte(tt.in + "+NEXT\r\n"))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		reps, end := readReplies(data, identity)
		reps2, end2 := readReplies(data, iotest.OneByteReader)
		if end != end2 || len(reps) != len(reps2) {
			t.Fatalf("%q read whole gives %d replies and %q; a byte at a time %d and %q", data, len(reps), end, len(reps2), end2)
		}
		var all []byte
		for i, rep := range reps {
			if !bytes.Equal(rep, reps2[i]) {
				t.Fatalf("%q read whole gives reply %q; a byte at a time %q", data, rep, reps2[i])
			}
			all = append(all, rep...)
			if again := rewrite(t, rep); !bytes.Equal(again, rep) {
				t.Fatalf("reply %q written from its values is %q", rep, again)
			}
		}
		if !bytes.HasPrefix(data, all) {
			t.Fatalf("replies %q are not the start of their input %q", all, data)
		}
	})
}

// rewrite reads the reply b and writes it again from its values.
func rewrite(t *testing.T, b []byte) []byte {
	var rp Reply
	if err := NewReader(bytes.NewReader(b), Limits{}).ReadReply(&rp); err != nil {
		t.Fatalf("reply %q reads back with %v", b, err)
	}
	switch {
	case rp.Kind == KindSimple:
		return AppendSimple(nil, string(rp.Str))
	case rp.Kind == KindError:
		return AppendError(nil, string(rp.Str))
	case rp.Kind == KindInteger:
		return AppendInt(nil, rp.Int)
	case rp.Kind == KindBulk && rp.IsNull():
		return AppendNull(nil)
	case rp.Kind == KindBulk:
		return AppendBulk(nil, rp.Str)
	case rp.IsNull():
		return AppendNullArray(nil)
	}
	elems := rp.AppendElems(nil)
	if int64(len(elems)) != rp.Int {
		t.Fatalf("reply %q: %d elements; Int is %d", b, len(elems), rp.Int)
	}
	out := AppendArray(nil, len(elems))
	for _, e := range elems {
		out = append(out, rewrite(t, e)...)
	}
	return out
}
