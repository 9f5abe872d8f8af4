//go:build !unix

package testprog

import (
	"os"
)

// stopSignal stands for SIGSTOP and SIGCONT where they do not exist: sending
// it fails.
type stopSignal string

func (s stopSignal) Signal()        {}
func (s stopSignal) String() string { return string(s) }

var (
	sigStop os.Signal = stopSignal("SIGSTOP (not supported here)")
	sigCont os.Signal = stopSignal("SIGCONT (not supported here)")
)

// terminate kills p: without Unix signals there is no gentler way.
func terminate(p *os.Process) { p.Kill() }
