package plot

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	gonum "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/chash-dev/chash/internal/analyze"
)

// maxNamed is the most nodes whose names a bar chart writes under its bars.
const maxNamed = 40

// Shares returns a bar chart of each node's share of the key space with its
// fair share (weight over total weight) marked as a dashed line.
func Shares(b *analyze.Balance, title string) (*Chart, error) {
	if len(b.Nodes) == 0 {
		return nil, errNoData
	}
	shares := make(plotter.Values, len(b.Nodes))
	expected := make([]float64, len(b.Nodes))
	for i, n := range b.Nodes {
		shares[i], expected[i] = n.Share, n.Expected
	}
	p := newPlot(title, nodeAxis(len(b.Nodes)), "share of the key space")
	bars, err := plotter.NewBarChart(shares, barWidth(len(b.Nodes), 1))
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	bars.Color = palette[0]
	bars.LineStyle.Width = 0
	p.Add(bars)
	fair := &levels{values: expected, color: black}
	p.Add(fair)
	if len(b.Nodes) <= 12 {
		labels, err := barLabels(shares, 0)
		if err != nil {
			return nil, err
		}
		p.Add(labels)
	}
	p.Legend.Add(fmt.Sprintf("share (%s)", methodName(b.Method)), bars)
	p.Legend.Add("fair share (by weight)", fair)
	p.Y.Min = 0
	p.Y.Max = max(p.Y.Max, slices.Max(expected)) * 1.25 // room for the legend
	p.Y.Tick.Marker = percentTicks{}
	nominal(p, b.Nodes)
	return &Chart{plots: []*gonum.Plot{p}, width: barsWidth(len(b.Nodes)), height: 5 * vg.Inch}, nil
}

func methodName(m string) string {
	switch m {
	case analyze.MethodArcs:
		return "exact, from arc lengths"
	case analyze.MethodTable:
		return "exact, from table entries"
	case analyze.MethodKeys:
		return "counted keys"
	case analyze.MethodSample:
		return "sampled keys"
	}
	return m
}

func nodeAxis(n int) string {
	if n > maxNamed {
		return fmt.Sprintf("nodes (%d)", n)
	}
	return "node"
}

// nominal names the bars under the x axis, slanted, or hides the names when
// there are too many to read.
func nominal(p *gonum.Plot, nodes []analyze.NodeShare) {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(nodes))-0.4
	if len(nodes) > maxNamed {
		p.X.Tick.Marker = gonum.ConstantTicks(nil)
		return
	}
	p.X.Tick.Label.Font.Size = vg.Points(9)
	if len(nodes) > 6 || longest(names) > 14 {
		p.X.Tick.Label.Rotation = math.Pi / 6
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
}

func longest(s []string) int {
	m := 0
	for _, x := range s {
		m = max(m, len(x))
	}
	return m
}

func barWidth(n, groups int) vg.Length {
	w := barsWidth(n) - vg.Inch
	return max(vg.Points(0.5), w/vg.Length(n)*0.8/vg.Length(groups))
}

func barsWidth(n int) vg.Length {
	return min(max(8*vg.Inch, vg.Length(n)*0.45*vg.Inch), 11*vg.Inch)
}

// levels draws a short horizontal segment at each bar's value: the fair share of
// each node, joining into one line when the values are equal.
type levels struct {
	values []float64
	color  color.Color
}

func (l *levels) Plot(c draw.Canvas, p *gonum.Plot) {
	tx, ty := p.Transforms(&c)
	sty := draw.LineStyle{Color: l.color, Width: vg.Points(1.5), Dashes: dash}
	for i, v := range l.values {
		if i > 0 && l.values[i-1] == v {
			continue // drawn as part of the previous run
		}
		j := i
		for j+1 < len(l.values) && l.values[j+1] == v {
			j++
		}
		y := ty(v)
		c.StrokeLine2(sty, tx(float64(i)-0.5), y, tx(float64(j)+0.5), y)
	}
}

func (l *levels) DataRange() (xmin, xmax, ymin, ymax float64) {
	return -0.5, float64(len(l.values)) - 0.5, 0, slices.Max(l.values)
}

func (l *levels) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(draw.LineStyle{Color: l.color, Width: vg.Points(1.5), Dashes: dash}, c.Min.X, y, c.Max.X, y)
}

// Sweep returns the seed articles' chart for rings of several sizes: above, the
// coefficient of variation of the nodes' shares against points per node, with
// the closed form for random points dashed; below, the most loaded node's share
// over the fair share. Both axes of the upper panel are logarithmic.
func Sweep(pts []analyze.SweepPoint, title string) (*Chart, error) {
	if len(pts) == 0 {
		return nil, errNoData
	}
	sizes := map[int][]analyze.SweepPoint{}
	var order []int
	for _, sp := range pts {
		if _, ok := sizes[sp.Nodes]; !ok {
			order = append(order, sp.Nodes)
		}
		sizes[sp.Nodes] = append(sizes[sp.Nodes], sp)
	}
	slices.Sort(order)
	minP, maxP := math.Inf(1), math.Inf(-1)
	for _, sp := range pts {
		minP, maxP = min(minP, float64(sp.Points)), max(maxP, float64(sp.Points))
	}
	logX := maxP/minP >= 10

	top := newPlot(title, "points (virtual nodes) per node", "std / mean of the shares")
	bottom := newPlot("", "points (virtual nodes) per node", "most loaded node / fair share")
	topData := false
	for k, n := range order {
		s := sizes[n]
		slices.SortFunc(s, func(a, b analyze.SweepPoint) int { return cmp.Compare(a.Points, b.Points) })
		var std, rnd plotter.XYs // positive values only: the axis is logarithmic
		mx := make(plotter.XYs, len(s))
		for i, sp := range s {
			x := float64(sp.Points)
			if sp.StdOverMean > 0 {
				std = append(std, plotter.XY{X: x, Y: sp.StdOverMean})
			}
			if sp.Random > 0 {
				rnd = append(rnd, plotter.XY{X: x, Y: sp.Random})
			}
			mx[i] = plotter.XY{X: x, Y: sp.MaxOverMean}
		}
		c := Color(k)
		name := fmt.Sprintf("%d nodes", n)
		if n == 1 {
			name = "1 node"
		}
		if len(rnd) > 0 {
			l, err := line(rnd, c, true, 1)
			if err != nil {
				return nil, err
			}
			top.Add(l)
		}
		if len(std) > 0 {
			// One node, or a ring whose nodes hold equal shares, varies
			// by nothing, which a logarithmic axis cannot show.
			l, err := line(std, c, false, 1.6)
			if err != nil {
				return nil, err
			}
			top.Add(l)
			top.Legend.Add(name, l)
			topData = true
		}
		l3, err := line(mx, c, false, 1.6)
		if err != nil {
			return nil, err
		}
		bottom.Add(l3)
		bottom.Legend.Add(name, l3)
	}
	ref, err := line(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}}, grey, true, 1)
	if err != nil {
		return nil, err
	}
	top.Legend.Add("random points: √((N−1)/(N·V+1))", ref)
	for _, p := range []*gonum.Plot{top, bottom} {
		// Both panels span the points swept, the upper one also when
		// it has nothing to draw (one node).
		p.X.Min, p.X.Max = minP, maxP
		p.X.Tick.Marker = countTicks{}
		if logX {
			p.X.Scale = gonum.LogScale{}
			p.X.Tick.Marker = logTicks{}
		}
	}
	if topData {
		top.Y.Scale = gonum.LogScale{}
		top.Y.Tick.Marker = logTicks{}
	}
	fair, err := line(plotter.XYs{{X: minP, Y: 1}, {X: maxP, Y: 1}}, black, true, 1)
	if err != nil {
		return nil, err
	}
	bottom.Add(fair)
	bottom.Legend.Add("perfect balance", fair)
	bottom.Y.Min = min(bottom.Y.Min, 1)
	bottom.Y.Max *= 1.05
	return &Chart{plots: []*gonum.Plot{top, bottom}, width: 9 * vg.Inch, height: 9 * vg.Inch}, nil
}

// Churn returns the fraction of keys that move when a node joins or leaves a
// ring, against the ring's size, with the ideal and modulo hashing for
// comparison. The fraction's axis is logarithmic, and so is the size's when
// the sizes span a decade or more.
func Churn(pts []analyze.ChurnPoint, title string) (*Chart, error) {
	if len(pts) == 0 {
		return nil, errNoData
	}
	pts = slices.Clone(pts)
	slices.SortFunc(pts, func(a, b analyze.ChurnPoint) int { return cmp.Compare(a.Nodes, b.Nodes) })
	series := []struct {
		name   string
		get    func(analyze.ChurnPoint) float64
		c      color.Color
		dashed bool
		skip1  bool // no removal from a single node: Remove is nil
	}{
		{"modulo, a node joins", func(c analyze.ChurnPoint) float64 { return c.Add.ModuloMoved }, Color(2), false, false},
		{"modulo, a node leaves", func(c analyze.ChurnPoint) float64 { return c.Remove.ModuloMoved }, Color(1), false, true},
		{"ring, a node joins", func(c analyze.ChurnPoint) float64 { return c.Add.Moved }, Color(0), false, false},
		{"ring, a node leaves", func(c analyze.ChurnPoint) float64 { return c.Remove.Moved }, Color(4), false, true},
		{"ideal: the joining node's fair share", func(c analyze.ChurnPoint) float64 { return c.Add.Ideal }, black, true, false},
	}
	p := newPlot(title, "nodes in the ring", "fraction of keys that move")
	for _, s := range series {
		var xys plotter.XYs
		for _, c := range pts {
			if s.skip1 && c.Remove == nil {
				continue
			}
			if v := s.get(c); v > 0 {
				xys = append(xys, plotter.XY{X: float64(c.Nodes), Y: v})
			}
		}
		if len(xys) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, fmt.Errorf("plot: %w", err)
		}
		l.Color, l.Width = s.c, vg.Points(1.6)
		if s.dashed {
			l.Dashes = dash
		}
		pts.Color = s.c
		pts.Radius = vg.Points(2.5)
		p.Add(l, pts)
		p.Legend.Add(s.name, l, pts)
	}
	p.X.Tick.Marker = countTicks{}
	if pts[len(pts)-1].Nodes >= 10*pts[0].Nodes {
		p.X.Scale = gonum.LogScale{}
		p.X.Tick.Marker = logTicks{}
	}
	p.Y.Scale = gonum.LogScale{}
	p.Y.Tick.Marker = logTicks{percent: true}
	p.Y.Max = 1.3 // a little room above 100%
	p.Legend.Top = false
	p.Legend.Left = true
	return &Chart{plots: []*gonum.Plot{p}, width: 9 * vg.Inch, height: 6 * vg.Inch}, nil
}

// Move is one change of membership for Moves: what a ring moves, the ideal (the
// joining server's fair share, or the leaving server's share) and what modulo
// hashing moves, as fractions of the key space.
type Move struct {
	Label               string
	Ring, Ideal, Modulo float64
}

// Moves returns grouped bars comparing, for each change, what the ring moves with
// the ideal and with modulo hashing, each bar labelled with its percentage.
func Moves(title string, moves []Move) (*Chart, error) {
	if len(moves) == 0 {
		return nil, errNoData
	}
	p := newPlot(title, "", "fraction of keys that move")
	groups := []struct {
		name string
		get  func(Move) float64
		c    color.Color
	}{
		{"consistent-hash ring", func(m Move) float64 { return m.Ring }, palette[0]},
		// Not "the least possible": a joining server that takes less than its
		// fair share moves less.
		{"ideal: the joining server's fair share, the leaving server's share", func(m Move) float64 { return m.Ideal }, palette[9]},
		{"modulo hashing (hash mod n)", func(m Move) float64 { return m.Modulo }, palette[2]},
	}
	w := vg.Points(46)
	for g, grp := range groups {
		vals := make(plotter.Values, len(moves))
		for i, m := range moves {
			vals[i] = grp.get(m)
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, fmt.Errorf("plot: %w", err)
		}
		bars.Color = grp.c
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(g-1) * (w + vg.Points(3))
		p.Add(bars)
		p.Legend.Add(grp.name, bars)
		labels, err := barLabels(vals, g-1)
		if err != nil {
			return nil, err
		}
		p.Add(labels)
	}
	names := make([]string, len(moves))
	for i, m := range moves {
		names[i] = m.Label
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.7, float64(len(moves))-0.3
	p.X.Tick.Label.Font.Size = vg.Points(10)
	p.Y.Min, p.Y.Max = 0, 1.25 // room above 100% for the labels and the legend
	var ticks []gonum.Tick
	for v := 0.0; v <= 1; v += 0.1 {
		t := gonum.Tick{Value: v}
		if int(math.Round(v*10))%2 == 0 {
			t.Label = percent(math.Round(v*10) / 10)
		}
		ticks = append(ticks, t)
	}
	p.Y.Tick.Marker = gonum.ConstantTicks(ticks)
	return &Chart{plots: []*gonum.Plot{p}, width: max(7*vg.Inch, vg.Length(len(moves))*3.5*vg.Inch), height: 5 * vg.Inch}, nil
}

// barLabels writes each value as a percentage above its bar: bar g (−1, 0 or 1)
// of a group of three, 0 for a lone bar.
func barLabels(vals plotter.Values, g int) (*plotter.Labels, error) {
	xys := make([]plotter.XY, len(vals))
	text := make([]string, len(vals))
	for i, v := range vals {
		xys[i] = plotter.XY{X: float64(i), Y: v}
		text[i] = percent(roundTo(v, 4))
	}
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: text})
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font = fontSize(9)
		l.TextStyle[i].XAlign = draw.XCenter
	}
	l.Offset = vg.Point{X: vg.Length(g) * vg.Points(49), Y: vg.Points(3)}
	return l, nil
}

// roundTo rounds f to the given number of significant digits.
func roundTo(f float64, digits int) float64 {
	if f == 0 {
		return 0
	}
	e := math.Pow(10, float64(digits)-math.Ceil(math.Log10(math.Abs(f))))
	return math.Round(f*e) / e
}

// Diff returns bars of each node's share before and after a change, with the
// new fair shares dashed, titled with what moved.
func Diff(d *analyze.Diff, title string) (*Chart, error) {
	if d.Old == nil || d.New == nil {
		return nil, errNoData
	}
	// Nodes in old order, then the joining ones.
	var nodes []analyze.NodeShare
	before, after := map[string]float64{}, map[string]float64{}
	fair := map[string]float64{}
	for _, n := range d.Old.Nodes {
		nodes = append(nodes, n)
		before[n.Name] = n.Share
	}
	for _, n := range d.New.Nodes {
		if _, ok := before[n.Name]; !ok {
			nodes = append(nodes, n)
		}
		after[n.Name], fair[n.Name] = n.Share, n.Expected
	}
	b, a, e := make(plotter.Values, len(nodes)), make(plotter.Values, len(nodes)), make([]float64, len(nodes))
	for i, n := range nodes {
		b[i], a[i], e[i] = before[n.Name], after[n.Name], fair[n.Name]
	}
	sub := fmt.Sprintf("moved %s of keys (ideal %s, modulo hashing %s)",
		percent(roundTo(d.Moved, 4)), percent(roundTo(d.Ideal, 4)), percent(roundTo(d.ModuloMoved, 4)))
	if title != "" {
		sub = title + "\n" + sub
	}
	p := newPlot(sub, nodeAxis(len(nodes)), "share of the key space")
	w := barWidth(len(nodes), 2)
	bb, err := plotter.NewBarChart(b, w)
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	ab, err := plotter.NewBarChart(a, w)
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	bb.Color, ab.Color = palette[9], palette[0]
	bb.LineStyle.Width, ab.LineStyle.Width = 0, 0
	bb.Offset, ab.Offset = -w/2, w/2
	lv := &levels{values: e, color: black}
	p.Add(bb, ab, lv)
	p.Legend.Add("before", bb)
	p.Legend.Add("after", ab)
	p.Legend.Add("fair share after", lv)
	p.Y.Min = 0
	p.Y.Max *= 1.3
	p.Y.Tick.Marker = percentTicks{}
	nominal(p, nodes)
	return &Chart{plots: []*gonum.Plot{p}, width: barsWidth(len(nodes)), height: 5 * vg.Inch}, nil
}

// Compare returns grouped bars of each distribution's balance (max/mean and
// min/mean load) and movement (the keys moved when a node joins and when one
// leaves, as multiples of the ideal), the figures of chash compare.
// Distributions without figures (Err set) are left out.
func Compare(results []analyze.Comparison, title string) (*Chart, error) {
	var names []string
	var ok []analyze.Comparison
	for _, r := range results {
		if r.Err == nil {
			names = append(names, r.Entry.Name)
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		return nil, errNoData
	}
	p := newPlot(title, "", "multiple of the fair share or of the ideal movement")
	series := []struct {
		label string
		get   func(analyze.Comparison) float64
	}{
		{"max/mean load", func(r analyze.Comparison) float64 { return r.MaxOverMean }},
		{"min/mean load", func(r analyze.Comparison) float64 { return r.MinOverMean }},
		{"moved on add", func(r analyze.Comparison) float64 { return r.Add.OverIdeal() }},
		{"moved on remove", func(r analyze.Comparison) float64 { return r.Remove.OverIdeal() }},
	}
	// Bars above compareCap (modula's movement, some 40 times the ideal) are
	// cut there and labelled with their value, so that they do not flatten the
	// others.
	const compareCap = 5
	w := vg.Points(12)
	top := 0.0
	for s, ser := range series {
		vals := make(plotter.Values, len(ok))
		var cut plotter.XYLabels
		offset := vg.Length(s-len(series)/2)*w + w/2
		for i, r := range ok {
			v := ser.get(r)
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0):
				continue
			case v > compareCap:
				cut.XYs = append(cut.XYs, plotter.XY{X: float64(i), Y: compareCap})
				prec := 0 // 37×, but 5.5×: a cut bar's label says it goes on
				if v < 10 {
					prec = 1
				}
				cut.Labels = append(cut.Labels, strconv.FormatFloat(v, 'f', prec, 64)+"×")
				v = compareCap
			}
			vals[i] = v
			top = max(top, v)
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, fmt.Errorf("plot: %w", err)
		}
		bars.Color = Color(s)
		bars.LineStyle.Width = 0
		bars.Offset = offset
		p.Add(bars)
		p.Legend.Add(ser.label, bars)
		if len(cut.XYs) > 0 {
			labels, err := plotter.NewLabels(cut)
			if err != nil {
				return nil, fmt.Errorf("plot: %w", err)
			}
			for i := range labels.TextStyle {
				labels.TextStyle[i].Font = fontSize(8)
				labels.TextStyle[i].XAlign = draw.XCenter
			}
			// Neighbouring cut bars' labels (modula's two movements)
			// one above the other, not overlapping.
			labels.Offset = vg.Point{X: offset, Y: vg.Points(2 + 10*float64(s%2))}
			p.Add(labels)
		}
	}
	// The ideal, which every figure is a multiple of: a bar at the line is
	// as good as can be.
	ideal, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 1}, {X: float64(len(ok)) - 0.5, Y: 1}})
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	ideal.LineStyle.Width = vg.Points(1)
	ideal.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	ideal.LineStyle.Color = color.Gray{Y: 96}
	p.Add(ideal)
	p.Legend.Add("ideal (1×)", ideal)
	p.NominalX(names...)
	p.Y.Min, p.Y.Max = 0, top*1.3 // room for the legend
	p.Y.Tick.Marker = timesTicks{}
	p.Legend.Left = true
	return &Chart{plots: []*gonum.Plot{p}, width: vg.Length(len(ok))*vg.Inch + 2*vg.Inch, height: 5 * vg.Inch}, nil
}
