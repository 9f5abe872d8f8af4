package config

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fullPools returns, built in code, the pools of testdata/full.yml: every key
// set to a value other than its default.
func fullPools() []*Pool {
	alpha := NewPool("alpha")
	alpha.Listen = "127.0.0.1:22121"
	alpha.Hash = "xxh64"
	alpha.HashTag = "{}"
	alpha.Distribution = "chash"
	alpha.Points = 100
	alpha.Timeout = 400 * time.Millisecond
	alpha.Backlog = 1024
	alpha.ClientConnections = 100
	alpha.Redis = true
	alpha.RedisAuth = "s3cret"
	alpha.RedisDB = 3
	alpha.Preconnect = true
	alpha.AutoEjectHosts = true
	alpha.ServerConnections = 4
	alpha.ServerRetryTimeout = 2 * time.Second
	alpha.ServerFailureLimit = 3
	alpha.TCPKeepalive = true
	alpha.EjectErrors = ptr(true)
	alpha.ClientIdleTimeout = ptr(30 * time.Second)
	alpha.TLSCertFile = "/etc/chash/cert.pem"
	alpha.TLSKeyFile = "/etc/chash/key.pem"
	alpha.Warmup = time.Minute
	alpha.Replicas = 2
	alpha.ReadMissFailover = true
	alpha.Drain = []string{"local"}
	alpha.Servers = []Server{
		{Host: "127.0.0.1", Port: 6379, Weight: 1},
		{Host: "127.0.0.1", Port: 6380, Weight: 2, Alias: "server2"},
		{Host: "cache-3.example.com", Port: 6381, Weight: 3},
		{Host: "/var/run/redis.sock", Weight: 1, Alias: "local"},
		{Host: "[::1]", Port: 6382, Weight: 1},
	}
	beta := NewPool("beta")
	beta.Listen = "/tmp/beta.sock"
	beta.ListenPerm = 0o660
	beta.Distribution = "seed"
	beta.Servers = []Server{{Host: "/var/run/memcached.sock", Weight: 1}}
	gamma := NewPool("gamma")
	gamma.Listen = "127.0.0.1:22123"
	gamma.ServersFrom = "etcd://10.0.0.1:2379,10.0.0.2:2379/chash/gamma/"
	return []*Pool{alpha, beta, gamma}
}

// TestMarshal writes pools built in code and checks the text against
// testdata/marshal.yml, and that Parse reads it back as testdata/full.yml,
// which sets the same values by hand.
func TestMarshal(t *testing.T) {
	out, err := Marshal(&File{Pools: fullPools()})
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/marshal.yml")
	if err != nil {
		t.Fatal(err)
	}
	for bytes.HasPrefix(want, []byte("#")) { // the file's header
		_, want, _ = bytes.Cut(want, []byte("\n"))
	}
	if string(out) != string(want) {
		t.Errorf("Marshal(full pools) =\n%s\nwant (testdata/marshal.yml)\n%s", out, want)
	}
	got, err := Parse("marshal.yml", out)
	if err != nil {
		t.Fatal(err)
	}
	full, err := Load("testdata/full.yml")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := stripLines(got), stripLines(full); !reflect.DeepEqual(a, b) {
		t.Errorf("Parse(Marshal(full pools)):\n got %+v\nwant %+v (testdata/full.yml)", a, b)
	}
}

// TestMarshalDefaults checks that Marshal leaves out every key whose value is
// the default, so that a pool of twemproxy's keys stays one nutcracker reads.
func TestMarshalDefaults(t *testing.T) {
	p := NewPool("alpha")
	p.Listen = "127.0.0.1:22121"
	p.Servers = []Server{{Host: "10.0.0.1", Port: 11211, Weight: 1}, {Host: "10.0.0.2", Port: 11211, Weight: 2, Alias: "b"}}
	q := NewPool("beta")
	q.Distribution = "modula"
	q.Hash = "md5"
	q.EjectErrors = ptr(false) // set, though false: written, as Parse would read it
	q.AutoEjectHosts = true
	q.Servers = []Server{{Host: "/tmp/m.sock", Weight: 1}}
	out, err := Marshal(&File{Pools: []*Pool{p, q}})
	if err != nil {
		t.Fatal(err)
	}
	want := `alpha:
  listen: 127.0.0.1:22121
  servers:
    - 10.0.0.1:11211:1
    - 10.0.0.2:11211:2 b
beta:
  hash: md5
  distribution: modula
  auto_eject_hosts: true
  eject_errors: false
  servers:
    - /tmp/m.sock:1
`
	if string(out) != want {
		t.Errorf("Marshal =\n%s\nwant\n%s", out, want)
	}
}

// TestNewPool checks that NewPool's pool is Parse's pool of a file that sets
// only its servers.
func TestNewPool(t *testing.T) {
	f, err := Parse("min.yml", []byte("p:\n  servers:\n   - a:1:1\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := NewPool("p")
	p.Servers = []Server{{Host: "a", Port: 1, Weight: 1}}
	if got, want := stripLines(&File{Pools: []*Pool{p}}), stripLines(f); !reflect.DeepEqual(got, want) {
		t.Errorf("NewPool(%q) with a server:\n got %+v\nwant %+v", "p", got, want)
	}
}

// TestMarshalErrors checks that Marshal refuses what Parse would refuse, and
// what the format cannot hold, naming the pool and the key.
func TestMarshalErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(p *Pool)
		want string
	}{
		{"no servers", func(p *Pool) { p.Servers = nil }, `config: pool "alpha": no servers`},
		{"unknown hash", func(p *Pool) { p.Hash = "sha1" }, `config: pool "alpha": hash "sha1" is unknown`},
		{"hash tag of one character", func(p *Pool) { p.HashTag = "{" }, `config: pool "alpha": hash_tag "{" is not two ASCII characters`},
		{"sub-millisecond timeout", func(p *Pool) { p.Timeout = 1500 * time.Microsecond }, `config: pool "alpha": timeout: 1.5ms is not a whole number of milliseconds`},
		{"negative retry timeout", func(p *Pool) { p.ServerRetryTimeout = -time.Second }, `config: pool "alpha": server_retry_timeout: -1s is not a whole number of milliseconds`},
		{"negative backlog", func(p *Pool) { p.Backlog = -1 }, `config: pool "alpha": backlog "-1" is not a number`},
		{"mode of a TCP listener", func(p *Pool) { p.Listen, p.ListenPerm = "127.0.0.1:22121", 0o600 }, `config: pool "alpha": listen "127.0.0.1:22121 0600": port "22121 0600" is not a number`},
		{"weight 0", func(p *Pool) { p.Servers[0].Weight = 0 }, `config: pool "alpha": server "10.0.0.1:11211:0": weight "0" is not a positive integer`},
		{"two servers of one name", func(p *Pool) { p.Servers[1].Alias = "10.0.0.1:11211" }, `config: pool "alpha": server "10.0.0.2:11211:1 10.0.0.1:11211": name "10.0.0.1:11211" is also`},
		{"redis_auth without redis", func(p *Pool) { p.RedisAuth = "x" }, `config: pool "alpha": redis_auth is only valid in a pool with redis: true`},
		{"alias with a space", func(p *Pool) { p.Servers[0].Alias = "a b" }, `config: pool "alpha": server "10.0.0.1:11211:1 a b": weight "1 a" is not a positive integer (a name has no spaces)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPool("alpha")
			p.Servers = []Server{{Host: "10.0.0.1", Port: 11211, Weight: 1}, {Host: "10.0.0.2", Port: 11211, Weight: 1}}
			tt.edit(p)
			out, err := Marshal(&File{Pools: []*Pool{p}})
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Marshal = %q, %v; want an error starting %q", out, err, tt.want)
			}
		})
	}
	if out, err := Marshal(&File{Path: "x.yml"}); err == nil || err.Error() != "config: x.yml: no pools" {
		t.Errorf("Marshal of a File without pools = %q, %v; want config: x.yml: no pools", out, err)
	}
}

// TestKeys checks the reference: every key is documented, and its example,
// in a pool with the keys it needs, parses to a value other than the default.
func TestKeys(t *testing.T) {
	// Keys an example needs beside itself.
	needs := map[string]string{
		"redis_auth":         "  redis: true\n",
		"eject_errors":       "  auto_eject_hosts: true\n",
		"tls_cert_file":      "  tls_key_file: key.pem\n",
		"tls_key_file":       "  tls_cert_file: cert.pem\n",
		"label":              "  distribution: seed\n  points: 4\n",
		"points":             "  distribution: chash\n",
		"read_miss_failover": "  replicas: 2\n",
		"drain":              "  servers:\n   - 10.0.0.1:11211:1\n   - 10.0.0.2:11211:1\n",
	}
	seen := map[string]bool{}
	for _, k := range Keys() {
		if seen[k.Name] {
			t.Errorf("key %q documented twice", k.Name)
		}
		seen[k.Name] = true
		if k.Origin != "twemproxy" && k.Origin != "chash" || k.Default == "" || k.Doc == "" || k.Example == "" {
			t.Errorf("key %q: origin %q, default %q, doc %q, example %q; want all set", k.Name, k.Origin, k.Default, k.Doc, k.Example)
			continue
		}
		conf := "p:\n" + needs[k.Name] + indent(k.Example)
		if k.Name != "servers" && k.Name != "servers_from" && k.Name != "drain" {
			conf += "  servers:\n   - 10.0.0.1:11211:1\n"
		}
		f, err := Parse("example.yml", []byte(conf))
		if err != nil {
			t.Errorf("key %q: example %q: %v", k.Name, k.Example, err)
			continue
		}
		s := lookupSetting(k.Name)
		if got, def := s.value(f.Pools[0]), s.value(NewPool("p")); reflect.DeepEqual(got, def) {
			t.Errorf("key %q: example %q sets %v, the default", k.Name, k.Example, got)
		}
	}
	// distribution's values are package dist's catalogue: chash help config's
	// test checks them.
	for _, k := range Keys() {
		if k.Name == "hash" && len(k.Values) == 0 {
			t.Errorf("key %q lists no values", k.Name)
		}
	}
}

func indent(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		b.WriteString("  " + strings.TrimSuffix(line, "\n") + "\n")
	}
	return b.String()
}

// TestEveryFieldHasAKey checks that each field of Pool that a file sets is
// written by some key: a field added without a key fails here, not silently in
// Marshal.
func TestEveryFieldHasAKey(t *testing.T) {
	base := NewPool("p")
	typ := reflect.TypeFor[Pool]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		switch f.Name {
		case "Name", "Line":
			continue // the pool's mapping key and its place, not keys
		}
		if !f.IsExported() {
			continue
		}
		p := NewPool("p")
		v := reflect.ValueOf(p).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString("/x")
		case reflect.Int, reflect.Int64, reflect.Uint32:
			if v.CanInt() {
				v.SetInt(v.Int() + 1)
			} else {
				v.SetUint(v.Uint() + 1)
			}
		case reflect.Bool:
			v.SetBool(!v.Bool())
		case reflect.Pointer:
			v.Set(reflect.New(v.Type().Elem()))
		case reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		default:
			t.Fatalf("field %s: kind %v; teach this test to change it", f.Name, v.Kind())
		}
		changed := false
		for _, s := range settings {
			if !reflect.DeepEqual(s.value(p), s.value(base)) {
				changed = true
			}
		}
		if !changed {
			t.Errorf("Pool.%s: no key writes it; add its entry to settings (keys.go)", f.Name)
		}
	}
}
