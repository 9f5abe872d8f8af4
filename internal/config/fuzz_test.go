package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chash-dev/chash/hashfn"
)

// FuzzParse checks that Parse never panics and that what it accepts is valid:
// every pool has servers with distinct names, positive weights and ports in
// range, a known hash and a distribution; and that the File, written out again,
// parses to the same File. (Package dist's FuzzBuild builds the pools' routers.)
// The seed corpus is
// testdata/*.yml, the examples and testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*.yml")
	more, _ := filepath.Glob("../../examples/*.yml")
	for _, path := range append(paths, more...) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.yml", data)
		if err != nil {
			if file != nil {
				t.Fatalf("Parse = %v, %v; want no File with an error", file, err)
			}
			if !strings.HasPrefix(err.Error(), "config: fuzz.yml") {
				t.Fatalf("Parse error %q does not name the file", err)
			}
			return
		}
		if len(file.Pools) == 0 {
			t.Fatal("Parse accepted a file with no pools")
		}
		for _, p := range file.Pools {
			checkPool(t, p)
		}
		out, err := Marshal(file)
		if err != nil {
			t.Fatalf("Marshal of a File that Parse accepted: %v", err)
		}
		again, err := Parse("fuzz.yml", out)
		if err != nil {
			t.Fatalf("Parse of the File written out: %v\n%s", err, out)
		}
		if a, b := stripLines(file), stripLines(again); !reflect.DeepEqual(a, b) {
			t.Fatalf("Parse of the File written out:\n got %+v\nwant %+v", b, a)
		}
	})
}

func checkPool(t *testing.T, p *Pool) {
	t.Helper()
	if p.Name == "" || p.Line < 1 {
		t.Fatalf("pool %q at line %d", p.Name, p.Line)
	}
	if (len(p.Servers) == 0) == (p.ServersFrom == "") {
		t.Fatalf("pool %q has %d servers and servers_from %q; want one of them", p.Name, len(p.Servers), p.ServersFrom)
	}
	if p.Hash != "" {
		if _, err := hashfn.Lookup(p.Hash); err != nil {
			t.Fatalf("pool %q: %v", p.Name, err)
		}
	}
	if p.Distribution == "" {
		t.Fatalf("pool %q: no distribution", p.Name)
	}
	if p.HashTag != "" && len(p.HashTag) != 2 {
		t.Fatalf("pool %q: hash_tag %q", p.Name, p.HashTag)
	}
	if p.Points < 0 || p.Backlog < 0 || p.RedisDB < 0 || p.ClientConnections < 0 ||
		p.ServerConnections < 1 || p.ServerFailureLimit < 0 || p.Timeout < 0 || p.ServerRetryTimeout < 0 {
		t.Fatalf("pool %q: a number out of range: %+v", p.Name, p)
	}
	if p.RedisAuth != "" && !p.Redis {
		t.Fatalf("pool %q: redis_auth without redis", p.Name)
	}
	if p.EjectErrors != nil && *p.EjectErrors && !p.AutoEjectHosts {
		t.Fatalf("pool %q: eject_errors without auto_eject_hosts", p.Name)
	}
	if p.ClientIdleTimeout != nil && *p.ClientIdleTimeout < 0 {
		t.Fatalf("pool %q: client_idle_timeout %v", p.Name, *p.ClientIdleTimeout)
	}
	if (p.TLSCertFile == "") != (p.TLSKeyFile == "") {
		t.Fatalf("pool %q: tls_cert_file %q, tls_key_file %q", p.Name, p.TLSCertFile, p.TLSKeyFile)
	}
	if p.Replicas < 1 || p.Warmup < 0 || p.ReadMissFailover && p.Replicas < 2 {
		t.Fatalf("pool %q: replicas %d, warmup %v, read_miss_failover %v", p.Name, p.Replicas, p.Warmup, p.ReadMissFailover)
	}
	names := make(map[string]bool)
	for _, s := range p.Servers {
		if s.Weight < 1 || s.Host == "" || s.Line < 1 {
			t.Fatalf("pool %q: server %+v", p.Name, s)
		}
		if s.Port == 0 && !strings.HasPrefix(s.Host, "/") || s.Port < 0 || s.Port > 65535 {
			t.Fatalf("pool %q: server %+v: port out of range", p.Name, s)
		}
		if names[s.Name()] {
			t.Fatalf("pool %q: two servers named %q", p.Name, s.Name())
		}
		names[s.Name()] = true
	}
	if len(p.Drain) > 0 && (len(p.Drain) >= len(p.Servers) || p.ServersFrom != "") {
		t.Fatalf("pool %q: drain %q leaves no server", p.Name, p.Drain)
	}
	for i, d := range p.Drain {
		if !names[d] || slices.Contains(p.Drain[:i], d) {
			t.Fatalf("pool %q: drain %q: %q is no server, or named twice", p.Name, p.Drain, d)
		}
	}
}

// stripLines returns copies of f's pools without line numbers.
func stripLines(f *File) []Pool {
	var pools []Pool
	for _, p := range f.Pools {
		q := *p
		q.Line, q.lines, q.file = 0, nil, ""
		q.Servers = slices.Clone(p.Servers)
		for i := range q.Servers {
			q.Servers[i].Line = 0
		}
		pools = append(pools, q)
	}
	return pools
}
