package analyze

import (
	"errors"
	"fmt"
	"math"

	"github.com/chash-dev/chash"
)

// SweepConfig says which rings Sweep and Churn build.
type SweepConfig struct {
	// Scheme returns the scheme that gives each node of weight 1 the given number of
	// points, such as func(p int) chash.Scheme { return chash.Standard{Points: p} }.
	// It is required.
	Scheme func(points int) chash.Scheme
	// Nodes lists the cluster sizes. If empty, it defaults to 5, 10, 50 and 100.
	Nodes []int
	// Points lists the points per node Sweep measures. If empty, it defaults to
	// every number from 1 to 500.
	Points []int
	// ChurnPoints is the points per node of the rings Churn builds. If zero, it
	// defaults to chash.DefaultPoints (160).
	ChurnPoints int
	// Trials is the number of rings, each of different node names, averaged for
	// every figure. If zero, it defaults to 1.
	Trials int
	// Name returns the name of node i in trial t. If nil, it defaults to
	// "10.t.x.y:port" with x.y spelling i mod 2^16 in base 256 and port
	// 11211 + i/2^16, so trial 0 is 10.0.0.0:11211, 10.0.0.1:11211, ...,
	// 10.0.255.255:11211, 10.0.0.0:11212, ...: a name for every node.
	Name func(t, i int) string
	// Progress, if not nil, is called after each ring built with the number done
	// and the number to do.
	Progress func(done, total int)
}

// PerNode returns a SweepConfig.Scheme over s: the scheme whose node of weight
// w owns the first points×w points of s's own sequence of points for it,
// whatever s's NumPoints says. Rings of V points per node are then s's own, or
// what s would be with V points (a ketama-style scheme fixes 160 per server).
func PerNode(s chash.Scheme) func(points int) chash.Scheme {
	return func(points int) chash.Scheme { return perNode{s, points} }
}

// perNode gives every node points×weight points of its scheme's sequence.
type perNode struct {
	chash.Scheme
	points int
}

func (p perNode) NumPoints(weight, total, n int) int { return p.points * weight }

// DefaultSweepNodes and DefaultSweepPoints are the default grid.
var (
	DefaultSweepNodes  = []int{5, 10, 50, 100}
	DefaultSweepPoints = seq(1, 500)
)

func seq(a, b int) []int {
	s := make([]int, 0, b-a+1)
	for i := a; i <= b; i++ {
		s = append(s, i)
	}
	return s
}

func (c *SweepConfig) defaults() error {
	if c.Scheme == nil {
		return errors.New("analyze: sweep without a scheme")
	}
	if len(c.Nodes) == 0 {
		c.Nodes = DefaultSweepNodes
	}
	if len(c.Points) == 0 {
		c.Points = DefaultSweepPoints
	}
	if c.ChurnPoints == 0 {
		c.ChurnPoints = chash.DefaultPoints
	}
	if c.Trials == 0 {
		c.Trials = 1
	}
	if c.Name == nil {
		c.Name = func(t, i int) string { return fmt.Sprintf("10.%d.%d.%d:%d", t, i>>8&255, i&255, 11211+i>>16) }
	}
	for _, n := range c.Nodes {
		if n < 1 {
			return fmt.Errorf("analyze: sweep over %d nodes", n)
		}
	}
	for _, p := range c.Points {
		if p < 1 {
			return fmt.Errorf("analyze: sweep over %d points", p)
		}
	}
	if c.ChurnPoints < 1 || c.Trials < 1 {
		return fmt.Errorf("analyze: sweep with %d churn points and %d trials", c.ChurnPoints, c.Trials)
	}
	return nil
}

func (c *SweepConfig) nodes(t, n int) []chash.Node {
	ns := make([]chash.Node, n)
	for i := range ns {
		ns[i] = chash.Node{Name: c.Name(t, i), Weight: 1}
	}
	return ns
}

// SweepPoint is the balance of rings of Nodes nodes with Points points each,
// averaged over the trials.
type SweepPoint struct {
	Nodes  int `json:"nodes"`
	Points int `json:"points"`
	// MaxOverMean, MinOverMean and StdOverMean are the Balance figures, averaged
	// over the trials (StdOverMean as the root of the mean square).
	MaxOverMean float64 `json:"max_over_mean"`
	MinOverMean float64 `json:"min_over_mean"`
	StdOverMean float64 `json:"std_over_mean"`
	// Random is StdOverMean expected of points placed at random:
	// sqrt((N−1)/(N·V+1)) for N nodes of V points.
	Random float64 `json:"random_std_over_mean"`
}

// RandomStdOverMean returns the expected coefficient of variation of the shares of
// n nodes with v points each placed uniformly at random: each share is then a
// Beta(v, (n−1)v) variable, whose variance over its squared mean is
// (n−1)/(n·v+1).
func RandomStdOverMean(n, v int) float64 {
	return math.Sqrt(float64(n-1) / float64(n*v+1))
}

// Sweep returns the balance of rings for every cluster size in c.Nodes and every
// number of points in c.Points, in that order (sizes outer).
func Sweep(c SweepConfig) ([]SweepPoint, error) {
	if err := c.defaults(); err != nil {
		return nil, err
	}
	out := make([]SweepPoint, 0, len(c.Nodes)*len(c.Points))
	done, total := 0, len(c.Nodes)*len(c.Points)*c.Trials
	for _, n := range c.Nodes {
		for _, p := range c.Points {
			sp := SweepPoint{Nodes: n, Points: p, Random: RandomStdOverMean(n, p)}
			var sq float64
			for t := range c.Trials {
				r, err := chash.New(c.Scheme(p), c.nodes(t, n))
				if err != nil {
					return nil, fmt.Errorf("analyze: sweep: %w", err)
				}
				b, err := Ring(r)
				if err != nil {
					return nil, fmt.Errorf("analyze: sweep of %d nodes, %d points: %w", n, p, err)
				}
				sp.MaxOverMean += b.MaxOverMean
				sp.MinOverMean += b.MinOverMean
				sq += b.StdOverMean * b.StdOverMean
				done++
				if c.Progress != nil {
					c.Progress(done, total)
				}
			}
			k := float64(c.Trials)
			sp.MaxOverMean /= k
			sp.MinOverMean /= k
			sp.StdOverMean = math.Sqrt(sq / k)
			out = append(out, sp)
		}
	}
	return out, nil
}

// ChurnPoint is what moves when one node joins a ring of Nodes nodes, and when one
// of them leaves, averaged over the trials.
type ChurnPoint struct {
	Nodes  int `json:"nodes"`
	Points int `json:"points"`
	// Add is what moves when a node joins: its ideal is the joining node's fair
	// share, 1/(N+1).
	Add Movement `json:"add"`
	// Remove is what moves when the last node leaves, its ideal that node's
	// share; nil for a ring of one node, which cannot lose it.
	Remove *Movement `json:"remove,omitempty"`
}

// Churn returns, for every cluster size in c.Nodes, what moves when a node joins
// and when one leaves a ring of c.ChurnPoints points per node.
func Churn(c SweepConfig) ([]ChurnPoint, error) {
	if err := c.defaults(); err != nil {
		return nil, err
	}
	out := make([]ChurnPoint, 0, len(c.Nodes))
	done, total := 0, len(c.Nodes)*c.Trials
	s := c.Scheme(c.ChurnPoints)
	for _, n := range c.Nodes {
		cp := ChurnPoint{Nodes: n, Points: c.ChurnPoints}
		for t := range c.Trials {
			nodes := c.nodes(t, n+1)
			r, err := chash.New(s, nodes[:n])
			if err != nil {
				return nil, fmt.Errorf("analyze: churn: %w", err)
			}
			grown, err := r.Add(nodes[n])
			if err != nil {
				return nil, fmt.Errorf("analyze: churn: %w", err)
			}
			add, err := Rings(r, grown)
			if err != nil {
				return nil, err
			}
			cp.Add.add(add.Movement)
			if n > 1 {
				shrunk, err := r.Remove(nodes[n-1].Name)
				if err != nil {
					return nil, fmt.Errorf("analyze: churn: %w", err)
				}
				rm, err := Rings(r, shrunk)
				if err != nil {
					return nil, err
				}
				if cp.Remove == nil {
					cp.Remove = new(Movement)
				}
				cp.Remove.add(rm.Movement)
			}
			done++
			if c.Progress != nil {
				c.Progress(done, total)
			}
		}
		k := float64(c.Trials)
		cp.Add.divide(k)
		if cp.Remove != nil {
			cp.Remove.divide(k)
		}
		out = append(out, cp)
	}
	return out, nil
}

// add adds n's figures to m's, for averaging.
func (m *Movement) add(n Movement) {
	m.Moved += n.Moved
	m.Ideal += n.Ideal
	m.ModuloMoved += n.ModuloMoved
}

// divide divides m's figures by k, for averaging.
func (m *Movement) divide(k float64) {
	m.Moved /= k
	m.Ideal /= k
	m.ModuloMoved /= k
}
