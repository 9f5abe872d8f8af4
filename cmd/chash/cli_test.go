package main

import (
	"errors"
	"flag"
	"io"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// TestFlagsAnywhere runs command lines whose flags come after, or among, their
// arguments, and checks that each does what the same line with its flags first
// does.
func TestFlagsAnywhere(t *testing.T) {
	const seed5, seed6 = "testdata/seed5.yml", "testdata/seed6.yml"
	tests := []struct {
		args, flagsFirst []string
	}{
		{
			[]string{"route", "user:1", "user:2", "--config", seed5, "--pool", "articles"},
			[]string{"route", "--config", seed5, "--pool", "articles", "user:1", "user:2"},
		},
		{
			[]string{"route", "user:1", "--config=" + seed5, "user:2"},
			[]string{"route", "--config", seed5, "user:1", "user:2"},
		},
		{
			[]string{"diff", seed5, seed6, "--format", "json"},
			[]string{"diff", "--format", "json", seed5, seed6},
		},
		{
			[]string{"diff", "--add", "192.168.0.5:111:1", seed5, "-add=192.168.0.6:111:1", "--format", "csv"},
			[]string{"diff", "--format", "csv", "--add", "192.168.0.5:111:1", "--add", "192.168.0.6:111:1", seed5},
		},
		{
			[]string{"analyze", "-config", seed5, "--format", "csv"},
			[]string{"analyze", "--format", "csv", "--config", seed5},
		},
		{
			[]string{"proxy", "--test-conf", "--config", "testdata/two.yml"},
			[]string{"proxy", "--config", "testdata/two.yml", "--test-conf"},
		},
	}
	for _, tt := range tests {
		want, wantErr, wantCode := runChash(t, nil, tt.flagsFirst...)
		got, gotErr, code := runChash(t, nil, tt.args...)
		if code != wantCode || got != want || gotErr != wantErr {
			t.Errorf("chash %q = %d\n%s%s\nwant, as chash %q:\n%d\n%s%s", tt.args, code, got, gotErr, tt.flagsFirst, wantCode, want, wantErr)
		}
		if wantCode != 0 && tt.args[0] != "proxy" {
			t.Errorf("chash %q: exit status %d (%s); want 0", tt.flagsFirst, wantCode, wantErr)
		}
	}
}

// TestFlagsEnd checks "--", after which every argument is a key, and that an
// argument that looks like a flag before it is an error, never a key.
func TestFlagsEnd(t *testing.T) {
	const seed5 = "testdata/seed5.yml"
	// What route prints for keys read from standard input, where no key can be
	// a flag.
	routed := func(keys ...string) string {
		out, stderr, code := runChash(t, strings.NewReader(strings.Join(keys, "\n")+"\n"), "route", "--config", seed5)
		if code != 0 {
			t.Fatalf("chash route --config %s < %q = %d: %s", seed5, keys, code, stderr)
		}
		return out
	}
	tests := []struct {
		args []string
		keys []string // routed, in order
	}{
		{[]string{"route", "--config", seed5, "--", "--pool", "-x"}, []string{"--pool", "-x"}},
		{[]string{"route", "a", "--config", seed5, "--", "-b", "--config", "c"}, []string{"a", "-b", "--config", "c"}},
		{[]string{"route", "-", "--config", seed5, "x"}, []string{"-", "x"}},
	}
	for _, tt := range tests {
		got, stderr, code := runChash(t, nil, tt.args...)
		if want := routed(tt.keys...); code != 0 || got != want {
			t.Errorf("chash %q = %d\n%s%s\nwant 0\n%s", tt.args, code, got, stderr, want)
		}
	}

	// A --config after "--" is a key: the command has none.
	args := []string{"route", "a", "--", "--config", seed5}
	if _, stderr, code := runChash(t, nil, args...); code != 2 || !strings.Contains(stderr, "--config is required") {
		t.Errorf("chash %q = %d, %q; want 2 and --config is required", args, code, stderr)
	}

	for _, args := range [][]string{
		{"route", "--config", seed5, "user:1", "-x"},
		{"route", "--config", seed5, "user:1", "--pool=articles", "--bogus", "user:2"},
	} {
		got, stderr, code := runChash(t, nil, args...)
		if code != 2 || got != "" || !strings.Contains(stderr, "flag provided but not defined") {
			t.Errorf("chash %q = %d, stdout %q, stderr %q; want 2, nothing routed, and the flag named", args, code, got, stderr)
		}
	}
}

// TestHelpFlag checks that --help, -help and -h, anywhere on a command's line,
// print the command's manual on standard output and exit 0, as "chash help
// CMD" does.
func TestHelpFlag(t *testing.T) {
	for _, c := range all() {
		if !c.Runnable() {
			continue
		}
		want, _, code := runChash(t, nil, "help", c.Name())
		if code != 0 || !strings.HasPrefix(want, "usage: chash "+c.UsageLine+"\n") {
			t.Fatalf("chash help %s = %d\n%s", c.Name(), code, want)
		}
		for _, args := range [][]string{
			{c.Name(), "--help"},
			{c.Name(), "-help"},
			{c.Name(), "-h"},
			{c.Name(), "an-argument", "--help"},
			{c.Name(), "x", "-h", "y"},
		} {
			got, stderr, code := runChash(t, nil, args...)
			if code != 0 || got != want || stderr != "" {
				t.Errorf("chash %q = %d\n%s\nstderr %q\nwant 0 and chash help %s:\n%s", args, code, got, stderr, c.Name(), want)
			}
		}
	}
}

// TestVersion checks chash version and chash --version in process, where the
// test binary's build information has no commit.
func TestVersion(t *testing.T) {
	want, stderr, code := runChash(t, nil, "version")
	if code != 0 || stderr != "" || !strings.HasPrefix(want, "chash ") || !strings.HasSuffix(want, " "+runtime.GOOS+"/"+runtime.GOARCH+"\n") {
		t.Errorf("chash version = %d, %q, %q; want chash VERSION ... GOOS/GOARCH", code, want, stderr)
	}
	for _, flag := range []string{"--version", "-version"} {
		if got, _, code := runChash(t, nil, flag); code != 0 || got != want {
			t.Errorf("chash %s = %d, %q; want 0, %q", flag, code, got, want)
		}
	}
	if _, stderr, code := runChash(t, nil, "version", "x"); code != 2 || !strings.Contains(stderr, "no arguments") {
		t.Errorf("chash version x = %d, %q; want 2, no arguments expected", code, stderr)
	}
}

func TestVersionLine(t *testing.T) {
	platform := " " + runtime.GOOS + "/" + runtime.GOARCH
	tests := []struct {
		info *debug.BuildInfo
		want string
	}{
		{nil, "chash (unknown) " + runtime.Version() + platform},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}}, "chash v1.2.3 go1.26.8" + platform},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261130101500-9ecdd35a1b2c+dirty"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "9ecdd35a1b2c3d4e5f60718293a4b5c6d7e8f901"},
			{Key: "vcs.time", Value: "2026-11-30T10:15:00Z"},
			{Key: "vcs.modified", Value: "true"},
		}}, "chash v0.0.0-20261130101500-9ecdd35a1b2c+dirty (commit 9ecdd35a1b2c3d4e5f60718293a4b5c6d7e8f901+dirty, 2026-11-30T10:15:00Z) go1.26.8" + platform},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"},
			{Key: "vcs.modified", Value: "false"},
		}}, "chash (devel) (commit abc) go1.26.8" + platform},
	}
	for _, tt := range tests {
		if got := versionLine(tt.info); got != tt.want {
			t.Errorf("versionLine(%+v) = %q; want %q", tt.info, got, tt.want)
		}
	}
}

// TestVersionBinary builds chash with VCS stamping, as go install and go build
// in a checkout do, and checks that chash version reports the module version
// and commit that Go recorded in the binary ("go version -m"): in a git clone,
// the commit checked out; in a git worktree or an unpacked archive, where Go
// records none, no commit.
func TestVersionBinary(t *testing.T) {
	bin := buildChash(t, "-buildvcs=auto")
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(gocmd, "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	info := &debug.BuildInfo{}
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSpace(line), "\t")
		switch {
		case len(f) >= 3 && f[0] == "mod":
			info.Main.Version = f[2]
		case len(f) == 2 && f[0] == "build":
			k, v, _ := strings.Cut(f[1], "=")
			info.Settings = append(info.Settings, debug.BuildSetting{Key: k, Value: v})
		}
	}
	info.GoVersion, _, _ = strings.Cut(strings.TrimPrefix(string(out), bin+": "), "\n")
	out, err = exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("chash version: %v", err)
	}
	if got, want := strings.TrimSpace(string(out)), versionLine(info); got != want {
		t.Errorf("chash version = %q; want %q, from go version -m:\n%s", got, want, out)
	}
	t.Logf("chash version: %s", out)
}

// FuzzParseFlags parses command lines (arguments split at NUL bytes) with a
// set of a string, a bool and an int flag, and checks that parseFlags never
// panics, that the arguments it returns are the line's non-flags in order,
// and that the same line with its flags first and "--" before the rest
// parses to the same flags and arguments.
func FuzzParseFlags(f *testing.F) {
	for _, seed := range []string{
		"KEY\x00--config\x00FILE",
		"-v\x00a\x00--\x00-b",
		"--n=3\x00-config=x\x00-\x00--config",
		"--bogus\x00a",
		"a\x00-n\x00b",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, "\x00")
		newSet := func() (*flag.FlagSet, *string, *bool, *int) {
			fs := flag.NewFlagSet("fuzz", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			return fs, fs.String("config", "", ""), fs.Bool("v", false, ""), fs.Int("n", 0, "")
		}
		fs, config, v, n := newSet()
		pos, err := parseFlags(fs, args)
		if err != nil {
			return
		}
		i := 0
		for _, a := range args {
			if i < len(pos) && a == pos[i] {
				i++
			}
		}
		if i != len(pos) {
			t.Fatalf("parseFlags(%q) = %q: not a subsequence of the line", args, pos)
		}
		first := append(append(slices.Clone(splitLine(fs, args).flags), "--"), pos...)
		fs2, config2, v2, n2 := newSet()
		pos2, err := parseFlags(fs2, first)
		if err != nil || !slices.Equal(pos2, pos) || *config2 != *config || *v2 != *v || *n2 != *n {
			t.Fatalf("parseFlags(%q) = %q (config %q, v %v, n %d), but with its flags first, %q: %q, %v (config %q, v %v, n %d)",
				args, pos, *config, *v, *n, first, pos2, err, *config2, *v2, *n2)
		}
	})
}

// fullWriter fails every write, as /dev/full does.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestOutputErrors checks that the commands that only print text exit 1 and
// say why when their output cannot be written, as the others do.
func TestOutputErrors(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"help", "route"}, {"completion", "bash"}, {"version"}, {"--help"}, {"route", "--help"}} {
		var stderr strings.Builder
		code := run(args, strings.NewReader(""), fullWriter{}, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), "no space left on device") {
			t.Errorf("chash %q to a full disk = %d, stderr %q; want 1 and the error", args, code, stderr.String())
		}
	}
}
