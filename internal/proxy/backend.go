package proxy

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/memcache"
)

// Errors a call can end with; each becomes "SERVER_ERROR <text>" for the client.
var (
	errTimeout   = errors.New("Connection timed out")
	errClosed    = errors.New("Connection closed")
	errEjected   = errors.New("server ejected")
	errNoServers = errors.New("no live servers")
	errShutdown  = errors.New("proxy shutting down")
)

// maxInflight bounds the requests written to one server connection and not yet
// answered.
const maxInflight = 1024

// A call is one request to one server and its response.
type call struct {
	srv      *server
	cmd      memcache.Command
	maxItems int
	out      []byte // the request as sent
	deadline time.Time
	start    time.Time
	resp     memcache.Response
	err      error
	done     chan struct{} // receives one value when the call completes
}

func (c *call) complete(err error) {
	c.err = err
	c.done <- struct{}{}
}

// server is one memcached server of a pool: its connections, its health and its
// counters. It is shared by the pool states of successive reloads as long as its
// name, address and number of connections stay the same.
type server struct {
	pool  *pool
	cfg   config.Server
	name  string
	addr  string
	conns []*backendConn
	next  atomic.Uint32

	failures     atomic.Int32
	ejected      atomic.Bool
	ejectedAt    atomic.Int64 // unix seconds of the last ejection
	ctx          context.Context
	cancel       context.CancelFunc
	wg           sync.WaitGroup
	stats        serverStats
	latency      [memcache.CmdMetaNoop + 1]observer
	probeRunning atomic.Bool

	goMu    sync.Mutex // orders spawn's wg.Add before close's wg.Wait
	closing bool
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
	srv := &server{pool: pl, cfg: s, name: s.Name(), addr: serverAddr(s), ctx: ctx, cancel: cancel}
	srv.latency = pl.proxy.metrics.serverObservers(pl.name, srv.name)
	srv.conns = make([]*backendConn, max(nconns, 1))
	for i := range srv.conns {
		srv.conns[i] = &backendConn{srv: srv}
	}
	return srv
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

// send writes c on one of the server's connections.
func (s *server) send(c *call) {
	c.srv = s
	conn := s.conns[0]
	if len(s.conns) > 1 {
		conn = s.conns[s.next.Add(1)%uint32(len(s.conns))]
	}
	conn.send(c)
}

// close closes the server's connections, failing the calls in flight on them,
// and waits for its goroutines to end.
func (s *server) close() {
	s.goMu.Lock()
	s.closing = true
	s.goMu.Unlock()
	s.cancel()
	for _, c := range s.conns {
		c.close()
	}
	s.wg.Wait()
}

// ok records a successful exchange.
func (s *server) ok() {
	if s.failures.Load() != 0 {
		s.failures.Store(0)
	}
}

// fail records a failed connection or exchange and ejects the server when the
// pool says so.
func (s *server) fail() {
	s.stats.errors.Add(1)
	n := s.failures.Add(1)
	st := s.pool.state.Load()
	if st == nil || !st.cfg.AutoEjectHosts || int(n) < st.cfg.ServerFailureLimit {
		return
	}
	if s.ejected.CompareAndSwap(false, true) {
		s.ejectedAt.Store(time.Now().Unix())
		s.pool.stats.ejects.Add(1)
		s.pool.proxy.log.Warn("server ejected", "pool", s.pool.name, "server", s.name, "failures", n)
		s.pool.reroute()
		if s.probeRunning.CompareAndSwap(false, true) && !s.spawn(s.probeLoop) {
			s.probeRunning.Store(false)
		}
	}
}

// probeLoop readmits an ejected server once it answers: every
// server_retry_timeout it connects and asks for the version, and only a server
// that answers in time goes back into the ring. twemproxy instead puts a server
// back blindly when the retry timeout passes.
func (s *server) probeLoop() {
	defer s.probeRunning.Store(false)
	for {
		st := s.pool.state.Load()
		retry := st.cfg.ServerRetryTimeout
		if retry <= 0 {
			retry = 30 * time.Second
		}
		t := time.NewTimer(retry)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		err := s.probe(st.timeout())
		if err == nil {
			s.failures.Store(0)
			s.ejected.Store(false)
			s.pool.proxy.log.Info("server readmitted after a successful probe", "pool", s.pool.name, "server", s.name)
			s.pool.reroute()
			return
		}
		s.pool.proxy.log.Info("server still down", "pool", s.pool.name, "server", s.name, "err", err)
	}
}

// probe connects to the server and checks that it answers "version".
func (s *server) probe(timeout time.Duration) error {
	if timeout <= 0 {
		timeout = time.Second
	}
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(s.ctx, s.network(), s.addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte("version\r\n")); err != nil {
		return err
	}
	var resp memcache.Response
	r := memcache.NewReaderSize(conn, memcache.Limits{}, 256)
	if err := r.ReadResponse(&resp, memcache.CmdVersion, 0); err != nil {
		return err
	}
	if string(resp.Status()) != "VERSION" {
		return errors.New("probe: unexpected reply " + string(resp.Line))
	}
	return nil
}

// backendConn is one persistent connection to a server, on which the requests of
// many clients are pipelined. Senders write under mu, and the last of a burst of
// concurrent senders flushes, so requests that arrive together leave in one
// write. Each session (net.Conn) has a reader goroutine that reads the responses
// in order and completes the calls.
type backendConn struct {
	srv     *server
	waiting atomic.Int32 // senders in send
	mu      sync.Mutex
	ss      *session
	closed  bool
	queued  atomic.Int32 // calls written and not yet answered
}

// session is one live net.Conn of a backendConn.
type session struct {
	conn     net.Conn
	bw       *bufio.Writer
	inflight chan *call
	dead     chan struct{}
	once     sync.Once
}

func (ss *session) kill() {
	ss.once.Do(func() {
		ss.conn.Close()
		close(ss.dead)
	})
}

// drop ends the current session; c.mu is held. Only senders, under c.mu, send
// on inflight, so closing it here is safe; the reader fails what is left.
func (c *backendConn) drop() {
	if c.ss != nil {
		c.ss.kill()
		close(c.ss.inflight)
		c.ss = nil
	}
}

func (c *backendConn) close() {
	c.mu.Lock()
	c.closed = true
	c.drop()
	c.mu.Unlock()
}

// send writes cl, dialing first if the connection is down. It never blocks
// past cl's deadline but to dial or while maxInflight calls wait for replies.
func (c *backendConn) send(cl *call) {
	c.waiting.Add(1)
	c.mu.Lock()
	err := c.write(cl)
	if c.waiting.Add(-1) == 0 && c.ss != nil {
		if ferr := c.ss.bw.Flush(); ferr != nil {
			c.drop()
		}
	}
	c.mu.Unlock()
	if err != nil {
		cl.complete(err)
	}
}

// write buffers cl on the session, or returns why it cannot; c.mu is held.
func (c *backendConn) write(cl *call) error {
	if c.closed {
		return errShutdown
	}
	if c.ss != nil {
		select {
		case <-c.ss.dead:
			c.drop()
		default:
		}
	}
	if !cl.deadline.IsZero() && time.Now().After(cl.deadline) {
		c.srv.stats.timedout.Add(1)
		return errTimeout
	}
	if c.ss == nil {
		ss, err := c.dial(cl.deadline)
		if err != nil {
			c.srv.fail()
			return dialError(err)
		}
		c.ss = ss
	}
	select {
	case c.ss.inflight <- cl:
	default:
		// maxInflight calls wait for replies: wait for room, or the deadline.
		var timeout <-chan time.Time
		if !cl.deadline.IsZero() {
			t := time.NewTimer(time.Until(cl.deadline))
			defer t.Stop()
			timeout = t.C
		}
		select {
		case c.ss.inflight <- cl:
		case <-c.ss.dead:
			c.drop()
			return errClosed
		case <-timeout:
			c.srv.stats.timedout.Add(1)
			return errTimeout
		}
	}
	c.queued.Add(1)
	c.srv.stats.requests.Add(1)
	c.srv.stats.requestBytes.Add(uint64(len(cl.out)))
	c.ss.bw.Write(cl.out)
	return nil
}

func (c *backendConn) dial(deadline time.Time) (*session, error) {
	d := net.Dialer{Deadline: deadline}
	if st := c.srv.pool.state.Load(); st != nil && !st.cfg.TCPKeepalive {
		d.KeepAlive = -1
	}
	conn, err := d.DialContext(c.srv.ctx, c.srv.network(), c.srv.addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	c.srv.stats.connections.Add(1)
	ss := &session{
		conn:     conn,
		bw:       bufio.NewWriterSize(conn, 16<<10),
		inflight: make(chan *call, maxInflight),
		dead:     make(chan struct{}),
	}
	c.srv.wg.Add(1)
	go c.read(ss)
	return ss, nil
}

// read is a session's reader goroutine: it reads one response per written call,
// in order, with the call's deadline. A failure kills the session and fails every
// call written to it. It exits when the session is dropped.
func (c *backendConn) read(ss *session) {
	defer c.srv.wg.Done()
	defer c.srv.stats.connections.Add(-1)
	r := memcache.NewReader(ss.conn, c.srv.pool.proxy.serverLimits())
	var failed error
	for cl := range ss.inflight {
		c.queued.Add(-1)
		if failed != nil {
			cl.complete(failed)
			continue
		}
		ss.conn.SetReadDeadline(cl.deadline)
		err := r.ReadResponse(&cl.resp, cl.cmd, cl.maxItems)
		if err != nil {
			failed = errClosed
			if isTimeout(err) {
				c.srv.stats.timedout.Add(1)
				err = errTimeout
			} else {
				c.srv.stats.eof.Add(1)
				err = dialError(err)
			}
			c.srv.pool.proxy.log.Debug("server connection failed", "pool", c.srv.pool.name, "server", c.srv.name, "err", err)
			ss.kill()
			c.srv.fail()
			cl.complete(err)
			continue
		}
		c.srv.ok()
		c.srv.stats.responses.Add(1)
		c.srv.stats.responseBytes.Add(uint64(len(cl.resp.Line) + len(cl.resp.Value)))
		c.srv.latency[cl.cmd].observe(time.Since(cl.start))
		cl.complete(nil)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// dialError turns a network error into the short text twemproxy answers with.
func dialError(err error) error {
	switch {
	case isTimeout(err):
		return errTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return errors.New("Connection refused")
	case errors.Is(err, syscall.ECONNRESET):
		return errors.New("Connection reset by peer")
	case errors.Is(err, context.Canceled):
		return errShutdown
	}
	var me *memcache.Error
	if errors.As(err, &me) {
		return errors.New("Protocol error")
	}
	return errClosed
}
