//go:build !unix

package proxy

import "syscall"

// reusePort does nothing where the system has no SO_REUSEPORT: a new process
// cannot listen on an address until the old one has closed it.
func reusePort(network, address string, c syscall.RawConn) error { return nil }
