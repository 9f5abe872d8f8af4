package proxy

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/memcache"
)

// FuzzMemcacheForward reads random bytes as client requests with the memcache
// codec and checks what it would send a server for each request it forwards,
// whole and split in two: memcached reads the line as the same request (its
// command, keys, numbers and value), the line holds no control byte and no
// repeated space, and it is one a shared connection takes whole.
//
//	go test ./internal/proxy -run XXX -fuzz FuzzMemcacheForward
func FuzzMemcacheForward(f *testing.F) {
	for _, s := range directScript {
		f.Add([]byte(s))
	}
	for _, s := range append(smuggleVectors(), keyEchoVectors()...) {
		f.Add([]byte(s))
	}
	cd := newMemcacheCodec(memcache.Limits{})
	f.Fuzz(func(t *testing.T, data []byte) {
		cc := cd.newClient(bytes.NewReader(data))
		for range 20 {
			r := cd.newRequest()
			act, err := cc.read(r)
			if err != nil {
				return
			}
			if act != forward {
				continue
			}
			req := r.(*mcRequest)
			checkForward(t, req, nil, 0, req.Keys)
			if len(req.Keys) > 1 && req.splits() {
				keyCall := make([]int, len(req.Keys))
				var part0, part1 [][]byte
				for i, k := range req.Keys {
					keyCall[i] = i % 2
					if i%2 == 0 {
						part0 = append(part0, k)
					} else {
						part1 = append(part1, k)
					}
				}
				checkForward(t, req, keyCall, 0, part0)
				checkForward(t, req, keyCall, 1, part1)
			}
		}
	})
}

// checkForward checks what req sends a server for the keys of part, keys.
func checkForward(t *testing.T, req *mcRequest, keyCall []int, part int, keys [][]byte) {
	t.Helper()
	out := req.appendRequest(nil, keyCall, part, newMemcacheCodec(memcache.Limits{}).newReply())
	line, _, _ := bytes.Cut(out, []byte("\r\n"))
	for _, b := range line {
		if b < ' ' || b == 0x7f {
			t.Fatalf("%q is sent %q: a control byte in the line", req.Command, out)
		}
	}
	if bytes.Contains(line, []byte("  ")) || bytes.HasSuffix(line, []byte(" ")) {
		t.Fatalf("%q is sent %q: a space memcached would not read as the proxy did", req.Command, out)
	}
	if len(line)+2 > memcache.MaxCommandLine && req.Command != memcache.CmdGet && req.Command != memcache.CmdGets {
		t.Fatalf("%q is sent a line of %d bytes: over %d", req.Command, len(line)+2, memcache.MaxCommandLine)
	}
	var back memcache.Request
	rd := memcache.NewReader(bytes.NewReader(out), memcache.Limits{MaxLine: 1 << 20, MaxValue: 1 << 30})
	if err := rd.ReadRequest(&back); err != nil {
		t.Fatalf("%q is sent %.200q, which reads as %v", req.Command, out, err)
	}
	if back.EchoesKeyRaw() {
		t.Fatalf("%q is sent %q, whose reply may hold the key raw", req.Command, out)
	}
	// A quiet request is followed by mn, and nothing else.
	if back.HasMetaFlag('q') {
		var mn memcache.Request
		if err := rd.ReadRequest(&mn); err != nil || mn.Command != memcache.CmdMetaNoop {
			t.Fatalf("%q is sent %.200q: no mn after the quiet request (%v)", req.Command, out, err)
		}
	}
	if rd.Buffered() != 0 {
		t.Fatalf("%q is sent %.200q, of which %d bytes are left after the request", req.Command, out, rd.Buffered())
	}
	if back.Command != req.Command || !slices.EqualFunc(back.Keys, keys, bytes.Equal) ||
		back.Flags != req.Flags || back.Exptime != req.Exptime || back.Cas != req.Cas || back.Delta != req.Delta ||
		!bytes.Equal(back.Value, req.Value) || back.Noreply ||
		!slices.EqualFunc(back.MetaFlags, req.MetaFlags, bytes.Equal) {
		t.Fatalf("%q is sent %.200q, which reads as another request: %s %q", req.Command, out, back.Command,
			strings.Join(strings.Fields(string(bytes.Join(back.Keys, []byte(" ")))), " "))
	}
}
