package analyze

import (
	"math"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/config"
)

// replicaPool returns the Pool of a pool of the distribution over servers
// that keeps each key on replicas servers.
func replicaPool(t *testing.T, dist string, replicas int, servers []config.Server) *Pool {
	t.Helper()
	p, err := NewPool(&config.Pool{Name: "p", Distribution: dist, Replicas: replicas, Servers: servers}, servers)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDiffReplicas checks, for each distribution with replica sets, what
// DiffReplicas measures against what a change must do: nothing for no
// change; a third copy of every key changes every set by one server (a third
// of the copies new). One server joining four, two copies a key, or leaving
// five, is in about 2/5 of the sets (its share of the ring, twice); in a
// ring, in rendezvous' ranking and in balanced's, a set it joins or leaves
// gains or loses it alone (copies to make: half the sets that change; no key
// goes cold). In multiprobe's, a joining server's points also hide other
// servers' points from a key's probes, so a set can lose both servers.
func TestDiffReplicas(t *testing.T) {
	const keys = 200_000
	for _, d := range []string{"chash", "rendezvous", "multiprobe", "balanced"} {
		t.Run(d, func(t *testing.T) {
			four, five := servers(4), servers(5)
			for _, tt := range []struct {
				name           string
				old, new       *Pool
				minChanged     float64
				maxChanged     float64
				oneServer      bool // a set that changes gains one server
				oldRep, newRep int
			}{
				{"no change", replicaPool(t, d, 2, four), replicaPool(t, d, 2, four), 0, 0, true, 2, 2},
				{"one joins", replicaPool(t, d, 2, four), replicaPool(t, d, 2, five), 0.3, 0.5, d != "multiprobe", 2, 2},
				{"one leaves", replicaPool(t, d, 2, five), replicaPool(t, d, 2, four), 0.3, 0.5, d != "multiprobe", 2, 2},
				{"a third copy", replicaPool(t, d, 2, five), replicaPool(t, d, 3, five), 1, 1, true, 2, 3},
			} {
				m, err := DiffReplicas(tt.old, tt.new, SampleKeys(keys, 7))
				if err != nil {
					t.Fatalf("%s: %v", tt.name, err)
				}
				if m.Keys != keys || m.Old != tt.oldRep || m.New != tt.newRep {
					t.Errorf("%s: keys %d, replicas %d -> %d; want %d, %d -> %d", tt.name, m.Keys, m.Old, m.New, keys, tt.oldRep, tt.newRep)
				}
				if m.Changed < tt.minChanged || m.Changed > tt.maxChanged {
					t.Errorf("%s: changed %.4f; want %.2f to %.2f", tt.name, m.Changed, tt.minChanged, tt.maxChanged)
				}
				// Each set that changes has one new server at least, and
				// a key is cold only if its set changed.
				if min := m.Changed / float64(m.New); m.Copies < min-1e-9 || m.Cold > m.Changed {
					t.Errorf("%s: copies %.6f, cold %.6f; want copies ≥ %.6f, cold ≤ changed %.6f", tt.name, m.Copies, m.Cold, min, m.Changed)
				}
				if !tt.oneServer {
					if m.Cold == 0 {
						t.Errorf("%s: no key cold; want some (a set that loses both servers)", tt.name)
					}
					continue
				}
				if want := m.Changed / float64(m.New); m.Cold != 0 || math.Abs(m.Copies-want) > 1e-9 {
					t.Errorf("%s: cold %.6f, copies %.6f; want 0, %.6f (one new server in each set that changes)", tt.name, m.Cold, m.Copies, want)
				}
			}
		})
	}
}

// TestDiffReplicasCold: every server replaced, so every key is cold and
// every copy new; pools of one copy a key measure nothing; a pool that asks
// for replicas of a distribution without replica sets is an error naming it.
func TestDiffReplicasCold(t *testing.T) {
	old := replicaPool(t, "chash", 2, servers(4))
	other := servers(8)[4:]
	m, err := DiffReplicas(old, replicaPool(t, "chash", 2, other), SampleKeys(10_000, 1))
	if err != nil {
		t.Fatal(err)
	}
	if m.Changed != 1 || m.Cold != 1 || m.Copies != 1 {
		t.Errorf("every server replaced: changed %v, cold %v, copies %v; want 1, 1, 1", m.Changed, m.Cold, m.Copies)
	}
	if m, err := DiffReplicas(mustPool(t, "chash", servers(4)), mustPool(t, "chash", servers(5)), SampleKeys(10, 1)); m != nil || err != nil {
		t.Errorf("one copy a key: %+v, %v; want nil, nil", m, err)
	}
	ketama := mustPool(t, "ketama", servers(4))
	ketama.Config.Replicas = 2
	_, err = DiffReplicas(ketama, old, SampleKeys(10, 1))
	if err == nil || !strings.Contains(err.Error(), "ketama has no replica sets") {
		t.Errorf("ketama with replicas: %v; want an error naming ketama", err)
	}
}
