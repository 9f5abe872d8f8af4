package membership

import (
	"slices"
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		in   string
		want URL
	}{
		{"etcd://127.0.0.1:2379/chash/cache/", URL{Scheme: "etcd", Endpoints: []string{"127.0.0.1:2379"}, Prefix: "/chash/cache/"}},
		{"etcd://10.0.0.1:2379,10.0.0.2:2379,etcd-3:12379/p/", URL{Scheme: "etcd", Endpoints: []string{"10.0.0.1:2379", "10.0.0.2:2379", "etcd-3:12379"}, Prefix: "/p/"}},
		{"etcd://[::1]:2379/chash/", URL{Scheme: "etcd", Endpoints: []string{"[::1]:2379"}, Prefix: "/chash/"}},
		{"etcd://localhost:2379/", URL{Scheme: "etcd", Endpoints: []string{"localhost:2379"}, Prefix: "/"}},
		{"etcd://h:1/a b/c:d/", URL{Scheme: "etcd", Endpoints: []string{"h:1"}, Prefix: "/a b/c:d/"}},
		{"file:/etc/chash/servers", URL{Scheme: "file", Path: "/etc/chash/servers"}},
		{"file:servers.txt", URL{Scheme: "file", Path: "servers.txt"}},
		{"file:///etc/chash/servers", URL{Scheme: "file", Path: "/etc/chash/servers"}},
		{"file:a b#c?d", URL{Scheme: "file", Path: "a b#c?d"}},
	}
	for _, tt := range tests {
		got, err := ParseURL(tt.in)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tt.in, err)
			continue
		}
		if got.Scheme != tt.want.Scheme || !slices.Equal(got.Endpoints, tt.want.Endpoints) || got.Prefix != tt.want.Prefix || got.Path != tt.want.Path {
			t.Errorf("ParseURL(%q) = %+v; want %+v", tt.in, *got, tt.want)
		}
		// String gives back a value that parses the same.
		again, err := ParseURL(got.String())
		if err != nil || again.String() != got.String() {
			t.Errorf("ParseURL(%q).String() = %q, which parses as %v, %v", tt.in, got.String(), again, err)
		}
	}
}

func TestParseURLErrors(t *testing.T) {
	tests := []struct {
		in   string
		want string // a substring of the error
	}{
		{"", `membership: servers_from "": want "etcd://HOST:PORT/PREFIX/" or "file:PATH"`},
		{"127.0.0.1:2379/chash/", `unknown scheme "127.0.0.1" (known: etcd, file)`},
		{"http://127.0.0.1:2379/chash/", `unknown scheme "http"`},
		{"etcds://127.0.0.1:2379/chash/", `unknown scheme "etcds"`},
		{"etcd:127.0.0.1:2379/chash/", `want "etcd://HOST:PORT/PREFIX/"`},
		{"etcd://127.0.0.1:2379", `no key prefix`},
		{"etcd:///chash/", `no etcd endpoint`},
		{"etcd://127.0.0.1/chash/", `endpoint "127.0.0.1": want HOST:PORT (etcd's client port is usually 2379)`},
		{"etcd://:2379/chash/", `endpoint ":2379": want HOST:PORT`},
		{"etcd://h:0/chash/", `endpoint "h:0": port "0" is not a number in 1..65535`},
		{"etcd://h:65536/chash/", `port "65536" is not a number in 1..65535`},
		{"etcd://h:x/chash/", `port "x" is not a number`},
		{"etcd://a:1,,b:2/chash/", `endpoint "": want HOST:PORT`},
		{"etcd://a:1,/chash/", `endpoint "": want HOST:PORT`},
		{"etcd://user:pw@h:2379/chash/", "credentials in the URL are not supported"},
		{"etcd://h:2379/chash/?x=1", "queries and fragments are not supported"},
		{"etcd://h:2379/chash/#x", "queries and fragments are not supported"},
		{"etcd://h:2379/chash", `key prefix "/chash" does not end in "/": it would also match "/chash2/..."`},
		{"file:", "no file name after file:"},
		{"file://", "a file URL names no host"},
		{"file://host/etc/servers", "a file URL names no host"},
		{"file:a\x00b", "NUL"},
	}
	for _, tt := range tests {
		got, err := ParseURL(tt.in)
		if err == nil {
			t.Errorf("ParseURL(%q) = %+v; want an error containing %q", tt.in, *got, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "membership: ") {
			t.Errorf("ParseURL(%q): %v; want an error containing %q", tt.in, err, tt.want)
		}
	}
}
