package proxy

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/memcachedtest"
)

// TestMetaGetKeyEcho sends mg with k and base64 keys that decode to control
// bytes or spaces, which the proxy sends without k and writes back itself,
// to the proxy (two servers) and to a memcached. The replies are memcached's
// byte for byte (the key where k stood among the flags, on VA, HD and EN, in
// quiet mode, with a value the proxy writes in parts), but for items that mg
// or ma made with N, whose key memcached writes raw, breaking its reply line:
// the proxy writes it in base64 with b there too.
func TestMetaGetKeyEcho(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	p := startProxy(t, poolYAML("", servers...))
	direct := memcachedtest.Start(t)
	raws := []string{"a\tb", "c\x00", "x y", "\r\n", "tab\t1", "nul\x00 2"}
	big := strings.Repeat("v", 100<<10) // over flushAt: written in parts
	var reqs strings.Builder
	for i, raw := range raws {
		k := base64.StdEncoding.EncodeToString([]byte(raw))
		made := base64.StdEncoding.EncodeToString([]byte(raw + "\x01N"))
		bumped := base64.StdEncoding.EncodeToString([]byte(raw + "\x01A"))
		missing := base64.StdEncoding.EncodeToString([]byte(raw + "\x01M"))
		fmt.Fprintf(&reqs, "ms %s 2 b F%d T0\r\nhi\r\n", k, i)
		fmt.Fprintf(&reqs, "mg %s b k v O1 s\r\nmg %s k b O2 f\r\nmg %s b O3 k q\r\nmg %s v s k b t f\r\n", k, k, k, k)
		fmt.Fprintf(&reqs, "mg %s b k\r\nmg %s b k T30 O4\r\nmg %s b h k\r\n", k, k, k)
		fmt.Fprintf(&reqs, "mg %s b k O5 v\r\nmg %s b k q O6\r\nmg %s b q k O7 v\r\n", missing, missing, missing)
		fmt.Fprintf(&reqs, "mg %s b N30 k v O8 s\r\nmg %s b k s O9\r\nmg %s b k v\r\n", made, made, made)
		fmt.Fprintf(&reqs, "ma %s b N30 k\r\nmg %s b v k\r\nmg %s b k O10 q\r\n", bumped, bumped, bumped)
		fmt.Fprintf(&reqs, "ms %s %d b\r\n%s\r\nmg %s b s k v\r\nmg %s k b\r\n", k, len(big), big, k, k)
	}
	got := dial(t, p.Addr("alpha").String()).mustDo(reqs.String())
	mc := dial(t, direct.Addr).mustDo(reqs.String())
	// memcached writes the keys of the items N made raw; the proxy, in base64.
	want := mc
	for _, raw := range raws {
		for _, made := range []string{raw + "\x01N", raw + "\x01A"} {
			if !strings.Contains(want, " k"+made) {
				t.Fatalf("memcached wrote no raw key %q:\n%q", made, want)
			}
			want = strings.ReplaceAll(want, " k"+made, " k"+base64.StdEncoding.EncodeToString([]byte(made))+" b")
		}
	}
	if got != want {
		gl, wl := strings.Split(got, "\r\n"), strings.Split(want, "\r\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("line %d through the proxy: %.120q; memcached, its N keys in base64: %.120q", i, gl[i], wl[i])
			}
		}
		t.Fatalf("%d lines through the proxy, %d from memcached", len(gl), len(wl))
	}
	// 16 replies a key hold it: all but q's misses and the ms's.
	if n := strings.Count(got, " b\r\n") + strings.Count(got, " b "); n != 16*len(raws) {
		t.Errorf("%d keys written back in base64; want %d", n, 16*len(raws))
	}
}

// TestWarmupKeyEcho reads keys that moved, base64 keys that decode to
// control bytes, with an mg with k through a warm-up window: the reply,
// built from the previous server's by the proxy, holds the key where k stood,
// as the previous server writes it.
func TestWarmupKeyEcho(t *testing.T) {
	const opts = "timeout: 1000\nwarmup: 60000"
	p, servers, moved, _ := warmPool(t, opts, "bin\t", 3)
	c := dial(t, p.Addr("alpha").String())
	old := dial(t, servers[0].Addr)
	b64 := func(k string) string { return base64.StdEncoding.EncodeToString([]byte(k)) }
	for i, k := range moved {
		c.mustDo(fmt.Sprintf("ms %s 3 b F%d\r\nabc\r\n", b64(k), i+1))
	}
	reqs := []string{
		"mg " + b64(moved[0]) + " b s v f k Oab\r\n",
		"mg " + b64(moved[1]) + " k b O1\r\n",
		"mg " + b64(moved[2]) + " b f v O2 q k\r\n",
	}
	var want []string
	for _, r := range reqs {
		want = append(want, old.mustDo(r))
	}
	if err := p.Reload(parseConfig(t, poolYAML(opts, servers...))); err != nil {
		t.Fatal(err)
	}
	st := p.pools["alpha"].stats
	for i, r := range reqs {
		before := st.warmReads.Load()
		if got := c.mustDo(r); got != want[i] || !strings.Contains(got, " k"+b64(moved[i])+" b") {
			t.Errorf("%q through the warm-up = %q; the previous server answers %q", r, got, want[i])
		}
		if st.warmReads.Load() != before+1 {
			t.Errorf("%q: %d warm-up reads; want 1", r, st.warmReads.Load()-before)
		}
	}
}
