//go:build unix

package proxy

import (
	"fmt"
	"net"
	"syscall"
)

// setBacklog sets the length of ln's listen queue. The net package listens
// with the kernel's largest (somaxconn, on Linux), and its ListenConfig cannot
// change it; calling listen(2) again on the listening socket can, on Linux and
// the BSDs alike. The kernel caps n at its somaxconn (net.core.somaxconn on
// Linux), as it caps nutcracker's. n <= 0 leaves the queue as the net package
// made it.
func setBacklog(ln net.Listener, n int) error {
	sc, ok := ln.(syscall.Conn)
	if n <= 0 || !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return fmt.Errorf("proxy: backlog of %s: %w", ln.Addr(), err)
	}
	var lerr error
	if err := raw.Control(func(fd uintptr) { lerr = syscall.Listen(int(fd), n) }); err != nil {
		return fmt.Errorf("proxy: backlog of %s: %w", ln.Addr(), err)
	}
	if lerr != nil {
		return fmt.Errorf("proxy: backlog %d of %s: listen: %w", n, ln.Addr(), lerr)
	}
	return nil
}
