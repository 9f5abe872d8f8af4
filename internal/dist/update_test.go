package dist

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/config"
)

// TestUpdate changes a pool's servers forty times over, as a membership
// source does (servers join anywhere in the list, leave, change weight), and
// checks after each change, for every distribution, that the router Update
// makes from the previous one routes every key as Build's router does, and,
// for rings, that the two rings have the same points with the same owners.
func TestUpdate(t *testing.T) {
	keys := someKeys(3000)
	for _, e := range All() {
		if e.Random || e.LoadAware {
			continue // no route of a key to compare
		}
		t.Run(e.Name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(e.Name))))
			list := servers(40)
			next := 40
			p := poolOf(e.Name, list)
			prev := mustBuild(t, p, list)
			for step := range 40 {
				list = slices.Clone(list)
				switch op := rng.IntN(4); {
				case op == 0 && len(list) > 2:
					i := rng.IntN(len(list))
					list = slices.Delete(list, i, i+1)
				case op == 1 && e.Weights:
					list[rng.IntN(len(list))].Weight = 1 + rng.IntN(4)
				default:
					s := config.Server{Host: fmt.Sprintf("10.1.%d.%d", next/256, next%256), Port: 11211, Weight: 1}
					next++
					list = slices.Insert(list, rng.IntN(len(list)+1), s)
				}
				q := poolOf(e.Name, list)
				got, err := Update(p, prev, q, list)
				if err != nil {
					t.Fatalf("step %d: Update: %v", step, err)
				}
				want := mustBuild(t, q, list)
				for _, k := range keys {
					g, err1 := got.Lookup([]byte(k))
					w, err2 := want.Lookup([]byte(k))
					if err1 != nil || err2 != nil || list[g].Name() != list[w].Name() {
						t.Fatalf("step %d: Lookup(%q) = %d, %v; want %d, %v (Build's)", step, k, g, err1, w, err2)
					}
				}
				sameRings(t, step, got, want)
				p, prev = q, got
			}
		})
	}
}

// sameRings fails the test if got and want are ring routers whose rings
// differ in a point's position or owner.
func sameRings(t *testing.T, step int, got, want Router) {
	t.Helper()
	g, w := ringRouterOf(got), ringRouterOf(want)
	if g == nil || w == nil {
		return
	}
	if g.ring.NumPoints() != w.ring.NumPoints() {
		t.Fatalf("step %d: %d points; want %d", step, g.ring.NumPoints(), w.ring.NumPoints())
	}
	gn, wn := g.ring.Nodes(), w.ring.Nodes()
	for i := range g.ring.NumPoints() {
		gp, go_ := g.ring.Point(i)
		wp, wo := w.ring.Point(i)
		if gp != wp || gn[go_].Name != wn[wo].Name {
			t.Fatalf("step %d: point %d at %d of %s; want at %d of %s", step, i, gp, gn[go_].Name, wp, wn[wo].Name)
		}
	}
}

func ringRouterOf(r Router) *ringRouter {
	switch r := r.(type) {
	case *ringRouter:
		return r
	case replicaRing:
		return r.ringRouter
	}
	return nil
}

// TestUpdateMerges checks when a ring is merged from the previous one rather
// than built: for rings whose server order does not matter, whatever the
// change; for those whose order breaks ties, only when the servers that stay
// keep their places; never across a change of the scheme. The merged ring is
// the one Build makes.
func TestUpdateMerges(t *testing.T) {
	list := servers(10)
	appended := append(slices.Clone(list), config.Server{Host: "10.9.9.9", Port: 11211, Weight: 1})
	middle := slices.Delete(slices.Clone(list), 4, 5)
	weighted := slices.Clone(list)
	weighted[3].Weight = 2
	tests := []struct {
		dist  string
		to    []config.Server
		merge bool
	}{
		{"ketama", appended, true},
		{"ketama", middle, true},
		{"ketama", weighted, true},
		{"chash", middle, true},
		{"chash", weighted, true},
		{"seed", appended, true},
		{"seed", middle, false}, // the last listed wins ties
		{"libketama", appended, true},
		{"libmemcached", appended, true},  // the first listed wins ties: earlier places stay
		{"libmemcached", middle, false},   // the servers after the fifth move up
		{"libmemcached", weighted, false}, // a weight above 1 switches to the weighted ring
		{"groupcache", appended, true},    // the last listed wins ties
		{"groupcache", middle, false},
	}
	for _, tt := range tests {
		prev := mustBuild(t, poolOf(tt.dist, list), list)
		want := ringRouterOf(mustBuild(t, poolOf(tt.dist, tt.to), tt.to))
		got := mergeRing(prev, want.ring.Scheme(), want.ring.Nodes())
		if (got != nil) != tt.merge {
			t.Errorf("%s, %d servers to %d: merged %v; want %v", tt.dist, len(list), len(tt.to), got != nil, tt.merge)
		}
		if got != nil {
			sameRings(t, 0, ringOver(got, want.ring.Nodes()), want)
		}
	}
	// Not from a ring.
	jump := mustBuild(t, poolOf("jump", list), list)
	want := ringRouterOf(mustBuild(t, poolOf("chash", list), list))
	if got := mergeRing(jump, want.ring.Scheme(), want.ring.Nodes()); got != nil {
		t.Error("a ring merged from a jump router")
	}
	if got := mergeRing(nil, want.ring.Scheme(), want.ring.Nodes()); got != nil {
		t.Error("a ring merged from nothing")
	}
}

// TestRoutingOf checks which settings Update and Fingerprint take as the
// same: a default named or left out is the same; settings that do not route
// are ignored; any other change is a change.
func TestRoutingOf(t *testing.T) {
	base := func(dist string, edit func(p *config.Pool)) *config.Pool {
		p := config.NewPool("p")
		p.Distribution = dist
		if edit != nil {
			edit(p)
		}
		return p
	}
	tests := []struct {
		name string
		a, b *config.Pool
		same bool
	}{
		{"ketama's default hash named", base("ketama", nil), base("ketama", func(p *config.Pool) { p.Hash = "fnv1a_64" }), true},
		{"chash's default points named", base("chash", nil), base("chash", func(p *config.Pool) { p.Points = 160 }), true},
		{"chash's default hash named", base("chash", nil), base("chash", func(p *config.Pool) { p.Hash = "xxh64" }), true},
		{"seed's default label named", base("seed", func(p *config.Pool) { p.Points = 4 }),
			base("seed", func(p *config.Pool) { p.Points, p.Label = 4, "{name}&&VN{i}" }), true},
		{"timeout, listen, redis", base("ketama", nil), base("ketama", func(p *config.Pool) {
			p.Timeout, p.Listen, p.Redis, p.ServerConnections = 400, "127.0.0.1:1", true, 4
		}), true},
		{"another hash", base("ketama", nil), base("ketama", func(p *config.Pool) { p.Hash = "md5" }), false},
		{"jump's 64-bit default and xxh64's 32 bits", base("jump", nil), base("jump", func(p *config.Pool) { p.Hash = "xxh64" }), false},
		{"another hash tag", base("ketama", nil), base("ketama", func(p *config.Pool) { p.HashTag = "{}" }), false},
		{"other points", base("chash", nil), base("chash", func(p *config.Pool) { p.Points = 100 }), false},
		{"another label", base("seed", func(p *config.Pool) { p.Points = 4 }),
			base("seed", func(p *config.Pool) { p.Points, p.Label = 4, "{i}:{name}" }), false},
		{"another distribution", base("ketama", nil), base("libketama", func(p *config.Pool) { p.Hash = "fnv1a_64" }), false},
	}
	for _, tt := range tests {
		if same := routingOf(tt.a) == routingOf(tt.b); same != tt.same {
			t.Errorf("%s: routingOf %+v == %+v: %v; want %v", tt.name, routingOf(tt.a), routingOf(tt.b), same, tt.same)
		}
	}
}

// TestUpdateErrors checks that Update refuses what Build refuses.
func TestUpdateErrors(t *testing.T) {
	list := servers(10)
	p := poolOf("ketama", list)
	prev := mustBuild(t, p, list)
	tests := []struct {
		pool    *config.Pool
		servers []config.Server
		want    string
	}{
		{poolOf("nosuch", list), list, `distribution "nosuch" is unknown`},
		{poolOf("ketama", list), nil, "no servers"},
		{&config.Pool{Name: "p", Distribution: "ketama", Points: 5}, list, "points is not used by distribution ketama"},
		{poolOf("jump", list), []config.Server{{Host: "h", Port: 1, Weight: 2}}, "jump hashing supports only weight 1"},
	}
	for _, tt := range tests {
		if _, err := Update(p, prev, tt.pool, tt.servers); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Update to %s over %d servers: %v; want an error with %q", tt.pool.Distribution, len(tt.servers), err, tt.want)
		}
	}
	if _, err := Update(nil, nil, p, list); err != nil {
		t.Errorf("Update without a previous router = %v; want Build's router", err)
	}
}
