//go:build unix

package main

import (
	"os"
	"syscall"
)

// The signals that nutcracker handles besides SIGHUP, SIGINT and SIGTERM
// (twemproxy's nc_signal.c), by name: SIGTTIN raises its log level and
// SIGTTOU lowers it; SIGUSR1 and SIGUSR2 do nothing but say they came. Left
// to their default, job control's SIGTTIN and SIGTTOU would stop the proxy
// (Go leaves them to the system); Go ignores SIGUSR1 and SIGUSR2 unseen.
var (
	logUp, logDown    = os.Signal(syscall.SIGTTIN), os.Signal(syscall.SIGTTOU)
	nutcrackerSignals = map[os.Signal]string{
		syscall.SIGTTIN: "SIGTTIN", syscall.SIGTTOU: "SIGTTOU", syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2",
	}
)
