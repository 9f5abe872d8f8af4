package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/dist"
)

// TestCompare runs a small comparison and checks each row's exact figures
// where the algorithm has them, and the supports columns.
func TestCompare(t *testing.T) {
	png := filepath.Join(t.TempDir(), "cmp.png")
	out, errOut, code := runChash(t, nil, "compare", "--nodes", "10", "--keys", "5000", "--plot", png)
	if code != 0 {
		t.Fatalf("compare: exit %d, stderr %q", code, errOut)
	}
	rows := map[string][]string{}
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) >= 11 && f[0] != "distribution" {
			rows[f[0]] = f
		}
	}
	for _, e := range dist.All() {
		if rows[e.Name] == nil {
			t.Errorf("compare output has no row for %s:\n%s", e.Name, out)
		}
	}
	if !strings.Contains(out, "\nrandom: each request goes to a server chosen at random") {
		t.Errorf("compare output does not say why random has no figures:\n%s", out)
	}
	num := func(name string, col int) float64 {
		t.Helper()
		v, err := strconv.ParseFloat(strings.TrimSuffix(rows[name][col], "×"), 64)
		if err != nil {
			t.Fatalf("%s column %d: %q: %v", name, col, rows[name][col], err)
		}
		return v
	}
	if got := num("maglev", 3); got > 1.001 { // 6554 or 6553 entries of 65537 each
		t.Errorf("maglev max/mean %v; want 1.000", got)
	}
	if got := num("balanced", 3); got > 1.05 {
		t.Errorf("balanced max/mean %v; want at most 1.05", got)
	}
	if got := num("bounded", 3); got > 1.25 {
		t.Errorf("bounded max/mean %v; want at most 1.25", got)
	}
	for _, name := range []string{"chash", "balanced", "ketama", "nginx"} { // exact ring diffs
		if got := num(name, 6); got != 1 {
			t.Errorf("%s remove moves %v×; want exactly 1× for a ring", name, got)
		}
	}
	if got := strings.Join(rows["jump"][7:11], " "); got != "no last only no" {
		t.Errorf("jump supports %q; want weights no, removal last only, replicas no", got)
	}
	if fi, err := os.Stat(png); err != nil || fi.Size() == 0 {
		t.Errorf("--plot wrote no image: %v", err)
	}
}

func TestCompareWeights(t *testing.T) {
	out, errOut, code := runChash(t, nil, "compare", "--nodes", "6", "--keys", "2000", "--weights", "1,3", "--algorithms", "jump,rendezvous")
	if code != 0 {
		t.Fatalf("compare: exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, "\njump: node") || strings.Contains(out, "jump: jump:") || !strings.Contains(out, "rendezvous") {
		t.Errorf("compare with weights:\n%s", out)
	}
}

func TestCompareUsage(t *testing.T) {
	for _, args := range [][]string{
		{"compare", "--nodes", "1"},
		{"compare", "--weights", "1,x"},
		{"compare", "--weights", "0"},
		{"compare", "--algorithms", "nope"},
		{"compare", "--format", "xml"},
		{"compare", "--keys", "0"},
		{"compare", "--plot", "x.gif"},
		{"compare", "extra"},
	} {
		if _, _, code := runChash(t, nil, args...); code != 2 {
			t.Errorf("chash %q: exit %d; want 2", args, code)
		}
	}
	if _, _, code := runChash(t, nil, "compare", "--keyfile", "/nonexistent/keys"); code != 1 {
		t.Errorf("compare with a missing key file: exit %d; want 1", code)
	}
}

// TestCompareFormats checks --format json and csv: the same rows, random's
// with only its capabilities and why it has no figures, and the movement
// under chash diff's names.
func TestCompareFormats(t *testing.T) {
	args := []string{"compare", "--nodes", "8", "--keys", "3000", "--algorithms", "chash,random,jump,modula"}
	out, errOut, code := runChash(t, nil, append(args, "--format", "json")...)
	if code != 0 {
		t.Fatalf("compare --format json: exit %d, stderr %q", code, errOut)
	}
	var got struct {
		Nodes, Keys   int
		Weights       []int
		Distributions []map[string]any
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("JSON does not parse: %v\n%s", err, out)
	}
	if got.Nodes != 8 || got.Keys != 3000 || len(got.Weights) != 1 || len(got.Distributions) != 4 {
		t.Fatalf("compare JSON = %+v", got)
	}
	chash, random, jump := got.Distributions[0], got.Distributions[1], got.Distributions[2]
	add, _ := chash["add"].(map[string]any)
	if chash["name"] != "chash" || chash["method"] != "arcs" || add["moved"] == nil || add["ideal"] == nil || add["modulo_moved"] == nil {
		t.Errorf("chash's row %v; want arcs and add's moved, ideal and modulo_moved", chash)
	}
	if random["error"] == nil || random["max_over_mean"] != nil || random["weights"] != false {
		t.Errorf("random's row %v; want an error, capabilities and no figures", random)
	}
	if jump["removal"] != "last" || jump["replicas"] != false {
		t.Errorf("jump's row %v; want removal last, no replicas", jump)
	}

	out, errOut, code = runChash(t, nil, append(args, "--format", "csv")...)
	if code != 0 {
		t.Fatalf("compare --format csv: exit %d, stderr %q", code, errOut)
	}
	records, err := csv.NewReader(bytes.NewReader([]byte(out))).ReadAll()
	if err != nil || len(records) != 5 {
		t.Fatalf("CSV: %v, %d records\n%s", err, len(records), out)
	}
	if h := strings.Join(records[0], ","); !strings.HasPrefix(h, "name,method,lookup_ns,memory_bytes,max_over_mean") || !strings.Contains(h, "add_modulo_moved") {
		t.Errorf("CSV header %q", h)
	}
	for _, r := range records[1:] {
		if len(r) != len(records[0]) {
			t.Errorf("CSV row %q has %d fields; the header %d", r, len(r), len(records[0]))
		}
	}
	if r := records[2]; r[0] != "random" || r[1] != "" || r[len(r)-1] == "" {
		t.Errorf("random's CSV row %q; want no figures and an error", r)
	}
}

// TestCompareUnknown checks that an unknown name lists the known ones.
func TestCompareUnknown(t *testing.T) {
	_, errOut, code := runChash(t, nil, "compare", "--algorithms", "chash,ring")
	if code != 2 || !strings.Contains(errOut, `--algorithms: distribution "ring" is unknown (known: balanced, bounded, chash,`) {
		t.Errorf("compare --algorithms chash,ring: exit %d, stderr %q", code, errOut)
	}
}

// FuzzParseWeights checks that --weights' parser never panics and returns
// positive weights or an error.
func FuzzParseWeights(f *testing.F) {
	for _, s := range []string{"1", "1,3", " 2 , 5", "0", "1,x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ws, err := parseWeights(s)
		if err != nil {
			return
		}
		if len(ws) == 0 || slices.ContainsFunc(ws, func(w int) bool { return w < 1 }) {
			t.Fatalf("parseWeights(%q) = %v", s, ws)
		}
	})
}

// TestCompareLimits checks that compare refuses, as usage errors that name
// the limit, counts that would run for hours or fill the memory, and --keys
// given with --keyfile.
func TestCompareLimits(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keyFile, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--keys", "10", "--keyfile", keyFile, "--algorithms", "jump"}, "--keys and --keyfile: give one"},
		{[]string{"--nodes", "10001", "--keys", "10", "--algorithms", "jump"}, "--nodes 10001: want 2 to 10000"},
		{[]string{"--nodes", "10", "--keys", "10000001", "--algorithms", "jump"}, "--keys 10000001: want 1 to 10000000"},
		{[]string{"--nodes", "10", "--keys", "10", "--algorithms", "jump,chash, jump"}, "--algorithms: jump is named twice"},
	} {
		_, stderr, code := runChash(t, nil, append([]string{"compare"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("chash compare %q = %d, %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestCompareReasons checks the reasons printed under the table: once the
// distribution's name, and the servers' count, not their weights, blamed
// when every weight is 1.
func TestCompareReasons(t *testing.T) {
	out, stderr, code := runChash(t, nil, "compare", "--nodes", "200", "--points", "100000", "--keys", "10", "--algorithms", "chash,maglev", "--weights", "400")
	if code != 0 {
		t.Fatalf("chash compare = %d: %s", code, stderr)
	}
	if strings.Contains(out, "maglev: maglev:") || !strings.Contains(out, "\nmaglev: table size") {
		t.Errorf("maglev's reason, want it named once:\n%s", out)
	}
	out, _, _ = runChash(t, nil, "compare", "--nodes", "200", "--points", "100000", "--keys", "10", "--algorithms", "chash")
	if !strings.Contains(out, "lower points or use fewer servers") || strings.Contains(out, "weights") && strings.Contains(out, "lower points or the weights") {
		t.Errorf("chash's reason with all weights 1, want fewer servers:\n%s", out)
	}
}

// TestCompareRepointed checks the note under compare's table on twemproxy's
// ketama, whose servers own 156 points each among 100 servers and 160 among
// 99 or 101, and its absence for chash's ring.
func TestCompareRepointed(t *testing.T) {
	stdout, stderr, code := runChash(t, nil, "compare", "--nodes", "100", "--keys", "1000", "--algorithms", "ketama,chash")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "ketama: when one joins, 100 of the 100 servers that keep their weight own\n" +
		"another number of points (node0: 156 -> 160); when one leaves, 99 of the 99\n" +
		"servers that keep their weight own another number of points (node0: 156 -> 160);\n"
	if !strings.Contains(stdout, want) || strings.Contains(stdout, "chash: ") {
		t.Errorf("compare:\n%s\nwant the note on ketama only:\n%s", stdout, want)
	}
}
