package main

import (
	"strings"
	"testing"
)

func TestNumber(t *testing.T) {
	for _, tt := range []struct {
		in   string
		x    float64
		unit string
		ok   bool
	}{
		{"41234", 41234, "", true},
		{"0.311ms", 0.311, "ms", true},
		{"21.4µs/op", 21.4, "µs/op", true},
		{"171µs", 171, "µs", true},
		{"3", 3, "", true},
		{"mix", 0, "", false},
		{"", 0, "", false},
	} {
		x, unit, ok := number(tt.in)
		if x != tt.x || unit != tt.unit || ok != tt.ok {
			t.Errorf("number(%q) = %v, %q, %v; want %v, %q, %v", tt.in, x, unit, ok, tt.x, tt.unit, tt.ok)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{9, 1, 1, 8, 2}, 2},
	} {
		if got := median(tt.xs); got != tt.want {
			t.Errorf("median(%v) = %v; want %v", tt.xs, got, tt.want)
		}
	}
}

// TestTable checks the table of three runs: medians per program and row, the
// ratio, and each target met or missed, with the runs that met a target missed.
func TestTable(t *testing.T) {
	runs := []string{
		"# a comment\n" +
			"nutcracker\tservers=1\tget\tconns=1\tpipeline=1\tops/s=100\tp99=1.0ms\tcpu=50µs/op\terrors=0\n" +
			"chash\tservers=1\tget\tconns=1\tpipeline=1\tops/s=120\tp99=1.05ms\tcpu=40µs/op\terrors=0\n" +
			"nutcracker\tservers=3\tmset\tconns=8\tpipeline=16\tops/s=1000\tp99=2ms\tcpu=10µs/op\terrors=0\n" +
			"chash\tservers=3\tmset\tconns=8\tpipeline=16\tops/s=900\tp99=3ms\tcpu=12µs/op\terrors=0\n" +
			"nutcracker\tservers=3\tget\tconns=50\tpipeline=1\tops/s=100\tp99=1ms\tcpu=20µs/op\terrors=0\n" +
			"chash\tservers=3\tget\tconns=50\tpipeline=1\tops/s=90\tp99=1ms\tcpu=19µs/op\terrors=0\n",
		"nutcracker\tservers=3\tget\tconns=50\tpipeline=1\tops/s=100\tp99=1ms\tcpu=20µs/op\terrors=0\n" +
			"chash\tservers=3\tget\tconns=50\tpipeline=1\tops/s=105\tp99=1ms\tcpu=19µs/op\terrors=0\n" +
			"nutcracker\tservers=1\tget\tconns=1\tpipeline=1\tops/s=110\tp99=1.2ms\tcpu=60µs/op\terrors=0\n" +
			"chash\tservers=1\tget\tconns=1\tpipeline=1\tops/s=130\tp99=1.1ms\tcpu=45µs/op\terrors=0\n",
		"nutcracker\tservers=1\tget\tconns=1\tpipeline=1\tops/s=90\tp99=0.9ms\tcpu=55µs/op\terrors=0\n" +
			"chash\tservers=1\tget\tconns=1\tpipeline=1\tops/s=80\tp99=0.8ms\tcpu=42µs/op\terrors=0\n" +
			"nutcracker\tservers=3\tget\tconns=50\tpipeline=1\tops/s=100\tp99=1ms\tcpu=20µs/op\terrors=0\n" +
			"chash\tservers=3\tget\tconns=50\tpipeline=1\tops/s=95\tp99=1ms\tcpu=19µs/op\terrors=0\n",
	}
	var all []result
	for run, r := range runs {
		rs, err := parse(strings.NewReader(r))
		if err != nil {
			t.Fatal(err)
		}
		for i := range rs {
			rs[i].run = run
		}
		all = append(all, rs...)
	}
	var out strings.Builder
	if err := writeTable(&out, all, "nutcracker", "chash"); err != nil {
		t.Fatal(err)
	}
	want := "| servers | workload | conns | pipeline | nutcracker ops/s | chash ops/s | chash/nutcracker | p99 ms nutcracker / chash | CPU µs/op nutcracker / chash | runs | targets |\n" +
		"|---|---|---|---|--:|--:|--:|--:|--:|--:|---|\n" +
		"| 1 | get | 1 | 1 | 100 | 120 | 1.20 | 1 / 1.05 | 55 / 42 | 3 | met |\n" +
		"| 3 | mset | 8 | 16 | 1000 | 900 | 0.90 | 2 / 3 | 10 / 12 | 1 | missed: throughput (met in 0 of 1 runs), CPU (met in 0 of 1 runs), p99 (met in 0 of 1 runs) |\n" +
		"| 3 | get | 50 | 1 | 100 | 95 | 0.95 | 1 / 1 | 20 / 19 | 3 | missed: throughput (met in 1 of 3 runs) |\n" +
		"\nTargets met in 1 of 3 rows: chash's throughput at least nutcracker's, CPU per request at most nutcracker's, p99 at most 1.1 × nutcracker's.\n" +
		"Rows with a target missed in every run: 1.\n"
	if got := out.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, in := range []string{"chash\tget\n", "chash\tops/s=3\n", "chash\tget\tops/s=fast\n"} {
		if _, err := parse(strings.NewReader(in)); err == nil {
			t.Errorf("parse(%q) = nil error; want one naming the line", in)
		}
	}
}
