package config

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseFull(t *testing.T) {
	f, err := Load("testdata/full.yml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Path != "testdata/full.yml" {
		t.Errorf("Path = %q; want %q", f.Path, "testdata/full.yml")
	}
	if len(f.Pools) != 3 {
		t.Fatalf("%d pools; want 3", len(f.Pools))
	}
	alpha, beta, gamma := f.Pools[0], f.Pools[1], f.Pools[2]
	want := &Pool{
		Name:               "alpha",
		Line:               3,
		Listen:             "127.0.0.1:22121",
		Hash:               "xxh64",
		HashTag:            "{}",
		Distribution:       "chash",
		Points:             100,
		Timeout:            400 * time.Millisecond,
		Backlog:            1024,
		ClientConnections:  100,
		Redis:              true,
		RedisAuth:          "s3cret",
		RedisDB:            3,
		Preconnect:         true,
		AutoEjectHosts:     true,
		ServerConnections:  4,
		ServerRetryTimeout: 2 * time.Second,
		ServerFailureLimit: 3,
		TCPKeepalive:       true,
		EjectErrors:        ptr(true),
		ClientIdleTimeout:  ptr(30 * time.Second),
		TLSCertFile:        "/etc/chash/cert.pem",
		TLSKeyFile:         "/etc/chash/key.pem",
		Warmup:             time.Minute,
		Replicas:           2,
		ReadMissFailover:   true,
		Drain:              []string{"local"},
		Servers: []Server{
			{Host: "127.0.0.1", Port: 6379, Weight: 1, Line: 30},
			{Host: "127.0.0.1", Port: 6380, Weight: 2, Alias: "server2", Line: 31},
			{Host: "cache-3.example.com", Port: 6381, Weight: 3, Line: 32},
			{Host: "/var/run/redis.sock", Weight: 1, Alias: "local", Line: 33},
			{Host: "[::1]", Port: 6382, Weight: 1, Line: 34},
		},
	}
	alpha.lines, alpha.file = nil, ""
	if !reflect.DeepEqual(alpha, want) {
		t.Errorf("pool alpha:\n got %+v\nwant %+v", alpha, want)
	}
	wantBeta := &Pool{
		Name:               "beta",
		Line:               36,
		Listen:             "/tmp/beta.sock",
		ListenPerm:         0o660,
		Distribution:       "seed",
		Backlog:            512,
		ServerConnections:  1,
		ServerRetryTimeout: 30 * time.Second,
		ServerFailureLimit: 2,
		Replicas:           1,
		Servers:            []Server{{Host: "/var/run/memcached.sock", Weight: 1, Line: 40}},
	}
	beta.lines, beta.file = nil, ""
	if !reflect.DeepEqual(beta, wantBeta) {
		t.Errorf("pool beta:\n got %+v\nwant %+v", beta, wantBeta)
	}
	wantGamma := NewPool("gamma")
	wantGamma.Line, wantGamma.Listen = 42, "127.0.0.1:22123"
	wantGamma.ServersFrom = "etcd://10.0.0.1:2379,10.0.0.2:2379/chash/gamma/"
	gamma.lines, gamma.file = nil, ""
	if !reflect.DeepEqual(gamma, wantGamma) {
		t.Errorf("pool gamma:\n got %+v\nwant %+v", gamma, wantGamma)
	}
	names := []string{"127.0.0.1:6379", "server2", "cache-3.example.com:6381", "local", "[::1]:6382"}
	for i, s := range alpha.Servers {
		if got := s.Name(); got != names[i] {
			t.Errorf("Servers[%d].Name() = %q; want %q", i, got, names[i])
		}
	}
}

// TestParseDefaults checks that a pool that sets nothing but its servers gets
// twemproxy's defaults (nc_conf.h).
func TestParseDefaults(t *testing.T) {
	f, err := Parse("min.yml", []byte("p:\n  distribution: chash\n  servers:\n   - a:1:1\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := f.Pools[0]
	tests := []struct {
		name      string
		got, want any
	}{
		{"Listen", p.Listen, ""},
		{"ListenPerm", p.ListenPerm, fs.FileMode(0)},
		{"Hash", p.Hash, ""},
		{"HashTag", p.HashTag, ""},
		{"Points", p.Points, 0},
		{"Timeout", p.Timeout, time.Duration(0)},
		{"Backlog", p.Backlog, 512},
		{"ClientConnections", p.ClientConnections, 0},
		{"Redis", p.Redis, false},
		{"RedisAuth", p.RedisAuth, ""},
		{"RedisDB", p.RedisDB, 0},
		{"Preconnect", p.Preconnect, false},
		{"AutoEjectHosts", p.AutoEjectHosts, false},
		{"ServerConnections", p.ServerConnections, 1},
		{"ServerRetryTimeout", p.ServerRetryTimeout, 30 * time.Second},
		{"ServerFailureLimit", p.ServerFailureLimit, 2},
		{"TCPKeepalive", p.TCPKeepalive, false},
		{"EjectErrors", p.EjectErrors, (*bool)(nil)},
		{"ClientIdleTimeout", p.ClientIdleTimeout, (*time.Duration)(nil)},
		{"TLSCertFile", p.TLSCertFile, ""},
		{"TLSKeyFile", p.TLSKeyFile, ""},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %v; want %v", tt.name, tt.got, tt.want)
		}
	}
}

// TestParseDistributionDefault checks that a pool without "distribution:" gets
// ketama, as in twemproxy.
func TestParseDistributionDefault(t *testing.T) {
	f, err := Parse("d.yml", []byte("p:\n  servers:\n   - a:1:1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Pools[0].Distribution; got != DefaultDistribution {
		t.Errorf("Distribution = %q; want %q", got, DefaultDistribution)
	}
}

// TestParseTwemproxy parses a configuration that only uses twemproxy's keys and
// values. (Package dist builds its pools' routers.)
func TestParseTwemproxy(t *testing.T) {
	f, err := Load("testdata/twemproxy.yml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range f.Pools {
		names = append(names, p.Name)
	}
	if want := []string{"alpha", "beta", "gamma", "omega"}; !reflect.DeepEqual(names, want) {
		t.Errorf("pools %q; want %q", names, want)
	}
	if p := f.Pools[3]; p.Listen != "/tmp/omega" || p.ListenPerm != 0o666 || p.Hash != "hsieh" {
		t.Errorf("pool omega: Listen %q, ListenPerm %v, Hash %q", p.Listen, p.ListenPerm, p.Hash)
	}
}

func TestParseErrors(t *testing.T) {
	const file = "bad.yml"
	tests := []struct {
		name string
		yaml string
		line int
		pool string
		want string // what the message says after the pool
	}{
		{"empty file", "", 0, "", "no pools"},
		{"only a comment", "# nothing\n", 0, "", "no pools"},
		{"empty mapping", "{}\n", 0, "", "no pools"},
		{"not a mapping", "- a\n- b\n", 1, "", "want a mapping from pool names to pools"},
		{"syntax", "a:\n  hash: x\n b: 1\n", 3, "", "invalid YAML: did not find expected key"},
		// The parser names the line where the pool began; the error names
		// the server indented less than the others.
		{"list item indented less", "alpha:\n  listen: 127.0.0.1:22121\n  hash: fnv1a_64\n  servers:\n   - 127.0.0.1:11211:1\n  - 127.0.0.1:11212:1\n   - 127.0.0.1:11213:1\n", 6, "", "invalid YAML: did not find expected key"},
		{"key indented more", "alpha:\n  listen: 127.0.0.1:22121\n  hash: fnv1a_64\n   timeout: 100\n  servers: [a:1:1]\n", 4, "", "invalid YAML: mapping values are not allowed in this context"},
		{"key without a colon", "alpha:\n  servers:\n   - a:1:1\n  timeout 100\n", 4, "", "invalid YAML: could not find expected ':'"},
		{"no final newline", "a:\n  servers: [a:1:1]\n  hash: x\n b: 1", 4, "", "invalid YAML: did not find expected key"},
		{"in the second document", "a:\n  servers: [a:1:1]\n---\nb:\n  hash: x\n c: 1\n", 6, "", "invalid YAML: did not find expected key"},
		{"unclosed quote", "a:\n  hash: \"x\n  servers: [a:1:1]\n", 2, "", "invalid YAML: found unexpected end of stream"},
		{"two documents", "a:\n  servers: [a:1:1]\n---\nb: 1\n", 3, "", "a second YAML document"},
		{"pool twice", "a:\n  distribution: chash\n  servers: [a:1:1]\na:\n  servers: [b:1:1]\n", 4, "a", "pool defined twice (first on line 1)"},
		{"pool not a mapping", "a: 1\n", 1, "a", "want a mapping of settings"},
		{"pool null", "a:\n", 1, "a", "want a mapping of settings"},
		{"pool list", "a:\n  - x\n", 2, "a", "want a mapping of settings"},
		{"empty pool name", "\"\":\n  servers: [a:1:1]\n", 1, "", "want a pool name"},
		{"alias", "a: &x\n  distribution: chash\n  servers: [a:1:1]\nb: *x\n", 4, "b", "YAML aliases are not supported"},
		{"merge key", "a: &x\n  distribution: chash\n  servers: [a:1:1]\nb:\n  <<: *x\n", 5, "b", "YAML aliases are not supported"},

		{"unknown key", "a:\n  distribution: chash\n  hash_tags: \"{}\"\n  servers: [a:1:1]\n", 3, "a", `unknown key "hash_tags" (known: auto_eject_hosts, backlog,`},
		{"reuseport is not twemproxy's", "a:\n  reuseport: true\n  servers: [a:1:1]\n", 2, "a", `unknown key "reuseport"`},
		{"key twice", "a:\n  distribution: chash\n  hash: xxh64\n  hash: xxh64\n  servers: [a:1:1]\n", 4, "a", "hash given twice (first on line 3)"},
		{"no servers key", "a:\n  distribution: chash\n", 1, "a", "no servers"},
		{"servers null", "a:\n  distribution: chash\n  servers:\n", 3, "a", "no servers"},
		{"servers empty", "a:\n  distribution: chash\n  servers: []\n", 3, "a", "no servers"},
		{"servers and servers_from", "a:\n  servers: [a:1:1]\n  servers_from: file:/etc/servers\n", 3, "a", "servers_from and servers (line 2) both given; a pool takes its servers from one"},
		{"servers_from and empty servers", "a:\n  servers_from: file:/etc/servers\n  servers: []\n", 2, "a", "servers_from and servers (line 3) both given"},
		{"servers_from empty", "a:\n  servers_from: \"\"\n", 2, "a", `servers_from "": want "etcd://HOST:PORT/PREFIX/" or "file:PATH"`},
		{"servers_from null", "a:\n  servers_from:\n", 2, "a", "servers_from has no value"},
		{"servers_from list", "a:\n  servers_from: [file:a, file:b]\n", 2, "a", "servers_from: want a single value, not a list"},
		{"servers_from http", "a:\n  servers_from: http://10.0.0.1:2379/chash/\n", 2, "a", `servers_from "http://10.0.0.1:2379/chash/": want "etcd://HOST:PORT/PREFIX/" or "file:PATH"`},
		{"servers_from bare path", "a:\n  servers_from: /etc/servers\n", 2, "a", `servers_from "/etc/servers": want`},
		{"servers scalar", "a:\n  distribution: chash\n  servers: a:1:1\n", 3, "a", "servers: want a list"},
		{"server mapping", "a:\n  distribution: chash\n  servers:\n   - a: 1\n", 4, "a", "server: want a \"host:port:weight [name]\" line, not a mapping"},
		{"server null", "a:\n  distribution: chash\n  servers:\n   -\n", 4, "a", "server: want a \"host:port:weight [name]\" line"},

		{"bad weight", "alpha:\n  distribution: chash\n  servers:\n   - 10.0.0.1:11211:1\n   - 10.0.0.2:11211:1\n   - 10.0.0.3:11211:1\n   - 10.0.0.1:11211:x\n", 7, "alpha", `server "10.0.0.1:11211:x": weight "x" is not a positive integer`},
		{"zero weight", "a:\n  distribution: chash\n  servers:\n   - h:1:0\n", 4, "a", `server "h:1:0": weight "0" is not a positive integer`},
		{"weight far too large", "a:\n  distribution: chash\n  servers:\n   - h:1:99999999999999999999999\n", 4, "a", `weight 99999999999999999999999 is above the maximum, 2147483647`},
		{"negative weight", "a:\n  distribution: chash\n  servers:\n   - h:1:-1\n", 4, "a", `weight "-1" is not a positive integer`},
		{"huge weight", "a:\n  distribution: chash\n  servers:\n   - h:1:2147483648\n", 4, "a", `weight 2147483648 is above the maximum, 2147483647`},
		{"no weight", "a:\n  distribution: chash\n  servers:\n   - 10.0.0.1:11211\n", 4, "a", `server "10.0.0.1:11211": want "host:port:weight [name]"`},
		{"no port", "a:\n  distribution: chash\n  servers:\n   - h\n", 4, "a", `server "h": want "host:port:weight [name]"`},
		{"port zero", "a:\n  distribution: chash\n  servers:\n   - h:0:1\n", 4, "a", `port "0" is not a number in 1..65535`},
		{"port too big", "a:\n  distribution: chash\n  servers:\n   - h:65536:1\n", 4, "a", `port "65536" is not a number in 1..65535`},
		{"port letters", "a:\n  distribution: chash\n  servers:\n   - h:http:1\n", 4, "a", `port "http" is not a number in 1..65535`},
		{"port leading zero", "a:\n  distribution: chash\n  servers:\n   - h:011211:1\n", 4, "a", `port "011211" has a leading zero`},
		{"empty host", "a:\n  distribution: chash\n  servers:\n   - :11211:1\n", 4, "a", "empty host"},
		{"empty alias", "a:\n  distribution: chash\n  servers:\n   - \"h:1:1 \"\n", 4, "a", "empty name after the space"},
		{"alias with a space", "a:\n  distribution: chash\n  servers:\n   - h:1:1 my server\n", 4, "a", `weight "1 my" is not a positive integer (a name has no spaces)`},
		{"socket path with a colon", "a:\n  distribution: chash\n  servers:\n   - /tmp/a:b:1\n", 4, "a", `want "host:port:weight [name]"`},
		{"duplicate server", "a:\n  distribution: chash\n  servers:\n   - h:1:1\n   - h:1:2\n", 5, "a", `server "h:1:2": name "h:1" is also the server's on line 4`},
		{"duplicate alias", "a:\n  distribution: chash\n  servers:\n   - h:1:1 x\n   - g:2:1 x\n", 5, "a", `name "x" is also the server's on line 4`},
		{"alias equals an address", "a:\n  distribution: chash\n  servers:\n   - h:1:1\n   - g:2:1 h:1\n", 5, "a", `name "h:1" is also the server's on line 4`},

		{"unknown hash", "a:\n  distribution: chash\n  hash: fnv2\n  servers: [a:1:1]\n", 3, "a", `hash "fnv2" is unknown (known: `},
		{"hash null", "a:\n  hash:\n  servers: [a:1:1]\n", 2, "a", "hash has no value"},
		{"hash list", "a:\n  hash: [md5]\n  servers: [a:1:1]\n", 2, "a", "hash: want a single value, not a list"},
		{"empty distribution", "a:\n  distribution: \"\"\n  servers: [a:1:1]\n", 2, "a", `distribution is empty; leave it out for the default, ketama`},
		{"hash_tag one char", "a:\n  distribution: chash\n  hash_tag: \"{\"\n  servers: [a:1:1]\n", 3, "a", `hash_tag "{" is not two ASCII characters`},
		{"hash_tag three chars", "a:\n  distribution: chash\n  hash_tag: \"{}}\"\n  servers: [a:1:1]\n", 3, "a", `hash_tag "{}}" is not two ASCII characters`},
		{"hash_tag non-ASCII", "a:\n  distribution: chash\n  hash_tag: \"«»\"\n  servers: [a:1:1]\n", 3, "a", `hash_tag "«»" is not two ASCII characters`},
		{"points negative", "a:\n  distribution: chash\n  points: -1\n  servers: [a:1:1]\n", 3, "a", `points "-1" is not a number in 0..2147483647`},
		{"points float", "a:\n  distribution: chash\n  points: 1.5\n  servers: [a:1:1]\n", 3, "a", `points "1.5" is not a number`},
		{"timeout text", "a:\n  distribution: chash\n  timeout: 1s\n  servers: [a:1:1]\n", 3, "a", `timeout "1s" is not a number`},
		{"backlog too big", "a:\n  distribution: chash\n  backlog: 99999999999\n  servers: [a:1:1]\n", 3, "a", `backlog "99999999999" is not a number`},
		{"bool yes", "a:\n  distribution: chash\n  redis: yes\n  servers: [a:1:1]\n", 3, "a", `redis "yes" is not true or false`},
		{"bool True", "a:\n  distribution: chash\n  preconnect: True\n  servers: [a:1:1]\n", 3, "a", `preconnect "True" is not true or false`},
		{"server_connections 0", "a:\n  distribution: chash\n  server_connections: 0\n  servers: [a:1:1]\n", 3, "a", "server_connections is 0; want at least 1"},
		{"redis_auth without redis", "a:\n  distribution: chash\n  redis_auth: pw\n  servers: [a:1:1]\n", 3, "a", "redis_auth is only valid in a pool with redis: true"},
		{"listen without port", "a:\n  distribution: chash\n  listen: localhost\n  servers: [a:1:1]\n", 3, "a", `listen "localhost": want "host:port" or "/path/to/socket [mode]"`},
		{"listen bad port", "a:\n  distribution: chash\n  listen: localhost:99999\n  servers: [a:1:1]\n", 3, "a", `listen "localhost:99999": port "99999" is not a number in 1..65535`},
		{"listen bad mode", "a:\n  distribution: chash\n  listen: /tmp/s 0999\n  servers: [a:1:1]\n", 3, "a", `listen "/tmp/s 0999": mode "0999" is not octal in 0..0777`},
		{"listen mode too big", "a:\n  distribution: chash\n  listen: /tmp/s 1777\n  servers: [a:1:1]\n", 3, "a", `mode "1777" is not octal in 0..0777`},
		{"eject_errors yes", "a:\n  auto_eject_hosts: true\n  eject_errors: yes\n  servers: [a:1:1]\n", 3, "a", `eject_errors "yes" is not true or false`},
		{"eject_errors null", "a:\n  auto_eject_hosts: true\n  eject_errors:\n  servers: [a:1:1]\n", 3, "a", "eject_errors has no value"},
		{"eject_errors without auto_eject_hosts", "a:\n  eject_errors: true\n  servers: [a:1:1]\n", 2, "a", "eject_errors: true needs auto_eject_hosts: true"},
		{"eject_errors with auto_eject_hosts false", "a:\n  auto_eject_hosts: false\n  servers: [a:1:1]\n  eject_errors: true\n", 4, "a", "eject_errors: true needs auto_eject_hosts: true"},
		{"replicas 0", "a:\n  replicas: 0\n  servers: [a:1:1]\n", 2, "a", "replicas is 0; want at least 1"},
		{"replicas text", "a:\n  replicas: two\n  servers: [a:1:1]\n", 2, "a", `replicas "two" is not a number`},
		{"warmup negative", "a:\n  warmup: -5\n  servers: [a:1:1]\n", 2, "a", `warmup "-5" is not a number`},
		{"read_miss_failover without replicas", "a:\n  read_miss_failover: true\n  servers: [a:1:1]\n", 2, "a", "read_miss_failover: true needs replicas: 2 or more"},
		{"drain of no server", "a:\n  drain: [b:1]\n  servers: [a:1:1, c:1:1]\n", 2, "a", `drain: "b:1" is not the name of a server of the pool (servers: a:1, c:1)`},
		{"drain of every server", "a:\n  servers: [a:1:1, c:1:1 cee]\n  drain: [a:1, cee]\n", 3, "a", "drain names every server; at least one must own the keys"},
		{"drain twice", "a:\n  drain: [a:1, a:1]\n  servers: [a:1:1, c:1:1]\n", 2, "a", `drain: server "a:1" named twice`},
		{"drain mapping", "a:\n  drain: {a: 1}\n  servers: [a:1:1, c:1:1]\n", 2, "a", "drain: want a single value, not a mapping"},
		{"drain of servers_from", "a:\n  drain: [a:1]\n  servers_from: file:/x\n", 2, "a", "drain names servers of a servers list; a servers_from pool's server is drained with chash proxy's POST /drain, or leaves its source"},
		{"client_idle_timeout text", "a:\n  client_idle_timeout: 30s\n  servers: [a:1:1]\n", 2, "a", `client_idle_timeout "30s" is not a number in 0..2147483647`},
		{"client_idle_timeout negative", "a:\n  client_idle_timeout: -1\n  servers: [a:1:1]\n", 2, "a", `client_idle_timeout "-1" is not a number`},
		{"client_idle_timeout twice", "a:\n  client_idle_timeout: 1\n  client_idle_timeout: 2\n  servers: [a:1:1]\n", 3, "a", "client_idle_timeout given twice (first on line 2)"},
		{"tls_cert_file alone", "a:\n  listen: 127.0.0.1:1\n  tls_cert_file: c.pem\n  servers: [a:1:1]\n", 3, "a", "tls_cert_file without tls_key_file; set both or neither"},
		{"tls_key_file alone", "a:\n  servers: [a:1:1]\n  tls_key_file: k.pem\n", 3, "a", "tls_key_file without tls_cert_file; set both or neither"},
		{"tls_cert_file empty", "a:\n  tls_cert_file: \"\"\n  tls_key_file: k.pem\n  servers: [a:1:1]\n", 2, "a", "tls_cert_file is empty; want a file name"},
		{"tls_key_file list", "a:\n  tls_cert_file: c.pem\n  tls_key_file: [k.pem]\n  servers: [a:1:1]\n", 3, "a", "tls_key_file: want a single value, not a list"},
		{"listen twice", "a:\n  distribution: chash\n  listen: :22121\n  servers: [a:1:1]\nb:\n  distribution: chash\n  listen: :22121\n  servers: [a:1:1]\n", 7, "b", `listen ":22121" is also pool "a"'s (line 3)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse(file, []byte(tt.yaml))
			if err == nil {
				t.Fatalf("Parse = %+v, nil; want an error", f)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse error %T %v; want *Error", err, err)
			}
			if e.File != file || e.Line != tt.line || e.Pool != tt.pool {
				t.Errorf("error at file %q line %d pool %q; want %q, %d, %q (%v)", e.File, e.Line, e.Pool, file, tt.line, tt.pool, err)
			}
			prefix := "config: " + file
			if tt.line > 0 {
				prefix += ":" + strconv.Itoa(tt.line)
			}
			prefix += ": "
			if tt.pool != "" {
				prefix += `pool "` + tt.pool + `": `
			}
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg[len(prefix):], tt.want) {
				t.Errorf("Parse error\n %s\nwant it to start with\n %s\nand then say\n %s", msg, prefix, tt.want)
			}
		})
	}
}

// TestParseProxyKeys checks chash proxy's per-pool keys: set, each is the
// pool's; absent, nil or empty, so the proxy's flag applies.
func TestParseProxyKeys(t *testing.T) {
	tests := []struct {
		keys     string
		eject    *bool
		idle     *time.Duration
		cert     string
		key      string
		keysLine int // the line KeyLine gives tls_cert_file
	}{
		{"", nil, nil, "", "", 1},
		{"eject_errors: false", ptr(false), nil, "", "", 1},
		{"eject_errors: true\nauto_eject_hosts: true", ptr(true), nil, "", "", 1},
		{"client_idle_timeout: 0", nil, ptr(time.Duration(0)), "", "", 1},
		{"client_idle_timeout: 1500", nil, ptr(1500 * time.Millisecond), "", "", 1},
		{"tls_cert_file: c.pem\ntls_key_file: /etc/k.pem", nil, nil, "c.pem", "/etc/k.pem", 3},
		{"tls_key_file: k.pem\ntls_cert_file: \"dir with space/c.pem\"", nil, nil, "dir with space/c.pem", "k.pem", 4},
	}
	for _, tt := range tests {
		yaml := "a:\n  servers: [h:1:1]\n"
		for l := range strings.Lines(tt.keys) {
			yaml += "  " + l
		}
		yaml += "\n"
		f, err := Parse("p.yml", []byte(yaml))
		if err != nil {
			t.Errorf("%q: %v", tt.keys, err)
			continue
		}
		p := f.Pools[0]
		if !reflect.DeepEqual(p.EjectErrors, tt.eject) || !reflect.DeepEqual(p.ClientIdleTimeout, tt.idle) ||
			p.TLSCertFile != tt.cert || p.TLSKeyFile != tt.key {
			t.Errorf("%q: EjectErrors %v, ClientIdleTimeout %v, TLS %q %q; want %v, %v, %q %q", tt.keys,
				show(p.EjectErrors), show(p.ClientIdleTimeout), p.TLSCertFile, p.TLSKeyFile, show(tt.eject), show(tt.idle), tt.cert, tt.key)
		}
		if got := p.KeyLine("tls_cert_file"); got != tt.keysLine {
			t.Errorf("%q: KeyLine(tls_cert_file) = %d; want %d", tt.keys, got, tt.keysLine)
		}
		if got, want := p.Has("tls_cert_file"), tt.cert != ""; got != want {
			t.Errorf("%q: Has(tls_cert_file) = %v; want %v", tt.keys, got, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// show returns what p points to, or "nil".
func show[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// TestErrorMessage checks a whole message, the one the package doc shows.
func TestErrorMessage(t *testing.T) {
	const conf = `alpha:
  listen: 127.0.0.1:22121
  distribution: chash
  servers:
   - 10.0.0.1:11211:1
   - 10.0.0.2:11211:1
   - 10.0.0.1:11211:x
`
	_, err := Parse("nutcracker.yml", []byte(conf))
	const want = `config: nutcracker.yml:7: pool "alpha": server "10.0.0.1:11211:x": weight "x" is not a positive integer`
	if err == nil || err.Error() != want {
		t.Errorf("Parse error\n %v\nwant\n %s", err, want)
	}
}

func TestFilePool(t *testing.T) {
	one, err := Parse("one.yml", []byte("solo:\n  distribution: chash\n  servers: [a:1:1]\n"))
	if err != nil {
		t.Fatal(err)
	}
	two, err := Parse("two.yml", []byte("a:\n  distribution: chash\n  servers: [a:1:1]\nb:\n  distribution: seed\n  servers: [b:1:1]\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		f       *File
		name    string
		want    string // the pool's name, or
		wantErr string
	}{
		{one, "", "solo", ""},
		{one, "solo", "solo", ""},
		{one, "other", "", `config: one.yml: no pool "other" (pools: "solo")`},
		{two, "b", "b", ""},
		{two, "a", "a", ""},
		{two, "", "", `config: two.yml: 2 pools ("a", "b"): name one`},
		{two, "c", "", `config: two.yml: no pool "c" (pools: "a", "b")`},
	}
	for _, tt := range tests {
		p, err := tt.f.Pool(tt.name)
		switch {
		case tt.wantErr != "":
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("%s: Pool(%q) error %v; want %s", tt.f.Path, tt.name, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("%s: Pool(%q): %v", tt.f.Path, tt.name, err)
		case p.Name != tt.want:
			t.Errorf("%s: Pool(%q) = pool %q; want %q", tt.f.Path, tt.name, p.Name, tt.want)
		}
	}
}

func TestLoadMissing(t *testing.T) {
	_, err := Load("testdata/no-such-file.yml")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of a missing file: %v; want an error wrapping fs.ErrNotExist", err)
	}
	if err != nil && !strings.HasPrefix(err.Error(), "config: ") {
		t.Errorf("Load error %q; want the prefix \"config: \"", err)
	}
}

// TestExamples loads the repository's example configurations, which README
// uses. (Package dist builds their pools' routers.)
func TestExamples(t *testing.T) {
	paths, err := filepath.Glob("../../examples/*.yml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, path := range paths {
		if _, err := Load(path); err != nil {
			t.Error(err)
		}
	}
}

func TestErrorString(t *testing.T) {
	problem := errors.New("no servers")
	tests := []struct {
		e    *Error
		want string
	}{
		{&Error{File: "f.yml", Line: 3, Pool: "p", Err: problem}, `config: f.yml:3: pool "p": no servers`},
		{&Error{File: "f.yml", Pool: "p", Err: problem}, `config: f.yml: pool "p": no servers`},
		{&Error{File: "f.yml", Line: 3, Err: problem}, `config: f.yml:3: no servers`},
		{&Error{Line: 3, Pool: "p", Err: problem}, `config: line 3: pool "p": no servers`},
		{&Error{Pool: "p", Err: problem}, `config: pool "p": no servers`},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q; want %q", got, tt.want)
		}
		if !errors.Is(tt.e, problem) {
			t.Errorf("errors.Is(%v, problem) = false; want true", tt.e)
		}
	}
}

func TestHashKey(t *testing.T) {
	tests := []struct {
		tag, key, want string
	}{
		{"", "{user1}:a", "{user1}:a"},
		{"{}", "{user1}:a", "user1"},
		{"{}", "x{user1}:a", "user1"},
		{"{}", "user1", "user1"},
		{"{}", "{}x", "{}x"}, // an empty tag hashes the whole key
		{"{}", "{user1", "{user1"},
		{"{}", "}user1{", "}user1{"},
		{"{}", "}a{b}c", "b"},
		{"{}", "{a}{b}", "a"},
		{"{}", "{{a}}", "{a"},
		{"{}", "", ""},
		{"$$", "$a$b$", "a"},
		{"$$", "$$a$", "$$a$"},
		{"$$", "x$abc", "x$abc"},
		{"()", "(é)", "é"},
	}
	for _, tt := range tests {
		p := &Pool{HashTag: tt.tag}
		if got := string(p.HashKey([]byte(tt.key))); got != tt.want {
			t.Errorf("HashKey(%q) with hash_tag %q = %q; want %q", tt.key, tt.tag, got, tt.want)
		}
	}
}

func TestParseServer(t *testing.T) {
	tests := []struct {
		line string
		want Server
	}{
		{"10.0.0.1:11211:1", Server{Host: "10.0.0.1", Port: 11211, Weight: 1}},
		{"10.0.0.1:11211:2 cache1", Server{Host: "10.0.0.1", Port: 11211, Weight: 2, Alias: "cache1"}},
		{"localhost:1:3", Server{Host: "localhost", Port: 1, Weight: 3}},
		{"[::1]:11211:1", Server{Host: "[::1]", Port: 11211, Weight: 1}},
		{"/tmp/mc.sock:1", Server{Host: "/tmp/mc.sock", Weight: 1}},
		{"/tmp/mc.sock:4 local", Server{Host: "/tmp/mc.sock", Weight: 4, Alias: "local"}},
	}
	for _, tt := range tests {
		if got, err := ParseServer(tt.line); err != nil || got != tt.want {
			t.Errorf("ParseServer(%q) = %#v, %v; want %#v", tt.line, got, err, tt.want)
		}
		if got := tt.want.String(); got != tt.line {
			t.Errorf("%#v.String() = %q; want %q", tt.want, got, tt.line)
		}
	}
	for _, bad := range []string{"", "h", "h:1", "h:1:0", "h:x:1", ":1:1", "h:1:1 ", "/a:b:1", "h:0:1",
		"- 10.0.0.1:11211:1", "- 10.0.0.1:11211:1 b", "a\tb:1:1", "a\x00:1:1"} {
		if s, err := ParseServer(bad); err == nil {
			t.Errorf("ParseServer(%q) = %+v, nil; want an error", bad, s)
		}
	}
}

// FuzzParseServer checks that ParseServer never panics and that a server it
// accepts, written out again, parses to the same server.
func FuzzParseServer(f *testing.F) {
	for _, s := range []string{"10.0.0.1:11211:1", "h:1:2 alias", "/tmp/s:1", "[::1]:11211:1", "a:b:c:1:1 x y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		s, err := ParseServer(line)
		if err != nil {
			return
		}
		if s.Weight < 1 || s.Host == "" || s.Port < 0 || s.Port > 65535 || s.Port == 0 && !strings.HasPrefix(s.Host, "/") {
			t.Fatalf("ParseServer(%q) = %+v", line, s)
		}
		again := s.String()
		if s2, err := ParseServer(again); err != nil || s2 != s {
			t.Fatalf("ParseServer(%q) = %+v; written out as %q it parses to %+v, %v", line, s, again, s2, err)
		}
	})
}

// TestErrorAt checks that an error found after Parse names the file, the line
// of the key at fault, or of the pool when the pool does not set it, and the
// pool.
func TestErrorAt(t *testing.T) {
	f, err := Parse("e.yml", []byte("a:\n  distribution: chash\n  points: 7\n  servers: [h:1:1]\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := f.Pools[0]
	problem := errors.New("too many")
	for _, tt := range []struct{ key, want string }{
		{"points", `config: e.yml:3: pool "a": too many`},
		{"label", `config: e.yml:1: pool "a": too many`},
	} {
		err := p.ErrorAt(tt.key, problem)
		if err.Error() != tt.want || !errors.Is(err, problem) {
			t.Errorf("ErrorAt(%q) = %v; want %s, wrapping the problem", tt.key, err, tt.want)
		}
	}
	code := &Pool{Name: "b"}
	if got, want := code.ErrorAt("points", problem).Error(), `config: pool "b": too many`; got != want {
		t.Errorf("ErrorAt of a pool made in code = %q; want %q", got, want)
	}
}
