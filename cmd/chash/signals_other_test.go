//go:build !unix

package main

import (
	"testing"

	"github.com/chash-dev/chash/internal/testprog"
)

// checkNutcrackerSignals: SIGTTIN, SIGTTOU, SIGUSR1 and SIGUSR2 do not exist
// here, nor does the proxy catch them (signals_other.go).
func checkNutcrackerSignals(t *testing.T, p *testprog.Proc, logFile string) {
	t.Log("nutcracker's SIGTTIN, SIGTTOU, SIGUSR1 and SIGUSR2 do not exist on this system")
}
