package proxy

import (
	"io"
	"net"
	"syscall"
	"unsafe"
)

// rawIO reads and writes a socket with raw system calls, waiting in the
// network poller as net.Conn does, deadlines included. A socket of a proxy is
// non-blocking, so its reads and writes return at once; made as ordinary
// system calls they would let the runtime's monitor thread take the processor
// of a thread that is in one (on this VM they take tens of microseconds), hand
// it to another thread and wake that one, which under load cost more CPU than
// the system calls themselves. The price: a call that copies much (a write of
// a large value) keeps its thread's processor for as long as the copy takes.
type rawIO struct {
	rc syscall.RawConn
}

// socketIO returns what reads and writes conn: a rawIO for TCP and Unix
// sockets, conn itself otherwise (TLS).
func socketIO(conn net.Conn) io.ReadWriter {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return conn
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return conn
	}
	return &rawIO{rc}
}

func (r *rawIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n uintptr
	var errno syscall.Errno
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			n, _, errno = syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			if errno != syscall.EINTR {
				return errno != syscall.EAGAIN
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, &net.OpError{Op: "read", Net: "raw", Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return int(n), nil
}

func (r *rawIO) Write(p []byte) (int, error) {
	done := 0
	var errno syscall.Errno
	err := r.rc.Write(func(fd uintptr) bool {
		for done < len(p) {
			n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[done])), uintptr(len(p)-done))
			switch e {
			case 0:
				done += int(n)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // wait until the socket takes more
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return done, err
	case errno != 0:
		return done, &net.OpError{Op: "write", Net: "raw", Err: errno}
	}
	return done, nil
}
