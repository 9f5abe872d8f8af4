package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/chash-dev/chash/internal/analyze"
	"github.com/chash-dev/chash/internal/dist"
	"github.com/chash-dev/chash/internal/plot"
)

func init() { register(newCompare) }

// Compare holds its sample keys in memory, some 90 bytes each, and some
// distributions take seconds to build over 10000 servers (ketama's ring
// about ten): the limits keep a typo from running for hours or filling the
// memory.
const (
	maxCompareNodes = 10000
	maxCompareKeys  = 10_000_000
)

type compareFlags struct {
	nodes      int
	weights    string
	keys       int
	keyFile    string
	points     int
	algorithms string
	format     string
	plot       string
}

func newCompare() *Command {
	f := new(compareFlags)
	c := &Command{
		UsageLine: "compare [--nodes N] [--weights LIST] [--keys N | --keyfile FILE] [--points P] [--algorithms LIST] [--format text|json|csv] [--plot FILE]",
		Short:     "compare the distributions side by side",
		Long: `Compare builds every distribution (chash's ring, those of the deployed
programs and the alternative algorithms) over the same N servers and keys and
prints, one row each: the lookup time, the memory the router holds, the most
and least loaded server's share over its fair share, the keys that move when a
server joins and when one leaves, as a multiple of the least that must move,
and which of weights, removal of any server and replica sets the
distribution supports.

Server i is 10.0.x.y:11211 (x.y spelling i in base 256) with the name node<i>,
which the distributions that hash names (chash's ring, twemproxy's, the
algorithms) hash; the others hash the address, as their programs would.
--weights gives the weights as a comma-separated list, repeated over the
servers (default: all 1). A distribution that cannot be built, as those
without weights when some weight is not 1, shows "-" and the reason under the
table, as does random, which sends each request to a server at random. The
joining server is called "joining", of weight 1; the leaving one is node(N/2),
or the last server for jump hashing, which can remove no other.

Balance and movement are exact where the distribution allows (arc lengths of
the rings, entries of maglev's table) and otherwise counted over the keys:
--keys sample keys (default 100000, at most 10000000, which take about 1 GB
of memory), or the lines of --keyfile, not both. --nodes is at most 10000.
Bounded loads
places the keys in turn, as chash route does, so its balance and movement are
those of that placement. Lookup times are wall-clock means over the keys on
this machine, and memory is the growth of the live heap while the router is
built: both are indications, not benchmarks. A long comparison shows a
progress bar on standard error when it is a terminal.

--algorithms limits the rows to a comma-separated list of distribution names.
--points sets the points per unit of weight of those that take it (0: each
one's default). --plot also draws the balance and movement columns as grouped
bars to FILE, a .png or .svg.

--format json prints one JSON object, a stable interface:

	{"nodes": N, "weights": [W, ...], "keys": N, "points": P,
	 "distributions": [{"name", "method", "lookup_ns", "memory_bytes",
	   "max_over_mean", "min_over_mean", "std_over_mean",
	   "add": {"moved", "ideal", "modulo_moved", "repointed"},
	   "remove": {"moved", "ideal", "modulo_moved", "repointed"},
	   "weights": true|false, "removal": "any"|"last", "replicas": true|false,
	   "error": "..."}, ...]}

"max_over_mean", "min_over_mean" and "std_over_mean" are chash analyze's;
"add" and "remove" have chash diff's fields: the fraction of the key space that
moves, the ideal (every server at its fair share), what modulo hashing over the same
servers moves, and, where servers that stay own another number of points, as in
ketama, "repointed". A distribution without figures has only its name, its
capabilities and "error". --format csv prints the same, one row per
distribution: name,method,lookup_ns,memory_bytes,max_over_mean,min_over_mean,
std_over_mean,add_moved,add_ideal,add_modulo_moved,remove_moved,remove_ideal,
remove_modulo_moved,weights,removal,replicas,error.`,
	}
	c.Flag.IntVar(&f.nodes, "nodes", 100, "compare over `N` servers")
	c.Flag.StringVar(&f.weights, "weights", "1", "server weights, a comma-separated `LIST` repeated over the servers")
	c.Flag.IntVar(&f.keys, "keys", 100000, "measure with `N` sample keys")
	c.Flag.StringVar(&f.keyFile, "keyfile", "", "measure with the keys of `FILE`, one per line")
	c.Flag.IntVar(&f.points, "points", 0, "points per unit of weight of the distributions that take them (`P`; 0: each one's default)")
	c.Flag.StringVar(&f.algorithms, "algorithms", "", "compare only the distributions in `LIST`")
	c.Flag.StringVar(&f.format, "format", "text", "print `FORMAT`: text, json or csv")
	c.Flag.StringVar(&f.plot, "plot", "", "draw the balance and movement to `FILE` (.png or .svg)")
	c.Run = f.run
	return c
}

func (f *compareFlags) run(_ context.Context, cmd *Command, env *Env, args []string) int {
	if len(args) > 0 {
		return cmd.UsageError(env.Stderr, "unexpected arguments %q", args)
	}
	if code := checkOutput(cmd, env, f.format, f.plot); code != 0 {
		return code
	}
	if f.nodes < 2 || f.nodes > maxCompareNodes {
		return cmd.UsageError(env.Stderr, "--nodes %d: want 2 to %d", f.nodes, maxCompareNodes)
	}
	keysSet := false
	cmd.Flag.Visit(func(fl *flag.Flag) { keysSet = keysSet || fl.Name == "keys" })
	if keysSet && f.keyFile != "" {
		return cmd.UsageError(env.Stderr, "--keys and --keyfile: give one")
	}
	if f.points < 0 {
		return cmd.UsageError(env.Stderr, "--points %d is negative", f.points)
	}
	weights, err := parseWeights(f.weights)
	if err != nil {
		return cmd.UsageError(env.Stderr, "--weights: %v", err)
	}
	var entries []dist.Entry
	if f.algorithms != "" {
		for name := range strings.SplitSeq(f.algorithms, ",") {
			e, err := dist.Lookup(strings.TrimSpace(name))
			if err != nil {
				return cmd.UsageError(env.Stderr, "--algorithms: %v", strings.TrimPrefix(err.Error(), "dist: "))
			}
			if slices.ContainsFunc(entries, func(o dist.Entry) bool { return o.Name == e.Name }) {
				return cmd.UsageError(env.Stderr, "--algorithms: %s is named twice", e.Name)
			}
			entries = append(entries, e)
		}
	}
	var keys [][]byte
	if f.keyFile != "" {
		if keys, err = readKeys(env, f.keyFile); err != nil {
			cmd.Errorf(env.Stderr, "%v", err)
			return 1
		}
		if len(keys) == 0 {
			cmd.Errorf(env.Stderr, "%s has no keys", f.keyFile)
			return 1
		}
	} else {
		if f.keys < 1 || f.keys > maxCompareKeys {
			return cmd.UsageError(env.Stderr, "--keys %d: want 1 to %d", f.keys, maxCompareKeys)
		}
		for k := range analyze.SampleKeys(f.keys, 1) {
			keys = append(keys, slices.Clone(k))
		}
	}
	n := len(entries)
	if n == 0 {
		n = len(dist.All())
	}
	// Progress counts keys measured, which is what takes the time.
	report := newProgress(env, n*len(keys), 1_000_000, "comparing")
	results, err := analyze.CompareDistributions(analyze.CompareConfig{
		Nodes: f.nodes, Weights: weights, Points: f.points, Keys: keys, Entries: entries,
		Progress: func(done, _ int) { report(done * len(keys)) },
	})
	if err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 1
	}
	out := compareOutput{Nodes: f.nodes, Weights: weights, Keys: len(keys), Points: f.points}
	for _, r := range results {
		out.Distributions = append(out.Distributions, newCompareRow(r))
	}
	if err := f.write(env.Stdout, &out); err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 1
	}
	if f.plot != "" {
		title := fmt.Sprintf("chash compare: %d servers, weights %s", f.nodes, f.weights)
		if err := savePlot(f.plot, func() (*plot.Chart, error) { return plot.Compare(results, title) }); err != nil {
			cmd.Errorf(env.Stderr, "%v", err)
			return 1
		}
	}
	return 0
}

// parseWeights parses --weights, a comma-separated list of positive integers.
func parseWeights(s string) ([]int, error) {
	var ws []int
	for field := range strings.SplitSeq(s, ",") {
		w, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || w < 1 {
			return nil, fmt.Errorf("weight %q is not a positive integer", field)
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// compareOutput is the JSON that compare prints.
type compareOutput struct {
	Nodes         int          `json:"nodes"`
	Weights       []int        `json:"weights"`
	Keys          int          `json:"keys"`
	Points        int          `json:"points"`
	Distributions []compareRow `json:"distributions"`
}

// compareRow is one distribution's row; a distribution without figures has
// only its name, capabilities and error.
type compareRow struct {
	Name string `json:"name"`
	*compareFigures
	Weights  bool   `json:"weights"`
	Removal  string `json:"removal"`
	Replicas bool   `json:"replicas"`
	Error    string `json:"error,omitempty"`
}

// compareFigures are the figures of a distribution that has them.
type compareFigures struct {
	Method      string           `json:"method"`
	LookupNs    int64            `json:"lookup_ns"`
	MemoryBytes uint64           `json:"memory_bytes"`
	MaxOverMean float64          `json:"max_over_mean"`
	MinOverMean float64          `json:"min_over_mean"`
	StdOverMean float64          `json:"std_over_mean"`
	Add         analyze.Movement `json:"add"`
	Remove      analyze.Movement `json:"remove"`
}

func newCompareRow(r analyze.Comparison) compareRow {
	row := compareRow{Name: r.Entry.Name, Weights: r.Entry.Weights, Removal: "any", Replicas: r.Entry.Replicas}
	if r.Entry.Removal == dist.RemoveLast {
		row.Removal = "last"
	}
	if r.Err != nil {
		row.Error = r.Err.Error()
		return row
	}
	row.compareFigures = &compareFigures{Method: r.Method, LookupNs: r.Lookup.Nanoseconds(), MemoryBytes: r.Memory,
		MaxOverMean: r.MaxOverMean, MinOverMean: r.MinOverMean, StdOverMean: r.StdOverMean, Add: r.Add, Remove: r.Remove}
	return row
}

func (f *compareFlags) write(w io.Writer, out *compareOutput) error {
	switch f.format {
	case "json":
		return writeJSON(w, out)
	case "csv":
		cw := csv.NewWriter(w)
		head := append([]string{"name", "method", "lookup_ns", "memory_bytes", "max_over_mean", "min_over_mean", "std_over_mean"},
			movementColumns...)
		cw.Write(append(head, "weights", "removal", "replicas", "error"))
		for _, r := range out.Distributions {
			row := []string{r.Name, "", "", "", "", "", "", "", "", "", "", "", ""}
			if f := r.compareFigures; f != nil {
				row = append([]string{r.Name, f.Method, strconv.FormatInt(f.LookupNs, 10), strconv.FormatUint(f.MemoryBytes, 10),
					fmtFloat(f.MaxOverMean), fmtFloat(f.MinOverMean), fmtFloat(f.StdOverMean)}, movementCells(&f.Add)...)
				row = append(row, movementCells(&f.Remove)...)
			}
			cw.Write(append(row, strconv.FormatBool(r.Weights), r.Removal, strconv.FormatBool(r.Replicas), r.Error))
		}
		cw.Flush()
		return cw.Error()
	}
	bw := bufio.NewWriter(w)
	weights := make([]string, len(out.Weights))
	for i, wt := range out.Weights {
		weights[i] = strconv.Itoa(wt)
	}
	fmt.Fprintf(bw, "%d nodes, weights %s, %d keys\n\n", out.Nodes, strings.Join(weights, ","), out.Keys)
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "distribution\tlookup\tmemory\tmax/mean\tmin/mean\tadd moves\tremove moves\tweights\tremoval\treplicas\tmeasured by\t")
	for _, r := range out.Distributions {
		removal := "yes"
		if r.Removal == "last" {
			removal = "last only"
		}
		supports := fmt.Sprintf("%s\t%s\t%s", yesNo(r.Weights), removal, yesNo(r.Replicas))
		f := r.compareFigures
		if f == nil {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t%s\t-\t\n", r.Name, supports)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%.3f\t%s\t%s\t%s\t%s\t\n", r.Name,
			durationText(time.Duration(f.LookupNs)), bytesText(f.MemoryBytes), f.MaxOverMean, f.MinOverMean,
			timesText(f.Add.OverIdeal()), timesText(f.Remove.OverIdeal()), supports, f.Method)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(bw, "\nmoves: keys that change server, as a multiple of the ideal, the joining or leaving server's fair share\n(below 1× when a joining server takes less than its share).")
	for _, r := range out.Distributions {
		if r.Error != "" { // "maglev: ...", from package maglev, names itself
			fmt.Fprintf(bw, "%s: %s\n", r.Name, strings.TrimPrefix(r.Error, r.Name+": "))
		}
		if f := r.compareFigures; f != nil && (f.Add.Repointed != nil || f.Remove.Repointed != nil) {
			var when []string
			for _, m := range []struct {
				r    *analyze.Repointed
				when string
			}{{f.Add.Repointed, "when one joins"}, {f.Remove.Repointed, "when one leaves"}} {
				if m.r != nil {
					when = append(when, fmt.Sprintf("%s, %s", m.when, repointedText(m.r)))
				}
			}
			var b strings.Builder
			wrap(&b, fmt.Sprintf("%s: %s; it sizes each server's points by the whole pool, so keys also move between servers that stay.",
				r.Name, strings.Join(when, "; ")), "")
			fmt.Fprint(bw, b.String())
		}
	}
	return bw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// timesText formats a multiple, "-" if there is none (nothing had to move).
func timesText(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', 2, 64) + "×"
}

func durationText(d time.Duration) string {
	if d < time.Microsecond {
		return strconv.FormatInt(d.Nanoseconds(), 10) + "ns"
	}
	return strconv.FormatFloat(float64(d.Nanoseconds())/1000, 'f', 1, 64) + "µs"
}

func bytesText(b uint64) string {
	switch {
	case b >= 1<<20:
		return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + "MiB"
	case b >= 1<<10:
		return strconv.FormatFloat(float64(b)/(1<<10), 'f', 1, 64) + "KiB"
	}
	return strconv.FormatUint(b, 10) + "B"
}
