package membership

import (
	"strings"
	"testing"
)

// The seed corpora are in testdata/fuzz/FUZZNAME; crashers found by
// "go test -fuzz" land there too and stay as regression seeds.

// FuzzParseURL checks that ParseURL never panics, that what it accepts is
// well formed, and that String gives back a value that parses the same.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"etcd://127.0.0.1:2379/chash/cache/", "etcd://a:1,b:2/p/", "file:/etc/servers", "file:///x", "etcd://[::1]:2379/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseURL(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "membership: ") {
				t.Fatalf("ParseURL(%q): error %q lacks the package prefix", s, err)
			}
			return
		}
		switch u.Scheme {
		case "etcd":
			if len(u.Endpoints) == 0 || !strings.HasPrefix(u.Prefix, "/") || !strings.HasSuffix(u.Prefix, "/") {
				t.Fatalf("ParseURL(%q) = %+v: no endpoint, or a prefix not between slashes", s, *u)
			}
		case "file":
			if u.Path == "" {
				t.Fatalf("ParseURL(%q) = %+v: no path", s, *u)
			}
		default:
			t.Fatalf("ParseURL(%q) = %+v: scheme %q", s, *u, u.Scheme)
		}
		again, err := ParseURL(u.String())
		if err != nil || again.String() != u.String() || again.Prefix != u.Prefix || again.Path != u.Path {
			t.Fatalf("ParseURL(%q).String() = %q, which parses as %+v, %v", s, u.String(), again, err)
		}
	})
}

// FuzzParseFile checks that parseFile never panics, that a list it accepts
// has distinct names and numbered lines, and that the list written back as
// a file parses to the same servers.
func FuzzParseFile(f *testing.F) {
	f.Add([]byte("10.0.0.1:11211:1 a\n# c\n\n10.0.0.2:11211:2 b # x\n"))
	f.Add([]byte("/tmp/mc.sock:1\r\n[::1]:1:1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		servers, err := parseFile("f", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "membership: f:") {
				t.Fatalf("parseFile(%q): error %q names no file and line", data, err)
			}
			return
		}
		seen := map[string]bool{}
		var b strings.Builder
		for _, s := range servers {
			if seen[s.Name()] || s.Line < 1 || s.Weight < 1 {
				t.Fatalf("parseFile(%q) = %+v: a name twice, or no line or weight", data, servers)
			}
			seen[s.Name()] = true
			b.WriteString(s.String() + "\n")
		}
		again, err := parseFile("f", []byte(b.String()))
		if err != nil || !sameServers(again, servers) {
			t.Fatalf("parseFile(%q) = %+v, written back as %q, parses as %+v, %v", data, servers, b.String(), again, err)
		}
	})
}
