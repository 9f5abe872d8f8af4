package compat_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chash-dev/chash/compat/internal/live"
	"github.com/chash-dev/chash/internal/config"
)

// goldenFile is a parsed testdata/*.golden file (see compat/testdata/gen).
type goldenFile struct {
	header []string     // the comment lines
	pool   *config.Pool // the chash config's pool
	c      routeCase
	keys   [][]byte
	want   []string
}

func readGolden(t *testing.T, path string) goldenFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, table, ok := bytes.Cut(b, []byte("\n---\n"))
	if !ok {
		t.Fatalf("%s: no --- line", path)
	}
	var g goldenFile
	var conf strings.Builder
	for line := range strings.Lines(string(head) + "\n") {
		if strings.HasPrefix(line, "#") {
			g.header = append(g.header, strings.TrimSpace(line))
		} else {
			conf.WriteString(line)
		}
	}
	f, err := config.Parse(path, []byte(conf.String()))
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Pool("")
	if err != nil {
		t.Fatal(err)
	}
	g.pool = p
	g.c = routeCase{name: filepath.Base(path), distribution: p.Distribution, hash: p.Hash, hashTag: p.HashTag}
	for _, s := range p.Servers {
		g.c.servers = append(g.c.servers, live.Server{Host: s.Host, Port: s.Port, Weight: s.Weight, Alias: s.Alias})
	}
	sc := bufio.NewScanner(bytes.NewReader(table))
	for n := 1; sc.Scan(); n++ {
		q, name, ok := strings.Cut(sc.Text(), "\t")
		k, err := strconv.Unquote(q)
		if !ok || err != nil {
			t.Fatalf("%s: key line %d: %q", path, n, sc.Text())
		}
		g.keys = append(g.keys, []byte(k))
		g.want = append(g.want, name)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGolden routes every key of every golden file — made by the real programs,
// see compat/testdata/gen — through chash, by its config and by the library, and
// requires the program's answer for all of them.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.golden")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 78 {
		t.Fatalf("%d golden files; want the generator's 78", len(files))
	}
	programs := map[string]int{}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".golden"), func(t *testing.T) {
			g := readGolden(t, path)
			if len(g.header) < 4 || !strings.HasPrefix(g.header[1], "# program: ") || !strings.HasPrefix(g.header[2], "# command: ") {
				t.Errorf("header %q: want title, program, command and generator lines", g.header)
			}
			if len(g.keys) < 200 {
				t.Errorf("%d keys; want at least 200", len(g.keys))
			}
			got, err := routeConfig(path, g.pool, g.keys)
			if err != nil {
				t.Fatal(err)
			}
			compareRoutes(t, "config", g.keys, got, g.want)
			compareRoutes(t, "library", g.keys, libraryRoute(t, g.c, g.keys), g.want)
			program, _, _ := strings.Cut(strings.TrimPrefix(g.header[1], "# program: "), " ")
			programs[program] += len(g.keys)
		})
	}
	t.Logf("keys per program: %v", programs)
}

// TestGoldenKeys checks that the golden keys exercise what they must: bytes >= 0x80
// and hash tags.
func TestGoldenKeys(t *testing.T) {
	g := readGolden(t, "testdata/twemproxy-ketama-fnv1a_64-31.golden")
	if !hasNonASCII(g.keys) {
		t.Error("no key with bytes >= 0x80")
	}
	if g.c.hashTag != "{}" || !bytes.Contains(bytes.Join(g.keys, nil), []byte("{user")) {
		t.Error("no hash-tagged keys under hash_tag {}")
	}
}
