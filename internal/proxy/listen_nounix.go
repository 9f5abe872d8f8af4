//go:build !unix

package proxy

import (
	"net"
	"syscall"
)

// servedElsewhere reports false: without SO_REUSEPORT, a listener on an
// address another process serves fails to open.
func servedElsewhere(ta *net.TCPAddr) bool { return false }

// reusePort does nothing where the system has no SO_REUSEPORT: a new process
// cannot listen on an address until the old one has closed it.
func reusePort(network, address string, c syscall.RawConn) error { return nil }
