package plot

import (
	"fmt"
	"image/color"
	"math"

	gonum "gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/chash-dev/chash/internal/analyze"
)

// MovedColor is the colour for a layer of moved ranges: dark, unlike any node's.
var MovedColor color.Color = color.RGBA{0x30, 0x30, 0x30, 0xff}

// maxLegend is the most nodes a ring picture's legend lists.
const maxLegend = 24

// RingPicture describes a picture of a ring: one or more concentric annuli, the
// first outermost, each showing which node owns each stretch of the 2^32
// positions. Position 0 is at the top and positions grow clockwise.
type RingPicture struct {
	// Title is written above the picture; it may have several lines.
	Title string
	// Nodes lists the nodes in legend order; node i is drawn in Color(i) in every
	// layer, so a node keeps its colour from one ring to the next.
	Nodes []string
	// Labels, if not nil, are the legend's text for each node (a name with its
	// share, say). If nil, the legend shows the names.
	Labels []string
	// Layers are the annuli, outermost first.
	Layers []Layer
}

// Layer is one annulus of a RingPicture.
type Layer struct {
	// Arcs are the stretches to draw, each in its node's colour; positions no arc
	// covers are left blank.
	Arcs []analyze.Arc
	// Color, if not nil, draws every arc in this colour instead of its node's, as
	// for a layer of moved ranges (MovedColor).
	Color color.Color
	// Label, if not empty, names the layer in the legend (with a swatch of Color,
	// or of grey).
	Label string
}

// Ring returns the picture pic describes.
func Ring(pic RingPicture) (*Chart, error) {
	if len(pic.Layers) == 0 {
		return nil, errNoData
	}
	p := gonum.New()
	p.Title.Text = pic.Title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Title.Padding = vg.Points(10)
	p.HideAxes()
	p.X.Min, p.X.Max = -1.25, 2.6
	p.Y.Min, p.Y.Max = -1.25, 1.25
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(11)
	p.Legend.ThumbnailWidth = vg.Points(14)
	p.Legend.Padding = vg.Points(3)
	p.Legend.Left = true
	colors := make(map[string]color.Color, len(pic.Nodes))
	for i, n := range pic.Nodes {
		colors[n] = Color(i)
	}
	r := &ringPlotter{layers: pic.Layers, colors: colors}
	p.Add(r)
	for i, n := range pic.Nodes {
		if i == maxLegend {
			p.Legend.Add(fmt.Sprintf("… and %d more nodes", len(pic.Nodes)-maxLegend), swatch{color.White})
			break
		}
		label := n
		if pic.Labels != nil {
			label = pic.Labels[i]
		}
		p.Legend.Add(label, swatch{Color(i)})
	}
	for _, l := range pic.Layers {
		if l.Label == "" {
			continue
		}
		c := l.Color
		if c == nil {
			c = color.Gray{0xc0}
		}
		p.Legend.Add(l.Label, swatch{c})
	}
	r.legend = &p.Legend // placed by Plot, which knows where the ring is
	return &Chart{plots: []*gonum.Plot{p}, width: 9 * vg.Inch, height: 6.8 * vg.Inch}, nil
}

// ringPlotter draws the annuli of a RingPicture in a circle as large as the data
// canvas allows, whatever its aspect.
type ringPlotter struct {
	layers []Layer
	colors map[string]color.Color
	legend *gonum.Legend
}

func (r *ringPlotter) DataRange() (xmin, xmax, ymin, ymax float64) {
	return -1.25, 2.6, -1.25, 1.25
}

func (r *ringPlotter) Plot(c draw.Canvas, p *gonum.Plot) {
	tx, ty := p.Transforms(&c)
	// A circle of data radius 1, round whatever the canvas's aspect.
	scale := min(tx(1)-tx(0), ty(1)-ty(0))
	cx, cy := c.Min.X+scale*1.25, ty(0)
	at := func(a, rad float64) vg.Point {
		return vg.Point{X: cx + scale*vg.Length(rad*math.Cos(a)), Y: cy + scale*vg.Length(rad*math.Sin(a))}
	}
	const inner, gap = 0.42, 0.04
	band := (1 - inner) / float64(len(r.layers))
	for k, l := range r.layers {
		outer := 1 - float64(k)*band
		in := outer - band + gap
		for _, arc := range l.Arcs {
			col := l.Color
			if col == nil {
				col = r.colors[arc.Node]
			}
			if col == nil {
				col = color.Gray{0x80}
			}
			a0 := angle(float64(arc.Start))
			a1 := angle(float64(arc.End) + 1)
			// At least one step, then one per half degree.
			steps := max(1, int(math.Ceil((a0-a1)/(math.Pi/360))))
			pts := make([]vg.Point, 0, 2*steps+2)
			for i := 0; i <= steps; i++ {
				pts = append(pts, at(a0+(a1-a0)*float64(i)/float64(steps), outer))
			}
			for i := steps; i >= 0; i-- {
				pts = append(pts, at(a0+(a1-a0)*float64(i)/float64(steps), in))
			}
			c.FillPolygon(col, pts)
		}
	}
	// Position marks: 0 at the top, then each quarter of the ring.
	sty := text.Style{Color: color.Gray{0x50}, Font: fontSize(9), Handler: p.TextHandler}
	tick := draw.LineStyle{Color: color.Gray{0x50}, Width: vg.Points(1)}
	for q, label := range []string{"0", "1/4", "1/2", "3/4"} {
		a := angle(float64(q) * (1 << 30))
		c.StrokeLine2(tick, at(a, 1.01).X, at(a, 1.01).Y, at(a, 1.06).X, at(a, 1.06).Y)
		pt := at(a, 1.14)
		s := sty
		s.XAlign, s.YAlign = draw.XCenter, draw.YCenter
		c.FillText(s, pt, label)
	}
	// An arrow along the top right: positions grow clockwise.
	arrow := []vg.Point{}
	for i := 0; i <= 20; i++ {
		arrow = append(arrow, at(angle(float64(i)*(1<<32)/160+(1<<32)/64), 1.1))
	}
	c.StrokeLines(tick, arrow)
	tip := arrow[len(arrow)-1]
	a := angle(20*(1<<32)/160 + (1<<32)/64)
	dir := vg.Point{X: vg.Length(math.Sin(a)), Y: vg.Length(-math.Cos(a))} // clockwise tangent
	nrm := vg.Point{X: vg.Length(math.Cos(a)), Y: vg.Length(math.Sin(a))}
	h := scale * 0.04
	c.FillPolygon(color.Gray{0x50}, []vg.Point{
		tip.Add(dir.Scale(h)),
		tip.Sub(dir.Scale(h)).Add(nrm.Scale(h * 0.7)),
		tip.Sub(dir.Scale(h)).Sub(nrm.Scale(h * 0.7)),
	})
	// The plot draws its legend after its plotters: stand it right of the ring.
	if r.legend != nil {
		r.legend.XOffs = cx + scale*1.35 - c.Min.X
	}
}

// angle returns the angle, in radians counter-clockwise from the x axis, of ring
// position pos: 0 at the top, growing clockwise.
func angle(pos float64) float64 {
	return math.Pi/2 - 2*math.Pi*pos/(1<<32)
}
