//go:build unix

package testprog

import (
	"os"
	"syscall"
)

const (
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
)

// terminate asks p to exit: SIGTERM, and SIGCONT so that a frozen process
// acts on it rather than keeping it pending.
func terminate(p *os.Process) {
	p.Signal(syscall.SIGTERM)
	p.Signal(syscall.SIGCONT)
}
