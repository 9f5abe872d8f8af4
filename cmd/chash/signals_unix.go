//go:build unix

package main

import (
	"os"
	"os/signal"
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

// ignoreBrokenPipe makes a write to a closed pipe or socket fail with EPIPE
// instead of ending the process, as nutcracker ignores SIGPIPE: Go ends a
// program whose write to standard output or error meets a closed pipe, so a
// proxy logging to a pipe whose reader died (a log shipper, journald
// restarting) would die with it.
func ignoreBrokenPipe() { signal.Ignore(syscall.SIGPIPE) }
