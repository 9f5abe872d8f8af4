package analyze

import (
	"fmt"
	"math"
	"testing"

	"github.com/chash-dev/chash/internal/config"
)

// servers returns n servers 10.0.0.x:11211 named cache-NN.
func servers(n int) []config.Server {
	s := make([]config.Server, n)
	for i := range s {
		s[i] = config.Server{Host: fmt.Sprintf("10.0.0.%d", i), Port: 11211, Weight: 1, Alias: fmt.Sprintf("cache-%02d", i)}
	}
	return s
}

// mustPool returns the Pool of a pool of the distribution over servers, made
// in code.
func mustPool(t testing.TB, dist string, servers []config.Server) *Pool {
	t.Helper()
	p, err := NewPool(&config.Pool{Name: "p", Distribution: dist, Servers: servers}, servers)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMaglevExactAgreesWithSampling measures a Maglev table exactly, from its
// entries, and by routing a million keys: every node's shares agree within four
// standard errors, and so does the movement when a node joins.
func TestMaglevExactAgreesWithSampling(t *testing.T) {
	const keys = 1_000_000
	old := mustPool(t, "maglev", servers(10))
	exact, err := old.Balance(nil)
	if err != nil {
		t.Fatal(err)
	}
	if exact.Method != MethodTable || exact.Total != 65537 {
		t.Fatalf("maglev's balance: method %q total %d; want table 65537", exact.Method, exact.Total)
	}
	sampled, err := old.Sample(SampleKeys(keys, 3))
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
	grown := mustPool(t, "maglev", servers(11))
	d, err := DiffPools(old, grown, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Method != MethodTable {
		t.Fatalf("DiffPools(maglev, maglev) method %q; want table", d.Method)
	}
	sd, err := CountDiff(MethodSample, old.Router, grown.Router, old.Nodes, grown.Nodes, SampleKeys(keys, 4))
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
	for _, name := range []string{"jump", "rendezvous"} {
		old, grown := mustPool(t, name, servers(10)), mustPool(t, name, servers(11))
		b, err := old.Balance(SampleKeys(keys, 5))
		if err != nil {
			t.Fatal(err)
		}
		if b.Method != MethodSample {
			t.Errorf("%s: method %q; want sample", name, b.Method)
		}
		se := math.Sqrt(0.1 * 0.9 / keys)
		for _, n := range b.Nodes {
			if math.Abs(n.Share-0.1) > 4*se {
				t.Errorf("%s: node %s share %.5f; want 0.1 within %.5f", name, n.Name, n.Share, 4*se)
			}
		}
		d, err := DiffPools(old, grown, SampleKeys(keys, 6))
		if err != nil {
			t.Fatal(err)
		}
		se = math.Sqrt(d.Ideal * (1 - d.Ideal) / keys)
		if math.Abs(d.Moved-d.Ideal) > 4*se {
			t.Errorf("%s: moved %.5f; want the ideal %.5f within %.5f", name, d.Moved, d.Ideal, 4*se)
		}
	}
}

// TestModuloAgreesWithModula checks ModuloMoved, computed in closed form, against
// twemproxy's modula distribution routing 300000 keys, with weights: the exact
// and counted fractions agree within four standard errors.
func TestModuloAgreesWithModula(t *testing.T) {
	const keys = 300_000
	server := func(name string, w int) config.Server {
		return config.Server{Host: "10.0.0.1", Port: 11211, Weight: w, Alias: name}
	}
	old := []config.Server{server("a", 1), server("b", 1), server("c", 2), server("d", 1)}
	for _, new := range [][]config.Server{
		append(old[:4:4], server("e", 1)),
		{old[0], old[1], old[3]},
		{old[0], old[1], server("c", 3), old[3]},
	} {
		op, np := mustPool(t, "modula", old), mustPool(t, "modula", new)
		d, err := CountDiff(MethodSample, op.Router, np.Router, op.Nodes, np.Nodes, SampleKeys(keys, 7))
		if err != nil {
			t.Fatal(err)
		}
		want := ModuloMovedNodes(op.Nodes, np.Nodes)
		if se := math.Sqrt(want * (1 - want) / keys); math.Abs(d.Moved-want) > 4*se {
			t.Errorf("%v → %v: modula moved %.5f of sample keys; ModuloMoved says %.5f", op.Names(), np.Names(), d.Moved, want)
		}
		if d.ModuloMoved != want {
			t.Errorf("Diff.ModuloMoved = %v; want %v", d.ModuloMoved, want)
		}
	}
}
