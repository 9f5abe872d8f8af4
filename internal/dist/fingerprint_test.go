package dist

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/config"
)

var update = flag.Bool("update", false, "rewrite testdata/fingerprints.golden")

const goldenHeader = `# Ring fingerprints (dist.Fingerprint) of the pools of testdata/fingerprints.yml,
# "pool fingerprint" a line. Proxies of different chash versions compare these
# values, so a change here breaks agreement during a rolling upgrade: change
# fingerprintVersion rather than the fingerprints of a version.
# Written by: go test ./internal/dist -run TestFingerprintGolden -update
`

// TestFingerprintGolden pins the fingerprints of the pools of
// testdata/fingerprints.yml.
func TestFingerprintGolden(t *testing.T) {
	f, err := config.Load("testdata/fingerprints.yml")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(goldenHeader)
	got := map[string]string{}
	for _, p := range f.Pools {
		fp, err := Fingerprint(p, p.Servers)
		if err != nil {
			t.Fatalf("pool %q: %v", p.Name, err)
		}
		if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(fp) {
			t.Errorf("Fingerprint(%q) = %q; want 16 hex digits", p.Name, fp)
		}
		got[p.Name] = fp
		fmt.Fprintf(&b, "%s %s\n", p.Name, fp)
	}
	const golden = "testdata/fingerprints.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, want, _ := strings.Cut(line, " ")
		if got[name] != want {
			t.Errorf("Fingerprint(%q) = %q; want %q (%s)", name, got[name], want, golden)
		}
		seen++
	}
	if seen != len(f.Pools) {
		t.Errorf("%s has %d fingerprints; want %d, one per pool", golden, seen, len(f.Pools))
	}
	// The relations the file's pools were chosen for.
	for _, same := range [][2]string{{"ketama", "ketama_reordered"}, {"ketama", "ketama_default_named"}} {
		if got[same[0]] != got[same[1]] {
			t.Errorf("pools %q and %q route alike, but fingerprint %s and %s", same[0], same[1], got[same[0]], got[same[1]])
		}
	}
}

// TestFingerprint checks that changes that can move a key change the
// fingerprint, and that those that cannot do not.
func TestFingerprint(t *testing.T) {
	list := []config.Server{
		{Host: "10.0.0.1", Port: 11211, Weight: 1, Alias: "a"},
		{Host: "10.0.0.2", Port: 11211, Weight: 1, Alias: "b"},
		{Host: "10.0.0.3", Port: 11211, Weight: 1},
	}
	edit := func(f func(s []config.Server) []config.Server) []config.Server { return f(slices.Clone(list)) }
	reversed := edit(func(s []config.Server) []config.Server { slices.Reverse(s); return s })
	tests := []struct {
		name    string
		dist    string
		pool    func(p *config.Pool)
		servers []config.Server
		same    bool
	}{
		{"the same", "ketama", nil, list, true},
		{"ketama, servers reordered", "ketama", nil, reversed, true},
		{"chash, servers reordered", "chash", nil, reversed, true},
		{"modula, servers reordered", "modula", nil, reversed, true},
		{"jump, servers reordered", "jump", nil, reversed, false},
		{"libmemcached, servers reordered (ties)", "libmemcached", nil, reversed, false},
		{"lines of the file", "ketama", nil, edit(func(s []config.Server) []config.Server { s[0].Line = 7; return s }), true},
		{"settings that do not route", "ketama", func(p *config.Pool) {
			p.Timeout, p.Listen, p.AutoEjectHosts, p.Redis = 400, "127.0.0.1:1", true, true
		}, list, true},
		{"ketama's default hash named", "ketama", func(p *config.Pool) { p.Hash = "fnv1a_64" }, list, true},
		{"random's weights", "random", nil, edit(func(s []config.Server) []config.Server { s[1].Weight = 3; return s }), true},
		{"one replica named", "chash", func(p *config.Pool) { p.Replicas = 1 }, list, true},

		{"a server added", "ketama", nil, append(slices.Clone(list), config.Server{Host: "10.0.0.4", Port: 11211, Weight: 1}), false},
		{"a server removed", "ketama", nil, list[:2], false},
		{"a weight", "ketama", nil, edit(func(s []config.Server) []config.Server { s[1].Weight = 2; return s }), false},
		{"an alias's address", "ketama", nil, edit(func(s []config.Server) []config.Server { s[0].Host = "10.0.1.1"; return s }), false},
		{"an alias's port", "ketama", nil, edit(func(s []config.Server) []config.Server { s[0].Port = 11212; return s }), false},
		{"an alias given", "ketama", nil, edit(func(s []config.Server) []config.Server { s[2].Alias = "c"; return s }), false},
		{"the hash", "ketama", func(p *config.Pool) { p.Hash = "md5" }, list, false},
		{"the hash tag", "ketama", func(p *config.Pool) { p.HashTag = "{}" }, list, false},
		{"the points", "chash", func(p *config.Pool) { p.Points = 100 }, list, false},
		{"the distribution", "libketama", nil, list, false},
		{"replicas", "chash", func(p *config.Pool) { p.Replicas = 2 }, list, false},
	}
	fingerprint := func(dist string, edit func(p *config.Pool), servers []config.Server) string {
		p := config.NewPool("p")
		p.Distribution = dist
		if edit != nil {
			edit(p)
		}
		fp, err := Fingerprint(p, servers)
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}
	for _, tt := range tests {
		base := tt.dist
		if tt.name == "the distribution" {
			base = "ketama"
		}
		a, b := fingerprint(base, nil, list), fingerprint(tt.dist, tt.pool, tt.servers)
		if (a == b) != tt.same {
			t.Errorf("%s: fingerprints %s and %s; want them the same: %v", tt.name, a, b, tt.same)
		}
	}
	p := config.NewPool("p")
	p.Distribution = "nosuch"
	if fp, err := Fingerprint(p, list); err == nil || !strings.Contains(err.Error(), `distribution "nosuch" is unknown`) {
		t.Errorf("Fingerprint of an unknown distribution = %q, %v; want an error", fp, err)
	}
}

// TestFingerprintMeansRouting checks, for every distribution that routes by
// key, that lists of servers shuffled at random and with servers dropped
// route alike whenever their fingerprints are the same, and that a list of
// other servers, or other weights, has another fingerprint.
func TestFingerprintMeansRouting(t *testing.T) {
	keys := someKeys(2000)
	for _, e := range All() {
		if e.Random || e.LoadAware {
			continue
		}
		rng := rand.New(rand.NewPCG(7, uint64(len(e.Name))))
		base := servers(12)
		p := poolOf(e.Name, base)
		fp0, err := Fingerprint(p, base)
		if err != nil {
			t.Fatal(err)
		}
		routes0 := routeOver(t, p, base, keys...)
		sameSeen := 0
		for range 30 {
			list := slices.Clone(base)
			rng.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
			if rng.IntN(3) == 0 {
				list = list[:len(list)-1]
			}
			q := poolOf(e.Name, list)
			fp, err := Fingerprint(q, list)
			if err != nil {
				t.Fatal(err)
			}
			if fp != fp0 {
				continue
			}
			sameSeen++
			if got := routeOver(t, q, list, keys...); !slices.Equal(got, routes0) {
				t.Errorf("%s: a reordered list has the fingerprint %s of the original but routes otherwise", e.Name, fp)
			}
		}
		if e.Order == OrderFree && sameSeen == 0 {
			t.Errorf("%s: no reordered list kept the fingerprint, though the order does not matter", e.Name)
		}
		if e.Weights {
			list := slices.Clone(base)
			list[5].Weight = 3
			if fp, _ := Fingerprint(poolOf(e.Name, list), list); fp == fp0 {
				t.Errorf("%s: a weight changed, the fingerprint did not", e.Name)
			}
		}
	}
}

func BenchmarkFingerprint(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		list := servers(n)
		p := poolOf("ketama", list)
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Fingerprint(p, list); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUpdate times the router of a pool of n servers after one server
// joined, made by Update from the previous router and by Build afresh.
func BenchmarkUpdate(b *testing.B) {
	for _, dist := range []string{"ketama", "chash", "libketama"} {
		for _, n := range []int{100, 1000} {
			list := servers(n + 1)
			p, q := poolOf(dist, list[:n]), poolOf(dist, list)
			prev := mustBuild(b, p, list[:n])
			b.Run(fmt.Sprintf("%s/servers=%d/update", dist, n), func(b *testing.B) {
				for b.Loop() {
					if _, err := Update(p, prev, q, list); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("%s/servers=%d/build", dist, n), func(b *testing.B) {
				for b.Loop() {
					if _, err := Build(q, list); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
