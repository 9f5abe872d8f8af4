package proxy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/dist"
	"github.com/chash-dev/chash/internal/memcache"
)

// pool is one pool of the configuration: a listener, its clients, and the routing
// state that reloads and ejections replace.
type pool struct {
	proxy *Proxy
	name  string
	ln    net.Listener
	state atomic.Pointer[state]
	cert  atomic.Pointer[tls.Certificate] // the pool's own (tls_cert_file), or nil
	stats poolStats
	cmds  [memcache.CmdMetaNoop + 1]counter
	lat   [memcache.CmdMetaNoop + 1]observer

	mu      sync.Mutex // serializes state changes
	clients sync.WaitGroup
	conns   sync.Map // net.Conn -> struct{}, the open client connections
	nconns  atomic.Int64
	done    chan struct{} // closed when the accept loop has returned
}

// certificate returns the pool's own certificate, as tls.Config.GetCertificate.
func (pl *pool) certificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return pl.cert.Load(), nil
}

// state is an immutable snapshot of a pool's routing: its configuration, its
// servers and the router over those that are not ejected.
type state struct {
	cfg     *config.Pool
	dist    dist.Entry // the pool's distribution, for its capabilities
	servers map[string]*server
	list    []*server // in configuration order
	// router routes keys over the live servers (all servers when ejected ones
	// answer errors rather than move) to their index in live; nil when none is
	// live.
	router dist.Router
	live   []*server
	eject  bool // ejected servers answer errors instead of moving their keys
}

func (st *state) timeout() time.Duration { return st.cfg.Timeout }

// route returns the server that owns key.
func (st *state) route(key []byte) (*server, error) {
	if st.router == nil {
		return nil, errNoServers
	}
	i, err := st.router.Lookup(st.cfg.HashKey(key))
	if err != nil {
		return nil, err
	}
	srv := st.live[i]
	if st.eject && srv.ejected.Load() {
		return nil, errEjected
	}
	return srv, nil
}

// newState builds the routing state of cfg over servers.
func newState(cfg *config.Pool, servers []*server, ejectErrors bool) (*state, error) {
	e, err := dist.EntryOf(cfg)
	if err != nil {
		return nil, err
	}
	st := &state{cfg: cfg, dist: e, list: servers, servers: make(map[string]*server, len(servers)), eject: ejectErrors}
	var live []config.Server
	for _, s := range servers {
		st.servers[s.name] = s
		if ejectErrors || !s.ejected.Load() {
			live = append(live, s.cfg)
			st.live = append(st.live, s)
		}
	}
	if len(live) == 0 {
		return st, nil
	}
	r, err := dist.Build(cfg, live)
	if err != nil {
		return nil, err
	}
	st.router = r
	return st, nil
}

// reroute rebuilds the router after a server was ejected or readmitted. Keys of
// an ejected server go where the distribution puts them without it, as in
// twemproxy: for the chash distribution, and ketama with equal weights, that is
// the next server clockwise, and no other key moves.
func (pl *pool) reroute() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	cur := pl.state.Load()
	st, err := newState(cur.cfg, cur.list, cur.eject)
	if err != nil {
		pl.proxy.log.Error("cannot rebuild the ring", "pool", pl.name, "err", err)
		return
	}
	pl.state.Store(st)
}

// serve accepts clients until the listener is closed.
func (pl *pool) serve() {
	defer close(pl.done)
	for {
		conn, err := pl.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors, or a connection reset before it was
			// accepted: wait a little, as net/http does, and go on.
			pl.stats.clientErr.Add(1)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		st := pl.state.Load()
		if max := st.cfg.ClientConnections; max > 0 && pl.nconns.Load() >= int64(max) {
			pl.stats.clientErr.Add(1)
			conn.Close()
			continue
		}
		pl.nconns.Add(1)
		pl.stats.clientTotal.Add(1)
		pl.conns.Store(conn, struct{}{})
		pl.clients.Add(1)
		c := &client{pool: pl, conn: conn}
		go c.serve()
	}
}

// drainWait is how long a client may pause while the proxy shuts down: the
// requests it sends until then are served.
const drainWait = 50 * time.Millisecond

// maxPipeline bounds the requests of a client in flight at once, and
// maxPendingBytes the values they carry: past either, the client's replies are
// written before more of its requests are read.
const (
	maxPipeline     = 256
	maxPendingBytes = 4 << 20
)

// client is one client connection, served by one goroutine (serve): it reads
// and dispatches every request the client has already sent, so that pipelined
// requests go to their servers in parallel, then writes their replies in order.
type client struct {
	pool    *pool
	conn    net.Conn
	bw      *bufio.Writer
	pending []*clientReq
	pbytes  int // value bytes of the pending requests
	buf     []byte
	broken  bool // the connection failed or is closing: read no more, write nothing
	idle    bool // a read deadline for the idle timeout is set
}

// clientReq is one client request and what answers it.
type clientReq struct {
	req     memcache.Request
	calls   []*call
	ncalls  int
	keyCall []int // for a get split over servers: the call of each key, -1 if none
	local   []byte
	noreply bool
	quiet   bool
	split   bool
	quit    bool
	fatal   bool
	start   time.Time
}

var reqPool = sync.Pool{New: func() any { return new(clientReq) }}

func (r *clientReq) reset() {
	r.ncalls = 0
	r.keyCall = r.keyCall[:0]
	r.local = r.local[:0]
	r.noreply, r.quiet, r.split, r.quit, r.fatal = false, false, false, false, false
}

func (r *clientReq) newCall() *call {
	if r.ncalls == len(r.calls) {
		r.calls = append(r.calls, &call{done: make(chan struct{}, 1)})
	}
	c := r.calls[r.ncalls]
	r.ncalls++
	c.err = nil
	c.out = c.out[:0]
	return c
}

func (c *client) serve() {
	pl := c.pool
	defer func() {
		c.conn.Close()
		pl.conns.Delete(c.conn)
		pl.nconns.Add(-1)
		pl.clients.Done()
	}()
	rw := socketIO(c.conn)
	c.bw = bufio.NewWriterSize(rw, 16<<10)
	rd := memcache.NewReader(rw, pl.proxy.Limits)
	for {
		if rd.Buffered() == 0 || len(c.pending) == maxPipeline || c.pbytes >= maxPendingBytes {
			// Nothing more has arrived: answer what was read before waiting
			// for more.
			c.flush()
			if c.broken {
				return
			}
			c.setIdleDeadline()
			// Checked after setting the deadline: Shutdown sets stopping
			// before the deadline that wakes this read, which must not be
			// overwritten unseen. While stopping, requests the client has
			// sent are still served: the connection closes once it has
			// sent nothing for drainWait.
			if pl.proxy.stopping.Load() {
				c.conn.SetReadDeadline(time.Now().Add(drainWait))
				c.idle = true
			}
		}
		r := reqPool.Get().(*clientReq)
		r.reset()
		err := rd.ReadRequest(&r.req)
		r.start = time.Now()
		if err != nil {
			var me *memcache.Error
			if !errors.As(err, &me) {
				reqPool.Put(r)
				if isEOF(err) || isTimeout(err) && pl.proxy.stopping.Load() {
					pl.stats.clientEOF.Add(1)
				} else {
					pl.stats.clientErr.Add(1)
				}
				c.flush()
				return
			}
			r.local = append(append(r.local, me.Reply...), "\r\n"...)
			r.fatal = me.Fatal
			c.pending = append(c.pending, r)
			if me.Fatal {
				c.broken = true
				c.flush()
				return
			}
			continue
		}
		pl.cmds[r.req.Command].inc()
		c.dispatch(r)
		c.pending = append(c.pending, r)
		c.pbytes += len(r.req.Value)
		if r.quit {
			c.broken = true
			c.flush()
			return
		}
	}
}

// setIdleDeadline sets the read deadline of the pool's idle timeout, which a
// reload may have changed since the last wait.
func (c *client) setIdleDeadline() {
	idle := c.pool.proxy.idleTimeout(c.pool.state.Load().cfg)
	switch {
	case idle > 0:
		c.conn.SetReadDeadline(time.Now().Add(idle))
		c.idle = true
	case c.idle:
		c.conn.SetReadDeadline(time.Time{})
		c.idle = false
	}
}

// flush waits for the replies of the pending requests and writes them in order.
func (c *client) flush() {
	for _, r := range c.pending {
		for _, cl := range r.calls[:r.ncalls] {
			<-cl.done
		}
		if c.bw != nil {
			c.buf = c.respond(c.buf[:0], r)
			if _, err := c.bw.Write(c.buf); err != nil {
				c.bw = nil
			}
		}
		c.pool.observeRequest(r)
		reqPool.Put(r)
	}
	clear(c.pending)
	c.pending = c.pending[:0]
	c.pbytes = 0
	if c.bw != nil && c.bw.Flush() != nil {
		c.bw = nil
	}
	if c.bw == nil {
		c.broken = true
	}
}

func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)
}

// dispatch routes r and sends its calls.
func (c *client) dispatch(r *clientReq) {
	pl := c.pool
	st := pl.state.Load()
	req := &r.req
	var deadline time.Time
	if t := st.timeout(); t > 0 {
		deadline = r.start.Add(t)
	}
	switch cmd := req.Command; {
	case cmd == memcache.CmdQuit:
		r.quit = true
		return
	case cmd == memcache.CmdMetaNoop:
		r.local = append(r.local, "MN\r\n"...)
		return
	case cmd.IsRetrieval() && len(req.Keys) == 0:
		r.local = append(r.local, "END\r\n"...)
		return
	case cmd.IsRetrieval() && len(req.Keys) > 1:
		c.dispatchSplit(r, st, deadline)
		return
	}
	var key []byte
	if req.Command.HasKey() {
		key = req.RouteKey(0)
	}
	srv, err := st.route(key)
	if err != nil {
		pl.stats.forwardErr.Add(1)
		r.local = appendServerError(r.local, err)
		r.noreply = req.Noreply
		return
	}
	if req.Noreply {
		r.noreply, req.Noreply = true, false
	}
	if req.Command.IsMeta() && req.RemoveMetaFlag('q') {
		r.quiet = true
	}
	cl := r.newCall()
	cl.cmd, cl.maxItems, cl.deadline, cl.start = req.Command, len(req.Keys), deadline, r.start
	cl.out = memcache.AppendRequest(cl.out, req)
	srv.send(cl)
}

// dispatchSplit sends a get of many keys as one get per server, in parallel.
func (c *client) dispatchSplit(r *clientReq, st *state, deadline time.Time) {
	req := &r.req
	r.split = true
	for _, k := range req.Keys {
		srv, err := st.route(k)
		if err != nil {
			r.keyCall = append(r.keyCall, -1)
			continue
		}
		i := 0
		for i < r.ncalls && r.calls[i].srv != srv {
			i++
		}
		if i == r.ncalls {
			cl := r.newCall()
			cl.srv = srv
			cl.cmd, cl.maxItems, cl.deadline, cl.start = req.Command, 0, deadline, r.start
			cl.out = append(cl.out, req.Command.String()...)
			if req.Command == memcache.CmdGat || req.Command == memcache.CmdGats {
				cl.out = append(cl.out, ' ')
				cl.out = strconv.AppendInt(cl.out, req.Exptime, 10)
			}
		}
		cl := r.calls[i]
		cl.maxItems++
		cl.out = append(append(cl.out, ' '), k...)
		r.keyCall = append(r.keyCall, i)
	}
	c.pool.stats.fragments.Add(uint64(r.ncalls))
	for _, cl := range r.calls[:r.ncalls] {
		cl.out = append(cl.out, "\r\n"...)
		cl.srv.send(cl)
	}
}

func appendServerError(dst []byte, err error) []byte {
	return append(append(append(dst, "SERVER_ERROR "...), err.Error()...), "\r\n"...)
}

// respond appends the reply to r.
func (c *client) respond(dst []byte, r *clientReq) []byte {
	if r.ncalls == 0 {
		if r.noreply {
			return dst
		}
		return append(dst, r.local...)
	}
	if r.split {
		return c.merge(dst, r)
	}
	cl := r.calls[0]
	if cl.err != nil {
		c.pool.stats.forwardErr.Add(1)
		if r.noreply {
			return dst
		}
		return appendServerError(dst, cl.err)
	}
	if r.noreply {
		return dst
	}
	if r.quiet {
		s := cl.resp.Status()
		if r.req.Command == memcache.CmdMetaGet && string(s) == "EN" ||
			r.req.Command != memcache.CmdMetaGet && string(s) == "HD" {
			return dst
		}
	}
	return memcache.AppendResponse(dst, &cl.resp)
}

// merge appends the reply to a get split over servers: the values found, in the
// order of the request's keys, and END. Keys of servers that failed read as
// misses; if every server failed, the reply is the first error.
func (c *client) merge(dst []byte, r *clientReq) []byte {
	var firstErr error
	ok := 0
	next := make([]int, r.ncalls) // the next item of each call's response
	for _, cl := range r.calls[:r.ncalls] {
		switch {
		case cl.err != nil:
			c.pool.stats.forwardErr.Add(1)
		case memcache.IsError(cl.resp.Line):
			cl.err = errors.New(string(bytes.TrimPrefix(cl.resp.Line, []byte("SERVER_ERROR "))))
		default:
			ok++
			continue
		}
		if firstErr == nil {
			firstErr = cl.err
		}
	}
	if ok == 0 {
		if firstErr == nil {
			firstErr = errNoServers
		}
		return appendServerError(dst, firstErr)
	}
	for i, k := range r.req.Keys {
		ci := r.keyCall[i]
		if ci < 0 || r.calls[ci].err != nil {
			continue
		}
		items := r.calls[ci].resp.Items
		if j := next[ci]; j < len(items) && bytes.Equal(items[j].Key, k) {
			dst = memcache.AppendItem(dst, &items[j])
			next[ci]++
		}
	}
	return append(dst, "END\r\n"...)
}
