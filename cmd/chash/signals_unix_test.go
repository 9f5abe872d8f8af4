//go:build unix

package main

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/chash-dev/chash/internal/testprog"
)

// checkNutcrackerSignals sends chash proxy p, started with -v 6 and its log in
// logFile, nutcracker's other signals: SIGTTOU and SIGTTIN lower and raise the
// log level, SIGUSR1 and SIGUSR2 do nothing; none stops or ends the proxy (the
// caller checks it still answers).
func checkNutcrackerSignals(t *testing.T, p *testprog.Proc, logFile string) {
	t.Helper()
	logged := func(want string) bool {
		return poll(10*time.Second, func() bool { b, _ := os.ReadFile(logFile); return strings.Contains(string(b), want) })
	}
	for _, step := range []struct {
		sig  syscall.Signal
		want string // the line it logs; "" for none
	}{
		{syscall.SIGTTOU, "signal=SIGTTOU verbose_from=6 verbose_to=5"},
		{syscall.SIGTTOU, "signal=SIGTTOU verbose_from=5 verbose_to=4"},
		{syscall.SIGUSR1, ""}, // its line is at info, under the level of 4 (warnings)
		// Lower still, not higher, before anything shows that SIGUSR1 was
		// handled: the process may handle two signals sent at once in
		// either order, and SIGUSR1 after a SIGTTIN would be logged.
		{syscall.SIGTTOU, "signal=SIGTTOU verbose_from=4 verbose_to=3"},
		{syscall.SIGTTIN, "signal=SIGTTIN verbose_from=3 verbose_to=4"},
		{syscall.SIGTTIN, "signal=SIGTTIN verbose_from=4 verbose_to=5"},
		{syscall.SIGUSR2, `msg="signal received: nothing to do, as for nutcracker" signal=SIGUSR2`},
	} {
		sendSignal(t, p, step.sig)
		if step.want != "" && !logged(step.want) {
			b, _ := os.ReadFile(logFile)
			t.Fatalf("10s after %s, the log has no %q:\n%s", unix.SignalName(step.sig), step.want, b)
		}
	}
	if b, _ := os.ReadFile(logFile); strings.Contains(string(b), "SIGUSR1") {
		t.Errorf("SIGUSR1's line is logged at level 4 or 3 (warnings, errors):\n%s", b)
	}
}
