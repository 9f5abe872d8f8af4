package plot

import (
	"bytes"
	"encoding/xml"
	"flag"
	"fmt"
	"html"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/compat"
	"github.com/chash-dev/chash/internal/analyze"
	"github.com/chash-dev/chash/internal/dist"
)

var out = flag.String("out", "", "also write every chart into this directory, to look at")

var seedServers = []string{"192.168.0.0:111", "192.168.0.1:111", "192.168.0.2:111", "192.168.0.3:111", "192.168.0.4:111"}

func ring(t *testing.T, s chash.Scheme, names ...string) *chash.Ring {
	t.Helper()
	nodes := make([]chash.Node, len(names))
	for i, n := range names {
		nodes[i] = chash.Node{Name: n, Weight: 1}
	}
	r, err := chash.New(s, nodes)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func balance(t *testing.T, r *chash.Ring) *analyze.Balance {
	t.Helper()
	b, err := analyze.Ring(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// charts builds one chart of each kind from real figures.
func charts(t *testing.T) map[string]*Chart {
	t.Helper()
	seed1 := ring(t, compat.Seed{}, seedServers...)
	seed5 := ring(t, compat.Seed{Points: 5}, seedServers...)
	grown, err := seed5.Add(chash.Node{Name: "192.168.0.5:111", Weight: 1})
	if err != nil {
		t.Fatal(err)
	}
	d, err := analyze.Rings(seed5, grown)
	if err != nil {
		t.Fatal(err)
	}
	var many []string
	for i := range 60 {
		many = append(many, fmt.Sprintf("cache-%02d", i))
	}
	weighted, err := chash.New(nil, []chash.Node{{Name: "small", Weight: 1}, {Name: "big", Weight: 3}, {Name: "mid", Weight: 2}})
	if err != nil {
		t.Fatal(err)
	}
	sweep, err := analyze.Sweep(analyze.SweepConfig{
		Scheme: func(p int) chash.Scheme { return chash.Standard{Points: p} },
		Nodes:  []int{5, 10, 50},
		Points: []int{1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300, 500},
	})
	if err != nil {
		t.Fatal(err)
	}
	// One node varies by nothing, which the upper panel's logarithmic axis
	// cannot show: alone, that panel is empty; beside five nodes, it has
	// theirs.
	sweep1 := map[string][]analyze.SweepPoint{}
	for name, nodes := range map[string][]int{"sweep-1": {1}, "sweep-1-5": {1, 5}} {
		sweep1[name], err = analyze.Sweep(analyze.SweepConfig{
			Scheme: func(p int) chash.Scheme { return chash.Standard{Points: p} },
			Nodes:  nodes,
			Points: []int{1, 10, 100},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	churn, err := analyze.Churn(analyze.SweepConfig{
		Scheme: func(p int) chash.Scheme { return chash.Standard{Points: p} },
		Nodes:  []int{2, 5, 10, 20, 50, 100},
	})
	if err != nil {
		t.Fatal(err)
	}
	var keys [][]byte
	for k := range analyze.SampleKeys(2000, 1) {
		keys = append(keys, slices.Clone(k))
	}
	compared, err := analyze.CompareDistributions(analyze.CompareConfig{Nodes: 10, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	must := func(c *Chart, err error) *Chart {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	labels := make([]string, len(seedServers))
	b1 := balance(t, seed1)
	for i, n := range b1.Nodes {
		labels[i] = fmt.Sprintf("%s  %.1f%%", n.Name, 100*n.Share)
	}
	moved := Layer{Color: MovedColor, Label: "inner ring: moved ranges"}
	for _, r := range d.Ranges {
		moved.Arcs = append(moved.Arcs, analyze.Arc{Start: r.Start, End: r.End, Node: r.To})
	}
	return map[string]*Chart{
		"shares-seed1":    must(Shares(b1, "Seed articles' ring, 1 point per server")),
		"shares-many":     must(Shares(balance(t, ring(t, nil, many...)), "60 nodes, 160 points each")),
		"shares-weighted": must(Shares(balance(t, weighted), "Weights 1, 3 and 2")),
		"sweep":           must(Sweep(sweep, "Balance against points per node")),
		"sweep-1":         must(Sweep(sweep1["sweep-1"], "One node")),
		"sweep-1-5":       must(Sweep(sweep1["sweep-1-5"], "One node and five")),
		"churn":           must(Churn(churn, "Keys moved when one node joins or leaves")),
		"moves": must(Moves("Five servers: one joins, one leaves", []Move{
			{Label: "192.168.0.5:111 joins", Ring: d.Moved, Ideal: d.Ideal, Modulo: d.ModuloMoved},
			{Label: "192.168.0.4:111 leaves", Ring: 0.2, Ideal: 0.2, Modulo: 0.8},
		})),
		"diff":    must(Diff(d, "192.168.0.5:111 joins the seed ring (5 points each)")),
		"compare": must(Compare(compared, "chash compare: 10 nodes")),
		"ring-seed1": must(Ring(RingPicture{
			Title: "Seed articles' ring, 1 point per server", Nodes: seedServers, Labels: labels,
			Layers: []Layer{{Arcs: analyze.Arcs(seed1)}},
		})),
		"ring-diff": must(Ring(RingPicture{
			Title: "192.168.0.5:111 joins (5 points per server)",
			Nodes: append(seedServers[:5:5], "192.168.0.5:111"),
			Layers: []Layer{
				{Arcs: analyze.Arcs(seed5), Label: "outer ring: before"},
				{Arcs: analyze.Arcs(grown), Label: "middle ring: after"},
				moved,
			},
		})),
		"ring-many": must(Ring(RingPicture{Title: "60 nodes, 20 points each", Nodes: many,
			Layers: []Layer{{Arcs: analyze.Arcs(ring(t, chash.Standard{Points: 20}, many...))}}})),
	}
}

// TestChartsDecode renders every chart as PNG and SVG and checks that the PNG
// decodes to an image of the chart's size and the SVG parses as XML. All but one
// PNG are drawn at a low resolution, which is what takes the time (and much more
// under the race detector).
func TestChartsDecode(t *testing.T) {
	for name, c := range charts(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dpi := 24
			if name == "shares-seed1" {
				dpi = DPI
			}
			var buf bytes.Buffer
			if err := c.write(&buf, "png", dpi); err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatalf("PNG does not decode: %v", err)
			}
			w, h := img.Bounds().Dx(), img.Bounds().Dy()
			if wantW, wantH := int(c.width.Dots(float64(dpi))+0.5), int(c.height.Dots(float64(dpi))+0.5); w != wantW || h != wantH {
				t.Errorf("PNG is %d×%d; want %d×%d", w, h, wantW, wantH)
			}
			buf.Reset()
			if err := c.Write(&buf, "svg"); err != nil {
				t.Fatal(err)
			}
			if err := checkXML(&buf); err != nil {
				t.Errorf("SVG does not parse: %v", err)
			}
			if *out != "" {
				for _, ext := range []string{".png", ".svg"} {
					if err := c.Save(filepath.Join(*out, name+ext)); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}

func checkXML(r io.Reader) error {
	d := xml.NewDecoder(r)
	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		return fmt.Errorf("root element %q; want svg", root)
	}
	return nil
}

func TestSave(t *testing.T) {
	c, err := Moves("x", []Move{{Label: "a", Ring: 0.1, Ideal: 0.1, Modulo: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"a.png", "b.SVG"} {
		path := filepath.Join(dir, name)
		if err := c.Save(path); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
			t.Errorf("Save(%q) left %v, %v", name, fi, err)
		}
	}
	if err := c.Save(filepath.Join(dir, "c.gif")); err == nil {
		t.Errorf("Save to .gif: no error")
	}
	if err := c.Write(io.Discard, "pdf"); err == nil {
		t.Errorf("Write as pdf: no error")
	}
	if _, err := Shares(&analyze.Balance{}, ""); err == nil {
		t.Errorf("Shares of nothing: no error")
	}
}

func TestPercent(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{{0.5, "50%"}, {0.1667, "16.67%"}, {0.001, "0.1%"}, {1, "100%"}, {0.12345, "12.35%"}} {
		if got := percent(tc.f); got != tc.want {
			t.Errorf("percent(%v) = %q; want %q", tc.f, got, tc.want)
		}
	}
}

// TestMovesLegend checks that the legend of Moves says what its ideal is: a
// ring whose joining server takes less than its fair share moves less, so the
// ideal is not the least that can move.
func TestMovesLegend(t *testing.T) {
	c, err := Moves("x", []Move{{Label: "a joins", Ring: 0.09, Ideal: 1.0 / 6, Modulo: 0.83}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := c.Write(&buf, "svg"); err != nil {
		t.Fatal(err)
	}
	svg := html.UnescapeString(buf.String())
	if want := "ideal: the joining server's fair share, the leaving server's share"; !strings.Contains(svg, want) {
		t.Errorf("Moves legend lacks %q", want)
	}
	if strings.Contains(svg, "least possible") {
		t.Errorf("Moves legend calls the ideal the least possible, above a ring that moves less")
	}
}

// TestCountAxes checks that axes counting nodes or points, on a linear scale
// (a range of less than a decade), label whole numbers only: no "7.50 nodes".
func TestCountAxes(t *testing.T) {
	churn := []analyze.ChurnPoint{
		{Nodes: 5, Points: 160, Add: analyze.Movement{Moved: 0.17, Ideal: 1.0 / 6, ModuloMoved: 0.83}},
		{Nodes: 10, Points: 160, Add: analyze.Movement{Moved: 0.09, Ideal: 1.0 / 11, ModuloMoved: 0.91}},
	}
	sweep := []analyze.SweepPoint{
		{Nodes: 5, Points: 2, StdOverMean: 0.5, Random: 0.6, MaxOverMean: 1.8},
		{Nodes: 5, Points: 3, StdOverMean: 0.4, Random: 0.5, MaxOverMean: 1.6},
	}
	c1, err := Churn(churn, "churn")
	if err != nil {
		t.Fatal(err)
	}
	c2, err := Sweep(sweep, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		c    *Chart
	}{{"Churn", c1}, {"Sweep", c2}} {
		for _, p := range tt.c.plots {
			for _, tk := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
				if tk.Label == "" {
					continue
				}
				if n, err := strconv.Atoi(tk.Label); err != nil || float64(n) != tk.Value {
					t.Errorf("%s: x-axis tick %q at %v; want whole numbers only", tt.name, tk.Label, tk.Value)
				}
			}
		}
	}
}

// TestCompareAxis: the chart of chash compare marks 1×, the ideal that every
// figure is a multiple of, with a labelled tick and a line in the legend:
// the default ticks of its axis (0, 3, 6) left it out.
func TestCompareAxis(t *testing.T) {
	c, err := Compare([]analyze.Comparison{
		{Entry: dist.Entry{Name: "chash"}, MaxOverMean: 1.2, MinOverMean: 0.8,
			Add: analyze.Movement{Moved: 0.1, Ideal: 0.1}, Remove: analyze.Movement{Moved: 0.1, Ideal: 0.1}},
		{Entry: dist.Entry{Name: "modula"}, MaxOverMean: 1.0, MinOverMean: 1.0,
			Add: analyze.Movement{Moved: 0.9, Ideal: 0.1}, Remove: analyze.Movement{Moved: 0.9, Ideal: 0.1}},
	}, "compare")
	if err != nil {
		t.Fatal(err)
	}
	p := c.plots[0]
	var labels []string
	for _, tk := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if want := []string{"0×", "1×", "2×", "3×", "4×", "5×", "6×"}; !slices.Equal(labels, want) {
		t.Errorf("y-axis labels %q; want %q", labels, want)
	}
	var buf bytes.Buffer
	if err := c.Write(&buf, "svg"); err != nil {
		t.Fatal(err)
	}
	if svg := html.UnescapeString(buf.String()); !strings.Contains(svg, "ideal (1×)") {
		t.Error("the legend lacks the ideal's line")
	}
}
