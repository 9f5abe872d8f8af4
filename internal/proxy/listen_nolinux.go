//go:build !linux

package proxy

import "net"

// takeQueue takes nothing where accepting without waiting is not at hand:
// the connections queued at a close are reset.
func takeQueue(ln *net.TCPListener) []net.Conn { return nil }
