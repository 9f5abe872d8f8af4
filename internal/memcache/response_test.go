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

var readResponseTests = []struct {
	cmd   Command
	in    string
	items int // number of VALUE items
	fatal bool
}{
	{cmd: CmdGet, in: "END\r\n"},
	{cmd: CmdGet, in: "VALUE a 0 2\r\nhi\r\nEND\r\n", items: 1},
	{cmd: CmdGets, in: "VALUE a 5 2 99\r\nhi\r\nVALUE b 0 0 3\r\n\r\nEND\r\n", items: 2},
	{cmd: CmdGet, in: "VALUE a 0 4\r\n\r\n\r\n\r\nEND\r\n", items: 1},
	{cmd: CmdGet, in: "SERVER_ERROR out of memory\r\n"},
	{cmd: CmdGet, in: "CLIENT_ERROR bad command line format\r\n"},
	{cmd: CmdSet, in: "STORED\r\n"},
	{cmd: CmdCas, in: "EXISTS\r\n"},
	{cmd: CmdIncr, in: "42\r\n"},
	{cmd: CmdVersion, in: "VERSION 1.6.18\r\n"},
	{cmd: CmdMetaGet, in: "VA 2 f5 t-1\r\nhi\r\n"},
	{cmd: CmdMetaGet, in: "EN\r\n"},
	{cmd: CmdMetaSet, in: "HD O12\r\n"},
	{cmd: CmdMetaArithmetic, in: "VA 1\r\n7\r\n"},
	{cmd: CmdMetaNoop, in: "MN\r\n"},

	{cmd: CmdGet, in: "STORED\r\n", fatal: true},
	{cmd: CmdGet, in: "VALUE a 0 2\r\nhix\r\nEND\r\n", fatal: true},
	{cmd: CmdGet, in: "VALUE a 0\r\nEND\r\n", fatal: true},
	{cmd: CmdGet, in: "VALUE a 0 -1\r\nEND\r\n", fatal: true},
	{cmd: CmdGet, in: "VALUE a 0 1\r\nx\r\nVALUE b 0 1\r\nx\r\nVALUE c 0 1\r\nx\r\nEND\r\n", fatal: true},
	{cmd: CmdSet, in: "VALUE a 0 1\r\nx\r\nEND\r\n", fatal: true},
	{cmd: CmdSet, in: "VA 1\r\nx\r\n", fatal: true},
	{cmd: CmdSet, in: "\r\n", fatal: true},
	{cmd: CmdMetaGet, in: "VA\r\n", fatal: true},
	{cmd: CmdMetaGet, in: "VA 2000000\r\n", fatal: true},
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

func TestReadResponseAllocs(t *testing.T) {
	in := bytes.Repeat([]byte("VALUE k1 0 5\r\nhello\r\nVALUE k2 0 5\r\nworld\r\nEND\r\n"), 1000)
	var resp Response
	if n := readAllocs(t, in, func(r *Reader) error { return r.ReadResponse(&resp, CmdGet, 10) }); n != 0 {
		t.Errorf("ReadResponse allocates %v times per response; want 0", n)
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
