package proxy

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chash-dev/chash/internal/config"
)

// Errors a call can end with; each becomes "SERVER_ERROR <text>" for the client.
var (
	errTimeout   = errors.New("Connection timed out")
	errClosed    = errors.New("Connection closed")
	errEjected   = errors.New("server ejected")
	errNoServers = errors.New("no live servers")
	errShutdown  = errors.New("proxy shutting down")
	// errKeysSpread refuses a request whose keys must all go to one server but
	// belong to several.
	errKeysSpread = errors.New("keys on different servers")
	// errPattern refuses a request with a pattern of keys (patterner) that
	// may name keys on other servers than its first key's.
	errPattern = errors.New("pattern of keys on other servers")
)

// server is one server of a pool: its connections, its health and its
// counters. It is shared by the pool states of successive reloads as long as its
// name, address and number of connections stay the same.
type server struct {
	pool  *pool
	cfg   config.Server
	name  string
	addr  string
	conns []*serverConn
	next  atomic.Uint32

	failures atomic.Int32
	// failLogged is set when a first failure was logged ("server failing"),
	// at failLoggedAt (Unix ms), until an answer is ("server answering
	// again").
	failLogged   atomic.Bool
	failLoggedAt atomic.Int64
	failedAt     atomic.Int64 // unix nanoseconds of the last failure
	ejected      atomic.Bool
	ejectedAt    atomic.Int64 // unix microseconds of the last ejection, as nutcracker's stats give it
	ctx          context.Context
	cancel       context.CancelFunc
	wg           sync.WaitGroup
	stats        *serverStats // shared with the server it replaces (carryCounters)
	latency      *observer    // of all commands
	probeRunning atomic.Bool

	goMu    sync.Mutex // orders spawn's wg.Add before close's wg.Wait
	closing bool

	refusal atomic.Pointer[string] // why the last handshake was refused, nil if it was not
	down    atomic.Bool            // the last connection to the server could not be made

	owed owedSet // deletes the server missed (owed.go)
}

// refused logs why the server refused a new connection's handshake, err
// wrapping errRefused, once for each reason in a row: a wrong password fails
// every connection, and one line says so. Any other err (nil for a
// handshake that passed) clears it.
func (s *server) refused(err error) {
	if !errors.Is(err, errRefused) {
		if s.refusal.Load() != nil {
			s.refusal.Store(nil)
		}
		return
	}
	msg := err.Error()
	if old := s.refusal.Swap(&msg); old == nil || *old != msg {
		s.pool.proxy.log.Warn("server refused the connection's setup", "pool", s.pool.name, "server", s.name, "err", err)
	}
}

// spawn runs f in a goroutine that close waits for, unless the server is
// closing.
func (s *server) spawn(f func()) bool {
	s.goMu.Lock()
	defer s.goMu.Unlock()
	if s.closing {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}

func newServer(pl *pool, s config.Server, nconns int) *server {
	ctx, cancel := context.WithCancel(pl.proxy.ctx)
	srv := &server{pool: pl, cfg: s, name: s.Name(), addr: serverAddr(s), ctx: ctx, cancel: cancel, stats: new(serverStats)}
	srv.latency = pl.proxy.metrics.serverObserver(pl.name, srv.name)
	srv.conns = make([]*serverConn, max(nconns, 1))
	for i := range srv.conns {
		srv.conns[i] = &serverConn{srv: srv}
	}
	pl.proxy.serverSlots.Add(int64(len(srv.conns)))
	return srv
}

// carryCounters makes s count on the counters of old, if old is the server
// of its name and address that s replaces: in a pool restarted by a reload,
// or with another number of connections. Its stats go on from where they
// were, as those of a server a reload keeps; old, while it finishes what it
// was sent, counts on the same counters.
func (s *server) carryCounters(old *server) {
	if old != nil && old.name == s.name && old.addr == s.addr {
		s.stats = old.stats
	}
}

// same reports whether s and o are the same server process: one address. A
// server that leaves a pool and comes back, or comes back with another name,
// is a new *server for the same process, and a warm-up window still
// holds the old one: to the window it must not look like another server that
// held the key before (warmup.go).
func (s *server) same(o *server) bool {
	return s == o || s != nil && o != nil && s.addr == o.addr
}

// containsServer reports whether list holds the same server as s.
func containsServer(list []*server, s *server) bool {
	return slices.ContainsFunc(list, s.same)
}

// serverAddr returns the address to dial: "host:port", or a socket path.
func serverAddr(s config.Server) string {
	if s.Port == 0 {
		return s.Host
	}
	return net.JoinHostPort(s.Host, itoa(s.Port))
}

func (s *server) network() string {
	if s.cfg.Port == 0 {
		return "unix"
	}
	return "tcp"
}

// send writes c on one of the server's connections: its client's, so that
// the server runs a client's requests in their order (twemproxy's turn over
// the connections runs a pipelined "set k" and "get k" on two, and the get
// may read the value before the set), or, for the proxy's own calls, the
// next in turn.
func (s *server) send(c *call) {
	c.srv = s
	conn := s.conns[0]
	if n := uint32(len(s.conns)); n > 1 {
		i := c.lane
		if i == 0 {
			i = s.next.Add(1)
		}
		conn = s.conns[i%n]
	}
	conn.send(c)
}

// close closes the server's connections, failing the calls in flight on them,
// and waits for its goroutines to end.
func (s *server) close() {
	s.goMu.Lock()
	first := !s.closing
	s.closing = true
	s.goMu.Unlock()
	if first && s.pool != nil {
		s.pool.proxy.serverSlots.Add(-int64(len(s.conns)))
	}
	s.cancel()
	for _, c := range s.conns {
		c.close()
	}
	s.wg.Wait()
}

// preconnect dials every connection of the server, in the background.
func (s *server) preconnect() {
	for _, c := range s.conns {
		s.spawn(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.ss == nil && !c.closed {
				if ss, err := c.dial(time.Now().Add(max(s.pool.state.Load().timeout(), time.Second))); err == nil {
					c.setSession(ss)
				}
			}
		})
	}
}
