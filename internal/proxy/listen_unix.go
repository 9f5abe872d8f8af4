//go:build unix

package proxy

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// servedElsewhere reports whether a socket that is not this process's, and
// shares its address (SO_REUSEPORT), listens on ta: a socket bound without
// SO_REUSEPORT, and closed at once, cannot bind there then. Nothing listens
// on the probe, so it takes no client's connection.
func servedElsewhere(ta *net.TCPAddr) bool {
	domain, sa := unix.AF_INET6, unix.Sockaddr(nil)
	if ip4 := ta.IP.To4(); ip4 != nil {
		domain, sa = unix.AF_INET, &unix.SockaddrInet4{Port: ta.Port, Addr: [4]byte(ip4)}
	} else {
		sa = &unix.SockaddrInet6{Port: ta.Port, Addr: [16]byte(ta.IP.To16())}
	}
	syscall.ForkLock.RLock() // as the net package opens sockets where SOCK_CLOEXEC is not
	fd, err := unix.Socket(domain, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1) // past TIME_WAIT, as Listen binds
	return unix.Bind(fd, sa) == unix.EADDRINUSE
}

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
