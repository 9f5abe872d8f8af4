//go:build !linux

package testprog

import (
	"os/exec"
	"time"
)

// dieWithParent does nothing where the kernel cannot tie a process's life to
// its parent's; a test binary that dies leaves its programs running.
func dieWithParent(*exec.Cmd) {}

// waitStopped does nothing where the process's state cannot be read: Freeze
// and Thaw return once the signal is sent.
func waitStopped(pid int, stopped bool, timeout time.Duration) error { return nil }

// listenerOf cannot tell here which process holds a listening socket.
func listenerOf(pid, port int) (held, known bool) { return false, false }
