package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

var seedKeys = []string{"127.0.0.1:1111", "221.226.0.1:2222", "10.211.0.1:3333"}

// TestRouteSeed checks the seed articles' printed answers, with keys given as
// arguments and on standard input.
func TestRouteSeed(t *testing.T) {
	tests := []struct {
		config string
		want   string
	}{
		{"testdata/seed0.yml", "127.0.0.1:1111\t192.168.0.0:111\n221.226.0.1:2222\t192.168.0.4:111\n10.211.0.1:3333\t192.168.0.4:111\n"},
		{"testdata/seed5.yml", "127.0.0.1:1111\t192.168.0.0:111\n221.226.0.1:2222\t192.168.0.0:111\n10.211.0.1:3333\t192.168.0.2:111\n"},
		{"../../examples/seed.yml", "127.0.0.1:1111\t192.168.0.0:111\n221.226.0.1:2222\t192.168.0.0:111\n10.211.0.1:3333\t192.168.0.2:111\n"},
	}
	for _, tt := range tests {
		args := append([]string{"route", "--config", tt.config}, seedKeys...)
		stdout, stderr, code := runChash(t, nil, args...)
		if code != 0 || stdout != tt.want || stderr != "" {
			t.Errorf("chash %q = %d\n%s%s\nwant 0\n%s", args, code, stdout, stderr, tt.want)
		}
		in := strings.Join(seedKeys, "\n") + "\n"
		stdout, stderr, code = runChash(t, strings.NewReader(in), "route", "--config", tt.config, "--pool", "articles")
		if code != 0 || stdout != tt.want || stderr != "" {
			t.Errorf("chash route --config %s < keys = %d\n%s%s\nwant 0\n%s", tt.config, code, stdout, stderr, tt.want)
		}
	}
}

// TestRouteStdin checks how route splits standard input into keys.
func TestRouteStdin(t *testing.T) {
	long := strings.Repeat("k", 200_000)
	tests := []struct {
		name string
		in   string
		keys []string
	}{
		{"empty", "", nil},
		{"one line", "a\n", []string{"a"}},
		{"no final newline", "a\nb", []string{"a", "b"}},
		{"crlf", "a\r\nb\r\n", []string{"a", "b"}},
		{"lone cr is kept", "a\rb\nc\r", []string{"a\rb", "c\r"}},
		{"empty lines are keys", "\n\na\n", []string{"", "", "a"}},
		{"spaces are kept", " a \t\n", []string{" a \t"}},
		{"long lines", long + "\n" + long + "x\r\nshort\n", []string{long, long + "x", "short"}},
		{"long last line", "a\n" + long, []string{"a", long}},
	}
	for _, tt := range tests {
		for _, split := range []bool{false, true} {
			var in io.Reader = strings.NewReader(tt.in)
			if split {
				in = iotest.OneByteReader(in)
			}
			stdout, stderr, code := runChash(t, in, "route", "--config", "testdata/two.yml", "--pool", "b")
			var want strings.Builder
			for _, k := range tt.keys {
				fmt.Fprintf(&want, "%s\t10.0.1.1:11211\n", k)
			}
			if code != 0 || stderr != "" || stdout != want.String() {
				t.Errorf("%s (one byte at a time: %v): exit status %d, stderr %q, %d bytes of output; want 0, none and %d bytes",
					tt.name, split, code, stderr, len(stdout), want.Len())
			}
		}
	}
}

// TestRouteArgsStdin checks that keys as arguments and on standard input go to
// the same servers, and that the pool's hash_tag applies.
func TestRouteArgsStdin(t *testing.T) {
	var keys []string
	for i := range 200 {
		keys = append(keys, fmt.Sprintf("user:%d", i))
	}
	args, _, code := runChash(t, nil, append([]string{"route", "--config", "testdata/two.yml", "--pool", "a"}, keys...)...)
	if code != 0 {
		t.Fatalf("exit status %d", code)
	}
	stdin, _, code := runChash(t, strings.NewReader(strings.Join(keys, "\n")), "route", "--config", "testdata/two.yml", "--pool", "a")
	if code != 0 {
		t.Fatalf("exit status %d", code)
	}
	if args != stdin {
		t.Errorf("keys as arguments:\n%s\nkeys on standard input:\n%s", args, stdin)
	}
	seen := map[string]bool{}
	for line := range strings.Lines(args) {
		key, server, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		seen[server] = true
		tagged, _, code := runChash(t, nil, "route", "--config", "testdata/two.yml", "--pool", "a", "{"+key+"}:mail")
		if want := fmt.Sprintf("{%s}:mail\t%s\n", key, server); code != 0 || tagged != want {
			t.Fatalf("route {%s}:mail = %q; want %q", key, tagged, want)
		}
	}
	if len(seen) != 3 || !seen["one"] || !seen["two"] || !seen["three"] {
		t.Errorf("200 keys went to %v; want the aliases one, two and three", seen)
	}
}

func TestRouteExample(t *testing.T) {
	stdout, stderr, code := runChash(t, nil, "route", "--config", "../../examples/nutcracker.yml", "--pool", "cache", "user:1", "user:2", "{user:3}:name", "{user:3}:mail")
	if code != 0 || stderr != "" {
		t.Fatalf("exit status %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("output %q; want 4 lines", stdout)
	}
	_, s2, _ := strings.Cut(lines[2], "\t")
	_, s3, _ := strings.Cut(lines[3], "\t")
	if s2 != s3 {
		t.Errorf("{user:3}:name and {user:3}:mail go to %q and %q; want one server", s2, s3)
	}
	stdout, _, code = runChash(t, nil, "route", "--config", "../../examples/nutcracker.yml", "--pool", "seed", "127.0.0.1:1111")
	if code != 0 || !strings.HasPrefix(stdout, "127.0.0.1:1111\t192.168.0.") {
		t.Errorf("route --pool seed = %d, %q", code, stdout)
	}
}

// TestRouteBadConfig checks that each kind of bad configuration gets one line on
// standard error naming the file, line and pool, and exit status 2.
func TestRouteBadConfig(t *testing.T) {
	tests := []struct {
		name, conf string
		line       int
		want       string
	}{
		{"unknown hash", "p:\n  hash: sha1\n  distribution: chash\n  servers: [a:1:1]\n", 2, `hash "sha1" is unknown`},
		{"unknown distribution", "p:\n  distribution: maglev2\n  servers: [a:1:1]\n", 2, `distribution "maglev2" is unknown`},
		{"no servers", "p:\n  distribution: chash\n  servers: []\n", 3, "no servers"},
		{"no servers key", "p:\n  distribution: chash\n", 1, "no servers"},
		{"malformed server", "p:\n  distribution: chash\n  servers:\n   - a:1:1\n   - 10.0.0.1\n", 5, `server "10.0.0.1": want "host:port:weight [name]"`},
		{"bad weight", "p:\n  distribution: chash\n  servers:\n   - a:1:0\n", 4, `server "a:1:0": weight "0" is not a positive integer`},
		{"unknown key", "p:\n  distribution: chash\n  weight: 3\n  servers: [a:1:1]\n", 3, `unknown key "weight"`},
		{"too many points", "p:\n  distribution: chash\n  points: 1000000\n  servers: [a:1:10]\n", 3, "more than"},
		{"random", "p:\n  distribution: random\n  servers: [a:1:1, b:1:1]\n", 2, "distribution random cannot be routed offline"},
		{"label of another distribution", "p:\n  label: \"{name}{i}\"\n  servers: [a:1:1]\n", 2, "label is only used by distribution seed, not ketama"},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".yml")
		if err := os.WriteFile(path, []byte(tt.conf), 0o666); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := runChash(t, nil, "route", "--config", path, "k")
		prefix := fmt.Sprintf("chash route: %s:%d: pool \"p\": ", path, tt.line)
		if code != 2 || stdout != "" || !strings.HasPrefix(stderr, prefix) || !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s: exit status %d, stdout %q, stderr\n%s\nwant 2, none and one line starting\n%s\nand saying\n%s", tt.name, code, stdout, stderr, prefix, tt.want)
		}
	}
}

// TestRouteDashKey checks that "--" ends the flags.
func TestRouteDashKey(t *testing.T) {
	stdout, stderr, code := runChash(t, nil, "route", "--config", "testdata/two.yml", "--pool", "b", "--", "-k", "--pool")
	if want := "-k\t10.0.1.1:11211\n--pool\t10.0.1.1:11211\n"; code != 0 || stdout != want {
		t.Errorf("route -- -k --pool = %d, %q, %q; want 0, %q", code, stdout, stderr, want)
	}
}

func TestRouteErrors(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"bad weight", []string{"--config", "testdata/badweight.yml", "k"},
			`chash route: testdata/badweight.yml:7: pool "alpha": server "10.0.0.1:11211:x": weight "x" is not a positive integer` + "\n"},
		{"missing file", []string{"--config", "testdata/none.yml", "k"},
			"chash route: open testdata/none.yml: no such file or directory\n"},
		{"pool needed", []string{"--config", "testdata/two.yml", "k"},
			"chash route: testdata/two.yml has 2 pools (a, b): choose one with --pool\n"},
		{"unknown pool", []string{"--config", "testdata/two.yml", "--pool", "c", "k"},
			`chash route: testdata/two.yml: no pool "c" (pools: "a", "b")` + "\n"},
		{"not YAML", []string{"--config", "route.go", "k"},
			"chash route: route.go:"},
	}
	for _, tt := range tests {
		stdout, stderr, code := runChash(t, nil, append([]string{"route"}, tt.args...)...)
		if code != 2 || stdout != "" || !strings.HasPrefix(stderr, tt.stderr) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s: exit status %d, stdout %q, stderr\n%s\nwant 2, none and one line starting\n%s", tt.name, code, stdout, stderr, tt.stderr)
		}
	}
}

type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, fmt.Errorf("disk full") }

func TestRouteWriteError(t *testing.T) {
	var stderr strings.Builder
	code := run([]string{"route", "--config", "testdata/seed0.yml", "k"}, strings.NewReader(""), errWriter{}, &stderr)
	if code != 1 || stderr.String() != "chash route: disk full\n" {
		t.Errorf("route to a failing writer: exit status %d, stderr %q; want 1 and the error", code, stderr.String())
	}
	stderr.Reset()
	code = run([]string{"route", "--config", "testdata/seed0.yml"}, strings.NewReader("a\nb\n"), errWriter{}, &stderr)
	if code != 1 || stderr.String() != "chash route: disk full\n" {
		t.Errorf("route stdin to a failing writer: exit status %d, stderr %q; want 1 and the error", code, stderr.String())
	}
}

func TestRouteReadError(t *testing.T) {
	in := io.MultiReader(strings.NewReader("a\n"), iotest.ErrReader(fmt.Errorf("bad disk")))
	stdout, stderr, code := runChash(t, in, "route", "--config", "testdata/seed0.yml")
	if code != 1 || stderr != "chash route: bad disk\n" || stdout != "a\t192.168.0.3:111\n" {
		t.Errorf("route with a failing stdin: exit status %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestRouteBounded checks that with distribution: bounded the keys read are the
// load: however skewed the keys, after m keys no server holds more than
// ceil(1.25·m/3).
func TestRouteBounded(t *testing.T) {
	for name, keys := range map[string][]string{
		"one hot key": slices.Repeat([]string{"hot"}, 300),
		"distinct": func() (ks []string) {
			for i := range 300 {
				ks = append(ks, fmt.Sprint("user:", i))
			}
			return ks
		}(),
	} {
		stdout, stderr, code := runChash(t, strings.NewReader(strings.Join(keys, "\n")+"\n"), "route", "--config", "testdata/bounded.yml")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		load := map[string]int{}
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		if len(lines) != len(keys) {
			t.Fatalf("%s: %d lines; want %d", name, len(lines), len(keys))
		}
		for m, line := range lines {
			_, server, _ := strings.Cut(line, "\t")
			load[server]++
			if bound := (5*(m+1) + 11) / 12; load[server] > bound { // ceil(1.25(m+1)/3)
				t.Fatalf("%s: after %d keys %s holds %d; bound %d", name, m+1, server, load[server], bound)
			}
		}
		if name == "one hot key" && len(load) != 3 {
			t.Errorf("%s: spread over %d servers; want 3", name, len(load))
		}
	}
}

// TestDrainedOwnNoKeys: the servers of a pool's drain: list own no keys in
// route, analyze and diff, as in the proxy, which routes over the others;
// these commands routed to them as if the list were not there.
func TestDrainedOwnNoKeys(t *testing.T) {
	dir := t.TempDir()
	write := func(name, drain string, servers ...string) string {
		var b strings.Builder
		b.WriteString("c:\n  listen: 127.0.0.1:22121\n  distribution: ketama\n" + drain + "  servers:\n")
		for _, s := range servers {
			b.WriteString("   - " + s + "\n")
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	s1, s2, s3 := "10.0.0.1:11211:1 mc1", "10.0.0.2:11211:1 mc2", "10.0.0.3:11211:1 mc3"
	all := write("all.yml", "", s1, s2, s3)
	drained := write("drained.yml", "  drain: [mc2]\n", s1, s2, s3)
	without := write("without.yml", "", s1, s3)

	var keys strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&keys, "key:%d\n", i)
	}
	route := func(config string) string {
		out, stderr, code := runChash(t, strings.NewReader(keys.String()), "route", "--config", config)
		if code != 0 {
			t.Fatalf("route --config %s: exit %d: %s", config, code, stderr)
		}
		return out
	}
	if got, want := route(drained), route(without); got != want {
		t.Errorf("route over a pool draining mc2 differs from route over the pool without it")
	}
	if strings.Contains(route(drained), "\tmc2\n") {
		t.Errorf("route sends keys to mc2, drained")
	}

	stdout, stderr, code := runChash(t, nil, "analyze", "--config", drained, "--format", "json")
	if code != 0 {
		t.Fatalf("analyze: exit %d: %s", code, stderr)
	}
	var a struct {
		Drained []string `json:"drained"`
		Nodes   []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(stdout), &a); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Drained, []string{"mc2"}) || len(a.Nodes) != 2 || slices.ContainsFunc(a.Nodes, func(n struct{ Name string }) bool { return n.Name == "mc2" }) {
		t.Errorf("analyze of a pool draining mc2: drained %q, servers %v; want drained [mc2] and mc1, mc3", a.Drained, a.Nodes)
	}
	stdout, _, _ = runChash(t, nil, "analyze", "--config", drained)
	if !strings.Contains(stdout, "2 servers (drained, owning no keys: mc2)") {
		t.Errorf("analyze's text does not say mc2 is drained:\n%s", stdout)
	}

	// Draining mc2 moves its whole share, and only its keys.
	stdout, stderr, code = runChash(t, nil, "analyze", "--config", all, "--format", "json")
	if code != 0 {
		t.Fatalf("analyze: exit %d: %s", code, stderr)
	}
	var before analyzeJSON
	if err := json.Unmarshal([]byte(stdout), &before); err != nil {
		t.Fatal(err)
	}
	var share float64
	for _, n := range before.Nodes {
		if n.Name == "mc2" {
			share = n.Share
		}
	}
	stdout, stderr, code = runChash(t, nil, "diff", "--format", "json", all, drained)
	if code != 0 {
		t.Fatalf("diff: exit %d: %s", code, stderr)
	}
	var d diffJSON
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatal(err)
	}
	if share == 0 || d.Moved != share {
		t.Errorf("diff of draining mc2 moves %v of the keys; want mc2's share, %v", d.Moved, share)
	}
	for _, f := range d.Flows {
		if f.From != "mc2" {
			t.Errorf("diff of draining mc2 has a flow %+v", f)
		}
	}

	every := write("every.yml", "  drain: [mc1, mc3]\n", s1, s3)
	_, stderr, code = runChash(t, nil, "route", "--config", every, "k")
	if code != 2 || !strings.Contains(stderr, "drain names every server") {
		t.Errorf("route over a pool whose servers are all drained: exit %d, %q; want 2 and an error naming drain", code, stderr)
	}
}
