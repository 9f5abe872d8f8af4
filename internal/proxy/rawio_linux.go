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
//
// The functions handed to the poller are method values made once, and what
// they read and write lives in the struct: closures capturing locals would
// put those locals on the heap at every call. One goroutine may read while
// another writes, so reads and writes have fields of their own.
type rawIO struct {
	rc syscall.RawConn

	readFn  func(fd uintptr) bool
	rbuf    []byte
	rn      uintptr
	rerrno  syscall.Errno
	writeFn func(fd uintptr) bool
	wbuf    []byte
	wdone   int
	werrno  syscall.Errno
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
	r := &rawIO{rc: rc}
	r.readFn, r.writeFn = r.tryRead, r.tryWrite
	return r
}

func (r *rawIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.rbuf, r.rn, r.rerrno = p, 0, 0
	err := r.rc.Read(r.readFn)
	r.rbuf = nil
	n, errno := r.rn, r.rerrno
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

// tryRead reads once into rbuf; it returns false to wait until the socket is
// readable.
func (r *rawIO) tryRead(fd uintptr) bool {
	for {
		r.rn, _, r.rerrno = syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&r.rbuf[0])), uintptr(len(r.rbuf)))
		if r.rerrno != syscall.EINTR {
			return r.rerrno != syscall.EAGAIN
		}
	}
}

func (r *rawIO) Write(p []byte) (int, error) {
	r.wbuf, r.wdone, r.werrno = p, 0, 0
	err := r.rc.Write(r.writeFn)
	r.wbuf = nil
	done, errno := r.wdone, r.werrno
	switch {
	case err != nil:
		return done, err
	case errno != 0:
		return done, &net.OpError{Op: "write", Net: "raw", Err: errno}
	}
	return done, nil
}

// tryWrite writes what is left of wbuf; it returns false to wait until the
// socket takes more.
func (r *rawIO) tryWrite(fd uintptr) bool {
	for r.wdone < len(r.wbuf) {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&r.wbuf[r.wdone])), uintptr(len(r.wbuf)-r.wdone))
		switch e {
		case 0:
			r.wdone += int(n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			r.werrno = e
			return true
		}
	}
	return true
}
