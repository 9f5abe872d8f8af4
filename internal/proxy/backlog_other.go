//go:build !unix

package proxy

import "net"

// setBacklog leaves the listen queue as the net package made it: a socket
// listens once on Windows.
func setBacklog(net.Listener, int) error { return nil }
