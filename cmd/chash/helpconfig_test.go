package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/chash-dev/chash/hashfn"
	"github.com/chash-dev/chash/internal/analyze"
	"github.com/chash-dev/chash/internal/config"
)

// TestHelpConfig checks that "chash help config" documents every key of the
// config package's table, with its origin, default, values and example, and
// that the example at its top is a configuration route reads.
func TestHelpConfig(t *testing.T) {
	out, stderr, code := runChash(t, nil, "help", "config")
	if code != 0 || stderr != "" {
		t.Fatalf("chash help config = %d, %q", code, stderr)
	}
	flat := strings.Join(strings.Fields(out), " ") // the text, unwrapped
	for _, k := range configKeys() {
		if !strings.Contains(out, "\n"+k.Name+" ("+k.Origin+")\n") {
			t.Errorf("chash help config has no heading %q", k.Name+" ("+k.Origin+")")
		}
		for _, want := range []string{k.Doc, "Default: " + k.Default, strings.Join(strings.Fields(k.Example), " ")} {
			if !strings.Contains(flat, strings.Join(strings.Fields(want), " ")) {
				t.Errorf("chash help config, key %s: no %q", k.Name, want)
			}
		}
		if (k.Name == "hash" || k.Name == "distribution") && len(k.Values) == 0 {
			t.Errorf("chash help config, key %s: lists no values", k.Name)
		}
		if len(k.Values) > 0 && !strings.Contains(flat, "Values: "+strings.Join(k.Values, ", ")+".") {
			t.Errorf("chash help config, key %s: no values %q", k.Name, k.Values)
		}
	}
	for line := range strings.Lines(out) {
		if n := len(strings.ReplaceAll(strings.TrimSuffix(line, "\n"), "\t", "        ")); n > 80 {
			t.Errorf("chash help config: a line of %d columns: %q", n, line)
		}
	}

	// The example pool, as a user would copy it: the indented lines after the
	// first paragraph.
	i, j := strings.Index(out, "\n\tcache:\n"), strings.Index(out, "\nDurations")
	if i < 0 || j < i {
		t.Fatalf("chash help config has no example pool:\n%s", out)
	}
	example := strings.TrimSpace(strings.ReplaceAll(out[i:j], "\n\t", "\n")) + "\n"
	file := writeConfig(t, example)
	if out, stderr, code := runChash(t, nil, "route", "--config", file, "user:1"); code != 0 || !strings.HasPrefix(out, "user:1\t") {
		t.Errorf("chash route with the example of chash help config = %d, %q, %q\n%s", code, out, stderr, example)
	}

	if out, _, code := runChash(t, nil, "help"); code != 0 || !strings.Contains(out, "Additional help topics:\n\n\tconfig ") {
		t.Errorf("chash help = %d, %q; want config among the help topics", code, out)
	}
	if _, stderr, code := runChash(t, nil, "config"); code != 2 || !strings.Contains(stderr, `unknown command "config"`) {
		t.Errorf("chash config = %d, %q; want 2: a topic is not a command", code, stderr)
	}
}

// TestHashDocClusters checks that the hash key's doc names exactly the hashes
// for which chash analyze warns that keys differing in their last character
// cluster, on a ketama pool of three servers.
func TestHashDocClusters(t *testing.T) {
	var doc string
	for _, k := range configKeys() {
		if k.Name == "hash" {
			doc = k.Doc
		}
	}
	_, clusterSentence, ok := strings.Cut(doc, "keeps its hash.")
	clusterSentence, _, _ = strings.Cut(clusterSentence, "cluster keys")
	if !ok {
		t.Fatalf("hash doc %q: no sentence on clustering after \"keeps its hash.\"", doc)
	}
	named := strings.FieldsFunc(clusterSentence, func(r rune) bool { return r == ' ' || r == ',' })
	sv := []config.Server{{Host: "10.0.0.1", Port: 11211, Weight: 1}, {Host: "10.0.0.2", Port: 11211, Weight: 1}, {Host: "10.0.0.3", Port: 11211, Weight: 1}}
	for _, h := range hashfn.Names() {
		if m, _ := hashfn.Max(h); m < 1<<16 {
			continue // all keys on one server: a doc of its own
		}
		p, err := analyze.NewPool(&config.Pool{Name: "p", Distribution: "ketama", Hash: h, Servers: sv}, sv)
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.Balance(nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := p.Cluster(b, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if c.Clustered() != slices.Contains(named, h) {
			t.Errorf("hash %s: analyze finds clustering %v (%d of 1000 groups together); the doc names %q", h, c.Clustered(), c.Together, named)
		}
	}
}
