package proxy

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
)

// smuggleVectors returns requests that would make memcached read something
// else than the proxy parsed, if the proxy forwarded them: a data block run as
// a command (its flush_all), a line cut short, a connection closed under
// other clients, a reply out of step. Each one is refused by the proxy. They are the vectors of
// issue 15 and their family: every command, every key that memcached reads
// differently (a NUL ends its line, CR, tab, DEL, a key over 250 bytes as
// sent, base64 or not), meta flags with such bytes, and lines too long for a
// shared connection.
func smuggleVectors() []string {
	const data = "9\r\nflush_all\r\n" // a length and a data block run as a command if unread
	b64 := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 240)))
	keys := []string{"k\x00", "k\r", "k\t", "k\x0b", "k\x7f", "\x00flush_all", strings.Repeat("k", 251)}
	var vs []string
	for _, k := range keys {
		for _, cmd := range []string{"set", "add", "replace", "append", "prepend"} {
			vs = append(vs, cmd+" "+k+" 0 0 "+data)
		}
		vs = append(vs,
			"cas "+k+" 0 0 9 1\r\nflush_all\r\n",
			"ms "+k+" "+data,
			"get "+k+" other\r\n", "gets other "+k+"\r\n", "gat 0 "+k+"\r\n", "gats 0 "+k+"\r\n",
			"delete "+k+"\r\n", "incr "+k+" 1\r\n", "decr "+k+" 1\r\n", "touch "+k+" 0\r\n",
			"mg "+k+" v\r\n", "md "+k+"\r\n", "ma "+k+"\r\n", "me "+k+"\r\n")
	}
	long := strings.Repeat("x", 20000)
	vs = append(vs,
		// Issue 15's three.
		"ms "+b64+" 9 b\r\nflush_all\r\n",
		"set k\x00 0 0 "+data,
		"mg k v O"+long+"\r\n",
		// A base64 key is at most 250 bytes as sent, whatever it decodes to.
		"mg "+b64+" b v\r\n", "md "+b64+" b\r\n", "ma "+b64+" b\r\n",
		// Meta flags with bytes memcached reads differently, or too long.
		"ms k 9 T0 O\x00x\r\nflush_all\r\n",
		"mg k v O\x00 k\r\n",
		"md k q O"+long+"\r\n", "ma k O"+long+"\r\n", "ms k 9 O"+long+"\r\nflush_all\r\n",
		"mg k"+strings.Repeat(" v", 1100)+"\r\n",
		// A base64 key that decodes to a space or CR ("a\r\nb c"), which me
		// may write into its reply decoded, out of step (keyEchoVectors).
		"me YQ0KYiBj b\r\n",
		// A key too long in a line read in parts: refused before any part
		// of the line reaches a server.
		"gat 0"+strings.Repeat(" key", 600)+" "+strings.Repeat("k", 251)+"\r\n",
		// Lengths that are no lengths: the proxy reads the data block as a
		// command, and refuses it.
		"set k 0 0 -1\r\nflush_all\r\n", "set k 0 0 9x\r\nflush_all\r\n", "ms k -1\r\nflush_all\r\n",
		// A line over the proxy's limit closes the client, but for a
		// retrieval's, read in parts.
		"get "+strings.Repeat("k", 70000)+"\r\n",
		"mg "+strings.Repeat("k", 70000)+"\r\n",
	)
	return vs
}

// keyEchoVectors are requests with a base64 key that decodes to a space or
// CR ("a\r\nb c"), which the proxy serves without a step lost: mg and ma with
// N make an item memcached does not mark as base64, whose key mg's k writes
// back decoded, so the proxy sends mg without k and writes the key itself.
func keyEchoVectors() []string {
	return []string{"ma YQ0KYiBj b N0\r\n", "mg YQ0KYiBj b N0 v\r\n", "mg YQ0KYiBj b k v\r\n", "mg YQ0KYiBj b v k O1 q\r\n"}
}

// closes reports whether the proxy closes the connection of a client that
// sends v: a line over its limit, or a storage command whose data block it
// cannot find, as its length is no length (its bytes are not a command).
func closes(v string) bool {
	return len(v) > 65536 && !strings.HasPrefix(v, "get ") || strings.Contains(v, " -1\r\n") || strings.Contains(v, " 9x\r\n")
}

// refusal reports whether out, the proxy's reply to a refused request, holds
// only error lines.
func refusal(out string) bool {
	for _, l := range strings.SplitAfter(out, "\r\n") {
		if l != "" && l != "ERROR\r\n" && !strings.HasPrefix(l, "CLIENT_ERROR ") && !strings.HasPrefix(l, "SERVER_ERROR ") {
			return false
		}
	}
	return true
}

// serverRequests returns the requests the proxy has sent the pool's servers.
func (p *Proxy) serverRequests(pool string) uint64 {
	var n uint64
	for _, s := range p.pools[pool].state.Load().list {
		n += s.stats.requests.Load()
	}
	return n
}

// memcachedStats returns the "stats" of the memcached at addr.
func memcachedStats(t testing.TB, addr string) map[string]string {
	t.Helper()
	c := dial(t, addr)
	stats, err := memcachedtest.ParseStats(c.mustDo("stats\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	return stats
}

// TestSmuggling sends every smuggling vector through the proxy, first alone,
// checking that each is refused and none reaches a server, then many times
// while other clients set and get their keys on the same shared server
// connections, with auto_eject_hosts: every key stored before is intact,
// memcached never ran a flush_all, no server was ejected, and every request of
// the other clients was answered as it should be; requests whose key the
// proxy writes back itself (keyEchoVectors) join the attack.
func TestSmuggling(t *testing.T) {
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	yaml := poolYAML("hash: md5\ntimeout: 1000\nauto_eject_hosts: true\nserver_failure_limit: 2\nserver_retry_timeout: 30000", servers...)
	p := startProxy(t, yaml)
	addr := p.Addr("alpha").String()
	c := dial(t, addr)
	const stored = 300
	for i := range stored {
		if got := c.mustDo(fmt.Sprintf("set kept:%d 0 0 %d\r\n%d\r\n", i, len(strconv.Itoa(i)), i)); got != "STORED\r\n" {
			t.Fatalf("set kept:%d: %q", i, got)
		}
	}
	vectors := smuggleVectors()
	for _, v := range vectors {
		before := p.serverRequests("alpha")
		out, err := dial(t, addr).do(v)
		if !refusal(out) {
			t.Errorf("%.60q: answered %.80q; want a refusal", v, out)
		}
		if n := p.serverRequests("alpha") - before; n != 0 {
			t.Errorf("%.60q: %d requests reached a server", v, n)
		}
		if err != nil && !closes(v) {
			t.Errorf("%.60q: %v; the client's connection should stay open", v, err)
		}
	}

	l := startLoad(t, addr, func(string) string { return "any" }, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		attacker := dial(t, addr)
		for round := range 10 {
			for _, v := range append(vectors, keyEchoVectors()...) {
				if _, err := attacker.do(v); err != nil {
					attacker = dial(t, addr) // closed by a fatal vector
				}
			}
			_ = round
		}
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the attack did not finish in 60s")
	}
	l.finish()
	if n := get(&l.errs, "any"); n != 0 || get(&l.ok, "any") == 0 {
		t.Errorf("other clients: %d wrong replies, %d right, during the attack", n, get(&l.ok, "any"))
	}
	for i := range stored {
		want := fmt.Sprintf("VALUE kept:%d 0 %d\r\n%d\r\nEND\r\n", i, len(strconv.Itoa(i)), i)
		if got := c.mustDo(fmt.Sprintf("get kept:%d\r\n", i)); got != want {
			t.Errorf("kept:%d after the attack: %q; want %q", i, got, want)
		}
	}
	for _, s := range servers {
		if n := memcachedStats(t, s.Addr)["cmd_flush"]; n != "0" {
			t.Errorf("memcached %s ran flush_all %s times", s.Addr, n)
		}
	}
	if n := p.pools["alpha"].stats.ejects.Load(); n != 0 {
		t.Errorf("%d servers ejected during the attack", n)
	}
}
