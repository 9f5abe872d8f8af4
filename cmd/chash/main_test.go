package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// runChash runs the command line args in-process with stdin as its input.
func runChash(t *testing.T, stdin io.Reader, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	var out, errOut bytes.Buffer
	code = run(args, stdin, &out, &errOut)
	return out.String(), errOut.String(), code
}

func TestUsage(t *testing.T) {
	tests := []struct {
		args        []string
		code        int
		stdout      string // a substring of the output, or
		stderr      string // of the error output
		noStderr    bool
		emptyStdout bool
	}{
		{args: nil, code: 2, stderr: "Usage:\n\n\tchash <command> [arguments]", emptyStdout: true},
		{args: []string{"-h"}, code: 0, stdout: "\troute      print the server each key goes to\n", noStderr: true},
		{args: []string{"help"}, code: 0, stdout: "\thelp       show the manual of a command or a topic\n", noStderr: true},
		{args: []string{"help", "route"}, code: 0, stdout: "usage: chash route --config FILE [--pool NAME] [KEY ...]\n\nRoute prints", noStderr: true},
		{args: []string{"help", "route"}, code: 0, stdout: "  -config FILE\n    \tread the configuration FILE (required)\n", noStderr: true},
		{args: []string{"help", "help"}, code: 0, stdout: "usage: chash help [command|topic]\n", noStderr: true},
		{args: []string{"help", "nope"}, code: 2, stderr: "chash help nope: unknown command or topic", emptyStdout: true},
		{args: []string{"help", "route", "extra"}, code: 2, stderr: "chash help: too many arguments\nusage: chash help [command|topic]\n", emptyStdout: true},
		{args: []string{"nope"}, code: 2, stderr: "chash: unknown command \"nope\"\nRun 'chash help' for usage.\n", emptyStdout: true},
		{args: []string{"route"}, code: 2, stderr: "chash route: --config is required\nusage: chash route --config FILE", emptyStdout: true},
		{args: []string{"route", "--nope"}, code: 2, stderr: "chash route: flag provided but not defined: --nope\nusage: chash route", emptyStdout: true},
		{args: []string{"route", "-nope"}, code: 2, stderr: "chash route: flag provided but not defined: -nope\nusage: chash route", emptyStdout: true},
		{args: []string{"route", "--config"}, code: 2, stderr: "flag needs an argument: --config\n", emptyStdout: true},
		{args: []string{"route", "-config"}, code: 2, stderr: "flag needs an argument: -config\n", emptyStdout: true},
		{args: []string{"sweep", "--trials=x"}, code: 2, stderr: "chash sweep: invalid value \"x\" for flag --trials: parse error\n", emptyStdout: true},
		{args: []string{"proxy", "--eject-errors=maybe"}, code: 2, stderr: "chash proxy: invalid boolean value \"maybe\" for --eject-errors: parse error\n", emptyStdout: true},
		{args: []string{"route", "-h"}, code: 0, stdout: "usage: chash route", noStderr: true},
		{args: []string{"help", "-x"}, code: 2, stderr: "flag provided but not defined: -x", emptyStdout: true},
	}
	for _, tt := range tests {
		stdout, stderr, code := runChash(t, nil, tt.args...)
		if code != tt.code {
			t.Errorf("chash %q: exit status %d; want %d (stderr %q)", tt.args, code, tt.code, stderr)
		}
		if !strings.Contains(stdout, tt.stdout) {
			t.Errorf("chash %q: stdout\n%s\nwant it to contain\n%s", tt.args, stdout, tt.stdout)
		}
		if !strings.Contains(stderr, tt.stderr) {
			t.Errorf("chash %q: stderr\n%s\nwant it to contain\n%s", tt.args, stderr, tt.stderr)
		}
		if tt.noStderr && stderr != "" {
			t.Errorf("chash %q: stderr %q; want none", tt.args, stderr)
		}
		if tt.emptyStdout && stdout != "" {
			t.Errorf("chash %q: stdout %q; want none", tt.args, stdout)
		}
	}
}
