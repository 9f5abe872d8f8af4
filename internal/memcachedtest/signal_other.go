//go:build !unix

package memcachedtest

import (
	"os"

	"github.com/chash-dev/chash/internal/testprog"
)

// send sends sig to p.
func send(p *testprog.Proc, sig os.Signal) error { return p.Signal(sig) }
