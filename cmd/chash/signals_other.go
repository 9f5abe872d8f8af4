//go:build !unix

package main

import "os"

// Elsewhere there are no such signals (see signals_unix.go).
var (
	logUp, logDown    os.Signal
	nutcrackerSignals map[os.Signal]string
)

func ignoreBrokenPipe() {}
