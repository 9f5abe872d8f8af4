package memcache

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/bigbuf/bigbuftest"
)

// loop reads b over and over.
type loop struct {
	b []byte
	i int
}

func (l *loop) Read(p []byte) (int, error) {
	n := copy(p, l.b[l.i:])
	l.i = (l.i + n) % len(l.b)
	return n, nil
}

// TestReusesLargeValue reads requests and replies of a 100 KB value, each
// into one Request or Response, as a proxy's client and server connections
// do: after the first, reading them allocates next to nothing. Each let a
// buffer past 64 KiB go at its Reset and grew a new one, about 200 KB for
// each value.
func TestReusesLargeValue(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops buffers on purpose")
	}
	val := strings.Repeat("v", 100_000)
	for _, tt := range []struct {
		cmd   Command
		reply string
	}{
		{CmdGet, fmt.Sprintf("VALUE big 5 %d\r\n%s\r\nEND\r\n", len(val), val)},
		{CmdMetaGet, fmt.Sprintf("VA %d f5\r\n%s\r\n", len(val), val)},
	} {
		r := NewReader(&loop{b: []byte(tt.reply)}, Limits{})
		var resp Response
		once := func() {
			if err := r.ReadResponse(&resp, tt.cmd, 1); err != nil {
				t.Fatal(err)
			}
			v := resp.Value
			if tt.cmd == CmdGet {
				v = resp.Items[0].Value
			}
			if len(v) != len(val) || !bytes.Equal(v, []byte(val)) {
				t.Fatalf("%v: read a value of %d bytes; want %d bytes of v", tt.cmd, len(v), len(val))
			}
		}
		noAllocs(t, tt.cmd.String()+" reply", once)
	}
	r := NewReader(&loop{b: []byte(fmt.Sprintf("set big 5 0 %d\r\n%s\r\n", len(val), val))}, Limits{})
	var req Request
	noAllocs(t, "set request", func() {
		if err := r.ReadRequest(&req); err != nil || !bytes.Equal(req.Value, []byte(val)) {
			t.Fatalf("ReadRequest: a value of %d bytes, %v; want %d bytes of v", len(req.Value), err, len(val))
		}
	})
}

// raceEnabled is set under the race detector, whose sync.Pool drops some of
// what it is given on purpose.
var raceEnabled bool

// noAllocs fails the test if once allocates more than 1 KiB a call, once it
// has run once.
func noAllocs(t *testing.T, what string, once func()) {
	t.Helper()
	once()
	if n := bigbuftest.BytesPerCall(once); n > 1024 {
		t.Errorf("%s: reading a 100 KB value allocates %d bytes; want at most 1 KiB", what, n)
	}
}
