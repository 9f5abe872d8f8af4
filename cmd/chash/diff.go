package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/chash-dev/chash/internal/analyze"
	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/plot"
)

func init() { register(newDiff) }

// listFlag is a flag that may be given several times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ", ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

type diffFlags struct {
	config   string
	pool     string
	newPool  string
	add      listFlag
	remove   listFlag
	sample   int
	ranges   int
	format   string
	plot     string
	ringPlot string
}

func newDiff() *Command {
	f := new(diffFlags)
	c := &Command{
		UsageLine: "diff [--pool NAME] [--add SERVER]... [--remove NAME]... [--format text|json|csv] [flags] OLD [NEW]",
		Short:     "show which keys move between two configurations, as a migration plan",
		Long: `Diff compares a pool of the configuration OLD with the same pool of NEW, or,
given one file, with that pool changed by --add and --remove (OLD may be
given as --config OLD, as route and analyze take it), and prints what
moves: the fraction of the key space that changes server, a from -> to table of
the moved fractions, and the moved hash ranges, a migration plan. For
comparison it prints the ideal, what moves when every server ends at its
fair share (the joining servers' fair share for an addition, the leaving
servers' share for a removal; a distribution whose joining server takes less
than its share moves less), and what modulo hashing would move: hash mod n over
the same servers, each repeated by its weight, in the order twemproxy's modula
gives them (by length of name, then name), so that listing the servers in
another order moves nothing.

--add SERVER adds a server written as in a servers list, "host:port:weight"
with an optional " alias"; --remove NAME removes the server of that name
(its alias, else host:port). Both may be repeated, and apply to NEW when it is
given. --pool names the pool in both files (--new-pool, if given, in NEW).
A pool whose servers live in etcd or in a file (servers_from:) has the
servers listed there now, read once: "chash diff --add ..." of it shows what
registering one more server would move.

Between two rings that hash keys alike (chash, seed, balanced and the rings of
deployed programs, as chash analyze lists them) the figures are exact: the two
sorted point arrays are merged into hash ranges, and each range whose owner
changes is counted whole, as far as keys can hash into it (a hash of fewer
than 32 bits, such as crc32's 0..32767, reaches only part of the ring; see
chash help analyze). Two lookup tables of the same size (maglev) are
compared entry by entry. A load-aware distribution (bounded) places --sample
generated keys (1000000 by default, at most 1000000000) in turn on both, each counting as load;
anything else is measured by routing that many keys through both. Neither
lists ranges.

A range is a run of ring positions, start to end inclusive, as the ring
hashes keys: a key moves from "from" to "to" when its position is in the
range. Text output lists the first --ranges ranges (20 by default; 0 for all).

--format json prints one JSON object, a stable interface:

	{"old": {"config", "pool", "distribution"}, "new": {...},
	 "method": "arcs"|"table"|"sample"|"placed", "total": N,
	 "moved", "ideal", "modulo_moved", "repointed",
	 "added": [NAME...], "removed": [NAME...], "reweighted": [NAME...],
	 "flows": [{"from", "to", "share", "count", "ranges"}, ...],
	 "ranges": [{"start", "end", "from", "to"}, ...],
	 "before": BALANCE, "after": BALANCE,
	 "replicas": {"old", "new", "keys", "changed", "copies", "cold"}}

"repointed" is there only when servers that keep their weight own another
number of points, as in ketama, whose point count follows the whole pool:
{"nodes": N, "kept": N, "name", "old_points", "new_points"}, the number of
such servers out of those that keep their weight, and the first of them.
Shares are fractions of the key space; "count" counts ring positions (of
"total": 2^32, or fewer for a hash of fewer than 32 bits), table entries or
sample keys; flows are sorted by from, then
to, in the files' order of servers, and ranges by start. BALANCE is the object
chash analyze prints, less config, pool and distribution. --format csv prints one row per flow and per range under the
header record,from,to,share,count,start,end: record is "flow" or "range"; a
flow's start and end are empty.

For a pool that keeps each key on several servers (replicas:, on either
side), "moved" is the move of a key's first server, and "replicas", in text
a table of its own, measures the replica sets over --sample generated keys:
"changed" the fraction of keys whose set gains or loses a server, "copies"
the fraction of the new copies that are on a server new to their key's set
(the copies a migration makes), "cold" the fraction of keys none of whose
new servers was in their set (no replica holds them after the change). In a
ring (chash, balanced) and in rendezvous, a server joining or leaving
changes a set by that server alone; in multiprobe, a joining server can
take a key's probe from its old servers, and leave it cold.

--plot writes bars of each server's share before and after, and --ring-plot
a picture of both rings and the moved ranges (two rings that hash keys
alike only, those whose figures are exact); IMAGE ends in .png or .svg.`,
	}
	c.Complete = func(args []string) []string { // OLD and NEW are files
		if len(args) < 2 {
			return []string{completeFiles}
		}
		return nil
	}
	c.Flag.StringVar(&f.config, "config", "", "read OLD from `FILE`, as route and analyze take it")
	c.Flag.StringVar(&f.pool, "pool", "", "compare the pool called `NAME` (required if a file has several)")
	c.Flag.StringVar(&f.newPool, "new-pool", "", "the pool's `NAME` in NEW, if not the same as in OLD")
	c.Flag.Var(&f.add, "add", "add the `SERVER` host:port:weight[ alias] (repeatable)")
	c.Flag.Var(&f.remove, "remove", "remove the server called `NAME` (repeatable)")
	c.Flag.IntVar(&f.sample, "sample", defaultSample, "route `N` sample keys where movement cannot be computed exactly")
	c.Flag.IntVar(&f.ranges, "ranges", 20, "list the first `N` moved ranges in text output (0: all)")
	c.Flag.StringVar(&f.format, "format", "text", "print `FORMAT`: text, json or csv")
	c.Flag.StringVar(&f.plot, "plot", "", "write bars of the shares before and after to `IMAGE` (.png or .svg)")
	c.Flag.StringVar(&f.ringPlot, "ring-plot", "", "write a picture of both rings and the moved ranges to `IMAGE`")
	c.Run = f.run
	return c
}

// side is one of the two configurations diff compares.
type side struct {
	Config       string `json:"config"`
	Pool         string `json:"pool"`
	Distribution string `json:"distribution"`
	// Drained are the servers of the pool's drain: list, which own no keys.
	Drained []string `json:"drained,omitempty"`
	// Change describes --add and --remove, for text output.
	change string
	pool   *analyze.Pool
}

// diffOutput is the JSON that diff prints.
type diffOutput struct {
	Old    side   `json:"old"`
	New    side   `json:"new"`
	Method string `json:"method"`
	Total  uint64 `json:"total"`
	analyze.Movement
	Added      []string         `json:"added"`
	Removed    []string         `json:"removed"`
	Reweighted []string         `json:"reweighted"`
	Flows      []analyze.Flow   `json:"flows"`
	Ranges     []analyze.Range  `json:"ranges"`
	Before     *analyze.Balance `json:"before"`
	After      *analyze.Balance `json:"after"`
	// Replicas is there when a pool keeps a key on more than one server.
	Replicas *analyze.ReplicaMovement `json:"replicas,omitempty"`
}

func (f *diffFlags) run(ctx context.Context, cmd *Command, env *Env, args []string) int {
	if f.config != "" {
		args = append([]string{f.config}, args...)
	}
	switch {
	case len(args) == 0:
		return cmd.UsageError(env.Stderr, "no configuration given")
	case len(args) > 2:
		return cmd.UsageError(env.Stderr, "too many arguments")
	case len(args) == 1 && len(f.add) == 0 && len(f.remove) == 0:
		return cmd.UsageError(env.Stderr, "give a NEW configuration, or --add or --remove")
	}
	if code := checkOutput(cmd, env, f.format, f.plot, f.ringPlot); code != 0 {
		return code
	}
	if code := checkSample(cmd, env, f.sample); code != 0 {
		return code
	}
	if f.ranges < 0 {
		return cmd.UsageError(env.Stderr, "--ranges %d: want 0 or more", f.ranges)
	}
	var adds []config.Server
	for _, a := range f.add {
		s, err := config.ParseServer(strings.TrimSpace(a))
		if err != nil {
			return cmd.UsageError(env.Stderr, "--add %q: %v", a, err)
		}
		adds = append(adds, s)
	}
	oldPool, code := loadPool(ctx, cmd, env, args[0], f.pool)
	if code != 0 {
		return code
	}
	newPool, newFile := oldPool, args[0]
	if len(args) == 2 {
		newFile = args[1]
		name := f.newPool
		if name == "" {
			name = f.pool
		}
		if newPool, code = loadPool(ctx, cmd, env, newFile, name); code != 0 {
			return code
		}
	}
	newServers, err := change(newPool.Servers, adds, f.remove)
	if err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 2
	}
	if oldPool.HashTag != newPool.HashTag {
		cmd.Errorf(env.Stderr, "the pools' hash tags differ (%q, %q): keys would be hashed differently", oldPool.HashTag, newPool.HashTag)
		return 2
	}
	old, code := measure(cmd, env, oldPool, oldPool.Servers)
	if code != 0 {
		return code
	}
	new, code := measure(cmd, env, newPool, newServers)
	if code != 0 {
		return code
	}
	var before, after []analyze.Arc
	if f.ringPlot != "" {
		before, after = old.Arcs(), new.Arcs()
		if before == nil {
			return cmd.UsageError(env.Stderr, "--ring-plot: distribution %s has no ring to draw", oldPool.Distribution)
		}
		if after == nil {
			return cmd.UsageError(env.Stderr, "--ring-plot: distribution %s has no ring to draw", newPool.Distribution)
		}
		if !analyze.AlikeRings(old, new) {
			return cmd.UsageError(env.Stderr, "--ring-plot: the rings of %s and %s hash keys differently: no moved ranges to draw", oldPool.Distribution, newPool.Distribution)
		}
	}
	out := diffOutput{
		Old: side{Config: args[0], Pool: oldPool.Name, Distribution: oldPool.Distribution, pool: old,
			Drained: drainedOf(oldPool, oldPool.Servers)},
		New: side{Config: newFile, Pool: newPool.Name, Distribution: newPool.Distribution, pool: new,
			Drained: drainedOf(newPool, newServers),
			change:  changeText(adds, f.remove)},
	}
	d, err := analyze.DiffPools(old, new, progressKeys(env, analyze.SampleKeys(f.sample, 1), f.sample, "sampling"))
	if err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 1
	}
	out.Method, out.Total, out.Movement = d.Method, d.Total, d.Movement
	out.Added, out.Removed, out.Reweighted = d.Added, d.Removed, d.Reweighted
	out.Flows, out.Ranges = d.Flows, d.Ranges
	out.Before, out.After = d.Old, d.New
	if out.Replicas, err = analyze.DiffReplicas(old, new, progressKeys(env, analyze.SampleKeys(f.sample, 1), f.sample, "routing replica sets")); err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 1
	}
	if err := f.write(env.Stdout, &out); err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 1
	}
	if f.plot != "" {
		title := fmt.Sprintf("Pool %q: %s", out.New.Pool, diffTitle(&out))
		if err := savePlot(f.plot, func() (*plot.Chart, error) { return plot.Diff(d, title) }); err != nil {
			cmd.Errorf(env.Stderr, "%v", err)
			return 1
		}
	}
	if f.ringPlot != "" {
		names := old.Names()
		for _, n := range new.Names() {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		pic := plot.RingPicture{
			Title: fmt.Sprintf("Pool %q: %s\nmoved %s of keys (ideal %s, modulo hashing %s)",
				out.New.Pool, diffTitle(&out), pct(d.Moved), pct(d.Ideal), pct(d.ModuloMoved)),
			Nodes:  names,
			Layers: ringLayers(before, after, d.Ranges),
		}
		if err := savePlot(f.ringPlot, func() (*plot.Chart, error) { return plot.Ring(pic) }); err != nil {
			cmd.Errorf(env.Stderr, "%v", err)
			return 1
		}
	}
	return 0
}

// ringLayers returns the three annuli of a diff's ring picture: before, after,
// and the moved ranges.
func ringLayers(before, after []analyze.Arc, ranges []analyze.Range) []plot.Layer {
	moved := make([]analyze.Arc, len(ranges))
	for i, r := range ranges {
		moved[i] = analyze.Arc{Start: r.Start, End: r.End, Node: r.To}
	}
	return []plot.Layer{
		{Arcs: before, Label: "outer ring: before"},
		{Arcs: after, Label: "middle ring: after"},
		{Arcs: moved, Color: plot.MovedColor, Label: "inner ring: moved ranges"},
	}
}

func diffTitle(out *diffOutput) string {
	var parts []string
	for _, n := range out.Added {
		parts = append(parts, n+" joins")
	}
	for _, n := range out.Removed {
		parts = append(parts, n+" leaves")
	}
	for _, n := range out.Reweighted {
		parts = append(parts, n+" is reweighted")
	}
	if len(parts) == 0 {
		return "no change of servers"
	}
	if len(parts) > 3 {
		return fmt.Sprintf("%d servers join, %d leave, %d are reweighted", len(out.Added), len(out.Removed), len(out.Reweighted))
	}
	return strings.Join(parts, ", ")
}

// change returns servers with those named by remove removed and adds appended.
func change(servers, adds []config.Server, remove []string) ([]config.Server, error) {
	out := slices.Clone(servers)
	for k, name := range remove {
		i := slices.IndexFunc(out, func(s config.Server) bool { return s.Name() == name })
		switch {
		case i >= 0:
		case slices.Contains(remove[:k], name):
			return nil, fmt.Errorf("--remove %q is given twice", name)
		default:
			return nil, fmt.Errorf("--remove %q: no such server", name)
		}
		out = slices.Delete(out, i, i+1)
	}
	if len(out) == 0 && len(adds) == 0 {
		return nil, errors.New("--remove: no server would be left")
	}
	for _, a := range adds {
		if slices.ContainsFunc(out, func(s config.Server) bool { return s.Name() == a.Name() }) {
			return nil, fmt.Errorf("--add: server %q is already in the pool", a.Name())
		}
		out = append(out, a)
	}
	return out, nil
}

func changeText(adds []config.Server, remove []string) string {
	var parts []string
	for _, a := range adds {
		parts = append(parts, "+"+a.Name())
	}
	for _, r := range remove {
		parts = append(parts, "-"+r)
	}
	return strings.Join(parts, " ")
}

func (f *diffFlags) write(w io.Writer, out *diffOutput) error {
	switch f.format {
	case "json":
		return writeJSON(w, out)
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write([]string{"record", "from", "to", "share", "count", "start", "end"})
		for _, fl := range out.Flows {
			cw.Write([]string{"flow", fl.From, fl.To, fmtFloat(fl.Share), strconv.FormatUint(fl.Count, 10), "", ""})
		}
		for _, r := range out.Ranges {
			cw.Write([]string{"range", r.From, r.To, fmtFloat(float64(r.Len()) / float64(out.Total)), strconv.FormatUint(r.Len(), 10),
				strconv.FormatUint(uint64(r.Start), 10), strconv.FormatUint(uint64(r.End), 10)})
		}
		cw.Flush()
		return cw.Error()
	}
	bw := bufio.NewWriter(w)
	describe := func(label string, s side) {
		fmt.Fprintf(bw, "%s pool %q of %s: distribution %s, %s%s", label, s.Pool, s.Config, s.Distribution, serversText(len(s.pool.Servers)), drainedText(s.Drained))
		if s.change != "" {
			fmt.Fprintf(bw, " (%s)", s.change)
		}
		fmt.Fprintln(bw)
	}
	describe("old:", out.Old)
	describe("new:", out.New)
	fmt.Fprintln(bw)
	ideal := "every server at its fair share"
	switch {
	case len(out.Added) > 0 && len(out.Removed) == 0 && len(out.Reweighted) == 0:
		ideal = "the joining servers' fair share"
	case len(out.Removed) > 0 && len(out.Added) == 0 && len(out.Reweighted) == 0:
		ideal = "the leaving servers' share"
	}
	label := out.New.Distribution
	if out.Old.Distribution != out.New.Distribution {
		label = out.Old.Distribution + " -> " + out.New.Distribution
	}
	if out.Replicas != nil {
		fmt.Fprintln(bw, "keys that move (their first server):")
	} else {
		fmt.Fprintln(bw, "keys that move:")
	}
	writeTable(bw, "  ", nil, [][]string{
		{label, pct(out.Moved), movedMethod(out)},
		{"ideal", pct(out.Ideal), ideal},
		{"modulo hashing", pct(out.ModuloMoved), "hash mod n over the same servers by weight, in modula's order"},
	}, "lrl")
	if r := out.Repointed; r != nil {
		var b strings.Builder
		wrap(&b, fmt.Sprintf("note: %s: %s sizes each server's points by the whole pool, so keys also move between servers that stay.",
			repointedText(r), out.New.Distribution), "")
		fmt.Fprint(bw, "\n"+b.String())
	}
	if r := out.Replicas; r != nil {
		copies := strconv.Itoa(r.New)
		if r.Old != r.New {
			copies = fmt.Sprintf("%d -> %d", r.Old, r.New)
		}
		fmt.Fprintf(bw, "\nreplica sets (%s copies a key; sampled, %d generated keys routed):\n", copies, r.Keys)
		writeTable(bw, "  ", nil, [][]string{
			{"sets that change", pct(r.Changed), "a server joins or leaves the key's set"},
			{"copies to make", pct(r.Copies), "of the new copies: on a server new to the key's set"},
			{"keys left cold", pct(r.Cold), "none of the key's new servers was in its set"},
		}, "lrl")
	}
	if len(out.Flows) > 0 {
		fmt.Fprintln(bw)
		rows := make([][]string, len(out.Flows))
		for i, fl := range out.Flows {
			rows[i] = []string{fl.From, "->", fl.To, pct(fl.Share), countText(out, fl)}
		}
		head := []string{"from", "", "to", "share", "keys"}
		if out.Method == analyze.MethodArcs {
			head[4] = "ranges"
		}
		writeTable(bw, "", head, rows, "lll")
	}
	if len(out.Ranges) > 0 {
		n := len(out.Ranges)
		if f.ranges > 0 {
			n = min(n, f.ranges)
		}
		fmt.Fprintln(bw)
		if n < len(out.Ranges) {
			fmt.Fprintf(bw, "moved ranges of ring positions, the first %d of %d (--ranges 0 or --format csv lists all):\n", n, len(out.Ranges))
		} else {
			fmt.Fprintf(bw, "moved ranges of ring positions (%d):\n", n)
		}
		rows := make([][]string, n)
		for i, r := range out.Ranges[:n] {
			rows[i] = []string{strconv.FormatUint(uint64(r.Start), 10), strconv.FormatUint(uint64(r.End), 10), r.From, "->", r.To}
		}
		writeTable(bw, "", []string{"start", "end", "from", "", "to"}, rows, "rrll")
	}
	return bw.Flush()
}

// repointedText says which servers own another number of points after a
// change that left their weight as it was.
func repointedText(r *analyze.Repointed) string {
	return fmt.Sprintf("%d of the %d servers that keep their weight own another number of points (%s: %d -> %d)",
		r.Nodes, r.Kept, r.Name, r.Old, r.New)
}

func movedMethod(out *diffOutput) string {
	switch out.Method {
	case analyze.MethodArcs:
		if out.Total != analyze.RingSize {
			return fmt.Sprintf("exact, from the two rings' points over the %d positions the hash reaches", out.Total)
		}
		return "exact, from the two rings' points"
	case analyze.MethodTable:
		return "exact, entry by entry"
	case analyze.MethodPlaced:
		return fmt.Sprintf("%d generated keys placed in turn on both, each counting as load", out.Total)
	}
	return fmt.Sprintf("sampled, %d generated keys routed", out.Total)
}

func countText(out *diffOutput, fl analyze.Flow) string {
	if out.Method == analyze.MethodArcs {
		return strconv.Itoa(fl.Ranges)
	}
	return strconv.FormatUint(fl.Count, 10)
}
