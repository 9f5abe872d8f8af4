package membership

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/chash-dev/chash/internal/config"
)

// parseFile parses a file of server lines (see the package comment); name is
// the file's name, for errors. A file of no servers gives an empty list.
func parseFile(name string, data []byte) ([]config.Server, error) {
	var servers []config.Server
	lines := make(map[string]int) // the line of each server name
	rest := string(data)          // one copy, which the servers' names share
	n := 0
	for rest != "" {
		n++
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		text := strings.TrimSpace(stripComment(line))
		if text == "" {
			continue
		}
		s, err := parseLine(text)
		if err != nil {
			return nil, fmt.Errorf("membership: %s:%d: %w", name, n, err)
		}
		s.Line = n
		if l, dup := lines[s.Name()]; dup {
			return nil, fmt.Errorf("membership: %s:%d: server %q: name %q is also the server's on line %d", name, n, text, s.Name(), l)
		}
		lines[s.Name()] = n
		servers = append(servers, s)
	}
	return servers, nil
}

// stripComment cuts line at a '#' that begins it or follows a space or a tab,
// YAML's rule for comments, so that "10.0.0.1:11211:1 a # rack 3" is the
// server "10.0.0.1:11211:1 a".
func stripComment(line string) string {
	for i := 0; i < len(line); i++ {
		if line[i] == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t') {
			return line[:i]
		}
	}
	return line
}

// parseLine parses one server line, "host:port:weight [name]", already
// trimmed of surrounding white space. Its errors quote the line.
func parseLine(text string) (config.Server, error) {
	if !utf8.ValidString(text) {
		return config.Server{}, fmt.Errorf("server %q: not valid UTF-8", text)
	}
	for _, r := range text {
		if r == '\n' {
			return config.Server{}, fmt.Errorf("server %q: more than one line; want one server", text)
		}
		if r < ' ' || r == 0x7f {
			return config.Server{}, fmt.Errorf("server %q: control character %q", text, r)
		}
	}
	if strings.HasPrefix(text, "- ") {
		// The parser would take "- 10.0.0.1" for a host.
		return config.Server{}, fmt.Errorf(`server %q: a line of servers has no "- " before it (it is not YAML)`, text)
	}
	s, err := parseServer(text)
	if err != nil {
		return config.Server{}, fmt.Errorf("server %q: %w", text, err)
	}
	return s, nil
}

// parseServer parses "host:port:weight [alias]" or "/path/to/socket:weight
// [alias]" as internal/config parses the lines of a servers: list.
//
// It is a copy of config's parser, kept until config exports it as
// config.ParseServer, the one parser of server lines; then this calls that.
func parseServer(line string) (config.Server, error) {
	var s config.Server
	rest := line
	if r, alias, ok := cutLast(rest, ' '); ok {
		if alias == "" {
			return s, errors.New("empty name after the space")
		}
		rest, s.Alias = r, alias
	}
	const format = `want "host:port:weight [name]" or "/path/to/socket:weight [name]"`
	addr, weight, ok := cutLast(rest, ':')
	if !ok {
		return s, errors.New(format)
	}
	w, ok := atoi(weight)
	if !ok || w == 0 {
		return s, fmt.Errorf("weight %q is not a positive integer", weight)
	}
	s.Weight = w
	if strings.HasPrefix(addr, "/") {
		if strings.Contains(addr, ":") {
			return s, errors.New(format)
		}
		s.Host = addr
		return s, nil
	}
	host, port, ok := cutLast(addr, ':')
	switch {
	case !ok:
		return s, errors.New(format)
	case host == "":
		return s, errors.New("empty host")
	}
	n, ok := atoi(port)
	switch {
	case !ok || n < 1 || n > 65535:
		return s, fmt.Errorf("port %q is not a number in 1..65535", port)
	case port[0] == '0':
		return s, fmt.Errorf("port %q has a leading zero", port)
	}
	s.Host, s.Port = host, n
	return s, nil
}

// atoi parses a decimal number of at most MaxInt32 written with digits only.
func atoi(s string) (int, bool) {
	if s == "" || len(s) > 10 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n <= math.MaxInt32
}

// cutLast slices s around the last instance of sep.
func cutLast(s string, sep byte) (before, after string, found bool) {
	if i := strings.LastIndexByte(s, sep); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

// sameServers reports whether two lists name the same servers in the same
// order, with the same weights; the lines they were read from do not matter.
func sameServers(a, b []config.Server) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Host != y.Host || x.Port != y.Port || x.Weight != y.Weight || x.Alias != y.Alias {
			return false
		}
	}
	return true
}
