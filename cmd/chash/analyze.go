package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/internal/analyze"
	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/plot"
)

func init() { register(newAnalyze) }

// similarGroups is how many groups of similar keys analyze routes to look for
// a hash that clusters them: 10,000 keys, a few milliseconds.
const similarGroups = 1000

// defaultSample is the number of sample keys routed when a router has no exact
// form.
const defaultSample = 1_000_000

type analyzeFlags struct {
	config   string
	pool     string
	keys     string
	sample   int
	format   string
	plot     string
	ringPlot string
}

func newAnalyze() *Command {
	f := new(analyzeFlags)
	c := &Command{
		UsageLine: "analyze --config FILE [--pool NAME] [--keys FILE] [--sample N] [--format text|json|csv] [--plot IMAGE] [--ring-plot IMAGE]",
		Short:     "show how evenly a pool spreads keys over its servers",
		Long: `Analyze prints each server's share of the key space for a pool of the
configuration FILE, next to its fair share (its weight over the total
weight), and the summary: the most loaded server's share over its fair share
(max/mean), the least loaded's (min/mean), and the coefficient of variation of
the load (std/mean, the root mean square of share/fair - 1).

The shares are exact wherever the distribution allows: from arc lengths for a
ring (chash and seed pools; the twemproxy-compatible rings once the config
package exposes their rings), from table entries for a lookup table. Other
distributions are measured by routing --sample generated keys (1000000 by
default) and counting; the output says which. Given --sample for an exact
distribution, analyze also routes that many sample keys and prints the sampled
shares next to the exact ones, as a cross-check.

With --keys, analyze also routes every key of FILE (one per line, as chash
route reads them; "-" for standard input) and prints how many went to each
server: the load of real keys, such as a dump of a cache's keys.

Analyze also routes 1000 groups of ten keys that differ only in their last
character (key0 ... key9, key10 ... key19, ...) and counts the groups that
went all to one server. Under a hash that mixes every byte of the key into
the whole position almost none do; under one that does not, such as
twemproxy's fnv1a_64 on a ketama ring, most do, and analyze warns: shares
computed from the ring say nothing of that.

--format json prints one JSON object, a stable interface:

	{"config": FILE, "pool": NAME, "distribution": NAME,
	 "method": "arcs"|"table"|"sample", "total": N,
	 "nodes": [{"name", "weight", "share", "expected", "ratio", "count"}, ...],
	 "max_over_mean", "min_over_mean", "std_over_mean", "most", "least",
	 "sample": {...}, "keys": {...},
	 "similar_keys": {"groups", "group_size", "together", "expected", "z"}}

Shares are fractions of the key space; "expected" is the weight-fair share,
"ratio" is share/expected, and the three summary ratios are of each node's
share to its expected share. "count" is what the share counts: ring positions
(of "total", 2^32), table entries or keys. Nodes are in the file's order.
"sample" (with --sample on an exact distribution) and "keys" (with --keys)
have the same fields as the top level, plus "stderr" per node: the standard
error of the share as an estimate of the key space's. --format csv prints one
row per server: name,weight,expected,share,ratio,count, then keys,keys_share
with --keys.

--plot writes a bar chart of the shares with the fair share marked, and
--ring-plot a picture of the ring with each server's arcs in its own colour
(ring distributions only); IMAGE ends in .png or .svg. Sampling a million keys
or more shows a progress bar on standard error when it is a terminal.`,
	}
	c.Flag.StringVar(&f.config, "config", "", "read the configuration `FILE` (required)")
	c.Flag.StringVar(&f.pool, "pool", "", "analyze the pool called `NAME` (required if FILE has several)")
	c.Flag.StringVar(&f.keys, "keys", "", "also count the keys of `FILE`, one per line (- for standard input)")
	c.Flag.IntVar(&f.sample, "sample", defaultSample, "route `N` sample keys where shares cannot be computed exactly")
	c.Flag.StringVar(&f.format, "format", "text", "print `FORMAT`: text, json or csv")
	c.Flag.StringVar(&f.plot, "plot", "", "write a bar chart of the shares to `IMAGE` (.png or .svg)")
	c.Flag.StringVar(&f.ringPlot, "ring-plot", "", "write a picture of the ring to `IMAGE` (.png or .svg)")
	c.Run = f.run
	return c
}

// analyzeOutput is the JSON that analyze prints.
type analyzeOutput struct {
	Config       string `json:"config"`
	Pool         string `json:"pool"`
	Distribution string `json:"distribution"`
	*analyze.Balance
	Sample *analyze.Balance `json:"sample,omitempty"`
	Keys   *analyze.Balance `json:"keys,omitempty"`
	// SimilarKeys is how the pool routes keys that differ only in their
	// last character.
	SimilarKeys *analyze.Clustering `json:"similar_keys"`
}

func (f *analyzeFlags) run(_ context.Context, cmd *Command, env *Env, args []string) int {
	if f.config == "" {
		return cmd.UsageError(env.Stderr, "--config is required")
	}
	if len(args) > 0 {
		return cmd.UsageError(env.Stderr, "unexpected argument %q", args[0])
	}
	if code := checkOutput(cmd, env, f.format, f.plot, f.ringPlot); code != 0 {
		return code
	}
	if f.sample < 1 {
		return cmd.UsageError(env.Stderr, "--sample %d: want at least 1", f.sample)
	}
	pool, r, code := loadPool(cmd, env, f.config, f.pool)
	if code != 0 {
		return code
	}
	nodes, names := poolNodes(pool.Servers)
	out := analyzeOutput{Config: f.config, Pool: pool.Name, Distribution: pool.Distribution}
	b, err := analyze.Measure(r, nodes, hashKeys(pool, progressKeys(env, analyze.SampleKeys(f.sample, 1), f.sample, "sampling")))
	if err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 1
	}
	b.Reorder(names)
	out.Balance = b
	if out.SimilarKeys, err = analyze.Cluster(r, b, similarGroups, pool.HashKey); err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 1
	}
	if b.Method != analyze.MethodSample && flagSet(&cmd.Flag, "sample") {
		s, err := analyze.Sample(r, nodes, hashKeys(pool, progressKeys(env, analyze.SampleKeys(f.sample, 1), f.sample, "sampling")))
		if err != nil {
			cmd.Errorf(env.Stderr, "%v", err)
			return 1
		}
		s.Reorder(names)
		out.Sample = s
	}
	if f.keys != "" {
		k, err := countKeyFile(env, f.keys, pool, r, nodes)
		if err != nil {
			cmd.Errorf(env.Stderr, "%v", err)
			return 1
		}
		k.Reorder(names)
		out.Keys = k
	}
	if err := f.write(env.Stdout, &out); err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 1
	}
	if f.plot != "" {
		title := fmt.Sprintf("Pool %q (%s), %d servers", pool.Name, pool.Distribution, len(nodes))
		if err := savePlot(f.plot, func() (*plot.Chart, error) { return plot.Shares(b, title) }); err != nil {
			cmd.Errorf(env.Stderr, "%v", err)
			return 1
		}
	}
	if f.ringPlot != "" {
		ring, rename := ringOf(r)
		if ring == nil {
			cmd.Errorf(env.Stderr, "--ring-plot: distribution %s has no ring to draw", pool.Distribution)
			return 1
		}
		pic := plot.RingPicture{
			Title:  fmt.Sprintf("Pool %q (%s), %d servers", pool.Name, pool.Distribution, len(nodes)),
			Nodes:  names,
			Labels: shareLabels(b, names),
			Layers: []plot.Layer{{Arcs: renameArcs(analyze.Arcs(ring), rename)}},
		}
		if err := savePlot(f.ringPlot, func() (*plot.Chart, error) { return plot.Ring(pic) }); err != nil {
			cmd.Errorf(env.Stderr, "%v", err)
			return 1
		}
	}
	return 0
}

func (f *analyzeFlags) write(w io.Writer, out *analyzeOutput) error {
	switch f.format {
	case "json":
		return writeJSON(w, out)
	case "csv":
		cw := csv.NewWriter(w)
		head := []string{"name", "weight", "expected", "share", "ratio", "count"}
		if out.Keys != nil {
			head = append(head, "keys", "keys_share")
		}
		cw.Write(head)
		for i, n := range out.Nodes {
			row := []string{n.Name, strconv.Itoa(n.Weight), fmtFloat(n.Expected), fmtFloat(n.Share), fmtFloat(n.Ratio), strconv.FormatUint(n.Count, 10)}
			if out.Keys != nil {
				k := out.Keys.Nodes[i]
				row = append(row, strconv.FormatUint(k.Count, 10), fmtFloat(k.Share))
			}
			cw.Write(row)
		}
		cw.Flush()
		return cw.Error()
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "pool %q of %s: distribution %s, %d servers\n", out.Pool, out.Config, out.Distribution, len(out.Nodes))
	fmt.Fprintf(bw, "shares: %s\n", methodText(out.Balance))
	if out.Sample != nil {
		fmt.Fprintf(bw, "sampled: %d generated keys routed, for comparison\n", out.Sample.Total)
	}
	if out.Keys != nil {
		fmt.Fprintf(bw, "keys: %d keys of the key file routed\n", out.Keys.Total)
	}
	fmt.Fprintln(bw)
	head := []string{"server", "weight", "fair share", "share", "share/fair"}
	if out.Sample != nil {
		head = append(head, "sampled", "±")
	}
	if out.Keys != nil {
		head = append(head, "keys", "keys share")
	}
	rows := make([][]string, len(out.Nodes))
	for i, n := range out.Nodes {
		row := []string{n.Name, strconv.Itoa(n.Weight), pct(n.Expected), pct(n.Share), fmt.Sprintf("%.3f", n.Ratio)}
		if out.Sample != nil {
			s := out.Sample.Nodes[i]
			row = append(row, pct(s.Share), pct(s.StdErr))
		}
		if out.Keys != nil {
			k := out.Keys.Nodes[i]
			row = append(row, strconv.FormatUint(k.Count, 10), pct(k.Share))
		}
		rows[i] = row
	}
	writeTable(bw, "", head, rows, "l")
	fmt.Fprintln(bw)
	summary(bw, "", out.Balance)
	if out.Keys != nil {
		fmt.Fprintln(bw)
		summary(bw, "keys: ", out.Keys)
	}
	if c := out.SimilarKeys; c != nil {
		fmt.Fprintln(bw)
		fmt.Fprintf(bw, "similar keys: %d of %d groups of %d keys that differ only in their last character\n", c.Together, c.Groups, c.GroupSize)
		fmt.Fprintf(bw, "(key<n>0 ... key<n>9) went all to one server; random keys: %.2f\n", c.Expected)
		if c.Clustered() {
			fmt.Fprintf(bw, "warning: the hash clusters such keys on one server (%.0f standard deviations\n", c.Z)
			fmt.Fprintf(bw, "beyond chance); where routing need not match a deployed program, prefer md5 or xxh64\n")
		}
	}
	return bw.Flush()
}

// writeTable writes rows under head (if not nil) in columns two spaces apart,
// each line starting with indent; align has an 'l' (left) or 'r' (right) for
// each column.
func writeTable(w io.Writer, indent string, head []string, rows [][]string, align string) {
	if head != nil {
		rows = append([][]string{head}, rows...)
	}
	var width []int
	for _, r := range rows {
		for i, c := range r {
			if i == len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		b.WriteString(indent)
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if i < len(align) && align[i] == 'l' {
				b.WriteString(c)
				b.WriteString(pad)
			} else {
				b.WriteString(pad)
				b.WriteString(c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// summary prints a balance's three ratios, naming the extreme nodes.
func summary(w io.Writer, prefix string, b *analyze.Balance) {
	fmt.Fprintf(w, "%smax/mean %.3f (%s)\n", prefix, b.MaxOverMean, b.Most)
	fmt.Fprintf(w, "%smin/mean %.3f (%s)\n", prefix, b.MinOverMean, b.Least)
	fmt.Fprintf(w, "%sstd/mean %.3f\n", prefix, b.StdOverMean)
}

func methodText(b *analyze.Balance) string {
	switch b.Method {
	case analyze.MethodArcs:
		return "exact, from arc lengths on the ring of 2^32 positions"
	case analyze.MethodTable:
		return fmt.Sprintf("exact, from the %d entries of the lookup table", b.Total)
	case analyze.MethodSample:
		return fmt.Sprintf("sampled, %d generated keys routed (the distribution has no exact form)", b.Total)
	}
	return fmt.Sprintf("%d keys counted", b.Total)
}

// pct formats a fraction as a percentage with two decimals.
func pct(f float64) string { return strconv.FormatFloat(100*f, 'f', 2, 64) + "%" }

// fmtFloat formats a float for CSV: the shortest form that reads back exactly.
func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// checkOutput checks the --format and plot flags shared by the analysis commands.
func checkOutput(cmd *Command, env *Env, format string, plots ...string) int {
	switch format {
	case "text", "json", "csv":
	default:
		return cmd.UsageError(env.Stderr, "--format %q: want text, json or csv", format)
	}
	for _, p := range plots {
		if p == "" {
			continue
		}
		if _, err := plot.Format(p); err != nil {
			return cmd.UsageError(env.Stderr, "%v", err)
		}
	}
	return 0
}

// loadPool loads a pool and builds its router; on failure it reports the error
// and returns the exit status.
func loadPool(cmd *Command, env *Env, path, name string) (*config.Pool, config.Router, int) {
	file, err := config.Load(path)
	if err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return nil, nil, 2
	}
	pool, err := file.Pool(name)
	if err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return nil, nil, 2
	}
	r, err := pool.Router()
	if err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return nil, nil, 2
	}
	return pool, r, 0
}

// poolNodes returns servers as nodes, named as the routers report them, and
// their names, in the file's order.
func poolNodes(servers []config.Server) ([]chash.Node, []string) {
	nodes := make([]chash.Node, len(servers))
	names := make([]string, len(servers))
	for i, s := range servers {
		nodes[i] = chash.Node{Name: s.Name(), Weight: s.Weight}
		names[i] = s.Name()
	}
	return nodes, names
}

// ringOf returns the ring behind a router, and how its node names map to the
// router's, or nil if the router has no ring.
func ringOf(r config.Router) (*chash.Ring, map[string]string) {
	switch r := r.(type) {
	case *chash.Ring:
		return r, nil
	case analyze.RingRouter:
		return r.Ring()
	}
	return nil, nil
}

func renameArcs(arcs []analyze.Arc, names map[string]string) []analyze.Arc {
	for i, a := range arcs {
		if n, ok := names[a.Node]; ok {
			arcs[i].Node = n
		}
	}
	return arcs
}

// shareLabels returns legend labels "name  12.34%" in names order.
func shareLabels(b *analyze.Balance, names []string) []string {
	labels := make([]string, len(names))
	for i, name := range names {
		labels[i] = name
		if n, ok := b.Node(name); ok {
			labels[i] = fmt.Sprintf("%s  %s", name, pct(n.Share))
		}
	}
	return labels
}

// hashKeys passes each key through the pool's hash tag, as the proxy does.
func hashKeys(pool *config.Pool, keys iter.Seq[[]byte]) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for k := range keys {
			if !yield(pool.HashKey(k)) {
				return
			}
		}
	}
}

// countKeyFile routes every line of the named file ("-": standard input).
func countKeyFile(env *Env, path string, pool *config.Pool, r config.Router, nodes []chash.Node) (*analyze.Balance, error) {
	var in io.Reader = env.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in = f
	}
	var readErr error
	lines := func(yield func([]byte) bool) {
		stop := errors.New("stop")
		err := eachLine(in, bufio.NewWriter(io.Discard), func(line []byte) error {
			if !yield(line) {
				return stop
			}
			return nil
		})
		if err != nil && err != stop {
			readErr = err
		}
	}
	b, err := analyze.Count(r, nodes, hashKeys(pool, lines))
	if readErr != nil {
		return nil, fmt.Errorf("reading %s: %w", path, readErr)
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// savePlot builds a chart and saves it.
func savePlot(path string, build func() (*plot.Chart, error)) error {
	c, err := build()
	if err != nil {
		return err
	}
	return c.Save(path)
}

// newProgress returns a function that reports progress towards total on a bar
// on standard error, when standard error is a terminal and total is at least
// least; otherwise a function that does nothing. The bar clears itself when
// done.
func newProgress(env *Env, total, least int, what string) func(done int) {
	f, ok := env.Stderr.(*os.File)
	if !ok || total < least || !term.IsTerminal(int(f.Fd())) {
		return func(int) {}
	}
	bar := progressbar.NewOptions64(int64(total),
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(what),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionShowCount(),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetWidth(30),
	)
	return func(done int) {
		bar.Set64(int64(done))
		if done >= total {
			bar.Finish()
		}
	}
}

// progressKeys reports progress through keys, n in all, on a bar when there are
// a million or more (see newProgress). The bar appears only once the keys are
// used.
func progressKeys(env *Env, keys iter.Seq[[]byte], n int, what string) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		report := newProgress(env, n, 1_000_000, what)
		i := 0
		for k := range keys {
			if !yield(k) {
				return
			}
			if i++; i&0xffff == 0 || i == n {
				report(i)
			}
		}
	}
}
