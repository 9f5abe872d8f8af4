//go:build unix

package proxy

import (
	"math"
	"syscall"
)

// openFilesLimit returns the process's limit of open files (RLIMIT_NOFILE's
// soft limit, which Go raises to the hard limit at start), or 0 if it cannot
// be read or is too large to matter.
func openFilesLimit() int64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || uint64(lim.Cur) > math.MaxInt32 {
		return 0
	}
	return int64(lim.Cur)
}
