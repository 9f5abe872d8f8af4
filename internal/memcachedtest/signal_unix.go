//go:build unix

package memcachedtest

import (
	"os"
	"syscall"

	"github.com/chash-dev/chash/internal/testprog"
)

// send sends sig to p; SIGSTOP and SIGCONT wait until p has stopped or runs
// again, as fault tests expect a frozen server to answer nothing at once.
func send(p *testprog.Proc, sig os.Signal) error {
	switch sig {
	case syscall.SIGSTOP:
		return p.Freeze()
	case syscall.SIGCONT:
		return p.Thaw()
	}
	return p.Signal(sig)
}
