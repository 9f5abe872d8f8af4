package memcache

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

// FuzzParse reads requests from arbitrary input. Every request read must be
// written as bytes that read back as the same request, in a line memcached reads
// whole and with nothing it could read otherwise; and a non-fatal error must
// leave the reader at the next request.
func FuzzParse(f *testing.F) {
	for _, tt := range readRequestTests {
		if len(tt.in) < 4096 {
			f.Add([]byte(tt.in))
		}
	}
	lim := Limits{MaxLine: 512, MaxValue: 1024}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReaderSize(bytes.NewReader(data), lim, 64)
		var req, again Request
		for {
			err := r.ReadRequest(&req)
			var e *Error
			if errors.As(err, &e) && !e.Fatal {
				continue
			}
			if err != nil {
				return
			}
			out := AppendRequest(nil, &req)
			line := out[:bytes.IndexByte(out, '\n')+1]
			if hasControl(line[:len(line)-2]) {
				t.Fatalf("request %q written as %q: a control character", data, out)
			}
			if c := req.Command; c != CmdGet && c != CmdGets && len(line) > MaxCommandLine {
				t.Fatalf("request %q written as a line of %d bytes", data, len(line))
			}
			// Validate holds a request built in code to the rules ReadRequest
			// reads by: every request read passes it, one whose key memcached
			// may write back raw once its k is removed.
			err = req.Validate()
			if req.EchoesKeyRaw() {
				if err == nil {
					t.Fatalf("request %q, written as %q: Validate() passes a key memcached may write back raw", data, out)
				}
				req.RemoveMetaFlag('k')
				if req.EchoesKeyRaw() {
					t.Fatalf("request %q without k: EchoesKeyRaw() is still true", data)
				}
				err = req.Validate()
				out = AppendRequest(out[:0], &req)
				line = out[:bytes.IndexByte(out, '\n')+1]
			}
			if err != nil {
				t.Fatalf("request %q, written as %q: Validate() = %v", data, out, err)
			}
			if n := lineLen(&req); n != len(line) {
				t.Fatalf("request %q, written as %q: lineLen = %d; want %d", data, out, n, len(line))
			}
			r2 := NewReader(bytes.NewReader(out), lim)
			if err := r2.ReadRequest(&again); err != nil {
				t.Fatalf("request %q written as %q reads back with %v", data, out, err)
			}
			if out2 := AppendRequest(nil, &again); !bytes.Equal(out, out2) {
				t.Fatalf("request written as %q reads back as %q", out, out2)
			}
			if !sameRequest(&req, &again) {
				t.Fatalf("request written as %q reads back as %+v; want %+v", out, again, req)
			}
			if r2.Buffered() != 0 {
				t.Fatalf("request written as %q leaves %d bytes", out, r2.Buffered())
			}
		}
	})
}

// FuzzValidate builds requests from arbitrary fields (keys and meta flags
// separated by newlines). Every request Validate passes must be written as
// bytes that read back as the same request, whole.
func FuzzValidate(f *testing.F) {
	for _, tt := range validateTests {
		r := &tt.req
		f.Add(uint8(r.Command), bytes.Join(r.Keys, []byte("\n")), bytes.Join(r.MetaFlags, []byte("\n")),
			r.Exptime, r.Cas, r.Noreply, r.Value)
	}
	f.Fuzz(func(t *testing.T, c uint8, keys, flags []byte, exptime int64, n uint64, noreply bool, value []byte) {
		req := Request{
			Command: Command(c), Exptime: exptime, Flags: uint32(n), Cas: n, Delta: n,
			Noreply: noreply, Value: value,
		}
		if len(keys) > 0 {
			req.Keys = bytes.Split(keys, []byte("\n"))
		}
		if len(flags) > 0 {
			req.MetaFlags = bytes.Split(flags, []byte("\n"))
		}
		if req.Validate() != nil {
			return
		}
		if msg := readsBack(&req); msg != "" {
			t.Fatal(msg)
		}
	})
}

func sameRequest(a, b *Request) bool {
	eq := func(x, y []byte) bool { return bytes.Equal(x, y) }
	return a.Command == b.Command && a.Flags == b.Flags && a.Exptime == b.Exptime &&
		a.Cas == b.Cas && a.Delta == b.Delta && a.Noreply == b.Noreply &&
		bytes.Equal(a.Value, b.Value) && slices.EqualFunc(a.Keys, b.Keys, eq) &&
		slices.EqualFunc(a.MetaFlags, b.MetaFlags, eq) && slices.EqualFunc(a.Args, b.Args, eq) &&
		(len(a.Keys) == 0 || bytes.Equal(a.RouteKey(0), b.RouteKey(0)))
}

// FuzzParseResponse reads responses from arbitrary input; each response read
// must write out as bytes that read back as the same response.
func FuzzParseResponse(f *testing.F) {
	for _, tt := range readResponseTests {
		f.Add(uint8(tt.cmd), []byte(tt.in))
	}
	lim := Limits{MaxLine: 512, MaxValue: 1024}
	f.Fuzz(func(t *testing.T, c uint8, data []byte) {
		cmd := Command(c % uint8(numCommands))
		r := NewReaderSize(bytes.NewReader(data), lim, 64)
		var resp, again Response
		for r.ReadResponse(&resp, cmd, 100) == nil {
			out := AppendResponse(nil, &resp)
			r2 := NewReader(bytes.NewReader(out), lim)
			if err := r2.ReadResponse(&again, cmd, 100); err != nil {
				t.Fatalf("%v response written as %q reads back with %v", cmd, out, err)
			}
			if out2 := AppendResponse(nil, &again); !bytes.Equal(out, out2) {
				t.Fatalf("%v response written as %q reads back as %q", cmd, out, out2)
			}
		}
	})
}

// FuzzReadReply reads replies from arbitrary input against a request read from
// arbitrary input; each reply read must fit the command's grammar too, and write
// out as bytes that read back as the same reply (followed by MN, for a request
// with the meta flag q).
func FuzzReadReply(f *testing.F) {
	for _, tt := range readReplyTests {
		f.Add([]byte(tt.req+"\r\n"), []byte(tt.in))
	}
	for _, tt := range quietReplyTests {
		f.Add([]byte(tt.req+"\r\n"), []byte(tt.in))
	}
	lim := Limits{MaxLine: 512, MaxValue: 1024}
	f.Fuzz(func(t *testing.T, reqData, data []byte) {
		var req Request
		if NewReader(bytes.NewReader(reqData), lim).ReadRequest(&req) != nil || req.Noreply || req.Command == CmdQuit {
			return
		}
		quiet := req.HasMetaFlag('q')
		r := NewReaderSize(bytes.NewReader(data), lim, 64)
		var resp, again Response
		for r.ReadReply(&resp, &req) == nil {
			out := AppendResponse(nil, &resp)
			if resp.Quiet != (len(out) == 0) || resp.Quiet && !quiet {
				t.Fatalf("reply %q to %q: quiet %v", out, reqData, resp.Quiet)
			}
			if !resp.Quiet {
				if err := NewReader(bytes.NewReader(out), lim).ReadResponse(&again, req.Command, len(req.Keys)); err != nil {
					t.Fatalf("reply %q to %q does not fit %v: %v", out, reqData, req.Command, err)
				}
			}
			back := out
			if quiet {
				back = append(back, "MN\r\n"...)
			}
			if err := NewReader(bytes.NewReader(back), lim).ReadReply(&again, &req); err != nil {
				t.Fatalf("reply written as %q reads back with %v", back, err)
			}
			if out2 := AppendResponse(nil, &again); !bytes.Equal(out, out2) {
				t.Fatalf("reply written as %q reads back as %q", out, out2)
			}
		}
	})
}
