package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"iter"
	"strconv"

	"github.com/chash-dev/chash/internal/analyze"
	"github.com/chash-dev/chash/internal/plot"
)

func init() { register(newAnalyze) }

// similarGroups is how many groups of similar keys analyze routes to look for
// a hash that clusters them: 10,000 keys, a few milliseconds.
const similarGroups = 1000

// defaultSample is the number of sample keys routed when a router has no exact
// form.
const defaultSample = 1_000_000

// maxSample bounds --sample: a billion keys take minutes to route, or more,
// and a share's standard error is below 0.002% of the keys there already, so
// a larger sample would run for hours to measure nothing more.
const maxSample = 1_000_000_000

// checkSample refuses a --sample out of range.
func checkSample(cmd *Command, env *Env, n int) int {
	if n < 1 || n > maxSample {
		return cmd.UsageError(env.Stderr, "--sample %d: want 1 to %d", n, maxSample)
	}
	return 0
}

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
ring (chash, seed, balanced and the rings of deployed programs: ketama,
libketama, spymemcached, libmemcached, nginx, groupcache, stathat), from table
entries for maglev's lookup table. A ring counts only the positions keys can
hash to: twemproxy's crc32 returns 0..32767 (java_hashcode_spread and
java_fnv1_32 return 31 bits), so each of its keys goes to the first point at
or after its hash, and arcs past 32767 own no keys. Maglev with a hash: of the
pool is measured by routing keys. A load-aware distribution (bounded) places
--sample generated keys (1000000 by default, at most 1000000000) in turn,
each counting as load, as chash route places the keys it reads; the others
are measured by routing that many keys and counting. The output says which. Given --sample for an exact
distribution, analyze also routes that many sample keys and prints the sampled
shares next to the exact ones, as a cross-check. A pool whose distribution is
random has no shares to measure: each request goes to a server at random. A
pool whose servers live in etcd or in a file (servers_from:) is measured over
the servers listed there now, read once.

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
	 "method": "arcs"|"table"|"sample"|"placed", "total": N,
	 "nodes": [{"name", "weight", "share", "expected", "ratio", "count"}, ...],
	 "max_over_mean", "min_over_mean", "std_over_mean", "most", "least",
	 "sample": {...}, "keys": {...},
	 "similar_keys": {"groups", "group_size", "together", "expected", "z"}}

Shares are fractions of the key space; "expected" is the weight-fair share,
"ratio" is share/expected, and the three summary ratios are of each node's
share to its expected share. "count" is what the share counts: ring positions
(of "total": 2^32, or fewer for a hash of fewer than 32 bits), table entries
or keys. Nodes are in the file's order.
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
	// Drained are the servers of the pool's drain: list, which own no keys.
	Drained []string `json:"drained,omitempty"`
	*analyze.Balance
	Sample *analyze.Balance `json:"sample,omitempty"`
	Keys   *analyze.Balance `json:"keys,omitempty"`
	// SimilarKeys is how the pool routes keys that differ only in their
	// last character.
	SimilarKeys *analyze.Clustering `json:"similar_keys"`
}

func (f *analyzeFlags) run(ctx context.Context, cmd *Command, env *Env, args []string) int {
	if f.config == "" {
		return cmd.UsageError(env.Stderr, "--config is required")
	}
	if len(args) > 0 {
		return cmd.UsageError(env.Stderr, "unexpected argument %q", args[0])
	}
	if code := checkOutput(cmd, env, f.format, f.plot, f.ringPlot); code != 0 {
		return code
	}
	if code := checkSample(cmd, env, f.sample); code != 0 {
		return code
	}
	p, code := loadPool(ctx, cmd, env, f.config, f.pool)
	if code != 0 {
		return code
	}
	pool, code := measure(cmd, env, p, p.Servers)
	if code != 0 {
		return code
	}
	var arcs []analyze.Arc
	if f.ringPlot != "" {
		if arcs = pool.Arcs(); arcs == nil {
			return cmd.UsageError(env.Stderr, "--ring-plot: distribution %s has no ring to draw", p.Distribution)
		}
	}
	out := analyzeOutput{Config: f.config, Pool: p.Name, Distribution: p.Distribution, Drained: drainedOf(p, p.Servers)}
	sample := func() iter.Seq[[]byte] {
		return progressKeys(env, analyze.SampleKeys(f.sample, 1), f.sample, "sampling")
	}
	b, err := pool.Balance(sample())
	if err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 1
	}
	out.Balance = b
	if out.SimilarKeys, err = pool.Cluster(b, similarGroups); err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 1
	}
	if b.Exact() && flagSet(&cmd.Flag, "sample") {
		if out.Sample, err = pool.Sample(sample()); err != nil {
			cmd.Errorf(env.Stderr, "%v", err)
			return 1
		}
	}
	if f.keys != "" {
		if out.Keys, err = countKeyFile(env, f.keys, pool); err != nil {
			cmd.Errorf(env.Stderr, "%v", err)
			return 1
		}
	}
	if err := f.write(env.Stdout, &out); err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 1
	}
	title := fmt.Sprintf("Pool %q (%s), %s", p.Name, p.Distribution, serversText(len(pool.Nodes)))
	if f.plot != "" {
		if err := savePlot(f.plot, func() (*plot.Chart, error) { return plot.Shares(b, title) }); err != nil {
			cmd.Errorf(env.Stderr, "%v", err)
			return 1
		}
	}
	if f.ringPlot != "" {
		pic := plot.RingPicture{Title: title, Nodes: pool.Names(), Labels: shareLabels(b, pool.Names()), Layers: []plot.Layer{{Arcs: arcs}}}
		if err := savePlot(f.ringPlot, func() (*plot.Chart, error) { return plot.Ring(pic) }); err != nil {
			cmd.Errorf(env.Stderr, "%v", err)
			return 1
		}
	}
	return 0
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

// countKeyFile routes every line of the named file ("-": standard input).
func countKeyFile(env *Env, path string, pool *analyze.Pool) (*analyze.Balance, error) {
	lines, readErr, err := keyFile(env, path)
	if err != nil {
		return nil, err
	}
	n := 0
	b, err := pool.Count(func(yield func([]byte) bool) {
		for k := range lines {
			n++
			if !yield(k) {
				return
			}
		}
	})
	if err := readErr(); err != nil {
		return nil, err
	}
	if n == 0 {
		if path == "-" {
			path = "standard input"
		}
		return nil, fmt.Errorf("%s has no keys", path)
	}
	return b, err
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
	fmt.Fprintf(bw, "pool %q of %s: distribution %s, %s%s\n", out.Pool, out.Config, out.Distribution, serversText(len(out.Nodes)), drainedText(out.Drained))
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

// summary prints a balance's three ratios, naming the extreme nodes.
func summary(w io.Writer, prefix string, b *analyze.Balance) {
	fmt.Fprintf(w, "%smax/mean %.3f (%s)\n", prefix, b.MaxOverMean, b.Most)
	fmt.Fprintf(w, "%smin/mean %.3f (%s)\n", prefix, b.MinOverMean, b.Least)
	fmt.Fprintf(w, "%sstd/mean %.3f\n", prefix, b.StdOverMean)
}

func methodText(b *analyze.Balance) string {
	switch b.Method {
	case analyze.MethodArcs:
		if b.Total != analyze.RingSize {
			return fmt.Sprintf("exact, from arc lengths over the %d ring positions the hash reaches", b.Total)
		}
		return "exact, from arc lengths on the ring of 2^32 positions"
	case analyze.MethodTable:
		return fmt.Sprintf("exact, from the %d entries of the lookup table", b.Total)
	case analyze.MethodSample:
		return fmt.Sprintf("sampled, %d generated keys routed (the distribution has no exact form)", b.Total)
	case analyze.MethodPlaced:
		return fmt.Sprintf("placed, %d generated keys placed in turn, each counting as load (the distribution is load-aware)", b.Total)
	}
	return fmt.Sprintf("%d keys counted", b.Total)
}
