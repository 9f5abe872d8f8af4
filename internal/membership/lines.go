package membership

import (
	"fmt"
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

// maxLine bounds a server line: host, port, weight and name.
const maxLine = 1024

// parseLine parses one server line, "host:port:weight [name]", already
// trimmed of surrounding white space. Its errors quote the line, or the
// beginning of one too long.
func parseLine(text string) (config.Server, error) {
	if len(text) > maxLine {
		// Quoted whole, a value of megabytes would make every error line
		// that large, once a revision on every proxy.
		return config.Server{}, fmt.Errorf("server %q... (%d bytes): longer than a server line of %d bytes", strings.ToValidUTF8(text[:64], "?"), len(text), maxLine)
	}
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
	s, err := config.ParseServer(text)
	if err != nil {
		return config.Server{}, fmt.Errorf("server %q: %w", text, err)
	}
	return s, nil
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
