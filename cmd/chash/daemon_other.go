//go:build !unix

package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"time"
)

// Elsewhere a process has no session to leave (see daemon_unix.go).

func daemonChild() *os.File { return nil }

func daemonStarted(*os.File) {}

func daemonize([]string, io.Writer, time.Duration) (int, error) {
	return 2, fmt.Errorf("--daemonize is not supported on %s: run chash proxy as a service", runtime.GOOS)
}
