package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	gonum "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	ring "github.com/chash-dev/chash" // the name chash is taken by a test helper
	"github.com/chash-dev/chash/balanced"
	"github.com/chash-dev/chash/bounded"
	"github.com/chash-dev/chash/internal/analyze"
	"github.com/chash-dev/chash/internal/plot"
	"github.com/chash-dev/chash/jump"
	"github.com/chash-dev/chash/maglev"
	"github.com/chash-dev/chash/memento"
	"github.com/chash-dev/chash/multiprobe"
	"github.com/chash-dev/chash/rendezvous"
)

func init() { register(newCompare) }

type compareFlags struct {
	nodes      int
	weights    string
	keys       int
	keyFile    string
	points     int
	algorithms string
	plot       string
}

func newCompare() *Command {
	f := new(compareFlags)
	c := &Command{
		UsageLine: "compare [--nodes N] [--weights LIST] [--keys N | --keyfile FILE] [--points P] [--algorithms LIST] [--plot FILE]",
		Short:     "compare the distribution algorithms side by side",
		Long: `Compare builds every distribution algorithm over the same N nodes and
keys and prints, one row each: the lookup time, the memory the router
holds, the most and least loaded node's share over its fair share, the keys
that move when a node joins and when one leaves, as a multiple of the least
that must move, and which of weights, removal of any node and replica sets
the algorithm supports.

The nodes are named node0 to node(N-1); --weights gives their weights as a
comma-separated list, repeated over the nodes (default: all 1). An
algorithm that cannot be built, as those without weights when some weight
is not 1, shows "-" and the reason under the table. The joining node is
called "joining", of weight 1; the leaving one is node(N/2), or the last
node for jump hashing, which can remove no other.

Balance and movement are exact where the router allows (arc lengths of the
rings chash and balanced, entries of maglev's table) and otherwise counted
over the keys: --keys sample keys (default 100000), or the lines of
--keyfile. Bounded loads places the keys in turn, as chash route does, so
its balance and movement are those of that placement. Lookup times are
wall-clock means over the keys on this machine, and memory is the growth of
the live heap while the router is built: both are indications, not
benchmarks.

--algorithms limits the rows to a comma-separated list of names, those of
the configuration's distribution key plus chash (the default ring). --plot
also draws the balance and movement columns as grouped bars to FILE, a .png
or .svg.`,
	}
	c.Flag.IntVar(&f.nodes, "nodes", 100, "compare over `N` nodes")
	c.Flag.StringVar(&f.weights, "weights", "1", "node weights, a comma-separated `LIST` repeated over the nodes")
	c.Flag.IntVar(&f.keys, "keys", 100000, "measure with `N` sample keys")
	c.Flag.StringVar(&f.keyFile, "keyfile", "", "measure with the keys of `FILE`, one per line")
	c.Flag.IntVar(&f.points, "points", 0, "points per unit of weight for chash, bounded, balanced and multiprobe (`P`; 0: each one's default)")
	c.Flag.StringVar(&f.algorithms, "algorithms", "", "compare only the algorithms in `LIST`")
	c.Flag.StringVar(&f.plot, "plot", "", "draw the balance and movement to `FILE` (.png or .svg)")
	c.Run = f.run
	return c
}

// A cmpAlgo is one algorithm of the comparison.
type cmpAlgo struct {
	name                       string
	weights, removal, replicas string
	// build returns the router of nodes; opts carries the flags.
	build func(f *compareFlags, nodes []ring.Node) (analyze.Router, error)
	// remove returns the router without the named node, built from r; nil
	// means building afresh without it.
	remove func(r analyze.Router, name string) (analyze.Router, error)
	// lastOnly says the algorithm can remove only its last node.
	lastOnly bool
}

var cmpAlgos = []cmpAlgo{
	{name: "chash", weights: "yes", removal: "yes", replicas: "yes",
		build: func(f *compareFlags, ns []ring.Node) (analyze.Router, error) {
			return ring.New(ring.Standard{Points: f.points}, ns)
		}},
	{name: "jump", weights: "no", removal: "last only", replicas: "no", lastOnly: true,
		build: func(f *compareFlags, ns []ring.Node) (analyze.Router, error) {
			return jump.New(jump.Config{}, ns)
		}},
	{name: "jumpback", weights: "no", removal: "last only", replicas: "no", lastOnly: true,
		build: func(f *compareFlags, ns []ring.Node) (analyze.Router, error) {
			return jump.New(jump.Config{Back: true}, ns)
		}},
	{name: "rendezvous", weights: "yes", removal: "yes", replicas: "yes",
		build: func(f *compareFlags, ns []ring.Node) (analyze.Router, error) {
			return rendezvous.New(rendezvous.Config{}, ns)
		}},
	{name: "maglev", weights: "yes", removal: "yes", replicas: "no",
		build: func(f *compareFlags, ns []ring.Node) (analyze.Router, error) {
			return maglev.New(maglev.Config{}, ns)
		}},
	{name: "multiprobe", weights: "yes", removal: "yes", replicas: "yes",
		build: func(f *compareFlags, ns []ring.Node) (analyze.Router, error) {
			return multiprobe.New(multiprobe.Config{Points: f.points}, ns)
		}},
	{name: "bounded", weights: "yes", removal: "yes", replicas: "no",
		build: func(f *compareFlags, ns []ring.Node) (analyze.Router, error) {
			return bounded.New(bounded.Config{Points: f.points}, ns)
		}},
	{name: "memento", weights: "no", removal: "yes", replicas: "no",
		build: func(f *compareFlags, ns []ring.Node) (analyze.Router, error) {
			return memento.New(memento.Config{}, ns)
		},
		remove: func(r analyze.Router, name string) (analyze.Router, error) {
			return r.(*memento.Buckets).Remove(name)
		}},
	{name: "balanced", weights: "yes", removal: "yes", replicas: "yes",
		build: func(f *compareFlags, ns []ring.Node) (analyze.Router, error) {
			return balanced.New(balanced.Config{Points: f.points}, ns)
		},
		remove: func(r analyze.Router, name string) (analyze.Router, error) {
			return r.(*balanced.Ring).Remove(name)
		}},
}

// A cmpResult is one row of the comparison.
type cmpResult struct {
	c                  cmpAlgo
	err                error
	lookup             time.Duration
	mem                uint64
	maxMean, minMean   float64
	addMoved, remMoved float64 // multiples of the ideal
	method             string
}

func (f *compareFlags) run(_ context.Context, cmd *Command, env *Env, args []string) int {
	if len(args) > 0 {
		return cmd.UsageError(env.Stderr, "unexpected arguments %q", args)
	}
	if f.nodes < 2 {
		return cmd.UsageError(env.Stderr, "--nodes %d: want at least 2", f.nodes)
	}
	if f.points < 0 {
		return cmd.UsageError(env.Stderr, "--points %d is negative", f.points)
	}
	weights, err := cmpWeights(f.weights)
	if err != nil {
		return cmd.UsageError(env.Stderr, "--weights: %v", err)
	}
	cs := cmpAlgos
	if f.algorithms != "" {
		cs = nil
		for name := range strings.SplitSeq(f.algorithms, ",") {
			i := slices.IndexFunc(cmpAlgos, func(c cmpAlgo) bool { return c.name == strings.TrimSpace(name) })
			if i < 0 {
				return cmd.UsageError(env.Stderr, "--algorithms: unknown algorithm %q (known: %s)", name, strings.Join(cmpNames(), ", "))
			}
			cs = append(cs, cmpAlgos[i])
		}
	}
	var keys [][]byte
	if f.keyFile != "" {
		if keys, err = cmpReadKeys(f.keyFile); err != nil {
			cmd.Errorf(env.Stderr, "%v", err)
			return 1
		}
	} else {
		if f.keys < 1 {
			return cmd.UsageError(env.Stderr, "--keys %d: want at least 1", f.keys)
		}
		for k := range analyze.SampleKeys(f.keys, 1) {
			keys = append(keys, slices.Clone(k))
		}
	}
	if len(keys) == 0 {
		cmd.Errorf(env.Stderr, "%s has no keys", f.keyFile)
		return 1
	}
	if f.plot != "" {
		if _, err := plot.Format(f.plot); err != nil {
			return cmd.UsageError(env.Stderr, "--plot: %v", err)
		}
	}

	nodes := make([]ring.Node, f.nodes)
	for i := range nodes {
		nodes[i] = ring.Node{Name: "node" + strconv.Itoa(i), Weight: weights[i%len(weights)]}
	}
	results := make([]cmpResult, len(cs))
	for i, c := range cs {
		results[i] = f.measure(c, nodes, keys)
	}
	if err := cmpTable(env.Stdout, f, len(keys), results); err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 1
	}
	if f.plot != "" {
		if err := cmpPlot(f.plot, f, results); err != nil {
			cmd.Errorf(env.Stderr, "%v", err)
			return 1
		}
	}
	return 0
}

func cmpNames() []string {
	names := make([]string, len(cmpAlgos))
	for i, c := range cmpAlgos {
		names[i] = c.name
	}
	return names
}

func cmpWeights(s string) ([]int, error) {
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

// cmpReadKeys returns the lines of the file, without their "\n" or "\r\n".
func cmpReadKeys(path string) ([][]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var keys [][]byte
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		keys = append(keys, []byte(strings.TrimSuffix(sc.Text(), "\r")))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return keys, nil
}

// cmpKeys yields keys.
func cmpKeys(keys [][]byte) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for _, k := range keys {
			if !yield(k) {
				return
			}
		}
	}
}

// exact returns the router analyze should measure for r: a balanced ring's
// chash.Ring, which it measures exactly, or r itself.
func cmpExact(r analyze.Router) analyze.Router {
	if b, ok := r.(*balanced.Ring); ok {
		return b.Ring()
	}
	return r
}

// measure builds c over nodes and measures it.
func (f *compareFlags) measure(c cmpAlgo, nodes []ring.Node, keys [][]byte) cmpResult {
	res := cmpResult{c: c}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, err := c.build(f, nodes)
	if err != nil {
		res.err = err
		return res
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if after.HeapAlloc > before.HeapAlloc {
		res.mem = after.HeapAlloc - before.HeapAlloc
	}

	joined := append(slices.Clone(nodes), ring.Node{Name: "joining", Weight: 1})
	leaving := nodes[len(nodes)/2].Name
	if c.lastOnly {
		leaving = nodes[len(nodes)-1].Name
	}
	left := slices.DeleteFunc(slices.Clone(nodes), func(n ring.Node) bool { return n.Name == leaving })
	grown, err := c.build(f, joined)
	if err != nil {
		res.err = err
		return res
	}
	var shrunk analyze.Router
	if c.remove != nil {
		shrunk, err = c.remove(r, leaving)
	} else {
		shrunk, err = c.build(f, left)
	}
	if err != nil {
		res.err = err
		return res
	}

	if b, ok := r.(*bounded.Balancer); ok {
		res.measureBounded(b, grown.(*bounded.Balancer), shrunk.(*bounded.Balancer), leaving, keys)
	} else {
		bal, err := analyze.Measure(cmpExact(r), nodes, cmpKeys(keys))
		if err != nil {
			res.err = err
			return res
		}
		res.maxMean, res.minMean, res.method = bal.MaxOverMean, bal.MinOverMean, bal.Method
		add, err := analyze.Compare(cmpExact(r), cmpExact(grown), nodes, joined, cmpKeys(keys))
		if err != nil {
			res.err = err
			return res
		}
		rem, err := analyze.Compare(cmpExact(r), cmpExact(shrunk), nodes, left, cmpKeys(keys))
		if err != nil {
			res.err = err
			return res
		}
		res.addMoved, res.remMoved = add.Moved/add.Ideal, rem.Moved/rem.Ideal
	}
	res.lookup = cmpTime(r, keys)
	runtime.KeepAlive(r)
	return res
}

// measureBounded places the keys in turn on each balancer, as chash route
// does, and compares the placements.
func (res *cmpResult) measureBounded(b, grown, shrunk *bounded.Balancer, leaving string, keys [][]byte) {
	place := func(b *bounded.Balancer) []string {
		out := make([]string, len(keys))
		for i, k := range keys {
			out[i], _ = b.Acquire(k)
		}
		return out
	}
	pb, pg, ps := place(b), place(grown), place(shrunk)
	counts := b.Loads()
	bal, err := analyze.Counts(analyze.MethodKeys, b.Nodes(), counts)
	if err != nil {
		res.err = err
		return
	}
	res.maxMean, res.minMean, res.method = bal.MaxOverMean, bal.MinOverMean, "keys placed"
	var totalW, movedAdd, movedRem, held int
	for _, n := range grown.Nodes() {
		totalW += n.Weight
	}
	for i := range keys {
		if pb[i] != pg[i] {
			movedAdd++
		}
		if pb[i] != ps[i] {
			movedRem++
		}
		if pb[i] == leaving {
			held++
		}
	}
	res.addMoved = float64(movedAdd) / (float64(len(keys)) / float64(totalW))
	res.remMoved = math.NaN()
	if held > 0 {
		res.remMoved = float64(movedRem) / float64(held)
	}
}

// cmpTime returns the mean time of a lookup, over the keys, repeated
// until some 50ms have passed.
func cmpTime(r analyze.Router, keys [][]byte) time.Duration {
	n := 0
	start := time.Now()
	for time.Since(start) < 50*time.Millisecond {
		for _, k := range keys {
			r.Lookup(k)
		}
		n += len(keys)
	}
	return time.Since(start) / time.Duration(n)
}

func cmpTable(w io.Writer, f *compareFlags, keys int, results []cmpResult) error {
	fmt.Fprintf(w, "%d nodes, weights %s, %d keys\n\n", f.nodes, f.weights, keys)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "algorithm\tlookup\tmemory\tmax/mean\tmin/mean\tadd moves\tremove moves\tweights\tremoval\treplicas\tmeasured by\t")
	for _, r := range results {
		if r.err != nil {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t%s\t%s\t%s\t(failed)\t\n", r.c.name, r.c.weights, r.c.removal, r.c.replicas)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%.3f\t%.2f×\t%.2f×\t%s\t%s\t%s\t%s\t\n", r.c.name,
			cmpDuration(r.lookup), cmpBytes(r.mem), r.maxMean, r.minMean, r.addMoved, r.remMoved,
			r.c.weights, r.c.removal, r.c.replicas, r.method)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nmoves: keys that change node, as a multiple of the least any algorithm must move.")
	for _, r := range results {
		if r.err != nil {
			fmt.Fprintf(w, "%s failed: %v\n", r.c.name, r.err)
		}
	}
	return nil
}

func cmpDuration(d time.Duration) string {
	if d < time.Microsecond {
		return strconv.FormatInt(d.Nanoseconds(), 10) + "ns"
	}
	return strconv.FormatFloat(float64(d.Nanoseconds())/1000, 'f', 1, 64) + "µs"
}

func cmpBytes(b uint64) string {
	switch {
	case b >= 1<<20:
		return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + "MiB"
	case b >= 1<<10:
		return strconv.FormatFloat(float64(b)/(1<<10), 'f', 1, 64) + "KiB"
	}
	return strconv.FormatUint(b, 10) + "B"
}

// cmpPlot draws the balance and movement columns as grouped bars.
func cmpPlot(path string, f *compareFlags, results []cmpResult) error {
	p := gonum.New()
	p.Title.Text = fmt.Sprintf("chash compare: %d nodes, weights %s", f.nodes, f.weights)
	p.Y.Label.Text = "multiple of the fair share or of the least movement"
	var names []string
	var ok []cmpResult
	for _, r := range results {
		if r.err == nil {
			names = append(names, r.c.name)
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		return errors.New("no algorithm to plot")
	}
	series := []struct {
		label string
		get   func(cmpResult) float64
	}{
		{"max/mean load", func(r cmpResult) float64 { return r.maxMean }},
		{"min/mean load", func(r cmpResult) float64 { return r.minMean }},
		{"moved on add", func(r cmpResult) float64 { return r.addMoved }},
		{"moved on remove", func(r cmpResult) float64 { return r.remMoved }},
	}
	w := vg.Points(12)
	top := 0.0
	for s, ser := range series {
		vals := make(plotter.Values, len(ok))
		for i, r := range ok {
			if v := ser.get(r); !math.IsNaN(v) {
				vals[i] = v
				top = max(top, v)
			}
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		bars.Color = plot.Color(s)
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(s-len(series)/2)*w + w/2
		p.Add(bars)
		p.Legend.Add(ser.label, bars)
	}
	p.Add(plotter.NewGrid())
	p.NominalX(names...)
	p.Y.Min, p.Y.Max = 0, top*1.3 // room for the legend
	p.Legend.Top = true
	p.Legend.Left = true
	if err := p.Save(vg.Length(len(ok))*vg.Inch+2*vg.Inch, 5*vg.Inch, path); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}
