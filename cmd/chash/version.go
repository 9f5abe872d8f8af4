package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

func init() { register(newVersion) }

func newVersion() *Command {
	return &Command{
		Run:       runVersion,
		UsageLine: "version",
		Short:     "print chash's version",
		Long: `Version prints the version of the chash module the command was built from
and, when it was built in a git checkout, the commit (with "+dirty" when the
checkout had uncommitted changes) and the commit's time; then the Go version
and the platform. "chash --version" is the same.

A command installed with "go install github.com/chash-dev/chash/cmd/chash@v1.2.3"
reports v1.2.3; one built in a checkout reports the version Go derives from the
commit, such as v0.0.0-20261130101500-9ecdd35a1b2c+dirty.`,
	}
}

func runVersion(_ context.Context, cmd *Command, env *Env, args []string) int {
	if len(args) > 0 {
		return cmd.UsageError(env.Stderr, "no arguments expected")
	}
	info, _ := debug.ReadBuildInfo()
	_, err := fmt.Fprintln(env.Stdout, versionLine(info))
	return reportOut(cmd, env, err)
}

// versionLine describes the build: "chash VERSION [(commit REV[+dirty], TIME)]
// GOVERSION GOOS/GOARCH". info may be nil, as for a binary built without
// module support.
func versionLine(info *debug.BuildInfo) string {
	version, goVersion := "(unknown)", runtime.Version()
	var rev, at, dirty string
	if info != nil {
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		goVersion = info.GoVersion
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "chash %s", version)
	if rev != "" {
		fmt.Fprintf(&b, " (commit %s%s", rev, dirty)
		if at != "" {
			fmt.Fprintf(&b, ", %s", at)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, " %s %s/%s", goVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}
