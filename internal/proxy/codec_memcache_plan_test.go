package proxy

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/memcache"
)

// readRequest reads one client request with the memcache codec, as a client
// connection does, and reports whether it is forwarded.
func readRequest(t testing.TB, cd *memcacheCodec, line string) (*mcRequest, bool) {
	t.Helper()
	r := cd.newRequest()
	act, err := cd.newClient(strings.NewReader(line)).read(r)
	return r.(*mcRequest), err == nil && act == forward
}

// TestMemcacheAccess checks how each command is planned in a pool with
// replicas or a warm-up window.
func TestMemcacheAccess(t *testing.T) {
	cd := newMemcacheCodec(memcache.Limits{})
	tests := []struct {
		req  string
		want access
	}{
		{"get k\r\n", accessRead},
		{"gets a b\r\n", accessRead},
		{"gat 10 k\r\n", accessRead},
		{"gats 10 k\r\n", accessRead},
		{"mg k v T30\r\n", accessRead},
		{"set k 0 0 1\r\nx\r\n", accessWrite},
		{"touch k 10\r\n", accessWrite},
		{"ms k 1 T0\r\nx\r\n", accessWrite},
		{"ms k 1 MS\r\nx\r\n", accessWrite},
		{"delete k\r\n", accessDelete},
		{"md k q\r\n", accessDelete},
		{"add k 0 0 1\r\nx\r\n", accessCond},
		{"replace k 0 0 1\r\nx\r\n", accessCond},
		{"append k 0 0 1\r\nx\r\n", accessCond},
		{"prepend k 0 0 1\r\nx\r\n", accessCond},
		{"cas k 0 0 1 5\r\nx\r\n", accessCond},
		{"incr k 1\r\n", accessCond},
		{"decr k 1\r\n", accessCond},
		{"ma k\r\n", accessCond},
		{"ms k 1 ME\r\nx\r\n", accessCond},
		{"ms k 1 C12\r\nx\r\n", accessCond},
		{"md k C12\r\n", accessCond},
		{"version\r\n", accessNone},
		{"me k\r\n", accessNone},
	}
	for _, tt := range tests {
		req, ok := readRequest(t, cd, tt.req)
		if !ok {
			t.Errorf("%q is not forwarded", tt.req)
			continue
		}
		if got := req.access(); got != tt.want {
			t.Errorf("access(%q) = %d; want %d", tt.req, got, tt.want)
		}
	}
}

// TestMemcacheItemRequests checks the requests the proxy makes on its own:
// keys that are not tokens go base64 with b, a store carries flags, time to
// live and, as an add, ME, and a delete its cas; a request that
// memcache.Validate refuses is not made.
func TestMemcacheItemRequests(t *testing.T) {
	cd := newMemcacheCodec(memcache.Limits{})
	rep := cd.newReply()
	it := &item{value: []byte("hello"), flags: 7, exptime: 30}
	result := func(out []byte, err error) string {
		if err != nil {
			return "error: " + err.Error()
		}
		return string(out)
	}
	long := bytes.Repeat([]byte("x "), 93) // 248 bytes in base64
	tests := []struct {
		name, got, want string
	}{
		{"read", result(cd.appendItemRead(nil, []byte("k"), rep)), "mg k v f t c\r\n"},
		{"read of a binary key", result(cd.appendItemRead(nil, []byte("a b\x00"), rep)), "mg YSBiAA== b v f t c\r\n"},
		{"read of a key of 187 bytes", result(cd.appendItemRead(nil, long, rep)), "mg " + base64.StdEncoding.EncodeToString(long) + " b v f t c\r\n"},
		{"add", result(cd.appendStore(nil, []byte("k"), it, true, rep)), "ms k 5 F7 T30 c ME\r\nhello\r\n"},
		{"set", result(cd.appendStore(nil, []byte("k"), it, false, rep)), "ms k 5 F7 T30 c\r\nhello\r\n"},
		{"set of a binary key", result(cd.appendStore(nil, []byte("a b"), it, false, rep)), "ms YSBi 5 b F7 T30 c\r\nhello\r\n"},
		{"delete", result(cd.appendDelete(nil, []byte("k"), 0, rep)), "md k\r\n"},
		{"delete if unchanged", result(cd.appendDelete(nil, []byte("k"), 42, rep)), "md k C42\r\n"},
		{"delete of no key", result(cd.appendDelete(nil, nil, 0, rep)), `error: proxy: a md the proxy built: memcache: CLIENT_ERROR bad command line format: "md "`},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %q; want %q", tt.name, tt.got, tt.want)
		}
	}
	// A key whose base64 would be longer than memcached's 250 bytes, which
	// no client can send.
	if out, err := cd.appendItemRead(nil, bytes.Repeat([]byte("x "), 94), rep); err == nil {
		t.Errorf("read of a key of 188 bytes with spaces: %q; want an error", out)
	}
	// The reply is read against the request built.
	if got := rep.(*mcReply).req; got != &rep.(*mcReply).part {
		t.Errorf("the reply is read against %v; want the request built", got)
	}
}

// TestAdoptMetaLine checks the rewriting of a warm-up read's reply into the
// reply to the client's mg: the flags it asked for, in its order, and the
// value only if it asked for it.
func TestAdoptMetaLine(t *testing.T) {
	flags := func(s string) [][]byte {
		var out [][]byte
		for _, f := range strings.Fields(s) {
			out = append(out, []byte(f))
		}
		return out
	}
	tests := []struct{ line, flags, want string }{
		{"VA 5 s5 f3 t-1 c9", "s v", "VA 5 s5"},
		{"VA 5 f3 t-1 c9", "", "HD"},
		{"VA 5 f3 t-1 c9", "f", "HD f3"},
		{"VA 5 kabc Oxy f3 t-1 c9", "k Oxy v", "VA 5 kabc Oxy"},
		{"VA 5 kYWI= b f3 t-1 c9", "b k", "HD kYWI= b"},
		{"VA 5 f3 t20 c9", "t c v f", "VA 5 f3 t20 c9"},
	}
	for _, tt := range tests {
		if got := adoptMetaLine(nil, []byte(tt.line), flags(tt.flags)); string(got) != tt.want {
			t.Errorf("adoptMetaLine(%q, %q) = %q; want %q", tt.line, tt.flags, got, tt.want)
		}
	}
}

// FuzzMemcacheWarmRead reads a client request and a server's reply to its
// warm-up read, and checks what the proxy makes of them: the warm-up read is
// an mg memcached reads as one, with the client's key and the flags v, f, t
// and c; an item found reads back from the reply as the reply says; and the
// client's reply made from it is one memcached could send for the client's
// request: its items, or an mg reply with only the flags the client asked
// for.
//
//	go test ./internal/proxy -run XXX -fuzz FuzzMemcacheWarmRead
func FuzzMemcacheWarmRead(f *testing.F) {
	f.Add([]byte("get k\r\n"), []byte("VA 5 f3 t-1 c9\r\nhello\r\n"))
	f.Add([]byte("gets k\r\n"), []byte("VA 0 f0 t10 c1\r\n\r\n"))
	f.Add([]byte("gat 100 k\r\n"), []byte("VA 2 t5 f4294967295 c18446744073709551615\r\nab\r\n"))
	f.Add([]byte("mg k s v Oq k\r\n"), []byte("VA 3 s3 Oq kk f1 t-1 c2\r\nabc\r\n"))
	f.Add([]byte("mg YWI= b k T30\r\n"), []byte("VA 1 kYWI= b f0 t30 c4\r\nx\r\n"))
	f.Add([]byte("mg k\r\n"), []byte("EN\r\n"))
	f.Add([]byte("mg k f\r\n"), []byte("VA 1 f t c\r\nx\r\n"))
	f.Add([]byte("get k\r\n"), []byte("SERVER_ERROR out of memory\r\n"))
	cd := newMemcacheCodec(memcache.Limits{})
	f.Fuzz(func(t *testing.T, reqData, replyData []byte) {
		req, ok := readRequest(t, cd, string(reqData))
		if !ok || req.access() != accessRead {
			return
		}
		for i := range req.Keys {
			rep := cd.newReply().(*mcReply)
			out, err := req.appendWarmRead(nil, i, rep)
			if err != nil {
				t.Fatalf("warm-up read of %q: %v", reqData, err)
			}
			var mg memcache.Request
			if err := memcache.NewReader(bytes.NewReader(out), memcache.Limits{}).ReadRequest(&mg); err != nil {
				t.Fatalf("warm-up read %q of %q: %v", out, reqData, err)
			}
			if mg.Command != memcache.CmdMetaGet || !bytes.Equal(mg.RouteKey(0), req.RouteKey(i)) {
				t.Fatalf("warm-up read %q of %q: not an mg of key %q", out, reqData, req.RouteKey(i))
			}
			for _, f := range []byte("vftc") {
				if !mg.HasMetaFlag(f) {
					t.Fatalf("warm-up read %q: no flag %c", out, f)
				}
			}
			// The server's reply, read as the server codec reads it.
			if err := cd.newServer(bytes.NewReader(replyData)).read(rep); err != nil {
				return
			}
			var it item
			if !cd.readItem(rep, &it) {
				continue
			}
			if !bytes.Equal(it.value, rep.resp.Value) {
				t.Fatalf("readItem value %q; the reply's %q", it.value, rep.resp.Value)
			}
			req.adopt(rep, i, &it)
			client := req.appendReply(nil, rep)
			if req.quiet {
				client = append(client, "MN\r\n"...) // the mn sent after it
			}
			var back memcache.Response
			cmd := req.Command
			if err := memcache.NewReader(bytes.NewReader(client), memcache.Limits{}).ReadReply(&back, &req.Request); err != nil {
				t.Fatalf("client's reply %q to %q: %v", client, reqData, err)
			}
			if cmd != memcache.CmdMetaGet {
				if len(back.Items) != 1 || !bytes.Equal(back.Items[0].Key, req.Keys[i]) || !bytes.Equal(back.Items[0].Value, it.value) {
					t.Fatalf("client's reply %q to %q: not the item found", client, reqData)
				}
				continue
			}
			toks := bytes.Fields(back.Line)
			if string(toks[0]) == "VA" {
				toks = toks[1:]
			}
			for _, tok := range toks[1:] {
				if !req.HasMetaFlag(tok[0]) {
					t.Fatalf("client's reply %q to %q: flag %q not asked for", client, reqData, tok)
				}
			}
		}
	})
}
