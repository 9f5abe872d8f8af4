package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the analysis commands' testdata/*.golden files")

// golden runs chash with args and compares its standard output with
// testdata/NAME.golden (rewriting the file with -update). The command must
// succeed and print nothing on standard error. fix, if not nil, rewrites the
// output before the comparison (to hide a temporary directory, say).
func golden(t *testing.T, name string, stdin io.Reader, args []string, fix func(string) string) string {
	t.Helper()
	stdout, stderr, code := runChash(t, stdin, args...)
	if code != 0 || stderr != "" {
		t.Fatalf("chash %q = %d, stderr:\n%s", args, code, stderr)
	}
	got := stdout
	if fix != nil {
		got = fix(got)
	}
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return stdout
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("chash %q: output differs from %s (run go test -update if the change is right)\ngot:\n%s\nwant:\n%s", args, path, got, want)
	}
	return stdout
}

func TestAnalyzeGolden(t *testing.T) {
	keys, err := os.ReadFile("testdata/keys.txt")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		stdin string
		args  []string
	}{
		{"analyze-seed5", "", []string{"analyze", "--config", "testdata/seed5.yml"}},
		{"analyze-seed0-json", "", []string{"analyze", "--config", "testdata/seed0.yml", "--format", "json"}},
		{"analyze-seed5-csv", "", []string{"analyze", "--config", "testdata/seed5.yml", "--format", "csv"}},
		{"analyze-two-keys", "", []string{"analyze", "--config", "testdata/two.yml", "--pool", "a", "--keys", "testdata/keys.txt", "--sample", "10000"}},
		{"analyze-two-keys-csv", string(keys), []string{"analyze", "--config", "testdata/two.yml", "--pool", "a", "--keys", "-", "--format", "csv"}},
		{"analyze-modula", "", []string{"analyze", "--config", "testdata/modula.yml", "--sample", "20000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, tt.name, strings.NewReader(tt.stdin), tt.args, nil)
		})
	}
}

// analyzeJSON is the JSON of chash analyze, as a script would read it.
type analyzeJSON struct {
	Config       string  `json:"config"`
	Pool         string  `json:"pool"`
	Distribution string  `json:"distribution"`
	Method       string  `json:"method"`
	Total        uint64  `json:"total"`
	MaxOverMean  float64 `json:"max_over_mean"`
	MinOverMean  float64 `json:"min_over_mean"`
	StdOverMean  float64 `json:"std_over_mean"`
	Nodes        []struct {
		Name     string  `json:"name"`
		Weight   int     `json:"weight"`
		Share    float64 `json:"share"`
		Expected float64 `json:"expected"`
		Ratio    float64 `json:"ratio"`
		Count    uint64  `json:"count"`
		StdErr   float64 `json:"stderr"`
	} `json:"nodes"`
	Sample *analyzeJSON `json:"sample"`
	Keys   *analyzeJSON `json:"keys"`
}

// TestAnalyzeJSON reads analyze's JSON as a script would and checks its figures:
// exact counts of ring positions summing to 2^32, in the file's order, and a
// million sampled keys agreeing with them within four standard errors.
func TestAnalyzeJSON(t *testing.T) {
	stdout, stderr, code := runChash(t, nil, "analyze", "--config", "testdata/seed5.yml", "--sample", "1000000", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out analyzeJSON
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("JSON does not parse: %v\n%s", err, stdout)
	}
	if out.Pool != "articles" || out.Distribution != "seed" || out.Method != "arcs" || out.Total != 1<<32 || len(out.Nodes) != 5 {
		t.Fatalf("analyze JSON = %+v", out)
	}
	var sum uint64
	maxRatio := 0.0
	for i, n := range out.Nodes {
		if want := articleServers[i]; n.Name != want {
			t.Errorf("node %d is %q; want %q (the file's order)", i, n.Name, want)
		}
		sum += n.Count
		if n.Share != float64(n.Count)/(1<<32) || n.Expected != 0.2 || n.Ratio != n.Share/n.Expected {
			t.Errorf("node %s: share %v expected %v ratio %v count %d", n.Name, n.Share, n.Expected, n.Ratio, n.Count)
		}
		maxRatio = max(maxRatio, n.Ratio)
		s := out.Sample.Nodes[i]
		if d := math.Abs(s.Share - n.Share); d > 4*s.StdErr {
			t.Errorf("node %s: sampled %.5f, exact %.5f, stderr %.5f", n.Name, s.Share, n.Share, s.StdErr)
		}
	}
	if sum != 1<<32 {
		t.Errorf("counts sum to %d; want 2^32", sum)
	}
	if out.MaxOverMean != maxRatio {
		t.Errorf("max_over_mean %v; want the largest ratio %v", out.MaxOverMean, maxRatio)
	}
	if out.Sample.Method != "sample" || out.Sample.Total != 1_000_000 {
		t.Errorf("sample: method %q total %d", out.Sample.Method, out.Sample.Total)
	}
}

// TestAnalyzeKeysMatchRoute checks that analyze --keys counts what chash route
// prints for the same keys.
func TestAnalyzeKeysMatchRoute(t *testing.T) {
	keys, err := os.ReadFile("testdata/keys.txt")
	if err != nil {
		t.Fatal(err)
	}
	routed, _, code := runChash(t, bytes.NewReader(keys), "route", "--config", "testdata/two.yml", "--pool", "a")
	if code != 0 {
		t.Fatalf("route exit %d", code)
	}
	want := map[string]int{}
	for line := range strings.Lines(routed) {
		_, server, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		want[server]++
	}
	stdout, stderr, code := runChash(t, nil, "analyze", "--config", "testdata/two.yml", "--pool", "a", "--keys", "testdata/keys.txt", "--format", "json")
	if code != 0 {
		t.Fatalf("analyze exit %d: %s", code, stderr)
	}
	var out analyzeJSON
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Keys == nil || out.Keys.Total != 300 || out.Keys.Method != "keys" {
		t.Fatalf("keys = %+v; want 300 counted keys", out.Keys)
	}
	for _, n := range out.Keys.Nodes {
		if int(n.Count) != want[n.Name] {
			t.Errorf("%s: analyze counts %d keys; route sends %d", n.Name, n.Count, want[n.Name])
		}
	}
}

func TestAnalyzeCSVParses(t *testing.T) {
	stdout, _, code := runChash(t, nil, "analyze", "--config", "testdata/seed5.yml", "--format", "csv")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	rows, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 || strings.Join(rows[0], ",") != "name,weight,expected,share,ratio,count" {
		t.Errorf("CSV = %q", rows)
	}
}

func TestAnalyzePlots(t *testing.T) {
	dir := t.TempDir()
	bars, ring := filepath.Join(dir, "bars.png"), filepath.Join(dir, "ring.svg")
	_, stderr, code := runChash(t, nil, "analyze", "--config", "testdata/seed5.yml", "--plot", bars, "--ring-plot", ring)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkImage(t, bars)
	checkImage(t, ring)
	// Refused before the analysis is printed, as a usage error.
	stdout, stderr, code := runChash(t, nil, "analyze", "--config", "testdata/modula.yml", "--sample", "1000", "--ring-plot", ring)
	if code != 2 || !strings.Contains(stderr, "--ring-plot: distribution modula has no ring to draw") || stdout != "" {
		t.Errorf("--ring-plot of a modula pool = %d, %q, stdout %q; want 2, no ring and nothing printed", code, stderr, stdout)
	}
	stdout, stderr, code = runChash(t, nil, "analyze", "--config", "testdata/seed5.yml", "--plot", filepath.Join(dir, "none", "x.png"))
	if code != 2 || !strings.Contains(stderr, "none/x.png: no directory") || stdout != "" {
		t.Errorf("--plot into a missing directory = %d, %q, stdout %q; want 2, its name and nothing printed", code, stderr, stdout)
	}
	stdout, stderr, code = runChash(t, nil, "analyze", "--config", "testdata/seed5.yml", "--keys", os.DevNull)
	if code != 1 || !strings.Contains(stderr, os.DevNull+" has no keys") || stdout != "" {
		t.Errorf("--keys of an empty file = %d, %q, stdout %q; want 1 and that it has no keys", code, stderr, stdout)
	}
}

// checkImage checks that the file at path is a PNG that decodes or an SVG that
// parses, by its extension.
func checkImage(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(path, ".png") {
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if b := img.Bounds(); b.Dx() < 500 || b.Dy() < 300 {
			t.Errorf("%s is %v: too small to read", path, b)
		}
		return
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Errorf("%s: root element %q; want svg", path, root)
	}
}

func TestAnalysisUsage(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"analyze"}, 2, "chash analyze: --config is required"},
		{[]string{"analyze", "--config", "testdata/seed5.yml", "--format", "xml"}, 2, `--format "xml": want text, json or csv`},
		{[]string{"analyze", "--config", "testdata/seed5.yml", "--plot", "a.gif"}, 2, "unknown image format"},
		{[]string{"analyze", "--config", "testdata/seed5.yml", "--sample", "0"}, 2, "--sample 0: want 1 to 1000000000"},
		{[]string{"analyze", "--config", "testdata/seed5.yml", "--sample", "1000000001"}, 2, "--sample 1000000001: want 1 to 1000000000"},
		{[]string{"diff", "--add", "10.0.0.9:11211:1", "--sample", "99999999999", "testdata/seed5.yml"}, 2, "--sample 99999999999: want 1 to 1000000000"},
		{[]string{"analyze", "--config", "testdata/seed5.yml", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"analyze", "--config", "testdata/badweight.yml"}, 2, "chash analyze: testdata/badweight.yml:"},
		{[]string{"analyze", "--config", "testdata/two.yml"}, 2, "name one"},
		{[]string{"analyze", "--config", "testdata/seed5.yml", "--keys", "testdata/nope.txt"}, 1, "nope.txt"},
		{[]string{"diff", "testdata/seed5.yml"}, 2, "give a NEW configuration, or --add or --remove"},
		{[]string{"diff"}, 2, "no configuration given"},
		{[]string{"diff", "a", "b", "c"}, 2, "too many arguments"},
		{[]string{"diff", "--add", "10.0.0.1:11211", "testdata/seed5.yml"}, 2, `--add "10.0.0.1:11211": want "host:port:weight [name]"`},
		{[]string{"diff", "--add", "10.0.0.1:x:1", "testdata/seed5.yml"}, 2, `port "x"`},
		{[]string{"diff", "--add", "192.168.0.1:111:1", "testdata/seed5.yml"}, 2, `server "192.168.0.1:111" is already in the pool`},
		{[]string{"diff", "--remove", "nope", "testdata/seed5.yml"}, 2, `--remove "nope": no such server`},
		{[]string{"diff", "--remove", "192.168.0.1:111", "--remove", "192.168.0.1:111", "testdata/seed5.yml"}, 2, `--remove "192.168.0.1:111" is given twice`},
		{[]string{"diff", "--remove", "192.168.0.0:111", "--remove", "192.168.0.1:111", "--remove", "192.168.0.2:111",
			"--remove", "192.168.0.3:111", "--remove", "192.168.0.4:111", "testdata/seed5.yml"}, 2, "--remove: no server would be left"},
		{[]string{"diff", "--add", "10.0.0.9:11211:1", "--ranges", "-1", "testdata/seed5.yml"}, 2, "--ranges -1: want 0 or more"},
		{[]string{"demo", "--dir", ""}, 2, "--dir is empty"},
		{[]string{"sweep", "--nodes", "200000", "--points", "1"}, 2, "--nodes 200000, --churn-points 160: more than 16777216 points"},
		{[]string{"sweep", "--scheme", "nope"}, 2, `--scheme "nope": unknown (known: chash, groupcache, ketama, libketama, libmemcached, nginx, seed, spymemcached, stathat)`},
		{[]string{"sweep", "--scheme", "jump"}, 2, `--scheme "jump": distribution jump is not a ring of points to sweep (rings: chash,`},
		{[]string{"sweep", "--nodes", "0"}, 2, `--nodes "0": "0" is not a positive integer`},
		{[]string{"sweep", "--points", "9..3"}, 2, "ends before it starts"},
		{[]string{"sweep", "--trials", "0"}, 2, "--trials 0"},
		{[]string{"sweep", "--nodes", "100000", "--points", "1000"}, 2, "more than 16777216 points"},
		{[]string{"sweep", "--nodes", "4294967296", "--points", "4294967296", "--churn-points", "4294967296"}, 2, "more than 16777216 points"},
		{[]string{"demo", "--image", "gif"}, 2, `--image "gif": want png or svg`},
		{[]string{"demo", "--keys", "0"}, 2, "--keys 0"},
		{[]string{"demo", "x"}, 2, `unexpected argument "x"`},
	}
	for _, tt := range tests {
		stdout, stderr, code := runChash(t, nil, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("chash %q = %d, stderr %q; want %d and %q", tt.args, code, stderr, tt.code, tt.stderr)
		}
		if stdout != "" {
			t.Errorf("chash %q printed %q; want nothing", tt.args, stdout)
		}
	}
}

// TestNarrowHash checks analyze and diff on a ketama ring hashed with
// twemproxy's crc32, whose values 0..32767 all fall before the ring's first
// points: chash route sends every key to one server, and adding a server moves
// none, as the exact figures must say.
func TestNarrowHash(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "crc.yml")
	if err := os.WriteFile(cfg, []byte("p: {hash: crc32, distribution: ketama, servers: [10.0.0.1:11211:1, 10.0.0.2:11211:1, 10.0.0.3:11211:1]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var keys strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&keys, "user:%d\n", i)
	}
	routed, stderr, code := runChash(t, strings.NewReader(keys.String()), "route", "--config", cfg)
	if code != 0 {
		t.Fatalf("route = %d: %s", code, stderr)
	}
	if n := strings.Count(routed, "10.0.0.3:11211"); n != 3000 {
		t.Fatalf("route sent %d of 3000 keys to 10.0.0.3:11211; this test assumes all", n)
	}
	out, stderr, code := runChash(t, nil, "analyze", "--config", cfg, "--format", "json")
	if code != 0 {
		t.Fatalf("analyze = %d: %s", code, stderr)
	}
	var a struct {
		Method string `json:"method"`
		Total  uint64 `json:"total"`
		Nodes  []struct {
			Name  string  `json:"name"`
			Share float64 `json:"share"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if a.Method != "arcs" || a.Total != 32768 {
		t.Errorf("analyze: method %q over %d positions; want arcs over 32768", a.Method, a.Total)
	}
	for _, n := range a.Nodes {
		if want := map[bool]float64{true: 1}[n.Name == "10.0.0.3:11211"]; n.Share != want {
			t.Errorf("analyze: %s's share %g; want %g", n.Name, n.Share, want)
		}
	}
	text, _, _ := runChash(t, nil, "analyze", "--config", cfg)
	if !strings.Contains(text, "over the 32768 ring positions the hash reaches") {
		t.Errorf("analyze does not say the hash reaches 32768 positions:\n%s", text)
	}
	diff, stderr, code := runChash(t, nil, "diff", "--add", "10.0.0.4:11211:1", cfg)
	if code != 0 {
		t.Fatalf("diff = %d: %s", code, stderr)
	}
	if !strings.Contains(diff, "ketama           0.00%  exact") {
		t.Errorf("diff: want 0.00%% exact moves:\n%s", diff)
	}
}

// TestOneServer checks that a pool of one server is not "1 servers".
func TestOneServer(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "one.yml")
	if err := os.WriteFile(cfg, []byte("p: {distribution: chash, servers: [h:1:1]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runChash(t, nil, "analyze", "--config", cfg)
	if code != 0 || !strings.Contains(out, "distribution chash, 1 server\n") {
		t.Errorf("chash analyze of one server = %d, %s\n%s", code, stderr, out)
	}
	out, stderr, code = runChash(t, nil, "diff", "--add", "g:1:1", cfg)
	if code != 0 || !strings.Contains(out, "distribution chash, 1 server\n") {
		t.Errorf("chash diff of one server = %d, %s\n%s", code, stderr, out)
	}
}
