package proxy

import (
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
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
	// The socket's addresses, which its errors name as net.Conn's do.
	laddr, raddr net.Addr

	readFn  func(fd uintptr) bool
	nowFn   func(fd uintptr) bool // readNow's
	wnowFn  func(fd uintptr) bool // writeNow's
	wvFn    func(fd uintptr) bool // writevNow's
	rbuf    []byte
	rn      uintptr
	rerrno  syscall.Errno
	writeFn func(fd uintptr) bool
	wbuf    []byte
	wdone   int
	werrno  syscall.Errno
	wvec    [maxParts]syscall.Iovec // writevNow's parts
	wn      int                     // and how many of them
	wallFn  func(fd uintptr) bool   // writeAll's
	wbufs   [][]byte                // what writeAll has left to write
	iovs    []syscall.Iovec         // and its vector
	inqFn   func(fd uintptr)        // readable's
	inqN    int32

	// empty counts the reads that found nothing (for tests: a server's
	// reader makes none after a burst that left nothing, see within).
	empty atomic.Uint64

	// within's: its read function, the function it runs and whether Read is
	// called from it; and recvNow's descriptor and what it last left.
	withinFn func(fd uintptr) bool
	wfn      func() bool
	inside   bool
	fd       uintptr
	left     int

	// serveClient's: its read function, the client served and how it ended.
	serveFn func(fd uintptr) bool
	client  *client
	cend    end
	cerr    error
	// recv's: whether TCP_INQ is set, and recvmsg's arguments.
	inq  bool
	msg  syscall.Msghdr
	iov  syscall.Iovec
	cmsg [(syscall.SizeofCmsghdr + 8) / 8]uint64 // a control message, aligned
}

// opError returns err, of op ("read" or "write"), as net.Conn words it:
// "read tcp 10.0.0.1:40000->10.0.0.2:11211: read: connection reset by peer".
// A system call's errno would read "read raw: connection reset by peer", and
// the poller's failed wait (a deadline) "raw-read tcp ...: i/o timeout".
func (r *rawIO) opError(op string, err error) error {
	if errno, ok := err.(syscall.Errno); ok {
		network := "raw"
		if r.laddr != nil {
			network = r.laddr.Network()
		}
		return &net.OpError{Op: op, Net: network, Source: r.laddr, Addr: r.raddr, Err: os.NewSyscallError(op, errno)}
	}
	if oe, ok := err.(*net.OpError); ok && strings.HasPrefix(oe.Op, "raw-") {
		e := *oe
		e.Op = op
		return &e
	}
	return err
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
	r := &rawIO{rc: rc, laddr: conn.LocalAddr(), raddr: conn.RemoteAddr()}
	r.readFn, r.writeFn, r.nowFn, r.wnowFn = r.tryRead, r.tryWrite, r.readOnce, r.writeOnce
	r.wvFn, r.wallFn = r.writevOnce, r.tryWritev
	r.inqFn = r.inq1
	return r
}

func (r *rawIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if r.inside {
		return r.recvNow(p)
	}
	r.rbuf, r.rn, r.rerrno = p, 0, 0
	err := r.rc.Read(r.readFn)
	r.rbuf = nil
	n, errno := r.rn, r.rerrno
	switch {
	case err != nil:
		return 0, r.opError("read", err)
	case errno != 0:
		return 0, r.opError("read", errno)
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
		if r.rerrno == syscall.EAGAIN {
			r.empty.Add(1)
			return false
		}
		if r.rerrno != syscall.EINTR {
			return true
		}
	}
}

// readNow reads into p if the socket has bytes (or has ended), without
// waiting: again reports that it had none. It is one system call.
func (r *rawIO) readNow(p []byte) (n int, again bool, err error) {
	if len(p) == 0 {
		return 0, false, nil
	}
	r.rbuf, r.rn, r.rerrno = p, 0, 0
	err = r.rc.Read(r.nowFn)
	r.rbuf = nil
	switch {
	case err != nil:
		return 0, false, r.opError("read", err)
	case r.rerrno == syscall.EAGAIN:
		return 0, true, nil
	case r.rerrno != 0:
		return 0, false, r.opError("read", r.rerrno)
	case r.rn == 0:
		return 0, false, io.EOF
	}
	return int(r.rn), false, nil
}

// readable returns the bytes the socket has received and not yet read, 0 if
// it cannot tell.
func (r *rawIO) readable() int {
	r.inqN = 0
	if r.rc.Control(r.inqFn) != nil {
		return 0
	}
	return int(max(r.inqN, 0))
}

// inq1 is readable's function: one ioctl (SIOCINQ, which is TIOCINQ).
func (r *rawIO) inq1(fd uintptr) {
	if _, _, e := syscall.RawSyscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&r.inqN))); e != 0 {
		r.inqN = 0
	}
}

// readOnce is readNow's read function: one read, whatever it finds.
func (r *rawIO) readOnce(fd uintptr) bool {
	r.tryRead(fd)
	return true
}

func (r *rawIO) Write(p []byte) (int, error) {
	r.wbuf, r.wdone, r.werrno = p, 0, 0
	err := r.rc.Write(r.writeFn)
	r.wbuf = nil
	return r.wresult(err)
}

// wresult returns the bytes written by a write function and the write's
// error: err, the poller's, or the system call's.
func (r *rawIO) wresult(err error) (int, error) {
	switch {
	case err != nil:
		return r.wdone, r.opError("write", err)
	case r.werrno != 0:
		return r.wdone, r.opError("write", r.werrno)
	}
	return r.wdone, nil
}

// writeNow writes what the socket takes of p without waiting, and returns the
// bytes written; the error is that of a write that failed.
func (r *rawIO) writeNow(p []byte) (int, error) {
	r.wbuf, r.wdone, r.werrno = p, 0, 0
	err := r.rc.Write(r.wnowFn)
	r.wbuf = nil
	return r.wresult(err)
}

// maxParts is the parts one writevNow writes.
const maxParts = 3

// writevNow writes what the socket takes of head, value and tail, in order,
// in one system call (writev) without waiting, and returns the bytes
// written: a large value goes out between the bytes before and after it
// without being copied next to them.
func (r *rawIO) writevNow(head, value, tail []byte) (int, error) {
	r.wn = 0
	for _, p := range [maxParts][]byte{head, value, tail} {
		if len(p) > 0 {
			r.wvec[r.wn].Base = &p[0]
			r.wvec[r.wn].SetLen(len(p))
			r.wn++
		}
	}
	if r.wn == 0 {
		return 0, nil
	}
	r.wdone, r.werrno = 0, 0
	err := r.rc.Write(r.wvFn)
	clear(r.wvec[:r.wn]) // no pointer into the parts outlives the call
	return r.wresult(err)
}

// writevOnce is writevNow's write function: one writev, again after EINTR.
func (r *rawIO) writevOnce(fd uintptr) bool {
	for {
		w, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&r.wvec[0])), uintptr(r.wn))
		switch e {
		case 0:
			r.wdone = int(w)
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
		default:
			r.werrno = e
		}
		return true
	}
}

// maxIov is the most parts one writev takes (Linux's IOV_MAX).
const maxIov = 1024

// writeAll writes bufs, in order, as Write writes one buffer: with writev,
// waiting in the poller while the socket takes no more. The values a proxy
// relays go out so from where they were read, without being copied next to
// the bytes around them. bufs is consumed.
func (r *rawIO) writeAll(bufs [][]byte) error {
	r.wbufs, r.wdone, r.werrno = bufs, 0, 0
	err := r.rc.Write(r.wallFn)
	r.wbufs = nil
	clear(r.iovs[:cap(r.iovs)]) // no pointer into the buffers outlives the call
	_, err = r.wresult(err)
	return err
}

// tryWritev writes what is left of wbufs; it returns false to wait until
// the socket takes more.
func (r *rawIO) tryWritev(fd uintptr) bool {
	for {
		for len(r.wbufs) > 0 && len(r.wbufs[0]) == 0 {
			r.wbufs = r.wbufs[1:]
		}
		if len(r.wbufs) == 0 {
			return true
		}
		r.iovs = r.iovs[:0]
		for _, b := range r.wbufs {
			if len(r.iovs) == maxIov {
				break
			}
			if len(b) > 0 {
				r.iovs = append(r.iovs, syscall.Iovec{Base: &b[0]})
				r.iovs[len(r.iovs)-1].SetLen(len(b))
			}
		}
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&r.iovs[0])), uintptr(len(r.iovs)))
		if e == syscall.EAGAIN {
			return false
		}
		if e != 0 && e != syscall.EINTR {
			r.werrno = e
			return true
		}
		if e == 0 {
			r.wdone += int(n)
		}
		for n > 0 && e == 0 { // past the bytes written
			k := min(int(n), len(r.wbufs[0]))
			r.wbufs[0] = r.wbufs[0][k:]
			n -= uintptr(k)
			if len(r.wbufs[0]) == 0 {
				r.wbufs = r.wbufs[1:]
			}
		}
	}
}

// writeOnce is writeNow's write function: it writes until the socket takes
// no more, and does not wait.
func (r *rawIO) writeOnce(fd uintptr) bool {
	r.tryWrite(fd)
	return true
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

// serveClient serves client c over its socket, r, in one raw read for as long
// as the client sends whole requests, so that waiting for its next request
// costs no read that finds nothing.
//
// A read of a socket (as net.Conn's) first forgets whether the socket became
// readable since the last read, reads, and waits for the poller only after a
// read that found nothing: a system call of about a microsecond on a virtual
// machine, for a client that sends a request and waits for its reply one a
// request. Within one raw read, the poller keeps what it learnt since the last
// read: any byte or end of stream that arrives after a read makes the socket
// readable anew. What a read cannot tell is whether more had arrived before
// it, a client's end of stream in particular (a client that writes its
// requests and shuts down its side at once): TCP_INQ has the kernel say, with
// each read, how many bytes are left, and that the stream ended. So the read
// function reads, serves the requests read, and waits without reading again
// when nothing was left; where TCP_INQ is not had (a Unix socket) it reads
// until a read finds nothing, as net.Conn does.
//
// It serves bytes that hold whole requests only (clientCodec.whole), without
// reading the socket meanwhile (clientSource.noRead); otherwise, or when the
// read filled its buffer, the raw read ends and serveRead reads the rest of
// the request as usual.
func (r *rawIO) serveClient(c *client) end {
	if r.serveFn == nil { // first use: only a client's socket gets here
		r.serveFn = r.serve
		r.setupRecv()
	}
	r.client, r.cend, r.cerr = c, endIdle, nil
	err := r.rc.Read(r.serveFn)
	r.client = nil
	switch {
	case err != nil: // the wait failed: a deadline, or the connection closed
		return c.shedWait(r.opError("read", err))
	case r.cerr != nil:
		return c.readFailed(r.cerr)
	case r.cend != endIdle:
		return r.cend
	}
	return c.serveRead()
}

// setupRecv sets TCP_INQ on the socket, where it can, and readies recv's
// message.
func (r *rawIO) setupRecv() {
	r.rc.Control(func(fd uintptr) {
		r.inq = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpInq, 1) == nil
	})
	r.msg.Iovlen = 1
	r.msg.Iov = &r.iov
	r.msg.Control = (*byte)(unsafe.Pointer(&r.cmsg[0]))
}

// tcpInq is Linux's TCP_INQ socket option and TCP_CM_INQ control message
// (linux/tcp.h): with each read, the bytes left to read, or 1 if none but the
// stream ended.
const tcpInq = 36

// serve is serveClient's read function.
func (r *rawIO) serve(fd uintptr) bool {
	c := r.client
	src := &c.src
	r.fd = fd
	for {
		src.take()
		n, err := r.recvNow(src.buf)
		if err == errAgain {
			src.drop()
			return false
		}
		if err != nil {
			r.cerr = err
			return true
		}
		left := r.left
		src.read.Add(uint64(n))
		src.head = src.buf[:n]
		src.woke(n, left)
		if n == len(src.buf) || !c.cc.whole(src.head) {
			return true // serveClient's serveRead reads the rest
		}
		src.noRead = true
		e := c.serveRead()
		src.noRead = false
		if e != endIdle {
			r.cend = e
			return true
		}
		if left == 0 {
			// Every request is answered, and nothing was left: wait
			// until the socket is readable.
			return false
		}
	}
}

// recv reads fd into p and returns the bytes read, and the bytes left to read
// (1 if the stream ended, -1 if unknown).
func (r *rawIO) recv(fd uintptr, p []byte) (n, left int, errno syscall.Errno) {
	if !r.inq {
		m, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		return int(m), -1, e
	}
	r.iov.Base = &p[0]
	r.iov.SetLen(len(p))
	r.msg.SetControllen(len(r.cmsg) * 8)
	m, _, e := syscall.RawSyscall(syscall.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&r.msg)), 0)
	r.iov.Base = nil
	left = -1
	if e == 0 && int(r.msg.Controllen) >= syscall.SizeofCmsghdr+4 {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&r.cmsg[0]))
		if h.Level == syscall.IPPROTO_TCP && h.Type == tcpInq {
			left = int(*(*int32)(unsafe.Add(unsafe.Pointer(&r.cmsg[0]), syscall.SizeofCmsghdr)))
		}
	}
	return int(m), left, e
}

// canWithin sets the socket up for within, on first use, and reports whether
// within can be used: where the kernel tells with each read what it left
// (TCP_INQ), not on a Unix socket.
func (r *rawIO) canWithin() bool {
	if r.withinFn == nil {
		r.withinFn = r.withinRead
		r.setupRecv()
	}
	return r.inq
}

// within runs fn inside one raw read of the socket, as serveClient serves a
// client, again each time the socket is readable while fn returns true (wait),
// until it returns false; it returns the error of a wait that failed (a
// deadline, the socket closed). Within it, Read reads the socket at once,
// without waiting: errAgain if it has nothing. The poller keeps, within one
// raw read, what it learnt since the last read, so fn may wait after a read
// that left nothing (drained) without reading again: a read that finds
// nothing, a system call of about a microsecond on a virtual machine, is
// saved after each reply or burst of replies from a server.
func (r *rawIO) within(fn func() (wait bool)) error {
	r.wfn = fn
	err := r.rc.Read(r.withinFn)
	r.wfn = nil
	if err != nil {
		return r.opError("read", err)
	}
	return nil
}

// withinRead is within's read function.
func (r *rawIO) withinRead(fd uintptr) bool {
	r.fd, r.inside, r.left = fd, true, -1
	wait := r.wfn()
	r.inside = false
	return !wait
}

// drained reports whether the last read within within left nothing on the
// socket, and the stream had not ended.
func (r *rawIO) drained() bool { return r.left == 0 }

// recvNow reads fd into p once, without waiting, from a function run within
// a raw read (within's, serveClient's): errAgain if it has nothing, io.EOF at
// the stream's end. It keeps in left what the read left (recv).
func (r *rawIO) recvNow(p []byte) (int, error) {
	for {
		n, left, errno := r.recv(r.fd, p)
		switch {
		case errno == syscall.EINTR:
			continue
		case errno == syscall.EAGAIN:
			r.empty.Add(1)
			r.left = 0
			return 0, errAgain
		case errno != 0:
			return 0, r.opError("read", errno)
		case n == 0:
			return 0, io.EOF
		}
		r.left = left
		return n, nil
	}
}
