package membership

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/config"
)

// names returns the servers' names and weights, "name/weight", for messages.
func names(servers []config.Server) string {
	s := make([]string, len(servers))
	for i, srv := range servers {
		s[i] = fmt.Sprintf("%s/%d", srv.Name(), srv.Weight)
	}
	return strings.Join(s, " ")
}

func TestParseFile(t *testing.T) {
	tests := []struct {
		in    string
		want  string // names() of the servers
		lines []int
	}{
		{"", "", nil},
		{"\n\n   \n# only comments\n\t# indented\n", "", nil},
		{"10.0.0.1:11211:1\n10.0.0.2:11211:2 cache-2\n", "10.0.0.1:11211/1 cache-2/2", []int{1, 2}},
		{"# head\n\n  10.0.0.1:11211:1 a   # rack 3\n10.0.0.2:11211:1 b\t# tab before\n", "a/1 b/1", []int{3, 4}},
		{"10.0.0.1:11211:1 a#b\n", "a#b/1", []int{1}},                                                  // '#' inside a name is kept
		{"10.0.0.1:11211:1\r\n10.0.0.2:11211:1\r\n", "10.0.0.1:11211/1 10.0.0.2:11211/1", []int{1, 2}}, // CRLF
		{"10.0.0.1:11211:1", "10.0.0.1:11211/1", []int{1}},                                             // no final newline
		{"/var/run/mc.sock:3 local\n", "local/3", []int{1}},
		{"[::1]:11211:1\n", "[::1]:11211/1", []int{1}},
		{"a:1:1 x\nb:1:1 y\n", "x/1 y/1", []int{1, 2}},
		{"a:1:1\na:1:1 other\n", "a:1/1 other/1", []int{1, 2}}, // same address, other name
	}
	for _, tt := range tests {
		got, err := parseFile("servers", []byte(tt.in))
		if err != nil {
			t.Errorf("parseFile(%q): %v", tt.in, err)
			continue
		}
		if names(got) != tt.want {
			t.Errorf("parseFile(%q) = %q; want %q", tt.in, names(got), tt.want)
		}
		for i, s := range got {
			if s.Line != tt.lines[i] {
				t.Errorf("parseFile(%q): server %d on line %d; want %d", tt.in, i, s.Line, tt.lines[i])
			}
		}
	}
}

func TestParseFileErrors(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"10.0.0.1:11211:1\nnonsense\n", `membership: servers:2: server "nonsense": want "host:port:weight [name]"`},
		{"10.0.0.1:11211:x\n", `membership: servers:1: server "10.0.0.1:11211:x": weight "x" is not a positive integer`},
		{"10.0.0.1:11211:0\n", `weight "0" is not a positive integer`},
		{"10.0.0.1:99999:1\n", `port "99999" is not a number in 1..65535`},
		{"10.0.0.1:011211:1\n", `port "011211" has a leading zero`},
		{":11211:1\n", `empty host`},
		{"- 10.0.0.1:11211:1\n", `server "- 10.0.0.1:11211:1": a line of servers has no "- " before it (it is not YAML)`},
		{"- 10.0.0.1:11211:1 a\n", `server "- 10.0.0.1:11211:1 a": a line of servers has no "- "`},
		{"a:1:1 x\n\n# c\nb:1:1 x\n", `membership: servers:4: server "b:1:1 x": name "x" is also the server's on line 1`},
		{"a:1:1\na:1:1\n", `servers:2: server "a:1:1": name "a:1" is also the server's on line 1`},
		{"a:1:1\tx\n", `control character '\t'`},
		{"a:1:1 \x00\n", `control character '\x00'`},
		{"a:1:1 \xff\n", `not valid UTF-8`},
		{"10.0.0.1:11211:1 " + strings.Repeat("garbage ", 40000) + "\n",
			`server "10.0.0.1:11211:1 garbage garbage garbage garbage garbage garbage"... (320016 bytes): longer than a server line of 1024 bytes`},
	}
	for _, tt := range tests {
		got, err := parseFile("servers", []byte(tt.in))
		if err == nil {
			t.Errorf("parseFile(%q) = %q; want an error containing %q", tt.in, names(got), tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parseFile(%q): %v; want an error containing %q", tt.in, err, tt.want)
		}
	}
}

func TestStripComment(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"#", ""},
		{"a # b", "a "},
		{"a\t#b", "a\t"},
		{"a#b", "a#b"},
		{"a#b #c", "a#b "},
		{"  # x", "  "},
	}
	for _, tt := range tests {
		if got := stripComment(tt.in); got != tt.want {
			t.Errorf("stripComment(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}
