package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestDiffGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"diff-add", []string{"diff", "--add", "192.168.0.5:111:1", "testdata/seed5.yml"}},
		{"diff-remove", []string{"diff", "--remove", "192.168.0.4:111", "testdata/seed5.yml"}},
		{"diff-files", []string{"diff", "testdata/seed5.yml", "testdata/seed6.yml"}},
		{"diff-files-json", []string{"diff", "--format", "json", "testdata/seed5.yml", "testdata/seed6.yml"}},
		{"diff-add-csv", []string{"diff", "--format", "csv", "--add", "192.168.0.5:111:2 big", "testdata/seed5.yml"}},
		{"diff-ranges", []string{"diff", "--pool", "a", "--add", "10.0.0.4:11211:1 four", "--remove", "two", "--ranges", "4", "testdata/two.yml"}},
		{"diff-replicas", []string{"diff", "--add", "10.0.0.5:11211:1 five", "--sample", "100000", "testdata/replicas.yml"}},
		{"diff-modula", []string{"diff", "--add", "10.0.0.5:11211:1", "--sample", "20000", "testdata/modula.yml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, tt.name, nil, tt.args, nil)
		})
	}
}

// diffJSON is the JSON of chash diff, as a script would read it.
type diffJSON struct {
	Old struct {
		Config, Pool, Distribution string
	} `json:"old"`
	Method      string  `json:"method"`
	Total       uint64  `json:"total"`
	Moved       float64 `json:"moved"`
	Ideal       float64 `json:"ideal"`
	ModuloMoved float64 `json:"modulo_moved"`
	Added       []string
	Removed     []string
	Flows       []struct {
		From, To string
		Share    float64
		Count    uint64
		Ranges   int
	} `json:"flows"`
	Ranges []struct {
		Start, End uint64
		From, To   string
	} `json:"ranges"`
	After analyzeJSON `json:"after"`
}

// TestDiffJSON checks the ring's promise in diff's JSON: adding a server moves
// exactly its new share, all to it, in ranges that add up; modulo hashing moves
// five sixths.
func TestDiffJSON(t *testing.T) {
	stdout, stderr, code := runChash(t, nil, "diff", "--format", "json", "--add", "192.168.0.5:111:1", "testdata/seed5.yml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var d diffJSON
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatalf("JSON does not parse: %v", err)
	}
	if d.Method != "arcs" || d.Total != 1<<32 || d.Old.Pool != "articles" || len(d.Added) != 1 || len(d.Removed) != 0 {
		t.Fatalf("diff JSON = %+v", d)
	}
	var joined float64
	for _, n := range d.After.Nodes {
		if n.Name == "192.168.0.5:111" {
			joined = n.Share
		}
	}
	if d.Moved != joined {
		t.Errorf("moved %v; want the joining server's share %v", d.Moved, joined)
	}
	if d.Ideal != 1.0/6 {
		t.Errorf("ideal %v; want 1/6", d.Ideal)
	}
	if math.Abs(d.ModuloMoved-5.0/6) > 1e-9 {
		t.Errorf("modulo moved %v; want 5/6", d.ModuloMoved)
	}
	var flows, ranges uint64
	n := 0
	for _, f := range d.Flows {
		if f.To != "192.168.0.5:111" {
			t.Errorf("flow %+v is not to the joining server", f)
		}
		flows += f.Count
		n += f.Ranges
	}
	for _, r := range d.Ranges {
		ranges += r.End - r.Start + 1
	}
	if flows != ranges || n != len(d.Ranges) || float64(ranges)/(1<<32) != d.Moved {
		t.Errorf("flows count %d positions in %d ranges; ranges %d in %d; moved %v", flows, n, ranges, len(d.Ranges), d.Moved)
	}
}

// TestDiffCSV checks that diff's CSV parses and that its ranges add up to its
// flows.
func TestDiffCSV(t *testing.T) {
	stdout, _, code := runChash(t, nil, "diff", "--format", "csv", "--remove", "two", "--pool", "a", "testdata/two.yml")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	rows, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows[0], ",") != "record,from,to,share,count,start,end" {
		t.Fatalf("header %q", rows[0])
	}
	sums := map[string]uint64{}
	for _, r := range rows[1:] {
		count, err := strconv.ParseUint(r[4], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if r[1] != "two" {
			t.Errorf("row %q: not from the removed server", r)
		}
		sums[r[0]] += count
		if r[0] == "range" {
			start, _ := strconv.ParseUint(r[5], 10, 64)
			end, _ := strconv.ParseUint(r[6], 10, 64)
			if end-start+1 != count {
				t.Errorf("range %q: count is not end-start+1", r)
			}
		}
	}
	if sums["flow"] == 0 || sums["flow"] != sums["range"] {
		t.Errorf("flows count %d positions, ranges %d", sums["flow"], sums["range"])
	}
}

func TestDiffPlots(t *testing.T) {
	dir := t.TempDir()
	bars, ring := filepath.Join(dir, "bars.svg"), filepath.Join(dir, "ring.png")
	_, stderr, code := runChash(t, nil, "diff", "--plot", bars, "--ring-plot", ring, "--add", "192.168.0.5:111:1", "testdata/seed5.yml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkImage(t, bars)
	checkImage(t, ring)
}

// TestDiffRingPlotIncomparable checks that --ring-plot of two rings that hash
// keys differently (seed's Java FNV-1 and chash's XXH64) is refused before
// any figure is printed, as that of a distribution without a ring is.
func TestDiffRingPlotIncomparable(t *testing.T) {
	seed, err := os.ReadFile("testdata/seed5.yml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	other := filepath.Join(dir, "chash.yml")
	if err := os.WriteFile(other, bytes.Replace(seed, []byte("distribution: seed"), []byte("distribution: chash"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runChash(t, nil, "diff", "--sample", "1000", "--ring-plot", filepath.Join(dir, "ring.svg"), "testdata/seed5.yml", other)
	if code != 2 || stdout != "" || !strings.Contains(stderr, "--ring-plot: the rings of seed and chash hash keys differently") {
		t.Errorf("diff --ring-plot of seed and chash rings = %d, stdout %q, stderr %q; want 2, nothing printed and the reason", code, stdout, stderr)
	}
}

// TestDiffRepointed checks the note on servers that keep their weight but
// not their points: twemproxy's ketama gives each of 100 servers 156 points
// and each of 99 servers 160 (its float32 formula), so removing one moves keys
// between the servers that stay, about 3.6 times the ideal.
func TestDiffRepointed(t *testing.T) {
	var b strings.Builder
	b.WriteString("pool:\n  listen: 127.0.0.1:22121\n  distribution: ketama\n  hash: md5\n  servers:\n")
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&b, "   - 10.0.0.%d:11211:1\n", i)
	}
	file := filepath.Join(t.TempDir(), "k100.yml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runChash(t, nil, "diff", "--remove", "10.0.0.100:11211", file)
	want := "note: 99 of the 99 servers that keep their weight own another number of points\n" +
		"(10.0.0.1:11211: 156 -> 160): ketama sizes each server's points by the whole\n" +
		"pool, so keys also move between servers that stay.\n"
	if code != 0 || !strings.Contains(stdout, want) {
		t.Errorf("exit %d, %s\n%s\nwant the note\n%s", code, stderr, stdout, want)
	}
	stdout, stderr, code = runChash(t, nil, "diff", "--format", "json", "--remove", "10.0.0.100:11211", file)
	var d struct {
		Moved, Ideal float64
		Repointed    *struct {
			Nodes, Kept int
			Name        string
			Old         int `json:"old_points"`
			New         int `json:"new_points"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &d); code != 0 || err != nil {
		t.Fatalf("exit %d, %s, %v", code, stderr, err)
	}
	if r := d.Repointed; r == nil || r.Nodes != 99 || r.Kept != 99 || r.Name != "10.0.0.1:11211" || r.Old != 156 || r.New != 160 {
		t.Errorf("repointed = %+v; want 99 of 99, 10.0.0.1:11211 from 156 to 160 points", r)
	}
	if d.Moved < 3*d.Ideal {
		t.Errorf("moved %v, ideal %v; want more than three times the ideal", d.Moved, d.Ideal)
	}
	// A ring whose points follow each server's weight alone: no note.
	stdout, _, _ = runChash(t, nil, "diff", "--remove", "192.168.0.4:111", "testdata/seed5.yml")
	if strings.Contains(stdout, "note:") {
		t.Errorf("diff of the seed's ring:\n%s\nwant no note", stdout)
	}
}

// TestDiffConfigFlag checks that OLD may be given as --config, as route and
// analyze take their file.
func TestDiffConfigFlag(t *testing.T) {
	for _, args := range [][2][]string{
		{{"diff", "--remove", "192.168.0.4:111", "testdata/seed5.yml"}, {"diff", "--config", "testdata/seed5.yml", "--remove", "192.168.0.4:111"}},
		{{"diff", "testdata/seed5.yml", "testdata/seed6.yml"}, {"diff", "--config=testdata/seed5.yml", "testdata/seed6.yml"}},
	} {
		want, _, code := runChash(t, nil, args[0]...)
		got, stderr, gotCode := runChash(t, nil, args[1]...)
		if code != 0 || gotCode != 0 || got != want {
			t.Errorf("chash %q: exit %d, %s%s\nwant exit %d and the output of chash %q:\n%s", args[1], gotCode, stderr, got, code, args[0], want)
		}
	}
	if _, stderr, code := runChash(t, nil, "diff", "--config", "testdata/seed5.yml", "testdata/seed6.yml", "testdata/seed6.yml"); code != 2 || !strings.Contains(stderr, "too many arguments") {
		t.Errorf("diff --config OLD NEW EXTRA: exit %d, %q; want 2, too many arguments", code, stderr)
	}
}

// TestDiffReplicas: a third copy of each key, servers unchanged, moves no
// key's first server and changes every replica set by one server (a third
// of the copies new, no key cold); a pool of one copy a key has no
// "replicas" in its JSON.
func TestDiffReplicas(t *testing.T) {
	stdout, stderr, code := runChash(t, nil, "diff", "--format", "json", "--sample", "20000", "testdata/replicas.yml", "testdata/replicas3.yml")
	if code != 0 {
		t.Fatalf("chash diff = %d: %s", code, stderr)
	}
	var out struct {
		Moved    float64 `json:"moved"`
		Replicas *struct {
			Old, New, Keys        int
			Changed, Copies, Cold float64
		} `json:"replicas"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	r := out.Replicas
	if out.Moved != 0 || r == nil || r.Old != 2 || r.New != 3 || r.Keys != 20000 || r.Changed != 1 || math.Abs(r.Copies-1.0/3) > 1e-9 || r.Cold != 0 {
		t.Errorf("replicas 2 -> 3: moved %v, replicas %+v; want moved 0, {2 3 20000 1 0.333 0}", out.Moved, r)
	}
	stdout, _, _ = runChash(t, nil, "diff", "--format", "json", "--add", "192.168.0.5:111:1", "testdata/seed5.yml")
	if strings.Contains(stdout, `"replicas"`) {
		t.Errorf("one copy a key: JSON has replicas:\n%s", stdout)
	}
}
