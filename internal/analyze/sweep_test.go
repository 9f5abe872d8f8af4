package analyze

import (
	"math"
	"slices"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/compat"
)

func standard(p int) chash.Scheme { return chash.Standard{Points: p} }

func TestSweep(t *testing.T) {
	calls := 0
	pts, err := Sweep(SweepConfig{
		Scheme:   standard,
		Nodes:    []int{5, 10},
		Points:   []int{1, 10, 160},
		Trials:   40,
		Progress: func(done, total int) { calls++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 6 || calls != 6*40 {
		t.Fatalf("%d points, %d progress calls; want 6 and 240", len(pts), calls)
	}
	for _, p := range pts {
		if p.Random != RandomStdOverMean(p.Nodes, p.Points) {
			t.Errorf("%d×%d: random %v", p.Nodes, p.Points, p.Random)
		}
		// Forty rings average within 15% of the closed form (about 3 of the
		// averaging's standard errors at 5 nodes).
		if math.Abs(p.StdOverMean/p.Random-1) > 0.15 {
			t.Errorf("%d×%d: std/mean %.4f; closed form %.4f", p.Nodes, p.Points, p.StdOverMean, p.Random)
		}
		if !(p.MinOverMean < 1 && p.MaxOverMean > 1) {
			t.Errorf("%d×%d: min/mean %.3f max/mean %.3f", p.Nodes, p.Points, p.MinOverMean, p.MaxOverMean)
		}
	}
	// More points, better balance.
	if !(pts[0].MaxOverMean > pts[1].MaxOverMean && pts[1].MaxOverMean > pts[2].MaxOverMean) {
		t.Errorf("max/mean not falling with points: %v", pts[:3])
	}
	if _, err := Sweep(SweepConfig{}); err == nil {
		t.Errorf("Sweep without a scheme: no error")
	}
	if _, err := Sweep(SweepConfig{Scheme: standard, Points: []int{0}}); err == nil {
		t.Errorf("Sweep over 0 points: no error")
	}
}

func TestChurn(t *testing.T) {
	pts, err := Churn(SweepConfig{Scheme: standard, Nodes: []int{1, 5, 50}, Trials: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		n := float64(p.Nodes)
		if p.Points != chash.DefaultPoints {
			t.Errorf("%d nodes: %d points; want the default", p.Nodes, p.Points)
		}
		if want := 1 / (n + 1); math.Abs(p.Add.Ideal-want) > 1e-12 {
			t.Errorf("%d nodes: add ideal %v; want %v", p.Nodes, p.Add.Ideal, want)
		}
		// A ring moves about the ideal; modulo moves about n/(n+1).
		if math.Abs(p.Add.OverIdeal()-1) > 0.5 {
			t.Errorf("%d nodes: add moved %v, ideal %v", p.Nodes, p.Add.Moved, p.Add.Ideal)
		}
		if want := n / (n + 1); math.Abs(p.Add.ModuloMoved-want) > 1e-6 {
			t.Errorf("%d nodes: modulo moved %v; want %v", p.Nodes, p.Add.ModuloMoved, want)
		}
		switch {
		case p.Nodes == 1 && p.Remove != nil:
			t.Errorf("1 node: remove %+v; want none, as the only node cannot leave", *p.Remove)
		case p.Nodes > 1 && (p.Remove == nil || p.Remove.Moved != p.Remove.Ideal):
			t.Errorf("%d nodes: remove %+v; want the leaving node's share moved", p.Nodes, p.Remove)
		}
	}
}

// TestPerNode checks that PerNode gives each node the first points×weight
// points of the scheme's own sequence, whatever the scheme's own count.
func TestPerNode(t *testing.T) {
	base := compat.Ketama{} // 160 points per server of average weight
	s := PerNode(base)(3)
	if got := s.NumPoints(2, 5, 4); got != 6 {
		t.Errorf("NumPoints(weight 2) = %d; want 6", got)
	}
	if got, want := s.AppendPoints(nil, "n", 0, 6), base.AppendPoints(nil, "n", 0, 6); !slices.Equal(got, want) {
		t.Errorf("AppendPoints = %x; want the scheme's own %x", got, want)
	}
	if s.Hash([]byte("k")) != base.Hash([]byte("k")) {
		t.Error("PerNode changes the key hash")
	}
}

// TestSweepManyNodes checks that the default names stay distinct past 2^16
// nodes, where "10.t.x.y" alone repeats, and that the first 2^16 keep their
// names (and so the figures of smaller sweeps).
func TestSweepManyNodes(t *testing.T) {
	c := SweepConfig{Scheme: standard, Nodes: []int{1<<16 + 2}, Points: []int{1}}
	if _, err := Sweep(c); err != nil {
		t.Fatalf("Sweep over %d nodes: %v", c.Nodes[0], err)
	}
	if err := c.defaults(); err != nil {
		t.Fatal(err)
	}
	for i, want := range map[int]string{0: "10.3.0.0:11211", 258: "10.3.1.2:11211", 1<<16 - 1: "10.3.255.255:11211", 1 << 16: "10.3.0.0:11212"} {
		if got := c.Name(3, i); got != want {
			t.Errorf("Name(3, %d) = %q; want %q", i, got, want)
		}
	}
}
