package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSweepGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"sweep", []string{"sweep", "--nodes", "5,10", "--points", "1,10,100", "--trials", "3"}},
		{"sweep-seed-json", []string{"sweep", "--scheme", "seed", "--nodes", "5", "--points", "1..10:3", "--trials", "2", "--format", "json"}},
		{"sweep-ketama-csv", []string{"sweep", "--scheme", "ketama", "--nodes", "3,4", "--points", "40,160", "--trials", "2", "--churn-points", "40", "--format", "csv"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, tt.name, nil, tt.args, nil)
		})
	}
}

// TestSweepAgreesWithClosedForm sweeps chash's ring over 200 rings a cell and
// checks std/mean against sqrt((N-1)/(N*V+1)) within 8%, and the churn against
// the ring's promises: a join moves about its fair share, a leave exactly the
// leaving server's share, modulo hashing n/(n+1).
func TestSweepAgreesWithClosedForm(t *testing.T) {
	stdout, stderr, code := runChash(t, nil, "sweep", "--nodes", "5,20", "--points", "10,100", "--trials", "200", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Scheme  string
		Balance []struct {
			Nodes, Points int
			Std           float64 `json:"std_over_mean"`
			Random        float64 `json:"random_std_over_mean"`
		}
		Churn []struct {
			Nodes int
			Add   struct {
				Moved, Ideal float64
				Modulo       float64 `json:"modulo_moved"`
			}
			Remove struct{ Moved, Ideal float64 }
		}
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("JSON does not parse: %v", err)
	}
	if out.Scheme != "chash" || len(out.Balance) != 4 || len(out.Churn) != 2 {
		t.Fatalf("sweep JSON = %+v", out)
	}
	for _, b := range out.Balance {
		want := math.Sqrt(float64(b.Nodes-1) / float64(b.Nodes*b.Points+1))
		if b.Random != want || math.Abs(b.Std/want-1) > 0.08 {
			t.Errorf("%d nodes, %d points: std/mean %.4f, random %.4f; want about %.4f", b.Nodes, b.Points, b.Std, b.Random, want)
		}
	}
	for _, c := range out.Churn {
		n := float64(c.Nodes)
		if math.Abs(c.Add.Ideal-1/(n+1)) > 1e-12 || math.Abs(c.Add.Moved/c.Add.Ideal-1) > 0.1 || math.Abs(c.Add.Modulo-n/(n+1)) > 1e-6 {
			t.Errorf("%d nodes: join moved %.4f ideal %.4f modulo %.4f", c.Nodes, c.Add.Moved, c.Add.Ideal, c.Add.Modulo)
		}
		if c.Remove.Moved != c.Remove.Ideal {
			t.Errorf("%d nodes: leave moved %.4f; want the leaving share %.4f", c.Nodes, c.Remove.Moved, c.Remove.Ideal)
		}
	}
}

func TestSweepCSVAndPlots(t *testing.T) {
	dir := t.TempDir()
	bal, churn := filepath.Join(dir, "sweep.png"), filepath.Join(dir, "churn.svg")
	stdout, stderr, code := runChash(t, nil, "sweep", "--nodes", "5,10,50", "--points", "1..200", "--trials", "2", "--format", "csv", "--plot", bal, "--churn-plot", churn)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range rows[1:] {
		kinds[r[0]]++
	}
	if points := len(logSeries(1, 200)); kinds["balance"] != 3*points || kinds["churn"] != 3 {
		t.Errorf("CSV has %v rows; want %d balance and 3 churn", kinds, 3*points)
	}
	checkImage(t, bal)
	checkImage(t, churn)
}

func TestParseList(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"5,10,50,100", "[5 10 50 100]"},
		{"10, 5,5", "[5 10]"},
		{"1..500", "[1 2 3 4 5 6 8 10 12 15 20 25 30 40 50 60 80 100 120 150 200 250 300 400 500]"},
		{"7..13", "[7 8 10 12 13]"},
		{"1..10:3", "[1 4 7 10]"},
		{"3..3", "[3]"},
		{"1..4:1,100", "[1 2 3 4 100]"},
		{"0", `error: "0" is not a positive integer`},
		{"", `error: "" is not a positive integer`},
		{"5..2", "error: range 5..2 ends before it starts"},
		{"1..2000000:1", "error: range 1..2000000:1 has more than 100000 numbers"},
		{"1..x", `error: "x" is not a positive integer`},
		{"9223372036854775806..9223372036854775807:1", "[9223372036854775806 9223372036854775807]"},
		{"9223372036854775800..9223372036854775807:5", "[9223372036854775800 9223372036854775805]"},
	}
	for _, tt := range tests {
		l, err := parseList(tt.in)
		got := fmt.Sprint(l)
		if err != nil {
			got = "error: " + err.Error()
		}
		if got != tt.want {
			t.Errorf("parseList(%q) = %s; want %s", tt.in, got, tt.want)
		}
	}
	if !slices.IsSorted(logSeries(1, 10000)) {
		t.Errorf("logSeries is not sorted")
	}
}

// FuzzParseList checks that parseList never panics and returns what it
// promises: positive numbers, sorted and distinct, or an error.
func FuzzParseList(f *testing.F) {
	for _, s := range []string{"5,10,50", "1..500", "1..100:7", "3..2", "0", "1..1000000000:1", " 4 , 2 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := parseList(s)
		if err != nil {
			return
		}
		if len(l) == 0 || !slices.IsSorted(l) || len(slices.Compact(slices.Clone(l))) != len(l) || l[0] < 1 {
			t.Fatalf("parseList(%q) = %v", s, l)
		}
	})
}

// TestSweepOneTrial checks the header of a sweep of one ring per point, which
// has no names to differ, and a sweep past 2^16 nodes, whose default names
// once repeated.
func TestSweepOneTrial(t *testing.T) {
	out, stderr, code := runChash(t, nil, "sweep", "--nodes", "65537", "--points", "1", "--trials", "1")
	if code != 0 {
		t.Fatalf("chash sweep = %d: %s", code, stderr)
	}
	if first, _, _ := strings.Cut(out, "\n"); first != "balance of chash rings against points per node: exact shares, one ring per point" {
		t.Errorf("chash sweep --trials 1: header %q", first)
	}
}
