package proxy

import (
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// takeQueue accepts every connection waiting in ln's queue, with
// non-blocking accept system calls until none is left; ln's deadline, which
// the poller checks before it lets Accept try, does not stop them.
func takeQueue(ln *net.TCPListener) []net.Conn {
	rc, err := ln.SyscallConn()
	if err != nil {
		return nil
	}
	var fds []int
	rc.Control(func(fd uintptr) {
		for {
			nfd, _, err := unix.Accept4(int(fd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
			if err == unix.EINTR || err == unix.ECONNABORTED {
				continue
			}
			if err != nil {
				return // EAGAIN: the queue is empty
			}
			fds = append(fds, nfd)
		}
	})
	var conns []net.Conn
	for _, fd := range fds {
		f := os.NewFile(uintptr(fd), "accepted")
		c, err := net.FileConn(f) // a copy of the descriptor, in the poller
		f.Close()
		if err == nil {
			conns = append(conns, c)
		}
	}
	return conns
}
