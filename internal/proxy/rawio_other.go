//go:build !linux

package proxy

import (
	"io"
	"net"
)

// socketIO returns conn: raw system calls are used on Linux only.
func socketIO(conn net.Conn) io.ReadWriter { return conn }
