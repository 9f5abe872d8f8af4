//go:build unix

package proxy

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// reusePort sets SO_REUSEPORT on a socket before it binds (see listen.go).
func reusePort(network, address string, c syscall.RawConn) error {
	var err error
	if cerr := c.Control(func(fd uintptr) {
		err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); cerr != nil {
		return cerr
	}
	if err != nil {
		return &net.OpError{Op: "setsockopt SO_REUSEPORT", Net: network, Err: err}
	}
	return nil
}
