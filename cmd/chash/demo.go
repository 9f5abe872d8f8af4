package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/compat"
	"github.com/chash-dev/chash/hashfn"
	"github.com/chash-dev/chash/internal/analyze"
	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/dist"
	"github.com/chash-dev/chash/internal/plot"
)

func init() { register(newDemo) }

type demoFlags struct {
	dir   string
	keys  int
	image string
}

func newDemo() *Command {
	f := new(demoFlags)
	c := &Command{
		UsageLine: "demo [--dir DIR] [--keys N] [--image png|svg]",
		Short:     "show what consistent hashing buys, on the seed articles' servers",
		Long: `Demo replays the seed articles' argument with exact figures, needing nothing
but chash itself. It builds the articles' ring of five servers,
192.168.0.0:111 to 192.168.0.4:111, placed with their FNV1_32_HASH, first
with one point per server and then with five virtual nodes each; routes the
articles' three sample keys (and prints the articles' answers beside
chash's) and --keys generated keys (100000 by default); then adds a sixth
server and removes one, and prints side by side what moves with the ring and
with modulo hashing (hash mod n), exactly and counted over the sample keys,
next to the ideal; and shows how balance improves with the number of virtual
nodes, for five and for ten servers.

If package hashfn has Java's String.hashCode (java_hashcode), demo also
replays the articles' warning against it, with the exact share of the one
server that takes almost every key.

Demo writes its charts into the directory DIR (default chash-demo, created
if need be) as --image files (png by default, or svg) and names each one.`,
	}
	c.Flag.StringVar(&f.dir, "dir", "chash-demo", "write the charts into directory `DIR`")
	c.Flag.IntVar(&f.keys, "keys", 100_000, "route `N` generated sample keys")
	c.Flag.StringVar(&f.image, "image", "png", "write charts as `FORMAT`: png or svg")
	c.Run = f.run
	return c
}

// The seed articles' servers and sample keys, and what their programs print for
// the keys: with one point per server, and with five virtual nodes.
var (
	articleServers = []string{"192.168.0.0:111", "192.168.0.1:111", "192.168.0.2:111", "192.168.0.3:111", "192.168.0.4:111"}
	articleKeys    = []string{"127.0.0.1:1111", "221.226.0.1:2222", "10.211.0.1:3333"}
	articleRoutes1 = []string{"192.168.0.0:111", "192.168.0.4:111", "192.168.0.4:111"}
	articleRoutes5 = []string{"192.168.0.0:111", "192.168.0.0:111", "192.168.0.2:111"}
)

// servers returns n servers named as the articles name theirs.
func servers(n int) []chash.Node {
	nodes := make([]chash.Node, n)
	for i := range nodes {
		nodes[i] = chash.Node{Name: fmt.Sprintf("192.168.0.%d:111", i), Weight: 1}
	}
	return nodes
}

// demo is one run of the demo: where it writes, and the charts it has written.
type demo struct {
	w      *bufio.Writer
	env    *Env
	flags  *demoFlags
	charts [][2]string // file, what it shows
}

func (f *demoFlags) run(_ context.Context, cmd *Command, env *Env, args []string) int {
	if len(args) > 0 {
		return cmd.UsageError(env.Stderr, "unexpected argument %q", args[0])
	}
	if f.image != "png" && f.image != "svg" {
		return cmd.UsageError(env.Stderr, "--image %q: want png or svg", f.image)
	}
	if f.keys < 1 {
		return cmd.UsageError(env.Stderr, "--keys %d: want at least 1", f.keys)
	}
	if f.dir == "" {
		return cmd.UsageError(env.Stderr, "--dir is empty: name a directory")
	}
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 1
	}
	d := &demo{w: bufio.NewWriter(env.Stdout), env: env, flags: f}
	err := d.run()
	if ferr := d.w.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 1
	}
	return 0
}

func (d *demo) printf(format string, args ...any) { fmt.Fprintf(d.w, format, args...) }

// chart builds a chart and saves it as name in the demo's directory.
func (d *demo) chart(name, what string, build func() (*plot.Chart, error)) error {
	path := filepath.Join(d.flags.dir, name+"."+d.flags.image)
	if err := savePlot(path, build); err != nil {
		return err
	}
	d.charts = append(d.charts, [2]string{path, what})
	return nil
}

func (d *demo) run() error {
	one, err := chash.New(compat.Seed{}, servers(5))
	if err != nil {
		return err
	}
	five, err := chash.New(compat.Seed{Points: 5}, servers(5))
	if err != nil {
		return err
	}
	d.printf("chash demo: the seed articles' consistent-hash ring, computed exactly\n")
	d.printf("Five servers, 192.168.0.0:111 to 192.168.0.4:111, placed with the articles' FNV1_32_HASH.\n")

	d.printf("\n1. One point per server (the first article's ring)\n\n")
	b1, err := d.shares(one, true)
	if err != nil {
		return err
	}
	if err := d.routeArticleKeys(one, articleRoutes1); err != nil {
		return err
	}
	if err := d.chart("ring-1-point", "the ring with one point per server, each server's arcs in its colour", func() (*plot.Chart, error) {
		return plot.Ring(plot.RingPicture{
			Title:  "The articles' ring: five servers, one point each",
			Nodes:  articleServers,
			Labels: shareLabels(b1, articleServers),
			Layers: []plot.Layer{{Arcs: analyze.Arcs(one)}},
		})
	}); err != nil {
		return err
	}
	if err := d.chart("shares-1-point", "each server's share against its fair share, one point per server", func() (*plot.Chart, error) {
		return plot.Shares(b1, "The articles' ring: five servers, one point each")
	}); err != nil {
		return err
	}

	d.printf("\n2. Five virtual nodes per server (the second article's ring: \"192.168.0.0:111&&VN0\", ...)\n\n")
	b5, err := d.shares(five, false)
	if err != nil {
		return err
	}
	if err := d.routeArticleKeys(five, articleRoutes5); err != nil {
		return err
	}
	if err := d.chart("shares-5-points", "each server's share against its fair share, five virtual nodes each", func() (*plot.Chart, error) {
		return plot.Shares(b5, "The articles' ring: five servers, five virtual nodes each")
	}); err != nil {
		return err
	}

	if err := d.churn(five); err != nil {
		return err
	}
	if err := d.balance(); err != nil {
		return err
	}
	if err := d.hashCodeWarning(); err != nil {
		return err
	}

	d.printf("\nCharts written:\n")
	var rows [][]string
	for _, c := range d.charts {
		rows = append(rows, []string{c[0], c[1]})
	}
	writeTable(d.w, "  ", nil, rows, "ll")
	return nil
}

// shares prints the exact shares of r and, counted, of the sample keys.
func (d *demo) shares(r *chash.Ring, points bool) (*analyze.Balance, error) {
	b, err := analyze.Ring(r)
	if err != nil {
		return nil, err
	}
	s, err := analyze.Sample(analyze.RingOf(r), r.Nodes(), analyze.SampleKeys(d.flags.keys, 1))
	if err != nil {
		return nil, err
	}
	head := []string{"server", "share (exact)", "share/fair", fmt.Sprintf("of %d sample keys", d.flags.keys)}
	align := "lrrr"
	if points {
		head = append([]string{head[0], "point (Java hash)"}, head[1:]...)
		align = "lrrrr"
	}
	var rows [][]string
	for i, n := range b.Nodes {
		row := []string{n.Name, pct(n.Share), fmt.Sprintf("%.3f", n.Ratio), fmt.Sprintf("%d (%s)", s.Nodes[i].Count, pct(s.Nodes[i].Share))}
		if points {
			row = append([]string{row[0], strconv.Itoa(int(int32(hashfn.JavaFNV1_32([]byte(n.Name)))))}, row[1:]...)
		}
		rows = append(rows, row)
	}
	writeTable(d.w, "  ", head, rows, align)
	d.printf("\n  max/mean %.3f (%s), min/mean %.3f (%s), std/mean %.3f\n", b.MaxOverMean, b.Most, b.MinOverMean, b.Least, b.StdOverMean)
	return b, nil
}

// routeArticleKeys routes the articles' sample keys and prints what the
// articles' programs printed beside chash's answers.
func (d *demo) routeArticleKeys(r *chash.Ring, want []string) error {
	d.printf("\n  The articles' sample keys:\n")
	var rows [][]string
	for i, k := range articleKeys {
		got, err := r.LookupString(k)
		if err != nil {
			return err
		}
		same := "same"
		if got != want[i] {
			same = "DIFFERENT"
		}
		rows = append(rows, []string{k, strconv.Itoa(int(int32(hashfn.JavaFNV1_32([]byte(k))))), got, want[i], same})
	}
	writeTable(d.w, "  ", []string{"key", "hash", "chash routes to", "the article printed", ""}, rows, "lrlll")
	return nil
}

// churn adds a server to the five-point ring and removes one, and prints what
// moves with the ring and with modulo hashing, exactly and over sample keys.
func (d *demo) churn(five *chash.Ring) error {
	d.printf("\n3. A server joins, a server leaves: the ring against modulo hashing (hash mod n)\n")
	d.printf("   Ring: five virtual nodes per server. Exact: from the rings' points. Counted: %d sample keys.\n\n", d.flags.keys)
	joined, err := five.Add(chash.Node{Name: "192.168.0.5:111", Weight: 1})
	if err != nil {
		return err
	}
	left, err := five.Remove("192.168.0.4:111")
	if err != nil {
		return err
	}
	var rows [][]string
	var moves []plot.Move
	var joinDiff *analyze.Diff
	for _, c := range []struct {
		label string
		r     *chash.Ring
	}{{"192.168.0.5:111 joins", joined}, {"192.168.0.4:111 leaves", left}} {
		exact, err := analyze.Rings(five, c.r)
		if err != nil {
			return err
		}
		if joinDiff == nil {
			joinDiff = exact
		}
		counted, err := analyze.CountDiff(analyze.MethodSample, analyze.RingOf(five), analyze.RingOf(c.r), five.Nodes(), c.r.Nodes(), analyze.SampleKeys(d.flags.keys, 2))
		if err != nil {
			return err
		}
		// Modulo hashing as twemproxy's modula does it, with the same hash.
		oldMod, err := modula(five.Nodes())
		if err != nil {
			return err
		}
		newMod, err := modula(c.r.Nodes())
		if err != nil {
			return err
		}
		modCounted, err := analyze.CountDiff(analyze.MethodSample, oldMod, newMod, five.Nodes(), c.r.Nodes(), analyze.SampleKeys(d.flags.keys, 2))
		if err != nil {
			return err
		}
		moved := uint64(counted.Moved*float64(counted.Total) + 0.5)
		modMoved := uint64(modCounted.Moved*float64(modCounted.Total) + 0.5)
		rows = append(rows, []string{c.label,
			pct(exact.Moved), fmt.Sprintf("%d (%s)", moved, pct(counted.Moved)),
			pct(exact.ModuloMoved), fmt.Sprintf("%d (%s)", modMoved, pct(modCounted.Moved)),
			pct(exact.Ideal)})
		moves = append(moves, plot.Move{Label: c.label, Ring: exact.Moved, Ideal: exact.Ideal, Modulo: exact.ModuloMoved})
	}
	writeTable(d.w, "  ", []string{"", "ring: exact", "keys moved", "modulo: exact", "keys moved", "ideal"}, rows, "lrrrrr")
	d.printf("\n  The ring moves only the joining server's keys (ideally its fair share, 1/6) or the leaving\n")
	d.printf("  server's; modulo hashing moves almost every key.\n")
	if err := d.chart("moves", "keys moved by the ring and by modulo hashing when a server joins or leaves", func() (*plot.Chart, error) {
		return plot.Moves("The articles' five servers (five virtual nodes each): one joins, one leaves", moves)
	}); err != nil {
		return err
	}
	return d.chart("ring-join", "the ring before and after 192.168.0.5:111 joins, and the ranges that move", func() (*plot.Chart, error) {
		return plot.Ring(plot.RingPicture{
			Title: fmt.Sprintf("192.168.0.5:111 joins (five virtual nodes per server)\nmoved %s of keys (ideal %s, modulo hashing %s)",
				pct(joinDiff.Moved), pct(joinDiff.Ideal), pct(joinDiff.ModuloMoved)),
			Nodes:  append(articleServers[:5:5], "192.168.0.5:111"),
			Layers: ringLayers(analyze.Arcs(five), analyze.Arcs(joined), joinDiff.Ranges),
		})
	})
}

// modula returns twemproxy's modula distribution over nodes, keys hashed with
// the articles' java_fnv1_32, routing to the nodes' indexes.
func modula(nodes []chash.Node) (dist.Router, error) {
	servers := make([]config.Server, len(nodes))
	for i, n := range nodes {
		// twemproxy hashes a server's alias: the node's name.
		servers[i] = config.Server{Host: "demo", Port: i + 1, Weight: n.Weight, Alias: n.Name}
	}
	return dist.Build(&config.Pool{Name: "demo", Distribution: "modula", Hash: "java_fnv1_32", Servers: servers}, servers)
}

// demoPoints are the virtual nodes per server of the demo's balance table.
var demoPoints = []int{1, 5, 10, 20, 50, 100, 160, 200, 500, 1000}

// balance prints how balance improves with virtual nodes, for the articles' five
// servers and for ten named alike, and charts it.
func (d *demo) balance() error {
	d.printf("\n4. Balance against virtual nodes per server (exact, for these server names)\n\n")
	cfg := analyze.SweepConfig{
		Scheme: func(p int) chash.Scheme { return compat.Seed{Points: p} },
		Nodes:  []int{5, 10},
		Points: demoPoints,
		Name:   func(t, i int) string { return fmt.Sprintf("192.168.%d.%d:111", t, i) },
	}
	pts, err := analyze.Sweep(cfg)
	if err != nil {
		return err
	}
	at := func(n, p int) analyze.SweepPoint {
		for _, sp := range pts {
			if sp.Nodes == n && sp.Points == p {
				return sp
			}
		}
		return analyze.SweepPoint{}
	}
	var rows [][]string
	for _, p := range demoPoints {
		a, b := at(5, p), at(10, p)
		rows = append(rows, []string{strconv.Itoa(p), f3(a.MaxOverMean), f3(a.StdOverMean), f3(a.Random),
			f3(b.MaxOverMean), f3(b.StdOverMean), f3(b.Random)})
	}
	writeTable(d.w, "  ", []string{"virtual nodes", "5 servers: max/mean", "std/mean", "random", "10 servers: max/mean", "std/mean", "random"}, rows, "")
	d.printf("\n  max/mean is the busiest server's load over a fair load; std/mean the spread of the loads;\n")
	d.printf("  random is std/mean expected of points placed at random, sqrt((N-1)/(N*V+1)).\n")
	d.printf("  The articles suggest 100 to 200 virtual nodes for ten servers: here the busiest of ten\n")
	d.printf("  servers carries %s more than its fair share with 100, %s with 200.\n",
		pct(at(10, 100).MaxOverMean-1), pct(at(10, 200).MaxOverMean-1))
	cfg.Points = []int{1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 60, 80, 100, 120, 150, 200, 250, 300, 400, 500, 600, 800, 1000}
	chartPts, err := analyze.Sweep(cfg)
	if err != nil {
		return err
	}
	return d.chart("balance", "balance against virtual nodes per server, for 5 and 10 servers", func() (*plot.Chart, error) {
		return plot.Sweep(chartPts, "The articles' ring: balance against virtual nodes per server")
	})
}

// hashCodeWarning replays the articles' warning against String.hashCode.
func (d *demo) hashCodeWarning() error {
	d.printf("\n5. The articles' warning: why not Java's String.hashCode()?\n\n")
	return hashCodeShares(d.w, hashfn.JavaHashCode)
}

// hashCodeShares prints the shares of the articles' servers placed with
// hashCode, a Java String.hashCode, as the article computed them, and also for
// the names it meant.
func hashCodeShares(w io.Writer, hashCode hashfn.Func) error {
	fmt.Fprintf(w, "  Consecutive addresses hash to consecutive values, so the servers bunch together:\n\n")
	var rows [][]string
	for _, names := range [][]string{
		{"192.168.0.0:1111", "192.168.0.1:1111", "192.168.0.2:1111", "192.168.0.3:1111", "192.168.0.4:1111"},
		articleServers,
	} {
		nodes := make([]chash.Node, len(names))
		lo, hi := int32(0x7fffffff), int32(-0x80000000)
		for i, n := range names {
			nodes[i] = chash.Node{Name: n, Weight: 1}
			h := int32(hashCode([]byte(n)))
			lo, hi = min(lo, h), max(hi, h)
		}
		r, err := chash.New(compat.Seed{HashFunc: hashCode, Signed: true}, nodes)
		if err != nil {
			return err
		}
		b, err := analyze.Ring(r)
		if err != nil {
			return err
		}
		rows = append(rows, []string{names[0] + " ...", fmt.Sprintf("%d to %d", lo, hi),
			pct(float64(int64(hi)-int64(lo)) / analyze.RingSize), b.Most, pct(b.MaxOverMean / float64(len(names)))})
	}
	writeTable(w, "  ", []string{"servers", "hashCode", "span of the ring", "busiest server", "its share"}, rows, "lrrlr")
	fmt.Fprintf(w, "\n  The article hashed \"192.168.0.x:1111\" and warned that 97%% of keys would go to one server:\n")
	fmt.Fprintf(w, "  exactly %s. For the servers it meant, \"192.168.0.x:111\", it is %s.\n", rows[0][4], rows[1][4])
	return nil
}
