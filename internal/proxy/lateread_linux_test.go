package proxy

import (
	"net"
	"syscall"
	"testing"
	"time"
)

// TestLateReaderNotTimedOut: a read whose deadline passed while the server's
// bytes were already on the socket, as when the reader waits for a processor
// on a loaded machine, reads them, where it failed with a timeout (and the
// proxy answered "Connection timed out" and counted a failure against a
// server that had answered in time); with nothing on the socket, the timeout
// stands.
func TestLateReaderNotTimedOut(t *testing.T) {
	conn, server := tcpPair(t)
	cr := &countingReader{r: socketIO(conn), ss: &session{conn: conn}}
	p := make([]byte, 64)

	conn.SetReadDeadline(time.Now().Add(-time.Second)) // passed
	if n, err := cr.Read(p); n != 0 || !isTimeout(err) {
		t.Errorf("read past its deadline, nothing sent: %d bytes, %v; want a timeout", n, err)
	}

	server.Write([]byte("END\r\n"))
	waitFor(5*time.Second, func() bool { // the bytes on the socket
		conn.SetReadDeadline(time.Now().Add(-time.Second))
		n, _, _ := syscall.Recvfrom(rawFD(t, conn), make([]byte, 8), syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return n == 5
	})
	if n, err := cr.Read(p); string(p[:n]) != "END\r\n" || err != nil {
		t.Errorf("read past its deadline, the reply on the socket: %q, %v; want the reply", p[:n], err)
	}
}

// rawFD returns the file descriptor of a TCP connection.
func rawFD(t *testing.T, c net.Conn) int {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd int
	rc.Control(func(f uintptr) { fd = int(f) })
	return fd
}
