package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chash-dev/chash/hashfn"
)

// TestDemoGolden runs chash demo into a temporary directory: its output must
// match the golden file (the directory written as DIR, and the body of section 5,
// which depends on whether package hashfn has java_hashcode and which
// TestHashCodeWarning checks, left out), report the articles' answers for their
// sample keys unchanged, and leave six charts that decode.
func TestDemoGolden(t *testing.T) {
	for _, image := range []string{"png", "svg"} {
		t.Run(image, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			fix := func(out string) string {
				out = strings.ReplaceAll(out, dir, "DIR")
				head, rest, ok := strings.Cut(out, "String.hashCode()?\n")
				_, tail, ok2 := strings.Cut(rest, "\nCharts written:")
				if !ok || !ok2 {
					t.Fatalf("demo output lacks section 5 or the charts:\n%s", out)
				}
				return head + "String.hashCode()?\n\n  (see TestHashCodeWarning)\n\nCharts written:" + tail
			}
			stdout := golden(t, "demo-"+image, nil, []string{"demo", "--dir", dir, "--keys", "20000", "--image", image}, fix)
			if strings.Contains(stdout, "DIFFERENT") {
				t.Errorf("demo routes an article's key elsewhere than the article:\n%s", stdout)
			}
			files, err := filepath.Glob(filepath.Join(dir, "*."+image))
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != 6 {
				t.Errorf("demo wrote %d charts: %q; want 6", len(files), files)
			}
			for _, f := range files {
				if !strings.Contains(stdout, f) {
					t.Errorf("demo does not name the chart %s it wrote", f)
				}
				checkImage(t, f)
			}
		})
	}
}

// TestDemoDefaultDir checks that demo writes to ./chash-demo by default.
func TestDemoDefaultDir(t *testing.T) {
	t.Chdir(t.TempDir())
	stdout, stderr, code := runChash(t, nil, "demo", "--keys", "1000", "--image", "svg")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join("chash-demo", "balance.svg")); err != nil || !strings.Contains(stdout, "chash-demo/balance.svg") {
		t.Errorf("no chash-demo/balance.svg: %v", err)
	}
}

// javaStringHashCode is Java's String.hashCode over UTF-16 code units, for
// ASCII keys: h = 31*h + c.
func javaStringHashCode(key []byte) uint32 {
	var h int32
	for _, c := range key {
		h = 31*h + int32(c)
	}
	return uint32(h)
}

// TestHashCodeWarning replays the articles' warning with a String.hashCode of
// the test's own: the article's names ("192.168.0.x:1111") put 97.33% of keys
// on one server, as it says ("97%"); the names it meant, 99.91%.
func TestHashCodeWarning(t *testing.T) {
	if got := int32(javaStringHashCode([]byte("192.168.0.0:1111"))); got != 1845870087 {
		t.Fatalf(`hashCode("192.168.0.0:1111") = %d; the article printed 1845870087`, got)
	}
	var b strings.Builder
	if err := hashCodeShares(&b, javaStringHashCode); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"192.168.0.0:1111 ...  1845870087 to 1960386691             2.67%  192.168.0.0:1111     97.33%",
		"exactly 97.33%. For the servers it meant, \"192.168.0.x:111\", it is 99.91%.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("hashCodeShares printed\n%s\nwant it to contain\n%s", out, want)
		}
	}
	// demo uses hashfn.JavaHashCode: it must agree.
	for _, k := range []string{"192.168.0.0:1111", "192.168.0.4:111", "", "key"} {
		if got, want := hashfn.JavaHashCode([]byte(k)), javaStringHashCode([]byte(k)); got != want {
			t.Errorf("hashfn.JavaHashCode(%q) = %d; want %d", k, int32(got), int32(want))
		}
	}
}
