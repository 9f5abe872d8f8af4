package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// outOfFiles reports whether err is the proxy's own lack of file
// descriptors (EMFILE, ENFILE), which says nothing of the server it dialed
// or the client it accepted.
func outOfFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// logOutOfFiles logs that the proxy is out of file descriptors, doing what,
// at most once every failLogEvery.
func (p *Proxy) logOutOfFiles(what string, err error) {
	now := time.Now().UnixMilli()
	if last := p.noFilesLoggedAt.Load(); now-last >= failLogEvery.Milliseconds() && p.noFilesLoggedAt.CompareAndSwap(last, now) {
		p.log.Error("out of file descriptors: raise the open files limit (ulimit -n, LimitNOFILE)", "while", what, "err", err)
	}
}

// filesReserved is how many descriptors the proxy keeps for what is neither
// a client nor a server connection: listeners, the admin and stats ports,
// etcd, log files, the runtime's own. (nutcracker keeps 32.)
const filesReserved = 64

// clientLimit returns how many clients the proxy takes, in every pool
// together: the open files limit less the connections its servers may open
// and filesReserved, as nutcracker computes it, or 0 for no limit (an
// unknown open files limit, or one its servers already fill). A client past
// it is closed at once, where otherwise it would wait in the listen queue
// while accept fails for want of a descriptor, and the servers' connections
// would find none either.
func (p *Proxy) clientLimit() int64 {
	n := openFilesLimit()
	if n == 0 {
		return 0
	}
	kept := p.filesKept
	if kept == 0 {
		kept = filesReserved
	}
	return max(n-kept-p.serverSlots.Load(), 0)
}

// ok records a successful exchange.
func (s *server) ok() {
	if s.failures.Load() != 0 {
		n := s.failures.Swap(0)
		if s.failLogged.CompareAndSwap(true, false) {
			s.pool.proxy.log.Warn("server answering again", "pool", s.pool.name, "server", s.name, "failures", n)
		}
	}
}

// failLogEvery bounds how often a server's first failure after an answer is
// logged: a server that fails every other request logs two lines in it.
const failLogEvery = 10 * time.Second

// fail records a failed connection or exchange, err, and ejects the server
// when the pool says so. A failure counts once in the stats, as in
// nutcracker's: a timeout in server_timedout and the server's end of stream
// in server_eof (where the callers count them), anything else in server_err.
// The proxy's own lack of file descriptors is not the server's failure: it is
// logged as the proxy's, and neither counts nor ejects.
func (s *server) fail(err error) {
	if outOfFiles(err) {
		s.pool.proxy.logOutOfFiles("connecting to a server", err)
		return
	}
	if !isTimeout(err) && !errors.Is(err, errTimeout) && !errors.Is(err, io.EOF) {
		s.stats.errors.Add(1)
	}
	s.failedAt.Store(time.Now().UnixNano())
	n := s.failures.Add(1)
	if n == 1 && !s.down.Load() && s.ctx.Err() == nil { // "server down" says it for a connection
		now := time.Now().UnixMilli()
		if last := s.failLoggedAt.Load(); now-last >= failLogEvery.Milliseconds() && s.failLoggedAt.CompareAndSwap(last, now) {
			s.failLogged.Store(true)
			s.pool.proxy.log.Warn("server failing", "pool", s.pool.name, "server", s.name, "err", err)
		}
	}
	st := s.pool.state.Load()
	if st == nil || !st.cfg.AutoEjectHosts || int(n) < st.cfg.ServerFailureLimit {
		return
	}
	if st.servers[s.name] != s {
		// Not in the pool's list any more (a warm-up window reads it
		// still): there is no ring to take it out of, and warm-up
		// skips it while it fails (server.unread).
		return
	}
	if s.ejected.CompareAndSwap(false, true) {
		s.ejectedAt.Store(time.Now().UnixMicro())
		s.pool.stats.ejects.Add(1)
		s.stats.ejects.Add(1)
		s.pool.proxy.log.Warn("server ejected", "pool", s.pool.name, "server", s.name, "failures", n)
		s.pool.reroute("ejection", nil)
		if s.probeRunning.CompareAndSwap(false, true) && !s.spawn(s.probeLoop) {
			s.probeRunning.Store(false)
		}
	}
}

// minRetry is the least time between two probes of an ejected server.
const minRetry = 100 * time.Millisecond

// probeLoop readmits an ejected server once it answers: every
// server_retry_timeout it connects and sends the codec's probe (memcached's
// version), and only a server that answers in time goes back into the ring.
// twemproxy instead puts a server back blindly when the retry timeout passes.
func (s *server) probeLoop() {
	defer s.probeRunning.Store(false)
	for {
		st := s.pool.state.Load()
		// server_retry_timeout: 0 readmits a server as soon as it answers,
		// as twemproxy's 0 does at the next request; probes stay
		// minRetry apart, not to spin on a server that refuses at once.
		retry := max(st.cfg.ServerRetryTimeout, minRetry)
		if !sleep(s.ctx, retry) || !s.ejected.Load() {
			return // readmitted meanwhile (readmit)
		}
		err := s.probe(st.timeout())
		if err == nil {
			s.failures.Store(0)
			s.ejected.Store(false)
			s.pool.proxy.log.Warn("server readmitted after a successful probe", "pool", s.pool.name, "server", s.name)
			s.pool.reroute("readmission", s)
			return
		}
		// Logged when the server's state changes, not at each probe.
		s.markDown(err)
	}
}

// readmit puts an ejected server back without a probe (a reload turned
// ejection off): its connections reconnect, replaying what it owes, before
// it serves again. The pool's state is rebuilt by the caller.
func (s *server) readmit(why string) {
	s.failures.Store(0)
	s.ejected.Store(false)
	if s.owes() {
		s.owed.gen.Add(1)
		s.startReplay()
	}
	s.pool.proxy.log.Warn("server readmitted", "pool", s.pool.name, "server", s.name, "why", why)
}

// markDown records that the server could not be reached, and logs it if it
// could be before: a server that stays down leaves one line, however many
// connections and probes fail meanwhile. A proxy closing its servers logs
// nothing, and neither does a dial that failed for the proxy's lack of file
// descriptors (fail logs it).
func (s *server) markDown(err error) {
	if outOfFiles(err) {
		return
	}
	if s.ctx.Err() == nil && s.down.CompareAndSwap(false, true) {
		s.pool.proxy.log.Warn("server down", "pool", s.pool.name, "server", s.name, "addr", s.addr, "err", err)
	}
}

// markUp records that a connection to the server was made, and logs it if
// the server was down.
func (s *server) markUp() {
	if s.down.Load() && s.down.CompareAndSwap(true, false) {
		s.pool.proxy.log.Warn("server up", "pool", s.pool.name, "server", s.name, "addr", s.addr)
	}
}

// probe connects to the server, asks the codec's probe whether it serves and,
// if it does, replays on the same connection the deletes the server owes: a
// server is readmitted only once it has forgotten what it missed.
func (s *server) probe(timeout time.Duration) error {
	return s.withConn(timeout, func(conn net.Conn, timeout time.Duration) error {
		if err := s.pool.codec.probe(conn); err != nil {
			return fmt.Errorf("probe: %w", err)
		}
		return s.replay(conn, timeout)
	})
}

// withConn runs f on a connection of its own to the server, with a deadline
// of timeout (a second if zero) that f may extend by as much, and closes it;
// the server is marked up if f succeeds.
func (s *server) withConn(timeout time.Duration, f func(conn net.Conn, timeout time.Duration) error) error {
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
	if err := f(conn, timeout); err != nil {
		return err
	}
	// Up once it answered: a hung server's kernel still takes connections,
	// and each probe of it would log it up, then down.
	s.markUp()
	return nil
}
