// Command benchtable turns the output of the benchmarks in this module into the
// Markdown tables of benchmarks/README.md: the median of each benchmark's runs, and
// the ratios issue 2's targets are stated in, each checked.
//
// Usage:
//
//	benchtable [-update FILE] RESULTS...
//
// RESULTS are files of `go test -bench` output (run.sh writes one). The tables are
// printed, or with -update they replace the lines between "<!-- benchtable -->"
// and "<!-- /benchtable -->" in FILE. Benchmarks missing from the results show as
// "—"; a target whose figures are missing is reported as not measured.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
	"golang.org/x/perf/benchunit"
)

func main() {
	update := flag.String("update", "", "replace the marked section of this `file` instead of printing")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: benchtable [-update FILE] RESULTS...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	res, err := read(flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	var out bytes.Buffer
	writeTables(&out, res)
	if *update == "" {
		os.Stdout.Write(out.Bytes())
		return
	}
	if err := splice(*update, out.Bytes()); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

// A key names one benchmark configuration: its full name without the GOMAXPROCS
// suffix, and that GOMAXPROCS (1 when the name has none).
type key struct {
	name  string
	procs int
}

// results holds every measurement read, by benchmark and unit.
type results map[key]map[string][]float64

func read(files []string) (results, error) {
	res := results{}
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		r := benchfmt.NewReader(f, file)
		for r.Scan() {
			switch rec := r.Result().(type) {
			case *benchfmt.SyntaxError:
				fmt.Fprintln(os.Stderr, "benchtable: skipping:", rec)
			case *benchfmt.Result:
				k := nameKey(rec.Name)
				if res[k] == nil {
					res[k] = map[string][]float64{}
				}
				for _, v := range rec.Values {
					unit, val := v.Unit, v.Value
					if v.OrigUnit != "" {
						unit, val = v.OrigUnit, v.OrigValue
					}
					res[k][unit] = append(res[k][unit], val)
				}
			}
		}
		f.Close()
		if err := r.Err(); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func nameKey(n benchfmt.Name) key {
	// The reader drops the "Benchmark" prefix; the names here keep it.
	base, parts := n.Parts()
	k := key{name: "Benchmark" + string(base), procs: 1}
	for _, p := range parts {
		if p[0] == '-' {
			k.procs, _ = strconv.Atoi(string(p[1:]))
			continue
		}
		k.name += string(p)
	}
	return k
}

// median returns the median of the named benchmark's values in unit, at the
// given GOMAXPROCS, or at any if procs is 0.
func (res results) median(name, unit string, procs int) (float64, bool) {
	var vals []float64
	for k, units := range res {
		if k.name == name && (procs == 0 || k.procs == procs) {
			vals = append(vals, units[unit]...)
		}
	}
	if len(vals) == 0 {
		return math.NaN(), false
	}
	s := benchmath.NewSample(vals, &benchmath.DefaultThresholds)
	return benchmath.AssumeNothing.Summary(s, 0.95).Center, true
}

// ns is median(name, "ns/op", 0).
func (res results) ns(name string) float64 {
	v, _ := res.median(name, "ns/op", 0)
	return v
}

// runs returns the most runs any configuration of name has.
func (res results) runs(prefix string) int {
	n := 0
	for k, units := range res {
		if strings.HasPrefix(k.name, prefix) {
			n = max(n, len(units["ns/op"]))
		}
	}
	return n
}

var (
	sizes     = []int{10, 100, 1000}
	peerRings = []string{"stathat", "buraksezer", "serialx", "groupcache", "lafikl"}
)

func lookupName(lib string, n int) string {
	return fmt.Sprintf("BenchmarkLookup/nodes=%d/lib=%s", n, lib)
}

func writeTables(w io.Writer, res results) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	sized := func(title, bench string, libs []string, cell func(name string) string) {
		p("%s\n\n| library | 10 nodes | 100 nodes | 1000 nodes |\n|---|--:|--:|--:|\n", title)
		for _, lib := range libs {
			p("| %s |", lib)
			for _, n := range sizes {
				p(" %s |", cell(fmt.Sprintf("Benchmark%s/nodes=%d/lib=%s", bench, n, lib)))
			}
			p("\n")
		}
		p("\n")
	}
	timeAllocs := func(name string) string {
		t := res.ns(name)
		if math.IsNaN(t) {
			return "—"
		}
		a, _ := res.median(name, "allocs/op", 0)
		return fmt.Sprintf("%s (%s)", dur(t), trim(a))
	}

	p("Medians of %d runs; \"(k)\" is allocations per operation.\n\n", res.runs("BenchmarkLookup/"))
	p("**Hashing alone** (a 20-byte key): hashfn.XXH64 %s, xxhash.Sum64String %s.\n\n",
		timeAllocs("BenchmarkHash/fn=hashfn.XXH64"), timeAllocs("BenchmarkHash/fn=xxhash.Sum64String"))
	sized("**Lookup**, one 20-byte key, hashing included (ns/op):", "Lookup",
		[]string{"chash", "chash-bytes", "stathat", "buraksezer", "serialx", "groupcache", "lafikl", "maglev", "jump"}, timeAllocs)
	sized("**Replica set**, the first 3 distinct nodes of a key:", "Replicas",
		[]string{"chash", "stathat", "serialx", "buraksezer"}, timeAllocs)

	p("**Parallel lookups**, 1000 nodes, RunParallel at GOMAXPROCS 1 and 2 (ns/op is wall time per lookup):\n\n")
	p("| library | GOMAXPROCS=1 | GOMAXPROCS=2 | speed-up |\n|---|--:|--:|--:|\n")
	for _, lib := range []string{"chash", "chash-holder", "groupcache", "maglev"} {
		name := "BenchmarkLookupParallel/nodes=1000/lib=" + lib
		t1, _ := res.median(name, "ns/op", 1)
		t2, _ := res.median(name, "ns/op", 2)
		p("| %s | %s | %s | %s |\n", lib, dur(t1), dur(t2), ratio(t1/t2))
	}
	p("\n")

	sized(fmt.Sprintf("**Build** a ring of N nodes × 160 points from a list of names (lafikl: × 10; maglev: a 655373-entry table; stathat and buraksezer at 1000 nodes: medians of %d single runs):",
		res.runs("BenchmarkBuild/nodes=1000/lib=stathat")), "Build",
		[]string{"chash", "stathat", "buraksezer", "serialx", "groupcache", "lafikl", "maglev"},
		func(name string) string { return dur(res.ns(name)) })

	p("**Add or remove one node** on a ring of 1000 nodes × 160 points (only the update is timed):\n\n")
	p("| library | add | remove |\n|---|--:|--:|\n")
	for _, lib := range []string{"chash", "stathat", "buraksezer", "serialx", "groupcache", "lafikl", "maglev"} {
		p("| %s | %s | %s |\n", lib,
			dur(res.ns("BenchmarkAdd/nodes=1000/lib="+lib)), dur(res.ns("BenchmarkRemove/nodes=1000/lib="+lib)))
	}
	p("\n")

	p("**Memory** a ring of 1000 nodes × 160 points keeps on the heap (runtime.MemStats, after GC):\n\n")
	p("| library | retained | per point |\n|---|--:|--:|\n")
	mem := func(n int, lib string) (total, perPoint float64) {
		name := fmt.Sprintf("BenchmarkMemory/nodes=%d/lib=%s", n, lib)
		total, _ = res.median(name, "retained-B", 0)
		perPoint, _ = res.median(name, "retained-B/point", 0)
		return total, perPoint
	}
	for _, lib := range []string{"chash", "stathat", "buraksezer", "serialx", "groupcache", "lafikl", "maglev"} {
		total, pp := mem(1000, lib)
		p("| %s | %s | %s |\n", lib, bytesize(total), num(pp, "B"))
	}
	c1000, _ := mem(1000, "chash")
	c1500, _ := mem(1500, "chash")
	marginal := (c1500 - c1000) / (500 * 160)
	fixed := c1000 - marginal*1000*160
	p("\nchash's split, from its rings of 1000 and 1500 nodes (same index size): %s per point, %s fixed (the lookup index).\n\n",
		num(marginal, "B"), bytesize(fixed))

	// The targets.
	chash := res.ns(lookupName("chash", 1000))
	fastest, fastestLib := math.Inf(1), "—"
	for _, lib := range peerRings {
		if t := res.ns(lookupName(lib, 1000)); t < fastest {
			fastest, fastestLib = t, lib
		}
	}
	hash := res.ns("BenchmarkHash/fn=hashfn.XXH64")
	allocs, _ := res.median(lookupName("chash", 1000), "allocs/op", 0)
	maglev := res.ns(lookupName("maglev", 1000))
	reps := res.ns("BenchmarkReplicas/nodes=1000/lib=chash")
	p1, _ := res.median("BenchmarkLookupParallel/nodes=1000/lib=chash", "ns/op", 1)
	p2, _ := res.median("BenchmarkLookupParallel/nodes=1000/lib=chash", "ns/op", 2)

	p("**Issue 2's targets** (1000 nodes × 160 points, ratios of the medians above):\n\n")
	p("| target | measured | met |\n|---|---|:-:|\n")
	row := func(target, measured string, ok bool, known bool) {
		mark := "no"
		switch {
		case !known:
			mark, measured = "—", "not measured"
		case ok:
			mark = "yes"
		}
		p("| %s | %s | %s |\n", target, measured, mark)
	}
	row("lookup ≥ 5× faster than the fastest peer ring",
		fmt.Sprintf("%s (%s %s / chash %s)", ratio(fastest/chash), fastestLib, dur(fastest), dur(chash)),
		fastest/chash >= 5, !math.IsNaN(chash) && !math.IsInf(fastest, 0))
	row("lookup within 1.5× of go-maglev",
		fmt.Sprintf("%s (chash %s / maglev %s)", ratio(chash/maglev), dur(chash), dur(maglev)),
		chash/maglev <= 1.5, !math.IsNaN(chash/maglev))
	row("lookup ≤ 3× hashing the key alone",
		fmt.Sprintf("%s (chash %s / xxh64 %s)", ratio(chash/hash), dur(chash), dur(hash)),
		chash/hash <= 3, !math.IsNaN(chash/hash))
	row("lookup allocates nothing", fmt.Sprintf("%s allocs/op", trim(allocs)), allocs == 0, !math.IsNaN(allocs))
	row("≤ 12 bytes per point", num(marginal, "B")+" per point", marginal <= 12, !math.IsNaN(marginal))
	row("fixed-size index ≤ 4 MiB", bytesize(fixed), fixed <= 4<<20, !math.IsNaN(fixed))

	buildLibs := []string{"stathat", "buraksezer", "serialx", "groupcache", "lafikl", "maglev"}
	cb := res.ns("BenchmarkBuild/nodes=1000/lib=chash")
	lib, best := fastestOf(res, "BenchmarkBuild/nodes=1000/lib=", buildLibs)
	row("build 1000 × 160 faster than every peer",
		fmt.Sprintf("chash %s; fastest peer %s %s (%s)", dur(cb), lib, dur(best), ratio(best/cb)),
		cb < best, !math.IsNaN(cb))
	for _, op := range []string{"Add", "Remove"} {
		t := res.ns("Benchmark" + op + "/nodes=1000/lib=chash")
		lib, best := fastestOf(res, "Benchmark"+op+"/nodes=1000/lib=", buildLibs)
		row(strings.ToLower(op)+" one node ≤ 1 ms", dur(t), t <= 1e6, !math.IsNaN(t))
		row(strings.ToLower(op)+" one node faster than every peer",
			fmt.Sprintf("fastest peer %s %s (%s)", lib, dur(best), ratio(best/t)), t < best, !math.IsNaN(t))
	}
	row("replica set (n = 3) within 2× of a single lookup",
		fmt.Sprintf("%s (%s / %s)", ratio(reps/chash), dur(reps), dur(chash)), reps/chash <= 2, !math.IsNaN(reps/chash))
	row("parallel lookups scale across both cores",
		fmt.Sprintf("%s speed-up from GOMAXPROCS 1 to 2 (%s → %s)", ratio(p1/p2), dur(p1), dur(p2)),
		p1/p2 >= 1.7, !math.IsNaN(p1/p2))
	p("\n\"Ratio\" columns read as \"how many times\": a speed-up of 1.9× on two cores is near-perfect scaling (the check asks ≥ 1.7×).\n")
}

// fastestOf returns the library with the lowest median ns/op among prefix+lib.
func fastestOf(res results, prefix string, libs []string) (string, float64) {
	best, bestLib := math.Inf(1), "—"
	for _, lib := range libs {
		if t := res.ns(prefix + lib); t < best {
			best, bestLib = t, lib
		}
	}
	return bestLib, best
}

func dur(ns float64) string {
	if math.IsNaN(ns) || math.IsInf(ns, 0) {
		return "—"
	}
	return withUnit(benchunit.Scale(ns*1e-9, benchunit.Decimal), "s")
}

func bytesize(b float64) string {
	if math.IsNaN(b) {
		return "—"
	}
	return withUnit(benchunit.Scale(b, benchunit.Binary), "B")
}

// withUnit turns a scaled number such as "7.734n" into "7.734 ns".
func withUnit(scaled, unit string) string {
	i := strings.LastIndexAny(scaled, "0123456789") + 1
	return scaled[:i] + " " + scaled[i:] + unit
}

func num(v float64, unit string) string {
	if math.IsNaN(v) {
		return "—"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + unit
}

func ratio(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return "—"
	}
	switch {
	case r >= 10:
		return strconv.FormatFloat(r, 'f', 0, 64) + "×"
	case r >= 1:
		return strconv.FormatFloat(r, 'f', 2, 64) + "×"
	}
	return strconv.FormatFloat(r, 'g', 2, 64) + "×"
}

func trim(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

const (
	beginMark = "<!-- benchtable -->"
	endMark   = "<!-- /benchtable -->"
)

// splice replaces the lines between the marks in file with text.
func splice(file string, text []byte) error {
	old, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	i := bytes.Index(old, []byte(beginMark+"\n"))
	j := bytes.Index(old, []byte(endMark))
	if i < 0 || j < i {
		return errors.New(file + ": no " + beginMark + " ... " + endMark + " section")
	}
	i += len(beginMark) + 1
	out := slices.Concat(old[:i], text, old[j:])
	return os.WriteFile(file, out, 0o644)
}
