package membership

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// A URL is a parsed servers_from value: where a pool's server list lives.
type URL struct {
	// Scheme is "etcd" or "file".
	Scheme string
	// Endpoints are the etcd members' client addresses, "host:port" each, in
	// the order given; empty for a file.
	Endpoints []string
	// Prefix is the etcd key prefix, the URL's path with its leading and
	// trailing "/"; empty for a file.
	Prefix string
	// Path is the file's name as given (relative names are relative to the
	// working directory); empty for etcd.
	Path string
}

// String returns the URL as ParseURL reads it: "etcd://HOST:PORT,.../PREFIX/"
// or "file:PATH".
func (u *URL) String() string {
	if u.Scheme == "file" {
		if strings.HasPrefix(u.Path, "//") {
			return "file://" + u.Path // "file://x" would read as the host x
		}
		return "file:" + u.Path
	}
	return "etcd://" + strings.Join(u.Endpoints, ",") + u.Prefix
}

// ParseURL parses a servers_from value, one of
//
//	etcd://HOST:PORT[,HOST:PORT...]/PREFIX/
//	file:PATH
//
// For etcd, the path, its leading "/" included, is the key prefix whose keys
// hold the servers: etcd://127.0.0.1:2379/chash/cache/ reads the keys that
// begin with "/chash/cache/". The prefix must end in "/", so that
// "/chash/cache/" never also matches "/chash/cache2/...". Every endpoint needs
// its port (etcd's client port is usually 2379). Credentials, queries and
// fragments are refused: chash speaks to etcd in plain text, without
// authentication.
//
// For a file, PATH is the rest of the value, taken literally; "file:///abs"
// is read as the path "/abs", as in a file URL.
//
// Errors start with "membership: " and quote the value.
func ParseURL(s string) (*URL, error) {
	bad := func(format string, args ...any) (*URL, error) {
		return nil, fmt.Errorf("membership: servers_from %q: %s", s, fmt.Sprintf(format, args...))
	}
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok {
		return bad(`want "etcd://HOST:PORT/PREFIX/" or "file:PATH"`)
	}
	switch scheme {
	case "file":
		path := rest
		if p, ok := strings.CutPrefix(rest, "//"); ok {
			if !strings.HasPrefix(p, "/") {
				return bad(`a file URL names no host: write "file:PATH" or "file:///ABSOLUTE/PATH"`)
			}
			path = p
		}
		if path == "" {
			return bad("no file name after file:")
		}
		if strings.ContainsRune(path, 0) {
			return bad("the file name has a NUL byte")
		}
		return &URL{Scheme: "file", Path: path}, nil
	case "etcd":
	default:
		return bad("unknown scheme %q (known: etcd, file)", scheme)
	}

	rest, ok = strings.CutPrefix(rest, "//")
	if !ok {
		return bad(`want "etcd://HOST:PORT/PREFIX/"`)
	}
	if strings.ContainsAny(rest, "?#") {
		return bad("queries and fragments are not supported")
	}
	hosts, prefix, ok := strings.Cut(rest, "/")
	if !ok {
		return bad(`no key prefix: want "etcd://HOST:PORT/PREFIX/"`)
	}
	prefix = "/" + prefix
	if strings.Contains(hosts, "@") {
		return bad("credentials in the URL are not supported")
	}
	if hosts == "" {
		return bad("no etcd endpoint: want HOST:PORT after etcd://")
	}
	u := &URL{Scheme: "etcd", Prefix: prefix}
	for _, h := range strings.Split(hosts, ",") {
		if err := checkEndpoint(h); err != nil {
			return bad("%v", err)
		}
		u.Endpoints = append(u.Endpoints, h)
	}
	if err := checkPrefix(prefix); err != nil {
		return bad("%v", err)
	}
	return u, nil
}

// checkEndpoint accepts "host:port" with a port in 1..65535.
func checkEndpoint(h string) error {
	host, port, err := net.SplitHostPort(h)
	if err != nil || host == "" {
		return fmt.Errorf("endpoint %q: want HOST:PORT (etcd's client port is usually 2379)", h)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("endpoint %q: port %q is not a number in 1..65535", h, port)
	}
	return nil
}

// checkPrefix accepts an etcd key prefix that begins and ends with "/"; "/"
// alone, all of a dedicated etcd's keys, is one.
func checkPrefix(p string) error {
	switch {
	case p == "":
		return errors.New("no key prefix")
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("key prefix %q does not begin with \"/\"", p)
	case !strings.HasSuffix(p, "/"):
		return fmt.Errorf("key prefix %q does not end in \"/\": it would also match %q", p, p+"2/...")
	}
	return nil
}
