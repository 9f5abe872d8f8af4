//go:build !unix

package proxy

import "time"

// cpuTime cannot be read here: ScaleProcs leaves GOMAXPROCS alone.
func cpuTime() (time.Duration, bool) { return 0, false }
