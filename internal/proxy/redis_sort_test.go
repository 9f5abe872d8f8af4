package proxy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/redistest"
	"github.com/chash-dev/chash/internal/resp"
)

// TestRedisSortPatterns: SORT's BY and GET patterns name keys that Redis
// reads on the server of the sorted key. With the key's hash tag (and no '*'
// in it) they are on that server, and the proxy answers as one redis-server
// does; without, they may be elsewhere (where Redis would read nils, a wrong
// answer given silently), so the proxy refuses them, even when the pattern
// itself hashes to the key's server. Patterns that name no key (BY without a
// '*', GET #) need no tag.
func TestRedisSortPatterns(t *testing.T) {
	servers := startRedisServers(t, 3)
	yaml := redisPoolYAML(`hash_tag: "{}"`, servers...)
	p := startProxy(t, yaml)
	pc := redistest.Dial(t, p.Addr("alpha").String())
	direct := redistest.Dial(t, redistest.Start(t).Addr)
	owner := redisOwner(t, yaml)
	// An untagged pattern whose own hash is the key's server's.
	sameServer := ""
	for i := 0; sameServer == ""; i++ {
		if pat := fmt.Sprintf("w%d_*", i); owner(pat) == owner("srt") {
			sameServer = pat
		}
	}
	setup := [][]string{
		{"RPUSH", "{u}srt", "3", "1", "2"},
		{"RPUSH", "srt", "3", "1", "2"},
		{"MSET", "{u}o_1", "obj1", "{u}o_2", "obj2", "{u}o_3", "obj3"},
		{"MSET", "{u}w_1", "30", "{u}w_2", "10", "{u}w_3", "20"},
		{"HSET", "{u}h_1", "f", "x1"},
		{"HSET", "{u}h_2", "f", "x2"},
		{"RPUSH", "{by}l", "3", "1", "2"},
		{"MSET", "{by}o_1", "b1", "{by}o_2", "b2", "{by}o_3", "b3"},
		{"RPUSH", "{u}br", "{b}", "{", "plain"},
		{"MSET", "{b}{u}", "VB", "{{u}", "VBRACE", "plain{u}", "VP"},
	}
	for _, args := range setup {
		if got, want := pc.Do(args...), direct.Do(args...); got != want {
			t.Fatalf("%q through the proxy = %q; redis-server %q", args, got, want)
		}
	}
	refused := "-" + resp.PatternError(resp.Lookup([]byte("sort"))).Reply + "\r\n"
	refusedRO := "-" + resp.PatternError(resp.Lookup([]byte("sort_ro"))).Reply + "\r\n"
	for _, tt := range []struct {
		args []string
		want string // "" for redis-server's answer
	}{
		{[]string{"SORT", "{u}srt", "GET", "{u}o_*", "GET", "#"}, ""},
		{[]string{"SORT", "{u}srt", "BY", "{u}w_*", "GET", "{u}o_*"}, ""},
		{[]string{"SORT", "{u}srt", "GET", "{u}h_*->f"}, ""},
		{[]string{"SORT_RO", "{u}srt", "BY", "{u}w_*"}, ""},
		{[]string{"SORT", "srt"}, ""},
		{[]string{"SORT", "srt", "BY", "nosort", "GET", "#"}, ""},
		{[]string{"SORT", "srt", "GET", "o_*"}, refused},
		{[]string{"SORT", "srt", "BY", sameServer}, refused},
		{[]string{"SORT", "{u}srt", "GET", "{*}o"}, refused},
		{[]string{"SORT", "{u}srt", "GET", "{u}o_*", "GET", "h_*->f"}, refused},
		{[]string{"SORT_RO", "srt", "GET", "o_*"}, refusedRO},
		// STORE's key is no option, even when it is named "by" or "limit".
		{[]string{"SORT", "{by}l", "STORE", "by", "GET", "o_*"}, refused},
		{[]string{"SORT", "{by}l", "STORE", "by", "GET", "{by}o_*"}, ""},
		{[]string{"LRANGE", "by", "0", "-1"}, ""},
		// A '*' before the tag lets an element bring a tag of its own.
		{[]string{"SORT", "{u}br", "BY", "nosort", "GET", "*{u}"}, refused},
		// A pattern without a '*' reads no key: GET answers nils.
		{[]string{"SORT", "{u}srt", "GET", "#", "GET", "nostar"}, ""},
		{[]string{"SORT", "{u}srt", "BY", "{u}w_*", "BY", "nosort", "GET", "#"}, ""},
	} {
		want := tt.want
		if want == "" {
			want = direct.Do(tt.args...)
		}
		if got := pc.Do(tt.args...); got != want {
			t.Errorf("%q = %q; want %q", tt.args, got, want)
		}
	}
}

// TestRedisGeoStoreLast: GEORADIUS with several STORE and STOREDIST options
// writes the key of the last, as redis-server does; the proxy routes by that
// key, so the key is written where the proxy reads it.
func TestRedisGeoStoreLast(t *testing.T) {
	servers := startRedisServers(t, 3)
	yaml := redisPoolYAML(`hash_tag: "{}"`, servers...)
	p := startProxy(t, yaml)
	pc := redistest.Dial(t, p.Addr("alpha").String())
	owner := redisOwner(t, yaml)
	// Keys on the geo set's server (same) and on another (other).
	var same, other string
	for i := 0; same == "" || other == ""; i++ {
		k := fmt.Sprint("dst", i)
		if owner(k) == owner("{g}set") {
			same = k
		} else {
			other = k
		}
	}
	if got := pc.Do("GEOADD", "{g}set", "15", "37", "P"); got != ":1\r\n" {
		t.Fatalf("GEOADD = %q", got)
	}
	if got := pc.Do("GEORADIUS", "{g}set", "15", "37", "200", "km", "STORE", other, "STORE", same); got != ":1\r\n" {
		t.Errorf("GEORADIUS ... STORE %s STORE %s = %q; want :1", other, same, got)
	}
	if got := pc.Do("EXISTS", same, other); got != ":1\r\n" {
		t.Errorf("EXISTS of the last STORE's key and the first's = %q; want :1", got)
	}
	if got := pc.Do("GEORADIUSBYMEMBER", "{g}set", "P", "200", "km", "STOREDIST", same, "STORE", other); !strings.Contains(got, "different servers") {
		t.Errorf("GEORADIUSBYMEMBER storing on another server = %q; want a refusal", got)
	}
	if got := pc.Do("EXISTS", other); got != ":0\r\n" {
		t.Errorf("EXISTS %s = %q after a refused GEORADIUSBYMEMBER; want :0", other, got)
	}
}
