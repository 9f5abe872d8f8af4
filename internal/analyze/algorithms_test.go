package analyze

import (
	"math"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/compat"
	"github.com/chash-dev/chash/hashfn"
	"github.com/chash-dev/chash/jump"
	"github.com/chash-dev/chash/maglev"
	"github.com/chash-dev/chash/rendezvous"
)

var _ Table = (*maglev.Table)(nil)

// TestMaglevExactAgreesWithSampling measures a Maglev table exactly, from its
// entries, and by routing a million keys: every node's shares agree within four
// standard errors, and so does the movement when a node joins.
func TestMaglevExactAgreesWithSampling(t *testing.T) {
	const keys = 1_000_000
	nodes := equalNodes(names10()...)
	old, err := maglev.New(maglev.Config{Size: 1009}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	exact, err := Measure(old, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if exact.Method != MethodTable || exact.Total != 1009 {
		t.Fatalf("Measure(maglev) method %q total %d; want table 1009", exact.Method, exact.Total)
	}
	sampled, err := Sample(old, old.Nodes(), SampleKeys(keys, 3))
	if err != nil {
		t.Fatal(err)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		se := math.Sqrt(want * (1 - want) / keys)
		if math.Abs(got-want) > 4*se {
			t.Errorf("%s: sampled %.5f, exact %.5f", what, got, want)
		}
	}
	for i, n := range exact.Nodes {
		near(n.Name, sampled.Nodes[i].Share, n.Share)
	}
	grown, err := maglev.New(maglev.Config{Size: 1009}, append(nodes, chash.Node{Name: "joining", Weight: 1}))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Compare(old, grown, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Method != MethodTable {
		t.Fatalf("Compare(maglev, maglev) method %q; want table", d.Method)
	}
	sd, err := CountDiff(MethodSample, old, grown, old.Nodes(), grown.Nodes(), SampleKeys(keys, 4))
	if err != nil {
		t.Fatal(err)
	}
	near("moved", sd.Moved, d.Moved)
}

// TestSampledAlgorithms measures routers with no exact form by sampling: jump hash
// and rendezvous hashing are balanced within sampling error of their fair shares,
// and adding a node to either moves about its fair share.
func TestSampledAlgorithms(t *testing.T) {
	const keys = 200_000
	nodes := equalNodes(names10()...)
	grownNodes := append(equalNodes(names10()...), chash.Node{Name: "joining", Weight: 1})
	j, err := jump.New(jump.Config{}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	jg, err := j.Add(chash.Node{Name: "joining", Weight: 1})
	if err != nil {
		t.Fatal(err)
	}
	rz, err := rendezvous.New(rendezvous.Config{}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	rzg, err := rendezvous.New(rendezvous.Config{}, grownNodes)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		old, new Router
	}{{"jump", j, jg}, {"rendezvous", rz, rzg}} {
		b, err := Measure(tc.old, nodes, SampleKeys(keys, 5))
		if err != nil {
			t.Fatal(err)
		}
		if b.Method != MethodSample {
			t.Errorf("%s: method %q; want sample", tc.name, b.Method)
		}
		se := math.Sqrt(0.1 * 0.9 / keys)
		for _, n := range b.Nodes {
			if math.Abs(n.Share-0.1) > 4*se {
				t.Errorf("%s: node %s share %.5f; want 0.1 within %.5f", tc.name, n.Name, n.Share, 4*se)
			}
		}
		d, err := Compare(tc.old, tc.new, nodes, grownNodes, SampleKeys(keys, 6))
		if err != nil {
			t.Fatal(err)
		}
		se = math.Sqrt(d.Ideal * (1 - d.Ideal) / keys)
		if math.Abs(d.Moved-d.Ideal) > 4*se {
			t.Errorf("%s: moved %.5f; want the ideal %.5f within %.5f", tc.name, d.Moved, d.Ideal, 4*se)
		}
	}
}

// TestModuloAgreesWithModula checks ModuloMoved, computed in closed form, against
// twemproxy's modula distribution (compat.Modula) routing 300000 keys, with
// weights: the exact and counted fractions agree within four standard errors.
func TestModuloAgreesWithModula(t *testing.T) {
	const keys = 300_000
	old := []chash.Node{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}, {Name: "c", Weight: 2}, {Name: "d", Weight: 1}}
	for _, new := range [][]chash.Node{
		append(old[:4:4], chash.Node{Name: "e", Weight: 1}),
		{old[0], old[1], old[3]},
		{old[0], old[1], {Name: "c", Weight: 3}, old[3]},
	} {
		om, err := compat.NewModula(old, hashfn.FNV1a_64, "")
		if err != nil {
			t.Fatal(err)
		}
		nm, err := compat.NewModula(new, hashfn.FNV1a_64, "")
		if err != nil {
			t.Fatal(err)
		}
		d, err := CountDiff(MethodSample, om, nm, old, new, SampleKeys(keys, 7))
		if err != nil {
			t.Fatal(err)
		}
		want := ModuloMoved(ModuloTable(old), ModuloTable(new))
		if se := math.Sqrt(want * (1 - want) / keys); math.Abs(d.Moved-want) > 4*se {
			t.Errorf("%v → %v: modula moved %.5f of sample keys; ModuloMoved says %.5f", old, new, d.Moved, want)
		}
		if d.ModuloMoved != want {
			t.Errorf("Diff.ModuloMoved = %v; want %v", d.ModuloMoved, want)
		}
	}
}
