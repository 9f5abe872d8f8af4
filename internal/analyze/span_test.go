package analyze

import (
	"math"
	"slices"
	"testing"

	"github.com/chash-dev/chash/hashfn"
	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/dist"
)

// TestNarrowHashExact checks the exact figures of every ring distribution, and
// maglev, with each hash of fewer than 32 bits against keys routed through the
// pool: twemproxy's crc32 reaches only positions 0..32767 of the ring, so the
// arcs past them own no keys, and a key past the last point goes to the first.
func TestNarrowHashExact(t *testing.T) {
	var narrow []string
	for _, h := range hashfn.Names() {
		if m, _ := hashfn.Max(h); m != math.MaxUint32 {
			narrow = append(narrow, h)
		}
	}
	if !slices.Contains(narrow, "crc32") {
		t.Fatalf("hashes narrower than 32 bits %q; want crc32 among them", narrow)
	}
	sv := servers(3)
	grown := servers(4)
	const keys = 200000
	for _, e := range dist.All() {
		if e.Random || e.LoadAware || (e.Method != dist.Arcs && e.Name != "maglev") {
			continue
		}
		for _, h := range narrow {
			if e.Hashes != nil && !slices.Contains(e.Hashes, h) {
				continue
			}
			p := &config.Pool{Name: "p", Distribution: e.Name, Hash: h, Servers: sv}
			old, err := NewPool(p, sv)
			if err != nil {
				t.Fatalf("%s %s: %v", e.Name, h, err)
			}
			b, err := old.Balance(SampleKeys(keys, 1))
			if err != nil {
				t.Fatal(err)
			}
			s, err := old.Sample(SampleKeys(keys, 2))
			if err != nil {
				t.Fatal(err)
			}
			for i, n := range b.Nodes {
				if d := math.Abs(n.Share - s.Nodes[i].Share); d > 0.01 {
					t.Errorf("%s %s: %s's %s share %.4f; %d keys routed give %.4f",
						e.Name, h, n.Name, b.Method, n.Share, keys, s.Nodes[i].Share)
				}
			}
			np := *p
			np.Servers = grown
			new, err := NewPool(&np, grown)
			if err != nil {
				t.Fatal(err)
			}
			d, err := DiffPools(old, new, SampleKeys(keys, 1))
			if err != nil {
				t.Fatal(err)
			}
			c, err := CountDiff(MethodSample, old.Router, new.Router, old.Nodes, new.Nodes, SampleKeys(keys, 2))
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(d.Moved-c.Moved) > 0.01 {
				t.Errorf("%s %s: %s diff moves %.4f; %d keys routed move %.4f", e.Name, h, d.Method, d.Moved, keys, c.Moved)
			}
			// Every moved range lies where keys hash, and together they make Moved.
			var sum uint64
			for _, r := range d.Ranges {
				sum += r.Len()
			}
			if len(d.Ranges) > 0 && float64(sum)/float64(d.Total) != d.Moved {
				t.Errorf("%s %s: moved ranges cover %d of %d; Moved %.4f", e.Name, h, sum, d.Total, d.Moved)
			}
		}
	}
}
