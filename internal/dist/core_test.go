package dist

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/compat"
	"github.com/chash-dev/chash/internal/config"
)

// TestSeedArticlesExample checks that each pool of examples/seed-articles.yml
// routes as its article's compat preset over the same servers, and gives the
// answers the articles print.
func TestSeedArticlesExample(t *testing.T) {
	const path = "../../examples/seed-articles.yml"
	f, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	a002, err := compat.SeedArticle002(100)
	if err != nil {
		t.Fatal(err)
	}
	a004, err := compat.SeedArticle004(100, "md5")
	if err != nil {
		t.Fatal(err)
	}
	presets := map[string]compat.Seed{
		"article000": compat.SeedArticle000(),
		"article001": compat.SeedArticle001(),
		"article002": a002,
		"article003": compat.SeedArticle003(),
		"article004": a004,
	}
	if len(f.Pools) != len(presets) {
		t.Errorf("%s has %d pools; want %d", path, len(f.Pools), len(presets))
	}
	keys := []string{"", "中文", "emoji😀key", "\xff\xfe"}
	for i := range 3000 {
		keys = append(keys, fmt.Sprintf("user:%d", i))
	}
	for _, p := range f.Pools {
		s, ok := presets[p.Name]
		if !ok {
			t.Errorf("%s: pool %q is no article's", path, p.Name)
			continue
		}
		nodes := make([]chash.Node, len(p.Servers))
		for i, sv := range p.Servers {
			nodes[i] = chash.Node{Name: sv.Name(), Weight: 1, Order: len(p.Servers) - i}
		}
		want, err := chash.New(s, nodes)
		if err != nil {
			t.Fatal(err)
		}
		got := route(t, p, keys...)
		for i, k := range keys {
			if w, _ := want.LookupString(k); got[i] != w {
				t.Errorf("pool %s: Lookup(%q) = %q; the preset says %q", p.Name, k, got[i], w)
				break
			}
		}
	}

	printed := []struct {
		pool string
		keys []string
		want []string
	}{
		{"article000", []string{"127.0.0.1:1111", "221.226.0.1:2222", "10.211.0.1:3333"}, []string{"192.168.0.0:111", "192.168.0.0:111", "192.168.0.2:111"}},
		{"article001", []string{"zs", "999999", "233333"}, []string{"192.168.2.108", "192.168.2.106", "192.168.2.106"}},
		{"article003", []string{"semlinker", "kakuqo", "fer"}, []string{"192.168.0.3:8888", "192.168.0.2:8888", "192.168.0.3:8888"}},
	}
	for _, tt := range printed {
		p, err := f.Pool(tt.pool)
		if err != nil {
			t.Fatal(err)
		}
		if got := route(t, p, tt.keys...); strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("pool %s: %q go to %q; the article says %q", tt.pool, tt.keys, got, tt.want)
		}
	}

	// 001's main then adds 192.168.2.109: only zs moves, to it.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	more := strings.Replace(string(data), "#  - 192.168.2.109", "   - 192.168.2.109", 1)
	f, err = config.Parse(path, []byte(more))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := f.Pool("article001")
	if len(p.Servers) != 4 {
		t.Fatalf("article001 with 192.168.2.109: %d servers; want 4", len(p.Servers))
	}
	want := []string{"192.168.2.109", "192.168.2.106", "192.168.2.106"}
	if got := route(t, p, "zs", "999999", "233333"); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("article001 with 192.168.2.109: zs, 999999, 233333 go to %q; the article says %q", got, want)
	}
}

// TestSeedLabel checks the label key: the articles' templates and the errors,
// each naming the file, the line and the pool.
func TestSeedLabel(t *testing.T) {
	const servers = "  servers:\n   - 10.0.0.1:11211:1 a\n   - 10.0.0.2:11211:1 b\n"
	tests := []struct {
		conf string
		err  string // "" if Parse and Router must succeed
	}{
		{"p:\n  distribution: seed\n  points: 3\n  label: \"{i}:{name}\"\n" + servers, ""},
		{"p:\n  distribution: seed\n  points: 3\n  label: '{name}#{i}'\n" + servers, ""},
		{"p:\n  label: \"{name}{i}\"\n  points: 3\n  distribution: seed\n" + servers, ""},
		{"p:\n  distribution: seed\n  points: 3\n  label: \"{name}\"\n" + servers,
			`config: test.yml:4: pool "p": label "{name}" has no {i}: all 3 points of a server would fall on one position`},
		{"p:\n  distribution: seed\n  points: 3\n  label: \"VN{i}\"\n" + servers,
			`config: test.yml:4: pool "p": label "VN{i}" has no {name}: every server would get the same points`},
		{"p:\n  distribution: seed\n  label: \"{name}#{i}\"\n" + servers,
			`config: test.yml:3: pool "p": label "{name}#{i}" is not used with points 0`},
		{"p:\n  distribution: ketama\n  label: \"{name}#{i}\"\n" + servers,
			`config: test.yml:3: pool "p": label is only used by distribution seed, not ketama`},
		{"p:\n  label: \"{name}#{i}\"\n" + servers,
			`config: test.yml:2: pool "p": label is only used by distribution seed, not ketama`},
		{"p:\n  distribution: seed\n  points: 3\n  label: \"\"\n" + servers,
			`config: test.yml:4: pool "p": label is empty; leave it out for the default, "{name}&&VN{i}"`},
		{"p:\n  distribution: seed\n  points: 3\n  label: {name}#{i}\n" + servers,
			`config: test.yml:4: pool "p": label: a mapping; quote the template, as in label: "{name}#{i}"`},
		{"p:\n  distribution: seed\n  points: 3\n  label: [a]\n" + servers,
			`config: test.yml:4: pool "p": label: want a single value, not a list`},
	}
	for _, tt := range tests {
		f, err := config.Parse("test.yml", []byte(tt.conf))
		if err == nil {
			_, err = Build(f.Pools[0], f.Pools[0].Servers)
		}
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%q: %v", tt.conf, err)
		case tt.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.err)):
			t.Errorf("%q: error %v; want %s...", tt.conf, err, tt.err)
		}
	}

	// A pool made in Go, not by Parse, gets the same errors from Build.
	p := &config.Pool{Name: "p", Distribution: "seed", Points: 3, Label: "{name}", Servers: []config.Server{{Host: "h", Port: 1, Weight: 1}}}
	if _, err := Build(p, p.Servers); err == nil || !strings.Contains(err.Error(), `label "{name}" has no {i}`) {
		t.Errorf("Build of a pool with label %q: %v; want an error", p.Label, err)
	}
}
