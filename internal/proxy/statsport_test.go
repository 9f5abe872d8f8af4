package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/dist"
	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/redistest"
	"github.com/chash-dev/chash/internal/testprog"
)

// statsObject is an object of a stats document with its members in order.
type statsObject struct {
	keys []string
	vals map[string]any // json.Number, string or *statsObject
}

// parseStats parses a stats document, keeping the order of its members, and
// fails the test if it is not one JSON object followed by a newline.
func parseStats(t testing.TB, doc []byte) *statsObject {
	t.Helper()
	if !bytes.HasSuffix(doc, []byte("}\n")) {
		t.Fatalf("stats document %q does not end with }\\n", doc)
	}
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	object := func() *statsObject {
		o := &statsObject{vals: map[string]any{}}
		if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
			t.Fatalf("stats document %q: %v, %v; want an object", doc, tok, err)
		}
		for d.More() {
			tok, err := d.Token()
			if err != nil {
				t.Fatalf("stats document %q: %v", doc, err)
			}
			key := tok.(string)
			if _, dup := o.vals[key]; dup {
				t.Errorf("stats document: member %q twice", key)
			}
			o.keys = append(o.keys, key)
			if d.More() {
				var raw json.RawMessage
				if err := d.Decode(&raw); err != nil {
					t.Fatalf("stats document %q: %v", doc, err)
				}
				if raw[0] == '{' {
					o.vals[key] = parseStats(t, append(raw, '\n'))
				} else {
					var v any
					dd := json.NewDecoder(bytes.NewReader(raw))
					dd.UseNumber()
					dd.Decode(&v)
					o.vals[key] = v
				}
			}
		}
		return o
	}
	o := object()
	if _, err := d.Token(); err != nil {
		t.Fatalf("stats document %q: %v", doc, err)
	}
	if d.More() {
		t.Fatalf("stats document %q: more after the object", doc)
	}
	return o
}

// obj returns the member key of o, an object, or fails the test.
func (o *statsObject) obj(t testing.TB, key string) *statsObject {
	t.Helper()
	v, ok := o.vals[key].(*statsObject)
	if !ok {
		t.Fatalf("stats document: %q is %v; want an object", key, o.vals[key])
	}
	return v
}

// num returns the member key of o, a number, or fails the test.
func (o *statsObject) num(t testing.TB, key string) int64 {
	t.Helper()
	n, ok := o.vals[key].(json.Number)
	if !ok {
		t.Fatalf("stats document: %q is %#v; want a number", key, o.vals[key])
	}
	v, err := n.Int64()
	if err != nil {
		t.Fatalf("stats document: %q is %v; want an integer", key, n)
	}
	return v
}

// objects returns the names of o's members that are objects, and numbers
// those that are not.
func (o *statsObject) split() (objects, numbers []string) {
	for _, k := range o.keys {
		if _, ok := o.vals[k].(*statsObject); ok {
			objects = append(objects, k)
		} else {
			numbers = append(numbers, k)
		}
	}
	return objects, numbers
}

// readStatsPort connects to a stats port and reads what it writes until it
// closes the connection.
func readStatsPort(t testing.TB, addr string) []byte {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	doc, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("stats port %s: %v after %q", addr, err, doc)
	}
	return doc
}

// startNutcrackerStats runs nutcracker with yaml, whose listen addresses
// are already free ports, and its stats port on another, refreshed every
// 100 ms. It returns the stats port's address.
func startNutcrackerStats(t testing.TB, yaml string, listens ...string) string {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "nutcracker.yml")
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	stats := testprog.FreeAddr(t)
	_, port, _ := net.SplitHostPort(stats)
	testprog.Start(t, testprog.Program{
		Name: "nutcracker",
		Args: []string{"-c", conf, "-s", port, "-a", "127.0.0.1", "-i", "100",
			"-o", filepath.Join(dir, "nutcracker.log")},
		Ready: testprog.Listening(append(listens, stats)...),
	})
	return stats
}

// exchange sends req on c and reads exactly len(want) bytes of reply.
func exchange(t testing.TB, c net.Conn, br *bufio.Reader, req, want string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(br, got); err != nil || string(got) != want {
		t.Fatalf("%q: %q, %v; want %q", req, got, err, want)
	}
}

// TestStatsPortMatchesNutcracker runs nutcracker and chash proxy with the same
// configuration (a memcached pool and a Redis pool, servers with and without
// a name) in front of the same real servers, sends each the same requests,
// and compares their stats ports' documents: the same members in the same
// order, at every level (chash's own counters, last in a server, aside), the
// same layout byte for byte once names and numbers are blanked, and the same
// numbers wherever the counters cannot differ between the two programs.
func TestStatsPortMatchesNutcracker(t *testing.T) {
	mc := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t)}
	rd := []*redistest.Server{redistest.Start(t), redistest.Start(t)}
	yaml := func(alpha, beta string) string {
		return fmt.Sprintf("alpha:\n  listen: %s\n  hash: fnv1a_64\n  distribution: ketama\n  servers:\n   - %s:1\n   - %s:1 named\n"+
			"beta:\n  listen: %s\n  redis: true\n  servers:\n   - %s:1 r1\n   - %s:1\n",
			alpha, mc[0].Addr, mc[1].Addr, beta, rd[0].Addr, rd[1].Addr)
	}
	ncAlpha, ncBeta := testprog.FreeAddr(t), testprog.FreeAddr(t)
	ncStats := startNutcrackerStats(t, yaml(ncAlpha, ncBeta), ncAlpha, ncBeta)
	p := startProxy(t, yaml("127.0.0.1:22121", "127.0.0.1:22122"), func(p *Proxy) {
		p.StatsAddr = "127.0.0.1:0"
	})
	chStats := p.StatsPortAddr().String()
	// testprog's readiness check connected to nutcracker's listeners once and
	// closed: do as much to chash's, so that connection counts compare.
	for _, pool := range []string{"alpha", "beta"} {
		c, err := net.Dial("tcp", p.Addr(pool).String())
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}

	// The same requests through each: one client per pool, ten keys of each
	// server (chosen by the pool's ring, which hashes similar keys to one
	// server more often than not), then the clients close.
	keys := map[string][]string{}
	for _, pool := range parseConfig(t, yaml(ncAlpha, ncBeta)).Pools {
		keys[pool.Name] = keysOfEachServer(t, pool, 10)
	}
	for _, addrs := range [][2]string{{ncAlpha, ncBeta}, {p.Addr("alpha").String(), p.Addr("beta").String()}} {
		c, err := net.Dial("tcp", addrs[0])
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		for _, k := range keys["alpha"] {
			exchange(t, c, br, fmt.Sprintf("set %s 0 0 5\r\nvalue\r\n", k), "STORED\r\n")
			exchange(t, c, br, "get "+k+"\r\n", fmt.Sprintf("VALUE %s 0 5\r\nvalue\r\nEND\r\n", k))
			exchange(t, c, br, "get missing:"+k+"\r\n", "END\r\n")
		}
		// Five gets of 100 kB: response_bytes counts the values as they
		// came from memcached (issue 16: chash counted 15 bytes, nutcracker
		// about 500150).
		big := strings.Repeat("v", 100_000)
		exchange(t, c, br, "set big 0 0 100000\r\n"+big+"\r\n", "STORED\r\n")
		for range 5 {
			exchange(t, c, br, "get big\r\n", "VALUE big 0 100000\r\n"+big+"\r\nEND\r\n")
		}
		c.Close()
		r, err := net.Dial("tcp", addrs[1])
		if err != nil {
			t.Fatal(err)
		}
		rbr := bufio.NewReader(r)
		for _, k := range keys["beta"] {
			exchange(t, r, rbr, redistest.Request("SET", k, "value"), "+OK\r\n")
			exchange(t, r, rbr, redistest.Request("GET", k), "$5\r\nvalue\r\n")
			exchange(t, r, rbr, redistest.Request("INCR", "n:"+k), ":1\r\n")
		}
		r.Close()
		// Three more clients of each pool, whose ends count as in
		// nutcracker: one quits (client_eof), one sends what neither
		// parses and one resets its connection (client_err).
		for i, end := range [][]string{{"quit\r\n", "set a 0 0 x\r\n"}, {redistest.Request("QUIT"), "*x\r\n"}} {
			for _, req := range end {
				c, err := net.Dial("tcp", addrs[i])
				if err != nil {
					t.Fatal(err)
				}
				c.SetDeadline(time.Now().Add(5 * time.Second))
				io.WriteString(c, req)
				if _, err := io.Copy(io.Discard, c); err != nil {
					t.Fatalf("%q to %s: %v; want the connection closed", req, addrs[i], err)
				}
				c.Close()
			}
			c, err := net.Dial("tcp", addrs[i])
			if err != nil {
				t.Fatal(err)
			}
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
		for _, s := range mc {
			if got := dial(t, s.Addr).mustDo("flush_all\r\n"); got != "OK\r\n" {
				t.Fatalf("flush_all: %q", got)
			}
		}
		for _, s := range rd {
			s.Do("FLUSHALL")
		}
	}

	// Both documents once every client (and readiness check) is gone and 126
	// requests answered: per pool, three ends by EOF or quit and two by an
	// error.
	settled := func(doc *statsObject) bool {
		var answered int64
		for _, pool := range []string{"alpha", "beta"} {
			ps, ok := doc.vals[pool].(*statsObject)
			if !ok || ps.num(t, "client_connections") != 0 || ps.num(t, "client_eof") != 3 || ps.num(t, "client_err") != 2 {
				return false
			}
			servers, _ := ps.split()
			for _, s := range servers {
				answered += ps.obj(t, s).num(t, "responses")
			}
		}
		return answered == 126
	}
	var nc, ch *statsObject
	var ncDoc, chDoc []byte
	if !waitFor(10*time.Second, func() bool {
		ncDoc, chDoc = readStatsPort(t, ncStats), readStatsPort(t, chStats)
		nc, ch = parseStats(t, ncDoc), parseStats(t, chDoc)
		return settled(nc) && settled(ch)
	}) {
		t.Fatalf("stats never settled:\nnutcracker %s\nchash      %s", ncDoc, chDoc)
	}
	t.Logf("nutcracker: %s", ncDoc)
	t.Logf("chash:      %s", chDoc)

	// The header: the same members in the same order, the same connection
	// counts (2 listeners, 2 readiness checks, 2 clients, 4 server connections).
	ncPools, ncHeader := nc.split()
	chPools, chHeader := ch.split()
	if !slices.Equal(chHeader, ncHeader) {
		t.Errorf("header members %q; nutcracker's %q", chHeader, ncHeader)
	}
	for _, k := range []string{"service", "source"} {
		if ch.vals[k] != nc.vals[k] {
			t.Errorf("%s = %v; nutcracker's %v", k, ch.vals[k], nc.vals[k])
		}
	}
	for _, k := range []string{"total_connections", "curr_connections"} {
		if got, want := ch.num(t, k), nc.num(t, k); got != want {
			t.Errorf("%s = %d; nutcracker's %d", k, got, want)
		}
	}
	if got := ch.num(t, "timestamp"); got < time.Now().Unix()-60 || got > time.Now().Unix()+1 {
		t.Errorf("timestamp = %d; want about %d", got, time.Now().Unix())
	}
	if up := ch.num(t, "uptime"); up < 0 || up > 600 {
		t.Errorf("uptime = %d; want the seconds since the proxy started", up)
	}
	slices.Sort(ncPools)
	if !slices.Equal(chPools, ncPools) {
		t.Errorf("pools %q; nutcracker's %q", chPools, ncPools)
	}

	// Each pool and server: nutcracker's members in its order, chash's own
	// after them, and equal numbers.
	ownServer := []string{"server_protocol_errors", "get_hits", "get_misses"}
	for _, pool := range ncPools {
		ncp, chp := nc.obj(t, pool), ch.obj(t, pool)
		ncServers, ncFields := ncp.split()
		chServers, chFields := chp.split()
		if !slices.Equal(chFields, ncFields) {
			t.Errorf("pool %s: members %q; nutcracker's %q", pool, chFields, ncFields)
		}
		if !slices.Equal(chp.keys[:len(chFields)], chFields) {
			t.Errorf("pool %s: members %q; want its counters before its servers", pool, chp.keys)
		}
		for _, k := range ncFields {
			if got, want := chp.num(t, k), ncp.num(t, k); got != want {
				t.Errorf("pool %s: %s = %d; nutcracker's %d", pool, k, got, want)
			}
		}
		slices.Sort(ncServers)
		slices.Sort(chServers)
		if !slices.Equal(chServers, ncServers) {
			t.Errorf("pool %s: servers %q; nutcracker's %q", pool, chServers, ncServers)
			continue
		}
		for _, s := range ncServers {
			ncs, chs := ncp.obj(t, s), chp.obj(t, s)
			if want := append(slices.Clone(ncs.keys), ownServer...); !slices.Equal(chs.keys, want) {
				t.Errorf("pool %s server %s: members %q; want nutcracker's then chash's, %q", pool, s, chs.keys, want)
				continue
			}
			for _, k := range ncs.keys {
				if got, want := chs.num(t, k), ncs.num(t, k); got != want {
					t.Errorf("pool %s server %s: %s = %d; nutcracker's %d", pool, s, k, got, want)
				}
			}
			if chs.num(t, "requests") == 0 {
				t.Errorf("pool %s server %s: no requests; the keys were chosen to reach every server", pool, s)
			}
		}
	}

	// The layout, byte for byte, once names and numbers are blanked and each
	// program's members are in the same order: chash's own counters out,
	// pools and servers sorted.
	if got, want := statsLayout(t, chDoc, ownServer), statsLayout(t, ncDoc, nil); got != want {
		t.Errorf("layout:\n%s\nnutcracker's:\n%s", got, want)
	}
}

// statsLayout returns a stats document's text with its numbers and the
// values of source and version blanked, the members named in drop left out,
// and the objects of each object (pools, a pool's servers) sorted by name,
// their separators kept: for comparing the layout of two documents.
func statsLayout(t testing.TB, doc []byte, drop []string) string {
	t.Helper()
	s := regexp.MustCompile(`:[0-9]+`).ReplaceAllString(string(doc), ":N")
	s = regexp.MustCompile(`"(source|version)":"[^"]*"`).ReplaceAllString(s, `"$1":"S"`)
	for _, k := range drop {
		s = strings.ReplaceAll(s, `, "`+k+`":N`, "")
	}
	out, end := layoutObject(s, 0)
	return out + s[end:]
}

// layoutObject returns the object at s[i] with its object members sorted,
// and the index after it. Names must hold no quote, and string values no
// comma nor brace.
func layoutObject(s string, i int) (string, int) {
	var b strings.Builder
	var objects []string
	b.WriteByte(s[i])
	i++
	for i < len(s) && s[i] != '}' {
		k := i + 1 + strings.IndexByte(s[i+1:], '"') + 1 // after the name
		if strings.HasPrefix(s[k:], ": {") {
			inner, end := layoutObject(s, k+2)
			objects = append(objects, s[i:k+2]+inner)
			i = end
			if i < len(s) && s[i] == ',' {
				i++
			}
			continue
		}
		e := k + strings.IndexAny(s[k:], ",}")
		if s[e] == ',' {
			e++
			if e < len(s) && s[e] == ' ' {
				e++
			}
		}
		b.WriteString(s[i:e])
		i = e
	}
	slices.Sort(objects)
	b.WriteString(strings.Join(objects, ","))
	b.WriteByte('}')
	return b.String(), i + 1
}

// TestStatsCurrent checks that GET /stats and the stats port serve the
// counters as they are, with no refresh interval to wait for: each request
// counted is there at once.
func TestStatsCurrent(t *testing.T) {
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("", s), func(p *Proxy) {
		p.StatsAddr, p.Admin = "127.0.0.1:0", "127.0.0.1:0"
	})
	c := dial(t, p.Addr("alpha").String())
	requests := func(doc []byte) int64 {
		return parseStats(t, doc).obj(t, "alpha").obj(t, s.Addr).num(t, "requests")
	}
	for i := range 3 {
		if got := c.mustDo(fmt.Sprintf("set k%d 0 0 1\r\nx\r\n", i)); got != "STORED\r\n" {
			t.Fatalf("set: %q", got)
		}
		want := int64(i + 1)
		if got := requests(p.StatsJSON()); got != want {
			t.Errorf("StatsJSON after %d sets: requests = %d; want %d", want, got, want)
		}
		if got := adminServerStats(t, p, "alpha", s.Addr)["requests"]; got != float64(want) {
			t.Errorf("GET /stats after %d sets: requests = %v; want %d", want, got, want)
		}
		if got := requests(readStatsPort(t, p.StatsPortAddr().String())); got != want {
			t.Errorf("stats port after %d sets: requests = %d; want %d", want, got, want)
		}
	}
}

// TestStatsPortClients checks that clients that do what scripts do get the
// whole document: many at once, one that sends an HTTP request first (curl
// against the stats port), one that reads a byte at a time.
func TestStatsPortClients(t *testing.T) {
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("", s), func(p *Proxy) { p.StatsAddr = "127.0.0.1:0" })
	addr := p.StatsPortAddr().String()
	want := len(readStatsPort(t, addr))
	var wg sync.WaitGroup
	for range 3 * statsConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if doc := readStatsPort(t, addr); len(doc) != want {
				t.Errorf("one of many clients: %d bytes; want %d", len(doc), want)
			}
		}()
	}
	wg.Wait()

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"+strings.Repeat("x", 64<<10))
	time.Sleep(50 * time.Millisecond) // let the proxy write and close before the client reads
	doc, err := io.ReadAll(c)
	if err != nil || len(doc) != want {
		t.Errorf("a client that sent a request first: %d bytes, %v; want %d", len(doc), err, want)
	}

	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.SetDeadline(time.Now().Add(10 * time.Second))
	var slow []byte
	one := make([]byte, 1)
	for {
		n, err := c2.Read(one)
		slow = append(slow, one[:n]...)
		if err != nil {
			break
		}
	}
	parseStats(t, slow)
}

// TestStatsDocument checks the document of pools that nutcracker cannot have:
// names that need escaping in JSON, a pool without servers, and none of the
// two for the header alone.
func TestStatsDocument(t *testing.T) {
	p := startProxy(t, `"we\"ird":
  listen: 127.0.0.1:22121
  servers:
   - 127.0.0.1:1:1 "quoted"
   - 127.0.0.1:2:1 <b>
`)
	doc := p.StatsJSON()
	pool := parseStats(t, doc).obj(t, `we"ird`)
	for _, s := range []string{`"quoted"`, "<b>"} {
		if got := pool.obj(t, s).num(t, "requests"); got != 0 {
			t.Errorf("server %s: requests = %d; want 0", s, got)
		}
	}
	if err := p.UpdateServers(`we"ird`, nil); err != nil {
		t.Fatal(err)
	}
	doc = p.StatsJSON()
	if servers, _ := parseStats(t, doc).obj(t, `we"ird`).split(); len(servers) != 0 {
		t.Errorf("a pool without servers: servers %q in %s", servers, doc)
	}
	empty := p.appendStats(nil, &statsSample{}, time.Now())
	if o := parseStats(t, empty); len(o.keys) != 7 {
		t.Errorf("a document of no pools: %s; want the 7 members of the header", empty)
	}
}

// TestDescribeStats checks that --describe-stats names every counter of the
// document, nutcracker's as nutcracker describes them.
func TestDescribeStats(t *testing.T) {
	var b strings.Builder
	if err := DescribeStats(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, line := range []string{
		`  client_eof              "# eof on client connections"`,
		`  server_ejected_at       "timestamp when server was ejected in usec since epoch"`,
		`  out_queue_bytes         "current request bytes in outgoing queue"`,
		`  server_protocol_errors  "# replies out of the protocol, each resetting its connection (chash)"`,
		`  get_hits                "# keys of reads the server found (chash)"`,
	} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("DescribeStats has no line %q:\n%s", line, out)
		}
	}
	for _, f := range poolFields {
		if !strings.Contains(out, " "+f.name+" ") {
			t.Errorf("DescribeStats does not describe %s", f.name)
		}
	}
	for _, f := range serverFields {
		if !strings.Contains(out, " "+f.name+" ") {
			t.Errorf("DescribeStats does not describe %s", f.name)
		}
	}
}

// keysOfEachServer returns n keys of each server of pool, as its ring routes
// them: "key:0", "key:1", ... taken in order by servers that lack keys.
func keysOfEachServer(t *testing.T, pool *config.Pool, n int) []string {
	t.Helper()
	r, err := dist.Build(pool, pool.Servers)
	if err != nil {
		t.Fatal(err)
	}
	have := make([]int, len(pool.Servers))
	var keys []string
	for i := 0; len(keys) < n*len(pool.Servers); i++ {
		if i == 100000 {
			t.Fatalf("pool %s: 100000 keys and not %d of each server: %v", pool.Name, n, have)
		}
		k := fmt.Sprintf("key:%d", i)
		s, err := r.Lookup(pool.HashKey([]byte(k)))
		if err != nil {
			t.Fatal(err)
		}
		if have[s] < n {
			have[s]++
			keys = append(keys, k)
		}
	}
	return keys
}

// TestStatsEjectedAt: server_ejected_at is the time of the ejection in
// microseconds since the epoch, as nutcracker gives it, not whole seconds.
func TestStatsEjectedAt(t *testing.T) {
	s := memcachedtest.Start(t)
	dead := testprog.FreeAddr(t) // nothing listens there
	yaml := poolOf("auto_eject_hosts: true\nserver_failure_limit: 1\nserver_retry_timeout: 60000", []string{s.Addr + ":1", dead + ":1"})
	owner := ownerFunc(t, yaml)
	p := startProxy(t, yaml, func(p *Proxy) { p.StatsAddr = "127.0.0.1:0" })
	key := "k"
	for i := 0; owner(key) != dead; i++ {
		key = fmt.Sprint("k", i)
	}
	before := time.Now().UnixMicro()
	dial(t, p.Addr("alpha").String()).mustDo("get " + key + "\r\n")
	after := time.Now().UnixMicro()
	got := parseStats(t, readStatsPort(t, p.StatsPortAddr().String())).obj(t, "alpha").obj(t, dead).num(t, "server_ejected_at")
	if got < before || got > after {
		t.Errorf("server_ejected_at = %d; want the ejection's microsecond, in [%d, %d]", got, before, after)
	}
}

// TestServerFailuresCountOnce: each failure with a server counts in one of
// server_timedout, server_eof and server_err, as in nutcracker's stats: a
// frozen server's timeout in server_timedout, a server that closes the
// connection with a request on it in server_eof, a refused connection in
// server_err.
func TestServerFailuresCountOnce(t *testing.T) {
	frozen := memcachedtest.Start(t)
	dead := testprog.FreeAddr(t) // nothing listens there
	closer, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	go func() { // reads a request, then closes without a reply
		for {
			c, err := closer.Accept()
			if err != nil {
				return
			}
			go func() {
				c.Read(make([]byte, 512))
				c.Close()
			}()
		}
	}()
	yaml := poolOf("timeout: 300", []string{frozen.Addr + ":1 frozen", dead + ":1 dead", closer.Addr().String() + ":1 closer"})
	owner := ownerFunc(t, yaml)
	p := startProxy(t, yaml, func(p *Proxy) { p.StatsAddr, p.Admin = "127.0.0.1:0", "127.0.0.1:0" })
	frozen.Freeze()
	defer frozen.Thaw()
	c := dial(t, p.Addr("alpha").String())
	for _, name := range []string{"frozen", "dead", "closer"} {
		key := "k"
		for i := 0; owner(key) != name; i++ {
			key = fmt.Sprint("k", i)
		}
		if got := c.mustDo("get " + key + "\r\n"); !strings.HasPrefix(got, "SERVER_ERROR") {
			t.Errorf("get %s of server %s = %q; want SERVER_ERROR", key, name, got)
		}
	}
	pool := parseStats(t, readStatsPort(t, p.StatsPortAddr().String())).obj(t, "alpha")
	for name, want := range map[string][3]int64{"frozen": {1, 0, 0}, "closer": {0, 1, 0}, "dead": {0, 0, 1}} {
		s := pool.obj(t, name)
		got := [3]int64{s.num(t, "server_timedout"), s.num(t, "server_eof"), s.num(t, "server_err")}
		if got != want {
			t.Errorf("server %s: server_timedout, server_eof, server_err = %v; want %v", name, got, want)
		}
	}
	// /metrics has the three; the status page counts each failure once.
	metrics := adminGet(t, p, "/metrics")
	for _, want := range []string{
		`chash_proxy_server_timeouts_total{pool="alpha",server="frozen"} 1`,
		`chash_proxy_server_eof_total{pool="alpha",server="closer"} 1`,
		`chash_proxy_server_errors_total{pool="alpha",server="dead"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	for _, s := range p.status(time.Now()).Pools[0].Servers {
		if s.Errors != 1 {
			t.Errorf("status page: server %s has %d errors; want 1", s.Name, s.Errors)
		}
	}
}
