// Command loadtable turns the result lines of the proxy load scripts
// (redisload/run.sh, proxyload/run.sh) into a Markdown table of medians,
// the proxy under test beside the baseline, with issue 12's targets checked
// on every row: throughput at least the baseline's, CPU per request at most
// the baseline's, p99 latency within 10% of the baseline's.
//
// Usage:
//
//	loadtable [-base nutcracker] [-test chash] RESULTS...
//
// A result line is tab-separated: the program, then fields. A field NAME=V
// whose NAME is a measurement's (ops/s, p50, p99, p999, cpu, errors) has a
// number with an optional unit ("ops/s=41234", "p99=0.311ms",
// "cpu=21.4µs/op"); the other fields ("servers=3", "get", "conns=8",
// "pipeline=16") name the configuration, and the table has a column for each.
// Lines starting with "#" are comments. Each RESULTS file is one run; the
// table has, for each configuration, the median of its runs of each program.
// A target missed says in how many runs it was met, the two programs compared
// within each run (their lines are measured one after the other): on a noisy
// machine a miss in some runs only is within the noise, one in every run is
// not.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

func main() {
	base := flag.String("base", "nutcracker", "the `program` the others are measured against")
	test := flag.String("test", "chash", "the `program` under test")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: loadtable [-base PROG] [-test PROG] RESULTS...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var all []result
	for run, name := range flag.Args() {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadtable:", err)
			os.Exit(1)
		}
		rs, err := parse(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "loadtable: %s: %v\n", name, err)
			os.Exit(1)
		}
		for i := range rs {
			rs[i].run = run
		}
		all = append(all, rs...)
	}
	if err := writeTable(os.Stdout, all, *base, *test); err != nil {
		fmt.Fprintln(os.Stderr, "loadtable:", err)
		os.Exit(1)
	}
}

// result is one line: a program's measurements of one configuration.
type result struct {
	run    int // the results file it came from
	prog   string
	config string             // the configuration fields, tab-separated, in order
	values map[string]float64 // by measurement name
	units  map[string]string
}

// parse reads result lines.
func parse(r io.Reader) ([]result, error) {
	var out []result
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		fields := strings.Split(line, "\t")
		res := result{prog: fields[0], values: map[string]float64{}, units: map[string]string{}}
		var config []string
		for _, f := range fields[1:] {
			name, v, ok := strings.Cut(f, "=")
			if !ok || !slices.Contains(measurements, name) {
				config = append(config, f)
				continue
			}
			x, unit, ok := number(v)
			if !ok {
				return nil, fmt.Errorf("line %d: %s is not a number", n, f)
			}
			res.values[name], res.units[name] = x, unit
		}
		if len(config) == 0 || len(res.values) == 0 {
			return nil, fmt.Errorf("line %d: %q is not a result line (program, configuration, NAME=NUMBER measurements)", n, line)
		}
		res.config = strings.Join(config, "\t")
		out = append(out, res)
	}
	return out, sc.Err()
}

// number splits "0.311ms" into 0.311 and "ms"; a value without digits is
// not a number.
func number(s string) (float64, string, bool) {
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == '-' || s[i] == '+' || s[i] == 'e' && i > 0) {
		i++
	}
	x, err := strconv.ParseFloat(s[:i], 64)
	if err != nil {
		return 0, "", false
	}
	return x, s[i:], true
}

// median returns the median of xs (the mean of the middle two for an even
// count), NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// measurements are the names of the fields that are measurements.
var measurements = []string{"ops/s", "p50", "p99", "p999", "cpu", "errors"}

// The measurements the table shows, as the scripts name them.
const (
	opsName = "ops/s"
	p99Name = "p99"
	cpuName = "cpu"
)

// writeTable writes the table of medians: one row per configuration, in the
// order first seen.
func writeTable(w io.Writer, all []result, base, test string) error {
	var configs []string
	runs := map[[2]string][]result{} // by configuration and program
	units := map[string]string{}
	var others []string // programs other than base and test, such as memcached alone
	for _, r := range all {
		if !slices.Contains(configs, r.config) {
			configs = append(configs, r.config)
		}
		k := [2]string{r.config, r.prog}
		runs[k] = append(runs[k], r)
		for name, u := range r.units {
			units[name] = u
		}
		if r.prog != base && r.prog != test && !slices.Contains(others, r.prog) {
			others = append(others, r.prog)
		}
	}
	if len(configs) == 0 {
		return errors.New("no result lines")
	}
	med := func(config, prog, name string) float64 {
		var xs []float64
		for _, r := range runs[[2]string{config, prog}] {
			if v, ok := r.values[name]; ok {
				xs = append(xs, v)
			}
		}
		return median(xs)
	}
	cols := strings.Split(configs[0], "\t")
	header, align := "|", "|"
	for _, f := range cols {
		name, _, ok := strings.Cut(f, "=")
		if !ok {
			name = "workload"
		}
		header += " " + name + " |"
		align += "---|"
	}
	for _, o := range others {
		header += " " + o + " ops/s |"
		align += "--:|"
	}
	header += fmt.Sprintf(" %s ops/s | %s ops/s | %s/%s | p99 %s %s / %s | CPU %s %s / %s | runs | targets |",
		base, test, test, base, units[p99Name], base, test, units[cpuName], base, test)
	align += "--:|--:|--:|--:|--:|--:|---|"
	fmt.Fprintln(w, header)
	fmt.Fprintln(w, align)
	met, always := 0, 0
	for _, c := range configs {
		row := "|"
		for _, f := range strings.Split(c, "\t") {
			if _, v, ok := strings.Cut(f, "="); ok {
				f = v
			}
			row += " " + f + " |"
		}
		for _, o := range others {
			row += " " + format(med(c, o, opsName)) + " |"
		}
		bo, to := med(c, base, opsName), med(c, test, opsName)
		bp, tp := med(c, base, p99Name), med(c, test, p99Name)
		bc, tc := med(c, base, cpuName), med(c, test, cpuName)
		n := min(len(runs[[2]string{c, base}]), len(runs[[2]string{c, test}]))
		pairs := paired(runs[[2]string{c, base}], runs[[2]string{c, test}])
		var missed []string
		every := false // a target missed in every run
		miss := func(name string, ok func(b, t result) bool) {
			good := 0 // runs that met it
			for _, p := range pairs {
				if ok(p[0], p[1]) {
					good++
				}
			}
			every = every || good == 0
			missed = append(missed, fmt.Sprintf("%s (met in %d of %d runs)", name, good, len(pairs)))
		}
		switch {
		case math.IsNaN(bo) || math.IsNaN(to):
			missed = append(missed, "not measured")
		default:
			if to < bo {
				miss("throughput", func(b, t result) bool { return t.values[opsName] >= b.values[opsName] })
			}
			if tc > bc {
				miss("CPU", func(b, t result) bool { return t.values[cpuName] <= b.values[cpuName] })
			}
			if tp > 1.1*bp {
				miss("p99", func(b, t result) bool { return t.values[p99Name] <= 1.1*b.values[p99Name] })
			}
		}
		verdict := "met"
		if len(missed) > 0 {
			verdict = "missed: " + strings.Join(missed, ", ")
			if every {
				always++
			}
		} else {
			met++
		}
		row += fmt.Sprintf(" %s | %s | %s | %s / %s | %s / %s | %d | %s |",
			format(bo), format(to), ratio(to, bo), format(bp), format(tp), format(bc), format(tc), n, verdict)
		fmt.Fprintln(w, row)
	}
	fmt.Fprintf(w, "\nTargets met in %d of %d rows: %s's throughput at least %s's, CPU per request at most %s's, p99 at most 1.1 × %s's.\n",
		met, len(configs), test, base, base, base)
	fmt.Fprintf(w, "Rows with a target missed in every run: %d.\n", always)
	return nil
}

// paired returns the runs that measured both programs, as pairs (base, test).
func paired(base, test []result) [][2]result {
	var out [][2]result
	for _, b := range base {
		for _, t := range test {
			if t.run == b.run {
				out = append(out, [2]result{b, t})
				break
			}
		}
	}
	return out
}

// format writes a median with the digits that matter: whole numbers from
// 100 up, three significant digits below.
func format(x float64) string {
	switch {
	case math.IsNaN(x):
		return "—"
	case math.Abs(x) >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

func ratio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return "—"
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64)
}
