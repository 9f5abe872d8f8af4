// Package plot draws the figures of package analyze as PNG or SVG charts, with
// gonum.org/v1/plot: per-node share bars against the fair share, balance against
// points per node (the seed articles' chart), movement against cluster size, the
// distributions' balance and movement side by side, and a picture of the ring
// with each node's arcs in its own colour. It is the only package of chash that
// imports gonum.
//
// Every chart labels its axes and has a legend; fonts are embedded, so charts
// render the same on a machine with no fonts installed.
package plot

import (
	"bufio"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	gonum "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// DPI is the resolution of PNG output.
const DPI = 144

// A Chart is one or more plots stacked top to bottom, ready to save.
type Chart struct {
	plots         []*gonum.Plot
	width, height vg.Length
}

// Formats returns the file formats Save and Write accept.
func Formats() []string { return []string{"png", "svg"} }

// Format returns the format of a file name from its extension, png or svg, or an
// error naming the formats.
func Format(path string) (string, error) {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	switch ext {
	case "png", "svg":
		return ext, nil
	}
	return "", fmt.Errorf("plot: %q: unknown image format %q (want .png or .svg)", path, filepath.Ext(path))
}

// Save writes the chart to the file at path, as PNG or SVG by its extension.
func (c *Chart) Save(path string) (err error) {
	format, err := Format(path)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("plot: %w", cerr)
		}
	}()
	w := bufio.NewWriter(f)
	if err := c.Write(w, format); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

// Write writes the chart to w in format, "png" or "svg".
func (c *Chart) Write(w io.Writer, format string) error {
	return c.write(w, format, DPI)
}

// write writes the chart, a PNG at dpi dots per inch.
func (c *Chart) write(w io.Writer, format string, dpi int) error {
	var canvas vg.CanvasWriterTo
	switch format {
	case "png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(c.width, c.height), vgimg.UseDPI(dpi))}
	case "svg":
		canvas = vgsvg.New(c.width, c.height)
	default:
		return fmt.Errorf("plot: unknown format %q (want png or svg)", format)
	}
	dc := draw.New(canvas)
	if len(c.plots) == 1 {
		c.plots[0].Draw(dc)
	} else {
		rows := make([][]*gonum.Plot, len(c.plots))
		for i, p := range c.plots {
			rows[i] = []*gonum.Plot{p}
		}
		tiles := draw.Tiles{Rows: len(c.plots), Cols: 1, PadY: vg.Points(12), PadTop: vg.Points(4), PadBottom: vg.Points(4),
			PadLeft: vg.Points(4), PadRight: vg.Points(8)}
		canvases := gonum.Align(rows, tiles, dc)
		for i, p := range c.plots {
			p.Draw(canvases[i][0])
		}
	}
	if _, err := canvas.WriteTo(w); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

// palette is Tableau's ten colours, distinct for most eyes.
var palette = []color.RGBA{
	{0x4e, 0x79, 0xa7, 0xff}, {0xf2, 0x8e, 0x2b, 0xff}, {0xe1, 0x57, 0x59, 0xff}, {0x76, 0xb7, 0xb2, 0xff},
	{0x59, 0xa1, 0x4f, 0xff}, {0xed, 0xc9, 0x48, 0xff}, {0xb0, 0x7a, 0xa1, 0xff}, {0xff, 0x9d, 0xa7, 0xff},
	{0x9c, 0x75, 0x5f, 0xff}, {0xba, 0xb0, 0xac, 0xff},
}

// Color returns the i'th colour: the palette's ten, then hues a golden angle apart.
func Color(i int) color.Color {
	if i < len(palette) {
		return palette[i]
	}
	h := math.Mod(float64(i-len(palette))*137.508, 360)
	return hsv(h, 0.55, 0.85)
}

func hsv(h, s, v float64) color.RGBA {
	c := v * s
	x := c * (1 - math.Abs(math.Mod(h/60, 2)-1))
	m := v - c
	var r, g, b float64
	switch {
	case h < 60:
		r, g, b = c, x, 0
	case h < 120:
		r, g, b = x, c, 0
	case h < 180:
		r, g, b = 0, c, x
	case h < 240:
		r, g, b = 0, x, c
	case h < 300:
		r, g, b = x, 0, c
	default:
		r, g, b = c, 0, x
	}
	return color.RGBA{uint8((r + m) * 255), uint8((g + m) * 255), uint8((b + m) * 255), 0xff}
}

var (
	black = color.RGBA{0x20, 0x20, 0x20, 0xff}
	grey  = color.RGBA{0x70, 0x70, 0x70, 0xff}
	dash  = []vg.Length{vg.Points(5), vg.Points(3)}
)

// newPlot returns a plot with chash's common settings: title, axis labels, a
// light grid and the legend at the top right.
func newPlot(title, x, y string) *gonum.Plot {
	p := gonum.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.X.Label.TextStyle.Font.Size = vg.Points(11)
	p.Y.Label.TextStyle.Font.Size = vg.Points(11)
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.Legend.ThumbnailWidth = vg.Points(22)
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{0xe4}
	g.Horizontal.Color = color.Gray{0xe4}
	p.Add(g)
	return p
}

// percentTicks labels a linear axis of fractions as percentages.
type percentTicks struct{}

func (percentTicks) Ticks(min, max float64) []gonum.Tick {
	ts := gonum.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = percent(ts[i].Value)
		}
	}
	return ts
}

// countTicks labels a linear axis of counts (nodes, points per node) with
// whole numbers only: the default ticks of a range under a decade fall on
// halves ("7.50 nodes").
// Where that leaves fewer than three labels, every tick is labelled.
type countTicks struct{}

func (countTicks) Ticks(min, max float64) []gonum.Tick {
	var ts []gonum.Tick
	labels := 0
	for _, t := range (gonum.DefaultTicks{}).Ticks(min, max) {
		if t.Value != math.Trunc(t.Value) {
			continue
		}
		if t.Label != "" {
			labels++
		}
		ts = append(ts, t)
	}
	for i := range ts {
		if ts[i].Label != "" || labels < 3 {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', 0, 64)
		}
	}
	return ts
}

// timesTicks labels a linear axis of multiples (of a fair share, of the
// ideal movement) at every whole multiple up to six, 1× among them, and at
// the default ticks beyond: the default ticks of 0 to 6.5 are 0, 3 and 6,
// which leave out the one that matters.
type timesTicks struct{}

func (timesTicks) Ticks(min, max float64) []gonum.Tick {
	if max-min > 6.5 {
		ts := gonum.DefaultTicks{}.Ticks(min, max)
		for i := range ts {
			if ts[i].Label != "" {
				ts[i].Label += "×"
			}
		}
		return ts
	}
	var ts []gonum.Tick
	for v := math.Ceil(min*2) / 2; v <= max; v += 0.5 {
		t := gonum.Tick{Value: v}
		if v == math.Trunc(v) {
			t.Label = strconv.FormatFloat(v, 'f', 0, 64) + "×"
		}
		ts = append(ts, t)
	}
	return ts
}

// percent formats a fraction as a percentage with no more digits than it needs
// (up to two decimals).
func percent(f float64) string {
	s := strconv.FormatFloat(f*100, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + "%"
}

// logTicks marks 1, 2 and 5 times each power of ten on a log axis, labelling
// them all when the axis spans few decades.
type logTicks struct{ percent bool }

func (t logTicks) Ticks(min, max float64) []gonum.Tick {
	var ts []gonum.Tick
	lo, hi := math.Floor(math.Log10(min)), math.Ceil(math.Log10(max))
	if math.IsInf(lo, 0) || math.IsNaN(lo) || math.IsInf(hi, 0) || math.IsNaN(hi) {
		return nil // not a range a logarithmic axis has (min ≤ 0)
	}
	for e := lo; e <= hi; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v < min*(1-1e-9) || v > max*(1+1e-9) {
				continue
			}
			label := strconv.FormatFloat(v, 'g', -1, 64)
			if t.percent {
				label = percent(v)
			}
			if m != 1 && hi-lo > 4 {
				label = ""
			}
			ts = append(ts, gonum.Tick{Value: v, Label: label})
		}
		for m := 3.0; m < 10; m++ {
			if v := m * math.Pow(10, e); m != 5 && v >= min && v <= max {
				ts = append(ts, gonum.Tick{Value: v})
			}
		}
	}
	return ts
}

// line returns a solid or dashed line through xys in colour c.
func line(xys plotter.XYs, c color.Color, dashed bool, width float64) (*plotter.Line, error) {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	l.Color = c
	l.Width = vg.Points(width)
	if dashed {
		l.Dashes = dash
	}
	return l, nil
}

// swatch is a legend thumbnail: a filled box.
type swatch struct{ color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y}}
	c.FillPolygon(s.Color, pts)
}

// fontSize returns a font of the default family at the given size.
func fontSize(pt float64) font.Font {
	f := font.From(gonum.DefaultFont, vg.Points(pt))
	return f
}

var errNoData = errors.New("plot: nothing to draw")
