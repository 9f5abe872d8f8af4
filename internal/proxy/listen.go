package proxy

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Hitless restarts. Every TCP listener of the proxy, the pools', the admin's
// and the stats port's, sets SO_REUSEPORT, so that a new proxy process can listen on the
// same addresses while the old one still runs: the kernel then spreads new
// connections over both. The old process, told to stop (Shutdown, SIGTERM),
// closes its listeners, which takes it out of the kernel's spreading, and
// answers what its clients sent; their next connections reach the new
// process.
//
// A listener's close resets the connections that completed their handshake
// and wait in its accept queue. A reuseListener therefore takes every
// connection already queued when it closes, and closes its socket right
// after, microseconds later: only a connection that completes its handshake
// in that instant is lost. Linux 5.14 and later hand even those to another
// listener of the address with net.ipv4.tcp_migrate_req = 1; the BPF
// programs that could steer connections away first (SO_ATTACH_REUSEPORT_CBPF)
// are not available to TCP on every kernel, this one's included.
//
// Only processes of the same user share a port this way, as the kernel
// requires; a second proxy started by mistake on the same address serves
// alongside the first rather than fail to start, as nutcracker would.

// Within one process, though, SO_REUSEPORT would let two listeners of the
// proxy (two pools, a pool and the admin listener) share an address and the
// kernel spread clients over both, each pool's keys landing on the other's
// servers: a listener is refused when another of the process takes its
// connections (listenerOverlaps).

// overlaps reports whether TCP listeners on a and b share connections: the
// same port, and the same address or either a wildcard that takes the
// other's: 0.0.0.0 every IPv4 address (its listener is IPv4's alone, see
// listenNetwork), [::] every address.
func overlaps(a, b net.Addr) bool {
	ta, ok1 := a.(*net.TCPAddr)
	tb, ok2 := b.(*net.TCPAddr)
	if !ok1 || !ok2 || ta.Port != tb.Port {
		return false
	}
	return ta.IP.Equal(tb.IP) || takes(ta.IP, tb.IP) || takes(tb.IP, ta.IP)
}

// takes reports whether a wildcard address w takes the clients of ip.
func takes(w, ip net.IP) bool {
	switch {
	case w.Equal(net.IPv4zero):
		return ip.To4() != nil
	case w.Equal(net.IPv6unspecified) && w.To4() == nil:
		return true
	}
	return false
}

// overlapping returns the name of the listener of others whose address
// overlaps a, or "": others name listeners as the errors do ("pool alpha",
// "the admin listener").
func overlapping(a net.Addr, others map[string]net.Addr) string {
	for name, b := range others {
		if b != nil && overlaps(a, b) {
			return name
		}
	}
	return ""
}

// listeners returns the addresses of the proxy's TCP listeners but those of
// the pools skip names, by name as overlapping takes them; p.mu is held.
func (p *Proxy) listeners(skip func(pool string) bool) map[string]net.Addr {
	m := map[string]net.Addr{}
	for name, pl := range p.pools {
		if pl.raw != nil && (skip == nil || !skip(name)) {
			m[fmt.Sprintf("pool %q", name)] = pl.raw.Addr()
		}
	}
	if p.adminL != nil {
		m["the admin listener"] = p.adminL.Addr()
	}
	if p.stats.ln != nil {
		m["the stats port"] = p.stats.ln.Addr()
	}
	return m
}

// listensAt reports whether a pool of the proxy listens at addr.
func (p *Proxy) listensAt(addr net.Addr) bool {
	for _, pl := range p.pools {
		if pl.raw != nil && pl.raw.Addr().String() == addr.String() {
			return true
		}
	}
	return false
}

// errOverlap is the error of a listener on addr whose address overlaps one
// that other has too.
func errOverlap(addr net.Addr, other string) error {
	return fmt.Errorf("listen %s: %s listens there too, and clients would be spread over both", addr, other)
}

// listenApart opens a TCP listener on addr (listenTCP), unless it would share
// its connections with one of others; its errors say what failed, and the
// caller where (a pool's file and line, the admin listener). The address is resolved and compared
// before the socket binds, so that a refused listener never takes, and then
// resets, a connection meant for another; and again once bound, for port 0.
func listenApart(ctx context.Context, addr string, others map[string]net.Addr) (net.Listener, error) {
	ta, err := resolveListen(addr)
	if err != nil {
		return nil, err
	}
	if ta.Port != 0 {
		if other := overlapping(ta, others); other != "" {
			return nil, errOverlap(ta, other)
		}
	}
	if host, _, _ := net.SplitHostPort(addr); host != "" {
		addr = ta.String() // bind what was compared
	}
	shared := ta.Port != 0 && servedElsewhere(ta)
	ln, err := listenTCP(ctx, addr)
	if err != nil {
		return nil, err
	}
	ln.(*reuseListener).shared = shared
	if other := overlapping(ln.Addr(), others); other != "" {
		ln.Close()
		return nil, errOverlap(ln.Addr(), other)
	}
	return ln, nil
}

// resolveListen returns the address a TCP listener on addr binds: a host
// name's first address, as Listen takes it, and [::] for an empty host,
// which takes every address (see listenNetwork).
func resolveListen(addr string) (*net.TCPAddr, error) {
	network := listenNetwork(addr)
	ta, err := net.ResolveTCPAddr(network, addr)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Err: err}
	}
	if ta.IP == nil {
		ta.IP = net.IPv6unspecified
	}
	return ta, nil
}

// listenConfig is the ListenConfig of every TCP listener: SO_REUSEPORT where
// the system has it (reusePort).
var listenConfig = net.ListenConfig{Control: reusePort}

// listenTCP opens a TCP listener on addr that shares it with other processes
// (see listenConfig) and that takes its queued connections when it closes.
func listenTCP(ctx context.Context, addr string) (net.Listener, error) {
	ln, err := listenConfig.Listen(ctx, listenNetwork(addr), addr)
	if err != nil {
		return nil, err
	}
	return &reuseListener{TCPListener: ln.(*net.TCPListener), swept: make(chan struct{})}, nil
}

// listenNetwork returns the network of a TCP listener on addr: "tcp4" for an
// IPv4 address, "tcp" otherwise. On 0.0.0.0, "tcp" would open a dual-stack
// socket that takes IPv6 clients too, where nutcracker, and an operator who
// writes 0.0.0.0 (behind a firewall for IPv4, say), listen on IPv4 alone.
// [::] takes both, as nutcracker's does on Linux; a host name listens on its
// first address.
func listenNetwork(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "tcp" // Listen names the problem
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Is4() {
		return "tcp4"
	}
	return "tcp"
}

// logShared logs, for a listener that opened on an address another process
// serves, that the two share its new connections: the way of a restart,
// whose old process must then be stopped, and otherwise a second proxy
// started by mistake.
func (p *Proxy) logShared(what string, ln net.Listener) {
	if l, ok := ln.(*reuseListener); ok && l.shared {
		p.log.Warn("another process listens on this address too: new connections go to either until one stops; in a restart, stop the old process now", "listener", what, "addr", l.Addr().String())
	}
}

// aLongTimeAgo is a deadline that has passed: a call waiting on it returns.
var aLongTimeAgo = time.Unix(1, 0)

// A reuseListener is a TCP listener whose Close first accepts the
// connections waiting in its queue, which its Accept then returns before
// net.ErrClosed, so that a close resets none of them.
type reuseListener struct {
	*net.TCPListener
	closing   atomic.Bool
	accepted  atomic.Bool // Accept was called: someone takes what Close takes
	closeOnce sync.Once
	closeErr  error
	swept     chan struct{} // closed once Close has taken the queue and closed the socket
	// shared is set when another process listened on the address as this
	// one opened: the kernel spreads new connections over both (logShared).
	shared bool

	mu      sync.Mutex
	pending []net.Conn // accepted by Close, for Accept to return
}

// Accept returns the next connection: from the socket, or, once the
// listener is closed, the connections Close took from its queue, then
// net.ErrClosed.
func (l *reuseListener) Accept() (net.Conn, error) {
	l.accepted.Store(true)
	c, err := l.TCPListener.Accept()
	if err == nil || !l.closing.Load() {
		return c, err
	}
	// Close interrupted the wait (or closed the socket): return what it took.
	<-l.swept
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) > 0 {
		c = l.pending[0]
		l.pending = l.pending[1:]
		return c, nil
	}
	return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: net.ErrClosed}
}

// Close wakes an Accept that waits, takes every connection waiting in the
// socket's queue, and closes the socket. It returns at once if called again.
func (l *reuseListener) Close() error {
	l.closeOnce.Do(func() {
		l.closing.Store(true)
		// An Accept that waits returns at this deadline, to wait for what
		// the sweep takes.
		l.TCPListener.SetDeadline(aLongTimeAgo)
		taken := takeQueue(l.TCPListener)
		l.closeErr = l.TCPListener.Close()
		if !l.accepted.Load() {
			// A listener that never served, such as one a failed reload
			// opened: nothing would take the connections.
			for _, c := range taken {
				c.Close()
			}
			taken = nil
		}
		l.mu.Lock()
		l.pending = append(l.pending, taken...)
		l.mu.Unlock()
		close(l.swept)
	})
	return l.closeErr
}
