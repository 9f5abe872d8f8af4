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

// time returns the median time per operation of the named benchmark in unit
// (cpu-ns/op or ns/op), or NaN.
func (res results) time(name, unit string) float64 {
	v, _ := res.median(name, unit, 0)
	return v
}

// runs returns the most runs any configuration named with prefix has.
func (res results) runs(prefix string) int {
	n := 0
	for k, units := range res {
		if strings.HasPrefix(k.name, prefix) {
			n = max(n, len(units["ns/op"]))
		}
	}
	return n
}

const (
	cpuUnit  = "cpu-ns/op" // the process's CPU time per operation
	wallUnit = "ns/op"     // wall time per operation
)

var (
	sizes = []int{10, 100, 1000}
	// ringPeers search a sorted ring on every lookup; buraksezer reads a partition
	// table that it recomputes from its ring on every change.
	ringPeers  = []string{"stathat", "serialx", "groupcache", "lafikl"}
	allRings   = append([]string{"buraksezer"}, ringPeers...)
	updateLibs = []string{"stathat", "buraksezer", "serialx", "groupcache", "lafikl", "maglev"}
)

func lookupName(lib string, n int) string {
	return fmt.Sprintf("BenchmarkLookup/nodes=%d/lib=%s", n, lib)
}

func writeTables(w io.Writer, res results) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	cpu := func(name string) float64 { return res.time(name, cpuUnit) }
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
		t := cpu(name)
		if math.IsNaN(t) {
			return "—"
		}
		a, _ := res.median(name, "allocs/op", 0)
		return fmt.Sprintf("%s (%s)", dur(t), trim(a))
	}

	p("Times are medians of %d runs of the CPU time per operation (cpu-ns/op: the process's user + system time, so time the scheduler gave to other processes is left out; the wall times are in the results file); \"(k)\" is allocations per operation.\n\n",
		res.runs("BenchmarkLookup/"))
	p("**Hashing alone** (a 20-byte key): hashfn.XXH64 %s, xxhash.Sum64String %s.\n\n",
		timeAllocs("BenchmarkHash/fn=hashfn.XXH64"), timeAllocs("BenchmarkHash/fn=xxhash.Sum64String"))
	sized("**Lookup** of one 20-byte key, hashing included:", "Lookup",
		[]string{"chash", "chash-bytes", "stathat", "buraksezer", "serialx", "groupcache", "lafikl", "maglev", "jump"}, timeAllocs)
	sized("**Replica set**: the first 3 distinct nodes of a key:", "Replicas",
		[]string{"chash", "stathat", "serialx", "buraksezer"}, timeAllocs)

	p("**Parallel lookups** on 1000 nodes, b.RunParallel at GOMAXPROCS 1 and 2: wall time per lookup (a perfect 2-core speed-up is 2×), and CPU time per lookup (which a lock or a contended cache line would raise at GOMAXPROCS 2; 1× is no contention):\n\n")
	p("| library | wall, 1 | wall, 2 | speed-up | CPU, 1 | CPU, 2 | CPU 2 / CPU 1 |\n|---|--:|--:|--:|--:|--:|--:|\n")
	for _, lib := range []string{"chash", "chash-holder", "groupcache", "maglev"} {
		name := "BenchmarkLookupParallel/nodes=1000/lib=" + lib
		t1, _ := res.median(name, wallUnit, 1)
		t2, _ := res.median(name, wallUnit, 2)
		c1, _ := res.median(name, cpuUnit, 1)
		c2, _ := res.median(name, cpuUnit, 2)
		p("| %s | %s | %s | %s | %s | %s | %s |\n", lib, dur(t1), dur(t2), ratio(t1/t2), dur(c1), dur(c2), ratio(c2/c1))
	}
	p("\n")

	sized(fmt.Sprintf("**Build** a ring of N nodes × 160 points from a list of names (lafikl: × 10; maglev: a 655373-entry table; stathat and buraksezer at 1000 nodes: %d single runs):",
		res.runs("BenchmarkBuild/nodes=1000/lib=stathat")), "Build",
		[]string{"chash", "stathat", "buraksezer", "serialx", "groupcache", "lafikl", "maglev"},
		func(name string) string { return dur(cpu(name)) })

	p("**Add or remove one node** on a ring of 1000 nodes × 160 points (only the update is timed):\n\n")
	p("| library | add | remove |\n|---|--:|--:|\n")
	for _, lib := range append([]string{"chash"}, updateLibs...) {
		p("| %s | %s | %s |\n", lib,
			dur(cpu("BenchmarkAdd/nodes=1000/lib="+lib)), dur(cpu("BenchmarkRemove/nodes=1000/lib="+lib)))
	}
	p("\n")

	p("**Memory** a ring of 1000 nodes × 160 points keeps on the heap (runtime.MemStats after GC; lafikl has 10 points a node, maglev's \"points\" are its table entries):\n\n")
	p("| library | retained | per point |\n|---|--:|--:|\n")
	for _, lib := range []string{"chash", "stathat", "buraksezer", "serialx", "groupcache", "lafikl", "maglev"} {
		total, pp := res.memory(1000, lib)
		p("| %s | %s | %s |\n", lib, bytesize(total), num(pp, "B"))
	}
	marginal, fixed := res.chashMemory()
	p("\nchash's split, from its rings of 1000 and 1500 nodes (which get the same index size): %s per point, %s fixed (the lookup index and per-ring data).\n\n",
		num(marginal, "B"), bytesize(fixed))

	p("**Issue 2's targets** on 1000 nodes × 160 points, from the medians (CPU time, and wall time for comparison):\n\n")
	p("| target | CPU time | met | wall time | met |\n|---|---|:-:|---|:-:|\n")
	byCPU, byWall := targets(res, cpuUnit), targets(res, wallUnit)
	for i, t := range byCPU {
		p("| %s | %s | %s | %s | %s |\n", t.target, t.measured, t.met(), byWall[i].measured, byWall[i].met())
	}
	p("\nA ratio above 1× means chash is faster, except in the rows that compare chash with itself or with maglev or hashing, where it is chash's time over the other's.\n")
}

func (res results) memory(n int, lib string) (total, perPoint float64) {
	name := fmt.Sprintf("BenchmarkMemory/nodes=%d/lib=%s", n, lib)
	total, _ = res.median(name, "retained-B", 0)
	perPoint, _ = res.median(name, "retained-B/point", 0)
	return total, perPoint
}

// chashMemory splits chash's retained heap into a cost per point and a fixed part,
// from its rings of 1000 and 1500 nodes × 160 points, whose lookup indexes have
// the same size.
func (res results) chashMemory() (perPoint, fixed float64) {
	c1000, _ := res.memory(1000, "chash")
	c1500, _ := res.memory(1500, "chash")
	perPoint = (c1500 - c1000) / (500 * 160)
	return perPoint, c1000 - perPoint*1000*160
}

type target struct {
	target, measured string
	ok, known        bool
}

func (t target) met() string {
	switch {
	case !t.known:
		return "—"
	case t.ok:
		return "yes"
	}
	return "no"
}

// targets checks issue 2's targets with the times in unit.
func targets(res results, unit string) []target {
	var ts []target
	add := func(name, measured string, ok bool, vals ...float64) {
		known := true
		for _, v := range vals {
			known = known && !math.IsNaN(v) && !math.IsInf(v, 0)
		}
		if !known {
			measured = "not measured"
		}
		ts = append(ts, target{name, measured, ok, known})
	}
	t := func(name string) float64 { return res.time(name, unit) }

	chash := t(lookupName("chash", 1000))
	for _, peers := range [][]string{allRings, ringPeers} {
		lib, best := fastestOf(res, unit, "BenchmarkLookup/nodes=1000/lib=", peers)
		what := "lookup ≥ 5× faster than the fastest peer ring"
		if len(peers) == len(ringPeers) {
			what += ", leaving out buraksezer (a partition table)"
		}
		add(what, fmt.Sprintf("%s (%s %s)", ratio(best/chash), lib, dur(best)), best/chash >= 5, chash, best)
	}
	maglev := t(lookupName("maglev", 1000))
	add("lookup within 1.5× of go-maglev", fmt.Sprintf("%s (%s vs %s)", ratio(chash/maglev), dur(chash), dur(maglev)),
		chash/maglev <= 1.5, chash, maglev)
	hash := t("BenchmarkHash/fn=hashfn.XXH64")
	add("lookup ≤ 3× hashing the key alone", fmt.Sprintf("%s (%s vs %s)", ratio(chash/hash), dur(chash), dur(hash)),
		chash/hash <= 3, chash, hash)
	allocs, _ := res.median(lookupName("chash", 1000), "allocs/op", 0)
	add("lookup allocates nothing", trim(allocs)+" allocs/op", allocs == 0, allocs)
	perPoint, fixed := res.chashMemory()
	add("≤ 12 bytes per point", num(perPoint, "B"), perPoint <= 12, perPoint)
	add("fixed-size index ≤ 4 MiB", bytesize(fixed), fixed <= 4<<20, fixed)

	build := t("BenchmarkBuild/nodes=1000/lib=chash")
	lib, best := fastestOf(res, unit, "BenchmarkBuild/nodes=1000/lib=", updateLibs)
	add("build faster than every peer", fmt.Sprintf("%s: %s (%s %s)", dur(build), ratio(best/build), lib, dur(best)),
		build < best, build, best)
	for _, op := range []string{"Add", "Remove"} {
		c := t("Benchmark" + op + "/nodes=1000/lib=chash")
		lib, best := fastestOf(res, unit, "Benchmark"+op+"/nodes=1000/lib=", updateLibs)
		verb := strings.ToLower(op)
		add(verb+" one node ≤ 1 ms", dur(c), c <= 1e6, c)
		add(verb+" one node faster than every peer", fmt.Sprintf("%s (%s %s)", ratio(best/c), lib, dur(best)), c < best, c, best)
		lib, best = fastestOf(res, unit, "Benchmark"+op+"/nodes=1000/lib=", slices.DeleteFunc(slices.Clone(updateLibs), func(l string) bool { return l == "lafikl" }))
		add(verb+" one node faster than every peer, leaving out lafikl (10 points a node)",
			fmt.Sprintf("%s (%s %s)", ratio(best/c), lib, dur(best)), c < best, c, best)
	}
	reps := t("BenchmarkReplicas/nodes=1000/lib=chash")
	add("replica set (n = 3) within 2× of a single lookup", fmt.Sprintf("%s (%s vs %s)", ratio(reps/chash), dur(reps), dur(chash)),
		reps/chash <= 2, reps, chash)
	p1, _ := res.median("BenchmarkLookupParallel/nodes=1000/lib=chash", wallUnit, 1)
	p2, _ := res.median("BenchmarkLookupParallel/nodes=1000/lib=chash", wallUnit, 2)
	add("parallel lookups scale across both cores (wall time; ≥ 1.7× counts)",
		fmt.Sprintf("%s speed-up (%s → %s)", ratio(p1/p2), dur(p1), dur(p2)), p1/p2 >= 1.7, p1, p2)
	return ts
}

// fastestOf returns the library with the lowest median time in unit among
// prefix+lib.
func fastestOf(res results, unit, prefix string, libs []string) (string, float64) {
	best, bestLib := math.Inf(1), "—"
	for _, lib := range libs {
		if t := res.time(prefix+lib, unit); t < best {
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
