package memcache

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzParse reads requests from arbitrary input. Every request read must write
// out as bytes that read back as the same request: writing is a fixed point.
func FuzzParse(f *testing.F) {
	for _, tt := range readRequestTests {
		f.Add([]byte(tt.in))
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
			r2 := NewReader(bytes.NewReader(out), lim)
			if err := r2.ReadRequest(&again); err != nil {
				t.Fatalf("request %q written as %q reads back with %v", data, out, err)
			}
			if out2 := AppendRequest(nil, &again); !bytes.Equal(out, out2) {
				t.Fatalf("request written as %q reads back as %q", out, out2)
			}
			if r2.Buffered() != 0 {
				t.Fatalf("request written as %q leaves %d bytes", out, r2.Buffered())
			}
		}
	})
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
