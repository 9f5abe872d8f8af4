//go:build !unix

package benchmarks

import "time"

// cpuTime is zero where the process's CPU time is not read: cpu-ns/op is then
// 0 and means nothing.
func cpuTime() time.Duration { return 0 }
