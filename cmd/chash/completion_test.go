package main

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/testprog"
)

// completeWords returns what "chash __complete ARGS..." offers, without the
// descriptions.
func completeWords(t *testing.T, args ...string) []string {
	t.Helper()
	out, stderr, code := runChash(t, nil, append([]string{completeCommand}, args...)...)
	if code != 0 || stderr != "" {
		t.Fatalf("chash __complete %q = %d, %q", args, code, stderr)
	}
	var words []string
	for line := range strings.Lines(out) {
		w, _, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		words = append(words, w)
	}
	return words
}

func TestComplete(t *testing.T) {
	tests := []struct {
		args []string
		want []string // exactly, in order; nil for nothing
	}{
		{[]string{"ro"}, []string{"route"}},
		{[]string{"ver"}, []string{"version"}},
		{[]string{"--v"}, []string{"--version"}},
		{[]string{"nope", ""}, nil},
		{[]string{"analyze", "--fo"}, []string{"--format"}},
		{[]string{"analyze", "--format", ""}, []string{"text", "json", "csv"}},
		{[]string{"analyze", "--format", "c"}, []string{"csv"}},
		{[]string{"analyze", "--format=j"}, []string{"--format=json"}},
		{[]string{"analyze", "-format="}, []string{"-format=text", "-format=json", "-format=csv"}},
		{[]string{"analyze", "--config", ""}, []string{completeFiles}},
		{[]string{"analyze", "--plot", "x"}, []string{completeFiles}},
		{[]string{"analyze", "--sample", ""}, nil},
		{[]string{"analyze", "--config", "testdata/two.yml", "--pool", ""}, []string{"a", "b"}},
		{[]string{"route", "--config=testdata/two.yml", "k", "--pool", "b"}, []string{"b"}},
		{[]string{"route", "--config", "testdata/missing.yml", "--pool", ""}, nil},
		{[]string{"route", "--config", "testdata/two.yml", ""}, nil},          // keys
		{[]string{"route", "--config", "testdata/two.yml", "--", "--p"}, nil}, // a key
		{[]string{"route", "--config", "testdata/two.yml", "k", "--po"}, []string{"--pool"}},
		{[]string{"diff", ""}, []string{completeFiles}},
		{[]string{"diff", "testdata/two.yml", "--pool", ""}, []string{"a", "b"}},
		{[]string{"diff", "testdata/seed5.yml", "testdata/two.yml", "--new-pool", ""}, []string{"a", "b"}},
		{[]string{"diff", "old.yml", "new.yml", ""}, nil},
		{[]string{"diff", "--config", "testdata/two.yml", "--pool", ""}, []string{"a", "b"}},
		{[]string{"diff", "--config", "testdata/seed5.yml", "testdata/two.yml", "--new-pool", ""}, []string{"a", "b"}},
		{[]string{"demo", "--image", ""}, []string{"png", "svg"}},
		{[]string{"proxy", "--test-conf", "--con"}, []string{"--conf-file", "--config"}}, // a bool flag takes no value
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish"}},
		{[]string{"completion", "z"}, []string{"zsh"}},
		{[]string{"help", "ro"}, []string{"route"}},
		{[]string{"help", "conf"}, []string{"config"}},
		{[]string{"help", "route", ""}, nil},
	}
	for _, tt := range tests {
		if got := completeWords(t, tt.args...); !slices.Equal(got, tt.want) {
			t.Errorf("chash __complete %q = %q; want %q", tt.args, got, tt.want)
		}
	}

	// Every command and its flags, with their descriptions.
	names := completeWords(t, "")
	for _, c := range all() {
		if c.Runnable() != slices.Contains(names, c.Name()) {
			t.Errorf("chash __complete \"\" = %q; want %q there if and only if it is a command", names, c.Name())
		}
		if !c.Runnable() {
			continue
		}
		flags := completeWords(t, c.Name(), "-")
		c.Flag.VisitAll(func(f *flag.Flag) {
			if !slices.Contains(flags, "--"+f.Name) {
				t.Errorf("chash __complete %s - = %q; want --%s there", c.Name(), flags, f.Name)
			}
		})
		if !slices.Contains(flags, "--help") {
			t.Errorf("chash __complete %s - = %q; want --help there", c.Name(), flags)
		}
		if c.Flag.Lookup("format") != nil {
			if got, want := completeWords(t, c.Name(), "--format", ""), []string{"text", "json", "csv"}; !slices.Equal(got, want) {
				t.Errorf("chash __complete %s --format \"\" = %q; want %q", c.Name(), got, want)
			}
		}
	}
	out, _, _ := runChash(t, nil, completeCommand, "analyze", "--form")
	if want := "--format\tprint FORMAT: text, json or csv\n"; out != want {
		t.Errorf("chash __complete analyze --form = %q; want %q, with the flag's description", out, want)
	}
}

func TestCompletionCommand(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		out, stderr, code := runChash(t, nil, "completion", shell)
		if code != 0 || stderr != "" || out != completionScripts[shell] || !strings.Contains(out, "chash __complete") {
			t.Errorf("chash completion %s = %d, stderr %q, and %d bytes; want 0 and the script", shell, code, stderr, len(out))
		}
	}
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}, {"completion", "bash", "zsh"}} {
		if out, stderr, code := runChash(t, nil, args...); code != 2 || out != "" || !strings.Contains(stderr, "bash, zsh or fish") {
			t.Errorf("chash %q = %d, %q, %q; want 2 and a usage error naming the shells", args, code, out, stderr)
		}
	}
}

// chashOnPath builds chash and returns an environment whose PATH finds it
// first, as the completion scripts call it by name.
func chashOnPath(t *testing.T) []string {
	t.Helper()
	bin := buildChash(t)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
	return append(env, "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestCompletionShells loads each shell's script into the real shell and
// completes lines through it: a flag's values, a command's flags, and file
// names where a file is wanted.
func TestCompletionShells(t *testing.T) {
	env := chashOnPath(t)
	tests := []struct {
		line string // the words before the cursor; the cursor is after the last space
		want []string
		// fish's where it differs: fish replaces the whole word, where
		// bash and zsh complete what follows the word's "=".
		fish []string
	}{
		{"chash analyze --format ", []string{"text", "json", "csv"}, nil},
		{"chash rou", []string{"route"}, nil},
		{"chash diff --ran", []string{"--ranges"}, nil},
		{"chash diff testdata/seed", []string{"testdata/seed0.yml", "testdata/seed5.yml", "testdata/seed6.yml"}, nil},
		{"chash route --config testdata/two.yml --pool ", []string{"a", "b"}, nil},
		{"chash route --config=testdata/tw", []string{"testdata/two.yml"}, []string{"--config=testdata/two.yml"}},
		{"chash analyze --plot=testdata/two.y", []string{"testdata/two.yml"}, []string{"--plot=testdata/two.yml"}},
	}
	// Each shell prints the candidates, one per line, for words (the last
	// one being completed).
	shells := []struct {
		name   string
		script func(words []string) string
	}{
		{"bash", bashCompletes},
		{"zsh", func(words []string) string {
			// Outside an interactive completion, compsys's functions are
			// stand-ins that print what they are given.
			// compset -P takes what its pattern matches off PREFIX,
			// the word as far as the cursor.
			return "compdef() { : }\n_describe() { local -a c; c=(\"${(@P)4}\"); print -rl -- \"${(@)c%%:*}\" }\n" +
				"_files() { print -rl -- ${PREFIX}*(N) }\ncompset() { [[ $1 == -P ]] && PREFIX=${PREFIX#${~2}} }\n" +
				"source <(chash completion zsh)\nwords=(" + shellQuote(words) + ")\nCURRENT=" + strconv.Itoa(len(words)) + "\nPREFIX=${words[CURRENT]}\n_chash\n"
		}},
		{"fish", func(words []string) string {
			return "chash completion fish | source\ncomplete -C" + fishQuote(strings.Join(words, " ")) + "\n"
		}},
	}
	for _, sh := range shells {
		t.Run(sh.name, func(t *testing.T) {
			bin := testprog.LookPath(t, sh.name)
			for _, tt := range tests {
				words := strings.Split(tt.line, " ")
				cmd := exec.Command(bin, "-c", sh.script(words))
				cmd.Env = env
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Errorf("%s completing %q: %v\n%s", sh.name, tt.line, err, out)
					continue
				}
				var got []string
				for line := range strings.Lines(string(out)) {
					w, _, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
					if w != "" && !slices.Contains(got, w) {
						got = append(got, w)
					}
				}
				slices.Sort(got)
				want := slices.Sorted(slices.Values(tt.want))
				if sh.name == "fish" && tt.fish != nil {
					want = slices.Sorted(slices.Values(tt.fish))
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s completes %q to %q; want %q", sh.name, tt.line, got, want)
				}
			}
		})
	}
}

// bashCompletes returns a bash script that completes the line of words, the
// cursor at its end, as bash would: COMP_WORDS split also at the characters
// of COMP_WORDBREAKS, such as = and :, and COMP_LINE and COMP_POINT set.
func bashCompletes(words []string) string {
	line := strings.Join(words, " ")
	var split []string
	for _, w := range words {
		for w != "" {
			i := strings.IndexAny(w, "=:")
			if i < 0 {
				split = append(split, w)
				break
			}
			if i > 0 {
				split = append(split, w[:i])
			}
			split = append(split, w[i:i+1])
			w = w[i+1:]
		}
	}
	if words[len(words)-1] == "" {
		split = append(split, "")
	}
	return "source <(chash completion bash)\nCOMP_WORDS=(" + shellQuote(split) + ")\n" +
		"COMP_CWORD=" + strconv.Itoa(len(split)-1) + "\nCOMP_LINE=" + shellQuote([]string{line}) +
		"\nCOMP_POINT=${#COMP_LINE}\n_chash\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
}

// TestCompletionBashWordBreaks checks bash's completion of words that bash
// splits at = and :, each candidate being what bash puts after the last of
// them.
func TestCompletionBashWordBreaks(t *testing.T) {
	env := chashOnPath(t)
	bin := testprog.LookPath(t, "bash")
	for _, tt := range []struct {
		line string
		want []string
	}{
		{"chash analyze --format=", []string{"text", "json", "csv"}},
		{"chash analyze --format=j", []string{"json"}},
		{"chash route --config=testdata/two.yml --pool ", []string{"a", "b"}},
		{"chash route --config testdata/two.yml --pool=", []string{"a", "b"}},
		{"chash diff --add 10.0.0.9:11211:1 testdata/two.yml --pool ", []string{"a", "b"}},
		{"chash diff --add 10.0.0.9:11211:1 --pool=a testdata/tw", []string{"testdata/two.yml"}},
		{"chash sweep --scheme=gr", []string{"groupcache"}},
		{"chash compare --algorithms chash,ma", []string{"chash,maglev"}},
		{"chash compare --algorithms chash,ju", []string{"chash,jump", "chash,jumpback"}},
		{"chash compare --algorithms jump,chash,ju", []string{"jump,chash,jumpback"}}, // jump given once
	} {
		cmd := exec.Command(bin, "-c", bashCompletes(strings.Split(tt.line, " ")))
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("bash completing %q: %v\n%s", tt.line, err, out)
			continue
		}
		got := strings.Fields(string(out))
		slices.Sort(got)
		if want := slices.Sorted(slices.Values(tt.want)); !slices.Equal(got, want) {
			t.Errorf("bash completes %q to %q; want %q", tt.line, got, want)
		}
	}
}

// shellQuote quotes words for bash and zsh, each in single quotes.
func shellQuote(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// fishQuote quotes s for fish, in single quotes.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
