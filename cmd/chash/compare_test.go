package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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
		if len(f) >= 11 && f[0] != "algorithm" {
			rows[f[0]] = f
		}
	}
	for _, name := range cmpNames() {
		if rows[name] == nil {
			t.Errorf("compare output has no row for %s:\n%s", name, out)
		}
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
	for _, name := range []string{"chash", "balanced"} { // exact ring diffs
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
	if !strings.Contains(out, "jump failed: jump: node") || !strings.Contains(out, "rendezvous") {
		t.Errorf("compare with weights:\n%s", out)
	}
}

func TestCompareUsage(t *testing.T) {
	for _, args := range [][]string{
		{"compare", "--nodes", "1"},
		{"compare", "--weights", "1,x"},
		{"compare", "--weights", "0"},
		{"compare", "--algorithms", "nope"},
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
