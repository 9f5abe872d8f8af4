package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/internal/analyze"
	"github.com/chash-dev/chash/internal/dist"
	"github.com/chash-dev/chash/internal/plot"
)

func init() { register(newSweep) }

type sweepFlags struct {
	scheme      string
	nodes       string
	points      string
	trials      int
	churnPoints int
	format      string
	plot        string
	churnPlot   string
}

// sweepScheme returns the ring scheme sweep uses for the distribution called
// name (dist.Entry.Sweep), or an error naming the distributions that have one.
func sweepScheme(name string) (chash.Scheme, error) {
	var names []string
	for _, e := range dist.All() {
		if e.Sweep == nil {
			continue
		}
		if e.Name == name {
			return e.Sweep, nil
		}
		names = append(names, e.Name)
	}
	slices.Sort(names)
	if _, err := dist.Lookup(name); err == nil {
		return nil, fmt.Errorf("distribution %s is not a ring of points to sweep (rings: %s)", name, strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("unknown (known: %s)", strings.Join(names, ", "))
}

func newSweep() *Command {
	f := new(sweepFlags)
	c := &Command{
		UsageLine: "sweep [--scheme NAME] [--nodes LIST] [--points LIST] [--trials N] [--churn-points N] [--format text|json|csv] [--plot IMAGE] [--churn-plot IMAGE]",
		Short:     "tabulate balance against points per node, and movement against cluster size",
		Long: `Sweep answers the sizing questions of the seed articles: how many points
(virtual nodes) per server a ring needs to spread keys evenly, and how many
keys move when a server joins or leaves.

For every cluster size in --nodes (default 5,10,50,100) and every number of
points per node in --points (default 1..500), sweep builds --trials rings
(default 10) of different server names and prints their exact balance,
averaged: std/mean (the coefficient of variation of the shares, averaged as
a mean square), max/mean and min/mean (the most and least loaded server's
share over the fair share), and, for comparison, std/mean expected of points
placed at random, sqrt((N-1)/(N*V+1)) for N nodes of V points.

Then, for every cluster size, it adds a server to rings of --churn-points
points per node (default 160) and removes one, and prints the fraction of keys
that moves, exactly, next to the ideal (the joining server's fair share; the
leaving server's share) and to modulo hashing over the same servers.

--scheme is the name of a distribution that places points on a ring: chash
(the default), seed, ketama, libketama, spymemcached, libmemcached, nginx,
groupcache or stathat. Each node gets the first V points of the scheme's own
sequence of points for it, and keys are hashed with the scheme's default
hash; ketama-style schemes, which normally fix 160 points per server, are
swept over V as well. Servers are named 10.T.X.Y:11211 for ring T of a cell (port 11212 from the
65537th server on, and so on).

A LIST is numbers separated by commas (5,10,50), a range A..B of roughly
evenly spaced numbers on a log scale (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20,
25, 30, 40, 50, 60, 80, 100, ...), or A..B:S, every S-th number from A to B.

--format json prints one JSON object, a stable interface:

	{"scheme": NAME, "trials": N, "churn_points": N,
	 "balance": [{"nodes", "points", "std_over_mean", "random_std_over_mean",
	              "max_over_mean", "min_over_mean"}, ...],
	 "churn": [{"nodes", "points",
	            "add": {"moved", "ideal", "modulo_moved"},
	            "remove": {"moved", "ideal", "modulo_moved"}}, ...]}

The movement's three fields are chash diff's: the fraction of the key space
that moves, the ideal (the joining server's fair share; the leaving server's
share) and what modulo hashing would move. A ring of one
server has no "remove".

--format csv prints both tables as rows of one table, whose first column,
record, is "balance" or "churn"; the columns of the other kind are empty, and
the churn columns are add_ and remove_ followed by the movement's fields.

--plot writes the seed articles' chart: std/mean (log scale, with the
closed form dashed) and max/mean against points per node, one line per
cluster size; --churn-plot the moved fractions against cluster size. IMAGE
ends in .png or .svg. A long sweep shows a progress bar on standard error when
it is a terminal.`,
	}
	c.Flag.StringVar(&f.scheme, "scheme", "chash", "sweep rings of the distribution `NAME`")
	c.Flag.StringVar(&f.nodes, "nodes", "5,10,50,100", "the cluster sizes: a `LIST`")
	c.Flag.StringVar(&f.points, "points", "1..500", "the points per node: a `LIST`")
	c.Flag.IntVar(&f.trials, "trials", 10, "average over `N` rings of different names")
	c.Flag.IntVar(&f.churnPoints, "churn-points", chash.DefaultPoints, "points per node of the rings servers join and leave: `N`")
	c.Flag.StringVar(&f.format, "format", "text", "print `FORMAT`: text, json or csv")
	c.Flag.StringVar(&f.plot, "plot", "", "write the balance chart to `IMAGE` (.png or .svg)")
	c.Flag.StringVar(&f.churnPlot, "churn-plot", "", "write the movement chart to `IMAGE` (.png or .svg)")
	c.Run = f.run
	return c
}

// sweepOutput is the JSON that sweep prints.
type sweepOutput struct {
	Scheme      string               `json:"scheme"`
	Trials      int                  `json:"trials"`
	ChurnPoints int                  `json:"churn_points"`
	Balance     []analyze.SweepPoint `json:"balance"`
	Churn       []analyze.ChurnPoint `json:"churn"`
}

// maxSweepPoints caps the points of one ring in a sweep, to keep a typo from
// taking all memory.
const maxSweepPoints = 1 << 24

func (f *sweepFlags) run(_ context.Context, cmd *Command, env *Env, args []string) int {
	if len(args) > 0 {
		return cmd.UsageError(env.Stderr, "unexpected argument %q", args[0])
	}
	if code := checkOutput(cmd, env, f.format, f.plot, f.churnPlot); code != 0 {
		return code
	}
	base, err := sweepScheme(f.scheme)
	if err != nil {
		return cmd.UsageError(env.Stderr, "--scheme %q: %v", f.scheme, err)
	}
	nodes, err := parseList(f.nodes)
	if err != nil {
		return cmd.UsageError(env.Stderr, "--nodes %q: %v", f.nodes, err)
	}
	points, err := parseList(f.points)
	if err != nil {
		return cmd.UsageError(env.Stderr, "--points %q: %v", f.points, err)
	}
	if f.trials < 1 || f.trials > 10000 || f.churnPoints < 1 {
		return cmd.UsageError(env.Stderr, "--trials %d, --churn-points %d: want 1 to 10000 trials and at least 1 point", f.trials, f.churnPoints)
	}
	// Compared by division: n*p of two large numbers wraps round to a small one.
	if n, p := slices.Max(nodes), slices.Max(points); n > maxSweepPoints/p {
		return cmd.UsageError(env.Stderr, "--nodes %d, --points %d: more than %d points in a ring", n, p, maxSweepPoints)
	}
	if n, p := slices.Max(nodes), f.churnPoints; n > maxSweepPoints/p {
		return cmd.UsageError(env.Stderr, "--nodes %d, --churn-points %d: more than %d points in a ring", n, p, maxSweepPoints)
	}
	var work, done int
	for _, n := range nodes {
		for _, p := range points {
			work += n * p * f.trials
		}
		work += 3 * (n + 1) * f.churnPoints * f.trials
	}
	// Progress counts points built, which is what takes the time.
	report := newProgress(env, work, 5_000_000, "sweeping")
	cfg := analyze.SweepConfig{
		Scheme:      analyze.PerNode(base),
		Nodes:       nodes,
		Points:      points,
		ChurnPoints: f.churnPoints,
		Trials:      f.trials,
	}
	out := sweepOutput{Scheme: f.scheme, Trials: f.trials, ChurnPoints: f.churnPoints}
	for _, n := range nodes {
		for _, p := range points {
			c := cfg
			c.Nodes, c.Points = []int{n}, []int{p}
			pts, err := analyze.Sweep(c)
			if err != nil {
				cmd.Errorf(env.Stderr, "%v", err)
				return 1
			}
			out.Balance = append(out.Balance, pts...)
			done += n * p * f.trials
			report(done)
		}
	}
	for _, n := range nodes {
		c := cfg
		c.Nodes = []int{n}
		pts, err := analyze.Churn(c)
		if err != nil {
			cmd.Errorf(env.Stderr, "%v", err)
			return 1
		}
		out.Churn = append(out.Churn, pts...)
		done += 3 * (n + 1) * f.churnPoints * f.trials
		report(done)
	}
	if err := f.write(env.Stdout, &out); err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 1
	}
	if f.plot != "" {
		title := fmt.Sprintf("%s rings: balance against points per node (%s)", f.scheme, trialsText(f.trials))
		if err := savePlot(f.plot, func() (*plot.Chart, error) { return plot.Sweep(out.Balance, title) }); err != nil {
			cmd.Errorf(env.Stderr, "%v", err)
			return 1
		}
	}
	if f.churnPlot != "" {
		title := fmt.Sprintf("%s rings of %d points per node: keys moved when one node joins or leaves", f.scheme, f.churnPoints)
		if err := savePlot(f.churnPlot, func() (*plot.Chart, error) { return plot.Churn(out.Churn, title) }); err != nil {
			cmd.Errorf(env.Stderr, "%v", err)
			return 1
		}
	}
	return 0
}

func trialsText(n int) string {
	if n == 1 {
		return "one ring per point"
	}
	return fmt.Sprintf("mean of %d rings", n)
}

func (f *sweepFlags) write(w io.Writer, out *sweepOutput) error {
	switch f.format {
	case "json":
		return writeJSON(w, out)
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write(append([]string{"record", "nodes", "points", "std_over_mean", "random_std_over_mean", "max_over_mean", "min_over_mean"},
			movementColumns...))
		for _, p := range out.Balance {
			cw.Write([]string{"balance", strconv.Itoa(p.Nodes), strconv.Itoa(p.Points), fmtFloat(p.StdOverMean), fmtFloat(p.Random),
				fmtFloat(p.MaxOverMean), fmtFloat(p.MinOverMean), "", "", "", "", "", ""})
		}
		for _, c := range out.Churn {
			row := append([]string{"churn", strconv.Itoa(c.Nodes), strconv.Itoa(c.Points), "", "", "", ""}, movementCells(&c.Add)...)
			cw.Write(append(row, movementCells(c.Remove)...))
		}
		cw.Flush()
		return cw.Error()
	}
	bw := bufio.NewWriter(w)
	names := " of different names"
	if out.Trials == 1 {
		names = ""
	}
	fmt.Fprintf(bw, "balance of %s rings against points per node: exact shares, %s%s\n", out.Scheme, trialsText(out.Trials), names)
	fmt.Fprintln(bw, "(random: std/mean expected of points placed at random, sqrt((N-1)/(N*V+1)))")
	var rows [][]string
	for i, p := range out.Balance {
		if i > 0 && p.Nodes != out.Balance[i-1].Nodes {
			rows = append(rows, nil)
		}
		rows = append(rows, []string{strconv.Itoa(p.Nodes), strconv.Itoa(p.Points), f3(p.StdOverMean), f3(p.Random), f3(p.MaxOverMean), f3(p.MinOverMean)})
	}
	fmt.Fprintln(bw)
	writeTable(bw, "", []string{"nodes", "points", "std/mean", "random", "max/mean", "min/mean"}, rows, "")
	fmt.Fprintf(bw, "\nkeys that move when a node joins or leaves %s rings of %d points per node (exact, %s)\n\n",
		out.Scheme, out.ChurnPoints, trialsText(out.Trials))
	rows = rows[:0]
	for _, c := range out.Churn {
		leave := []string{"-", "-", "-"}
		if r := c.Remove; r != nil {
			leave = []string{pct(r.Moved), pct(r.Ideal), pct(r.ModuloMoved)}
		}
		rows = append(rows, append([]string{strconv.Itoa(c.Nodes), pct(c.Add.Moved), pct(c.Add.Ideal), pct(c.Add.ModuloMoved)}, leave...))
	}
	writeTable(bw, "", []string{"nodes", "join: ring", "ideal", "modulo", "leave: ring", "ideal", "modulo"}, rows, "")
	return bw.Flush()
}

// parseList parses a LIST of positive numbers: "5,10,50", "A..B" (a 1-1.2-1.5-
// 2-2.5-3-4-5-6-8 series between A and B, both included) or "A..B:S".
func parseList(s string) ([]int, error) {
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "..")
		if !isRange {
			n, err := positive(part)
			if err != nil {
				return nil, err
			}
			out = append(out, n)
			continue
		}
		hi, stepText, stepped := strings.Cut(hi, ":")
		a, err := positive(lo)
		if err != nil {
			return nil, err
		}
		b, err := positive(hi)
		if err != nil {
			return nil, err
		}
		if b < a {
			return nil, fmt.Errorf("range %s ends before it starts", part)
		}
		if stepped {
			step, err := positive(stepText)
			if err != nil {
				return nil, err
			}
			if (b-a)/step > 100_000 {
				return nil, fmt.Errorf("range %s has more than 100000 numbers", part)
			}
			// Counted, not compared with b: n += step past b may wrap
			// round to a negative number, below b again.
			for i := range (b-a)/step + 1 {
				out = append(out, a+i*step)
			}
			continue
		}
		out = append(out, logSeries(a, b)...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func positive(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%q is not a positive integer", s)
	}
	return n, nil
}

// logSeries returns a and b and, between them, the whole numbers of the series
// 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times each power of ten.
func logSeries(a, b int) []int {
	out := []int{a}
	for e := 1.0; e <= float64(b); e *= 10 {
		for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8} {
			v := m * e
			if v == math.Trunc(v) && int(v) > a && int(v) < b {
				out = append(out, int(v))
			}
		}
	}
	return append(out, b)
}
