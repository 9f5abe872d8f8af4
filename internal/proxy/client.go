package proxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// closeLinger bounds how long a client's connection, closed for writing at
// shutdown, waits for the client to close its side: closing it while the
// client still sends would reset it, and a reset may destroy replies the
// client has not read yet.
const closeLinger = 500 * time.Millisecond

// maxPipeline bounds the requests of a client in flight at once,
// maxPendingBytes the values they carry and maxPendingKeys the keys they
// name: past any, the client's replies are written before more of its
// requests are read. The keys bound the replies a client's pipelined
// multi-gets bring at once (400 gets of 3,000 keys of 1 KB, 256 at a time,
// held 768 MB), which the proxy learns only as the replies come.
const (
	maxPipeline     = 256
	maxPendingBytes = 4 << 20
	maxPendingKeys  = 4096
)

// client is one client connection, served by one goroutine (serve): it reads
// and dispatches every request the client has already sent, so that pipelined
// requests go to their servers in parallel, then writes their replies in order.
//
// An idle client costs little: while it waits for the client's next bytes, it
// holds no read or write buffer, and once it has waited for shedAfter, no
// goroutine either (parker, on Linux; elsewhere the small stack of a new one).
type client struct {
	pool    *pool
	conn    net.Conn
	rw      io.ReadWriter // reads and writes conn; see socketIO
	src     clientSource
	cc      clientCodec
	pending []*clientReq
	pbytes  int       // bytes held by the pending requests
	pkeys   int       // keys the pending requests name
	werr    error     // why a write failed: nothing more is written
	broken  bool      // the connection failed or is closing: read no more
	idle    bool      // a read deadline for the idle timeout is set
	wdl     bool      // a write deadline for a slow reader is set (write)
	watch   *tlsWatch // watches TLS writes (write), made at the first
	barrier bool      // a request must be answered before the next is read
	ended   bool      // the connection's end is counted (client_eof, client_err)
	// answered says that replies were written: the pool has seen their
	// size (largeInFlight).
	answered bool
	expect   int64 // the client's part of memory.expect
	// sheds says that the goroutine ends (shedAfter) when the client has been
	// idle for shedAfter (a raw socket's, see shedAfter); armed that the
	// read deadline set is shedAfter's, active that a request was read
	// since it was set, idleAt when the idle timeout's falls (zero: never).
	sheds, armed, active bool
	idleAt               time.Time
	// lane picks the client's connection to each server where a pool has
	// several (server_connections): all of the client's requests to a
	// server go on one, so that the server runs them in the client's order.
	lane uint32
}

// clientSource is what a client's codec reads: the bytes read while the client
// was idle, then the connection.
type clientSource struct {
	rw   io.Reader
	head []byte // the unread bytes of buf
	// buf is taken from heads when the client wakes and put back when it
	// waits again (drop), so that an idle client holds none.
	buf []byte
	// wide: the client's last wake brought more than headSize bytes (a
	// pipelining client's batch), so its next takes a buffer of
	// wideHeadSize, which reads such a batch in one system call.
	wide bool
	// stopping is set when the pool stops (the proxy shuts down, a reload
	// removes or restarts the pool): the connection is read no further, so
	// that the requests read are answered and no other begins.
	stopping *atomic.Bool
	// read counts the bytes read from the connection: the pool's.
	read *atomic.Uint64
	// noRead forbids reading the connection: set while serving requests
	// that the codec found whole in head (see rawIO.serveClient).
	noRead bool
	// c is the client whose connection it reads: its requests read and not
	// yet answered are answered before a read that waits (see Read).
	c *client
}

// nowReader is a reader that can tell it has nothing to read without
// waiting: rawIO.
type nowReader interface {
	readNow(p []byte) (n int, again bool, err error)
}

// errReadPast is a read of the connection while noRead is set: a request
// needed more bytes than its codec's whole said.
var errReadPast = errors.New("proxy: request read past the bytes found whole")

func (s *clientSource) Read(p []byte) (int, error) {
	for {
		n, err := s.read1(p)
		if err == nil || s.c == nil || !s.c.armed || !isTimeout(err) {
			return n, err
		}
		// shedAfter's deadline passed while a request was read: read on
		// under the idle timeout's (stopping is checked again).
		s.c.disarm()
	}
}

func (s *clientSource) read1(p []byte) (int, error) {
	if len(s.head) > 0 {
		n := copy(p, s.head)
		s.head = s.head[n:]
		return n, nil
	}
	if s.noRead {
		return 0, errReadPast
	}
	if s.stopping.Load() {
		return 0, io.EOF
	}
	if s.c != nil && len(s.c.pending) > 0 {
		// The codec needs more of a request, and requests read before it
		// wait for their replies: if the client has not sent more yet (a
		// large value uploading, a client that waits for replies before
		// it sends the rest), answer them first, as the server would.
		// Over TLS, whose reader cannot tell, they wait.
		if nr, ok := s.rw.(nowReader); ok {
			n, again, err := nr.readNow(p)
			if !again {
				s.read.Add(uint64(n))
				return n, err
			}
			s.c.flush()
			if s.c.broken {
				// The replies could not be written (a slow reader
				// past the memory budget, a client gone): read no more.
				return 0, s.c.werr
			}
		}
	}
	n, err := s.rw.Read(p)
	s.read.Add(uint64(n))
	return n, err
}

// headSize is the size of the buffer a client reads into when it wakes:
// room for a few small requests, served from it without the codec's buffer
// where they are whole (see rawIO.serveClient). A client whose last wake
// brought more (clientSource.wide) reads into one of wideHeadSize: a batch
// of 16 pipelined GETs from redis-benchmark is 576 bytes, which a buffer of
// headSize reads in two system calls.
const (
	headSize     = 512
	wideHeadSize = 16 << 10
)

// heads and wideHeads hold the clients' buffers of headSize and wideHeadSize
// bytes, as *[headSize]byte and *[wideHeadSize]byte.
var (
	heads     = sync.Pool{New: func() any { return new([headSize]byte) }}
	wideHeads = sync.Pool{New: func() any { return new([wideHeadSize]byte) }}
)

// take takes a buffer into buf if it has none.
func (s *clientSource) take() {
	if s.buf != nil {
		return
	}
	if s.wide {
		s.buf = wideHeads.Get().(*[wideHeadSize]byte)[:]
	} else {
		s.buf = heads.Get().(*[headSize]byte)[:]
	}
}

// woke notes the bytes a wake brought: those read, n, and those left in the
// socket (-1 if unknown).
func (s *clientSource) woke(n, left int) {
	if left < 0 && n == len(s.buf) {
		left = 1
	}
	s.wide = n+max(left, 0) > headSize
}

// Readable returns the bytes that a read returns without waiting, at least:
// those of head, and those the socket holds (resp.Readable).
func (s *clientSource) Readable() int {
	n := len(s.head)
	if rr, ok := s.rw.(interface{ readable() int }); ok {
		n += rr.readable()
	}
	return n
}

// drop puts buf back into its pool (heads, wideHeads) once its bytes are read.
func (s *clientSource) drop() {
	if s.buf != nil && len(s.head) == 0 {
		if len(s.buf) == wideHeadSize {
			wideHeads.Put((*[wideHeadSize]byte)(s.buf))
		} else {
			heads.Put((*[headSize]byte)(s.buf))
		}
		s.buf, s.head = nil, nil
	}
}

// wait waits for the client's next bytes and reads them into buf, so that
// waiting takes no larger buffer; it returns an error only if it read nothing.
// Over TLS, which waits in the read, buf is held while the client is idle.
func (s *clientSource) wait() error {
	s.wide = false // held while the client is idle: a small one
	s.take()
	n, err := s.rw.Read(s.buf)
	s.read.Add(uint64(n))
	s.head = s.buf[:n]
	if n > 0 {
		return nil // a failure shows again at the next read
	}
	return err
}

// outBufs holds the write buffers of clients, each a *[]byte, taken while a
// client writes its replies.
var outBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// Replies are written once flushAt bytes are ready, and write buffers grown
// past maxOutBuf, for a large value, are left to the garbage collector.
const (
	flushAt   = 64 << 10
	maxOutBuf = 256 << 10
)

// clientReq is one client request and what answers it.
type clientReq struct {
	req     request
	act     action
	calls   []*call
	ncalls  int
	keyCall []int // for a request split over servers: the call of each key, -1 if none
	split   bool  // split over servers by key, or sent to every server
	err     error // why no server could take the request
	start   time.Time
	plan    *plan  // of a request planned over several servers (replica.go)
	waited  int    // the calls whose completion flush has received
	lane    uint32 // the client's, given to its calls
	// alone: the client is its pool's only one and has sent nothing more,
	// so no other request can join this one's write to a server: its
	// sender writes it, saving the writer goroutine's wake-up (one client
	// over four memcached: 0.89 to 0.95 times the CPU a request). A
	// pipelining client's requests still leave in one write.
	alone bool
}

func (r *clientReq) reset() {
	r.ncalls = 0
	r.keyCall = r.keyCall[:0]
	r.split = false
	r.err = nil
	r.alone = false
	r.waited = 0
	if r.plan != nil {
		r.plan.active = false
	}
}

// refused reports whether r's request was refused (see refuser).
func (r *clientReq) refused() bool {
	rf, ok := r.req.(refuser)
	if !ok {
		return false
	}
	class, _ := rf.refusal()
	return class != ""
}

// planned reports whether r was sent by a plan.
func (r *clientReq) planned() bool { return r.plan != nil && r.plan.active }

// newCall returns the request's next call, made with a reply of cd.
func (r *clientReq) newCall(cd codec) *call {
	if r.ncalls == len(r.calls) {
		r.calls = append(r.calls, &call{done: make(chan struct{}, 1), reply: cd.newReply()})
	}
	c := r.calls[r.ncalls]
	r.ncalls++
	c.lane, c.alone = r.lane, r.alone
	c.err = nil
	c.held, c.lentLen = 0, 0
	c.out = c.out[:0]
	return c
}

func (c *client) serve() {
	pl := c.pool
	c.rw = socketIO(c.conn)
	c.src.rw, c.src.stopping, c.src.read, c.src.c = c.rw, &pl.stopping, &pl.stats.bytesIn, c
	c.cc = pl.codec.newClient(&c.src)
	_, c.sheds = c.rw.(clientServer)
	// The idle timeout, and shedAfter, run from the start: a client that
	// never finishes a request is closed, or parked, as an idle one is.
	c.setIdleDeadline()
	c.run()
}

// shedAfter is how long a client waits for its next request before its
// goroutine ends and the parker waits for its bytes instead (parker), or,
// where clients are not parked, hands it on to a new goroutine, so that an
// idle client holds a small stack. Serving grows a goroutine's stack to 4 KiB
// or more, and the runtime halves a stack at a collection only while less
// than a quarter of it is in use, which the wait in the network poller (1.3
// KiB with the guard the runtime counts) never is; a new goroutine waits in
// the runtime's starting stack, 2 KiB while most goroutines are idle clients.
// A variable for tests.
var shedAfter = 5 * time.Second

// run serves the client until its connection closes, or until it has been
// idle for shedAfter: then it parks the client (parker), whose next bytes
// start run in a new goroutine, or, where it cannot, runs on in one at once.
func (c *client) run() {
	pl := c.pool
	shed := false
	defer func() {
		if shed {
			return
		}
		if c.werr != nil {
			// A reply could not be written: the client reset or stopped
			// reading (nutcracker counts EPIPE, ECONNRESET, ETIMEDOUT).
			c.endedBy(&pl.stats.clientErr)
		}
		c.conn.Close()
		pl.conns.Delete(c.conn)
		pl.nconns.Add(-1)
		pl.proxy.clients.Add(-1)
		pl.clients.Done()
	}()
	raw, _ := c.rw.(clientServer)
	for {
		var e end
		if raw != nil {
			e = raw.serveClient(c)
		} else if e = c.serveRead(); e == endIdle {
			if err := c.src.wait(); err != nil {
				e = c.readFailed(err)
			}
		}
		switch e {
		case endClose:
			return
		case endFinish:
			c.finish()
			return
		case endShed:
			shed = true
			pl.sheds.Add(1)
			if !idleClients.park(c) {
				go c.run()
			}
			return
		}
	}
}

// end is how far serveRead got with a client's connection.
type end uint8

const (
	// endIdle: every request read is answered; wait for the client's next bytes.
	endIdle end = iota
	// endClose: close the connection.
	endClose
	// endFinish: close it once the client has read every reply (finish).
	endFinish
	// endShed: every request read is answered, and the client has been
	// idle for shedAfter: park it, or go on in a new goroutine.
	endShed
)

// clientServer serves a client over a socket read with raw system calls; see
// rawIO.serveClient.
type clientServer interface {
	serveClient(c *client) end
}

// serveRead reads and dispatches the requests whose bytes the client has sent
// and the proxy has read, reading the connection further only for the rest of
// a request begun, and answers them all.
func (c *client) serveRead() end {
	pl := c.pool
	for {
		if c.broken { // a write failed while a request was read (clientSource.Read)
			c.flush()
			return endClose
		}
		more := c.buffered()
		mem := pl.proxy.mem
		size := c.expectedSize()
		if !more || len(c.pending) == maxPipeline || c.pbytes >= maxPendingBytes || c.pkeys >= maxPendingKeys ||
			mem.over() || c.barrier || c.largeInFlight(mem, size) {
			// Nothing more has arrived, or this client or the proxy holds
			// much: answer what was read before reading more.
			c.flush()
			if c.broken {
				return endClose
			}
			if !mem.wait(pl.stopped) {
				return endFinish
			}
			size = c.expectedSize() // the flush may have ended the first requests
		}
		if !more {
			c.cc.release()
			c.src.drop()
			c.setIdleDeadline()
			// Checked after setting the deadline: drain sets stopping
			// before the deadline that wakes the wait, which must not be
			// overwritten unseen.
			if pl.stopping.Load() {
				return endFinish
			}
			return endIdle
		}
		r := pl.reqs.Get().(*clientReq)
		r.reset()
		r.lane = c.lane
		act, err := c.cc.read(r.req)
		r.start = time.Now()
		if err != nil {
			pl.reqs.Put(r)
			return c.readFailed(err)
		}
		c.active = true
		r.act = act
		cmd := r.req.command()
		if cmd > 0 {
			pl.cmds[cmd].inc()
		}
		if act == forward {
			r.alone = !c.buffered() && pl.nconns.Load() == 1
			c.dispatch(r)
		}
		if act != forward || r.err != nil || cmd == 0 {
			// cmd 0 forwarded: a refused request sent on in another
			// form (dropStale).
			c.noteRefusal(r)
		}
		c.pending = append(c.pending, r)
		n, keys := r.req.size(), r.req.nkeys()
		c.pbytes += n
		c.pkeys += keys
		mem.add(int64(n))
		if n >= largeValue {
			pl.large.record(n / max(keys, 1))
		}
		if size > 0 {
			e := int64(max(keys, 1)) * size
			c.expect += e
			mem.expect.Add(e)
		}
		switch act {
		case closeAfter:
			// A quit ends the connection as the client's EOF does, a
			// request refused for its protocol by an error.
			c.broken = true
			if r.refused() {
				c.endedBy(&pl.stats.clientErr)
			} else {
				c.endedBy(&pl.stats.clientEOF)
			}
			return endFinish
		case localAlone:
			c.barrier = true
		}
	}
}

// largeInFlight reports whether the replies of the client's requests in
// flight, at size a key (expectedSize), may bring a largeShare of the memory
// budget, or those of all clients the whole budget (memory.expect): then
// they are answered before more of its requests are read.
func (c *client) largeInFlight(mem *memory, size int64) bool {
	if len(c.pending) == 0 {
		return false
	}
	return size > 0 && (int64(max(c.pkeys, 1))*size >= mem.max/largeShare || mem.expect.Load() >= mem.max)
}

// expectedSize returns the size the replies of the client's requests are
// expected to bring a key: its pool's large values' (largeValues), 0 if it
// has seen none lately. The client's first requests, in a pool that has
// seen none, count as values of firstValue bytes: their replies' size is not
// known until one comes back, and a client that pipelines gets of 1 MiB
// values as it connects would have 256 of them in flight, a pool of such
// clients gigabytes.
func (c *client) expectedSize() int64 {
	size := c.pool.large.size()
	if size == 0 && !c.answered {
		size = firstValue
	}
	return size
}

// firstValue is the size a client's first requests' replies count at, in a
// pool that has seen no large value lately (largeInFlight): memcached's
// largest item by default.
const firstValue = 1 << 20

// buffered reports whether the client's bytes read hold more than the
// requests parsed: in head, or in its codec's buffer.
func (c *client) buffered() bool {
	return len(c.src.head) > 0 || c.cc.buffered() > 0
}

// readFailed counts why the client's connection could not be read, and
// answers the requests read before.
func (c *client) readFailed(err error) end {
	stopping := c.pool.stopping.Load()
	switch {
	case errors.Is(err, errReadPast):
		c.endedBy(&c.pool.stats.clientErr)
		c.pool.proxy.log.Error("client connection closed: a request read past the bytes found whole (a bug)",
			"pool", c.pool.name, "client", c.conn.RemoteAddr().String())
	case isEOF(err) || stopping:
		c.endedBy(&c.pool.stats.clientEOF)
	default:
		c.endedBy(&c.pool.stats.clientErr)
	}
	c.flush()
	if stopping {
		return endFinish
	}
	return endClose
}

// endedBy counts the end of the connection in n, unless it is counted.
func (c *client) endedBy(n *atomic.Uint64) {
	if !c.ended {
		c.ended = true
		n.Add(1)
	}
}

// finish ends the connection of a client answered at shutdown: it closes it
// for writing, so that the client reads every reply and then the end of the
// stream, and discards what the client still sends until it closes its side,
// for at most closeLinger; serve then closes the connection.
func (c *client) finish() {
	c.flush()
	if cw, ok := c.conn.(interface{ CloseWrite() error }); ok && c.werr == nil && cw.CloseWrite() == nil {
		c.conn.SetReadDeadline(time.Now().Add(closeLinger))
		c.src.take()
		for {
			if _, err := c.rw.Read(c.src.buf); err != nil {
				return
			}
		}
	}
}

// setIdleDeadline sets the read deadline of the pool's idle timeout, which a
// reload may have changed since the last wait, or shedAfter's if that falls
// first. Without an idle timeout, shedAfter's is set once, not at every
// wait: it is set again when it passes (shedWait).
func (c *client) setIdleDeadline() {
	idle := c.pool.proxy.idleTimeout(c.pool.state.Load().cfg)
	switch {
	case c.sheds && idle > shedAfter:
		now := time.Now()
		c.idleAt = now.Add(idle)
		c.conn.SetReadDeadline(now.Add(shedAfter))
		c.armed, c.active, c.idle = true, false, false
	case c.sheds && idle <= 0:
		c.idleAt, c.idle = time.Time{}, false
		if !c.armed {
			c.conn.SetReadDeadline(time.Now().Add(shedAfter))
			c.armed, c.active = true, false
		}
	case idle > 0:
		c.armed = false
		c.conn.SetReadDeadline(time.Now().Add(idle))
		c.idle = true
	case c.idle || c.armed:
		c.conn.SetReadDeadline(time.Time{})
		c.idle, c.armed = false, false
	}
}

// disarm replaces shedAfter's read deadline, passed, by the idle timeout's.
// The caller checks stopping after it (see pool.drain).
func (c *client) disarm() {
	c.armed = false
	c.conn.SetReadDeadline(c.idleAt)
	c.idle = !c.idleAt.IsZero()
}

// shedWait is what follows a wait for the client's next bytes that failed
// with err: endShed if shedAfter's deadline passed with no request read
// since it was set, endIdle to wait again if one was, or readFailed's end.
func (c *client) shedWait(err error) end {
	if !c.armed || !isTimeout(err) || c.pool.stopping.Load() {
		return c.readFailed(err)
	}
	e := endShed
	if c.active {
		c.armed = false
		c.setIdleDeadline()
		e = endIdle
	} else {
		c.disarm()
	}
	if c.pool.stopping.Load() {
		return endFinish
	}
	return e
}

// flush waits for the replies of the pending requests and writes them in order.
// The memory of replies written is given back as they are written, not once
// all are: a client that reads slowly keeps the others waiting for memory
// only for the replies it has not taken yet.
func (c *client) flush() {
	if len(c.pending) == 0 {
		return
	}
	out := outBufs.Get().(*[]byte)
	held := int64(c.pbytes)
	c.barrier = false
	for _, r := range c.pending {
		if r.planned() {
			held += c.settle(r)
		}
		for _, cl := range r.calls[r.waited:r.ncalls] {
			<-cl.done
			held += cl.held
		}
		wrote := false
		if c.werr == nil {
			if head, value, tail, ok := c.bigReply(*out, r); ok {
				// The value is written as it is, not copied into out.
				*out = append(head[:0], c.writeValue(head, value, tail)...)
				wrote = true
			} else {
				*out = c.respond(*out, r)
			}
			if len(*out) >= flushAt {
				c.write(*out)
				*out = (*out)[:0]
				wrote = true
			}
		}
		c.pool.observeRequest(r)
		c.pool.reqs.Put(r)
		if wrote && held != 0 {
			c.pool.proxy.mem.release(held)
			held = 0
		}
	}
	clear(c.pending)
	c.pending = c.pending[:0]
	c.pbytes, c.pkeys = 0, 0
	if c.expect != 0 {
		c.pool.proxy.mem.expect.Add(-c.expect)
		c.expect = 0
	}
	c.answered = true
	c.pool.proxy.mem.release(held)
	if len(*out) > 0 && c.werr == nil {
		c.write(*out)
	}
	if cap(*out) <= maxOutBuf {
		*out = (*out)[:0]
		outBufs.Put(out)
	}
	if c.werr != nil {
		c.broken = true
	}
}

// slowReader bounds how long a write of replies may take while the proxy
// holds more than its memory budget: the other clients wait for the bytes a
// client that does not read its replies holds (memory.wait), so such a
// client is closed, as Redis closes one past its output buffer limit.
const slowReader = 5 * time.Second

// nowWriter is a writer that can write what the socket takes without
// waiting: rawIO.
type nowWriter interface {
	writeNow(p []byte) (int, error)
}

// write writes replies to the client. If the client has not read enough for
// them to fit, it waits for as long as the proxy holds no more than its
// memory budget, and past it for slowReader of a write, then closes the
// client (slowReader).
func (c *client) write(b []byte) {
	w, ok := c.rw.(nowWriter)
	if !ok {
		// TLS: a write that timed out cannot go on, so the deadline is
		// set only for a write that begins past the budget; one that
		// begins within it is cut if the proxy is past it when the write
		// has waited slowReader (tlsWatch).
		over := c.pool.proxy.mem.over()
		switch {
		case over:
			c.conn.SetWriteDeadline(time.Now().Add(slowReader))
			c.wdl = true
		case c.wdl:
			c.conn.SetWriteDeadline(time.Time{})
			c.wdl = false
		}
		if !over {
			if c.watch == nil {
				c.watch = newTLSWatch(c)
			}
			c.watch.begin()
		}
		n, err := c.rw.Write(b)
		if !over && c.watch.end() {
			c.wdl = true // its deadline is set
		}
		c.wrote(n, err)
		return
	}
	n, err := w.writeNow(b)
	c.wrote(n, err)
	if err != nil || n == len(b) {
		return
	}
	b = b[n:]
	for {
		c.conn.SetWriteDeadline(time.Now().Add(slowReader))
		n, err := c.rw.Write(b)
		b = b[n:]
		if err != nil && isTimeout(err) && !c.pool.proxy.mem.over() {
			c.wrote(n, nil)
			continue // within the budget, a client may read slowly
		}
		c.wrote(n, err)
		break
	}
	c.conn.SetWriteDeadline(time.Time{}) // writeNow would fail at once
}

// tlsWatch watches a client's TLS write that began within the memory
// budget: every slowReader while it waits, it looks at the budget, and past
// it cuts the write (a deadline of now), as a plain socket's write is cut
// (client.write). Unwatched, a client that stopped reading would hold its
// replies' memory for as long as it stayed connected, and every client of
// the proxy would wait for it.
type tlsWatch struct {
	c       *client
	t       *time.Timer
	mu      sync.Mutex
	writing bool // a write is watched
	cut     bool // its deadline was set
}

func newTLSWatch(c *client) *tlsWatch {
	w := &tlsWatch{c: c}
	w.t = time.AfterFunc(time.Hour, w.check)
	w.t.Stop()
	return w
}

func (w *tlsWatch) begin() {
	w.mu.Lock()
	w.writing, w.cut = true, false
	w.mu.Unlock()
	w.t.Reset(slowReader)
}

// end stops watching and reports whether the write's deadline was set.
func (w *tlsWatch) end() bool {
	w.t.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writing = false
	return w.cut
}

func (w *tlsWatch) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case !w.writing || w.cut:
	case w.c.pool.proxy.mem.over():
		w.c.conn.SetWriteDeadline(time.Now())
		w.cut = true
	default:
		w.t.Reset(slowReader) // within the budget, a client may read slowly
	}
}

// wrote counts n bytes written to the client, and the error of the write.
func (c *client) wrote(n int, err error) {
	c.pool.stats.bytesOut.Add(uint64(n))
	if err == nil {
		return
	}
	c.werr = err
	if isTimeout(err) {
		c.pool.refused.add(c.pool.proxy.log, c.pool.name, refusedSlowReader, nil, c.conn.RemoteAddr().String())
	}
}

func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)
}

// dispatch routes r and sends its calls.
func (c *client) dispatch(r *clientReq) {
	pl := c.pool
	st := pl.state.Load()
	req := r.req
	var deadline time.Time
	if t := st.timeout(); t > 0 {
		deadline = r.start.Add(t)
	}
	if req.broadcast() {
		// Before any plan: a request to every server (flush_all) has no
		// key for replicas or warm-up to plan by.
		c.dispatchAll(r, st, deadline)
		return
	}
	if st.planned && c.dispatchPlan(r, st, deadline) {
		return
	}
	n := req.nkeys()
	if n > 1 && req.splits() {
		c.dispatchSplit(r, st, deadline)
		return
	}
	var key []byte
	if n > 0 {
		key = req.routeKey(0)
	}
	srv, err := st.route(key)
	for i := 1; i < n && err == nil && !st.dist.Random; i++ {
		// A request that does not split goes whole to one server.
		k := req.routeKey(i)
		if pr, ok := req.(patterner); ok && pr.pattern(i) && !tagPinned(st.cfg, k) {
			err = errPattern
		} else if s, err2 := st.route(k); err2 != nil || s != srv {
			err = errKeysSpread
		}
	}
	if err != nil {
		pl.stats.forwardErr.Add(1)
		r.err = err
		return
	}
	cl := r.newCall(pl.codec)
	cl.cmd, cl.deadline, cl.start = req.command(), deadline, r.start
	cl.build(req, nil, 0)
	srv.send(cl)
}

// build writes what cl's server receives of req (see request.appendRequest),
// with the values req lends, if it does (lender).
func (cl *call) build(req request, keyCall []int, part int) {
	lr, ok := req.(lender)
	if !ok {
		cl.out = req.appendRequest(cl.out, keyCall, part, cl.reply)
		return
	}
	cl.out, cl.lent = lr.appendLent(cl.out, keyCall, part, cl.reply, cl.lent)
	for _, p := range cl.lent {
		cl.lentLen += len(p.b)
	}
}

// dispatchSplit sends a request of many keys as one call per server, each
// with the server's keys, in parallel.
func (c *client) dispatchSplit(r *clientReq, st *state, deadline time.Time) {
	req := r.req
	r.split = true
	for i := range req.nkeys() {
		srv, err := st.route(req.routeKey(i))
		if err != nil {
			r.keyCall = append(r.keyCall, -1)
			r.err = err
			continue
		}
		j := 0
		for j < r.ncalls && r.calls[j].srv != srv {
			j++
		}
		if j == r.ncalls {
			cl := r.newCall(c.pool.codec)
			cl.srv = srv
			cl.cmd, cl.deadline, cl.start = req.command(), deadline, r.start
		}
		r.keyCall = append(r.keyCall, j)
	}
	if r.ncalls == 0 {
		c.pool.stats.forwardErr.Add(1)
		return
	}
	c.pool.stats.fragments.Add(uint64(r.ncalls))
	began := time.Now()
	for j, cl := range r.calls[:r.ncalls] {
		cl.build(req, r.keyCall, j)
		cl.deadline = later(deadline, began)
		cl.srv.send(cl)
	}
}

// later returns deadline moved by the time since began, when a stage's
// calls began to be sent: the deadline of a call sent after others. Sending
// may block (a server's connection dialed and the deletes the server owes
// replayed on it, up to the call's deadline), and the time one server takes
// must not count against the calls to the others, which would time out
// before they are sent.
func later(deadline, began time.Time) time.Time {
	if deadline.IsZero() {
		return deadline
	}
	return deadline.Add(time.Since(began))
}

// dispatchAll sends a request to every server of the pool, in parallel; an
// ejected server's call fails at once, as it could not be done, and the
// server owes the flush (memcached's flush_all, the only request sent to
// all).
func (c *client) dispatchAll(r *clientReq, st *state, deadline time.Time) {
	req := r.req
	r.split = true
	began := time.Now()
	for _, srv := range st.list {
		cl := r.newCall(c.pool.codec)
		cl.cmd, cl.deadline, cl.start = req.command(), later(deadline, began), r.start
		cl.out = req.appendRequest(cl.out, nil, 0, cl.reply)
		if srv.ejected.Load() {
			// Its items, out of sight while it is out, must not come
			// back with it: it is emptied before it serves again.
			srv.oweFlush()
			cl.srv = srv
			cl.complete(errEjected)
			continue
		}
		srv.send(cl)
	}
	if r.ncalls == 0 {
		r.err = errNoServers
	}
}

// bigReply returns the reply of r in three parts (see mcRequest.replyParts)
// if it is one server's reply holding a value of flushAt bytes or more,
// which respond would copy into the write buffer: head is dst with what
// precedes the value. Else ok is false.
func (c *client) bigReply(dst []byte, r *clientReq) (head, value, tail []byte, ok bool) {
	if r.act != forward || r.planned() || r.split || r.ncalls != 1 || r.calls[0].err != nil ||
		r.calls[0].reply.size() < flushAt {
		return nil, nil, nil, false
	}
	rr, ok := r.req.(interface {
		replyParts(dst []byte, rp reply) (head, value, tail []byte)
	})
	if !ok {
		return nil, nil, nil, false
	}
	head, value, tail = rr.replyParts(dst, r.calls[0].reply)
	if len(value) < flushAt {
		return nil, nil, nil, false
	}
	return head, value, tail, true
}

// vecWriter is a writer that can write several buffers in one system call
// without waiting: rawIO.
type vecWriter interface {
	writevNow(head, value, tail []byte) (int, error)
}

// writeValue writes head, a large value and tail, in one system call where
// the socket allows (writev), else head and the value, and returns what is
// left for the caller to buffer: nothing, or tail.
func (c *client) writeValue(head, value, tail []byte) (rest []byte) {
	w, ok := c.rw.(vecWriter)
	if !ok {
		if len(head) > 0 {
			c.write(head)
		}
		if c.werr == nil {
			c.write(value)
		}
		return tail
	}
	n, err := w.writevNow(head, value, tail)
	c.wrote(n, err)
	for _, p := range [...][]byte{head, value, tail} {
		if n >= len(p) {
			n -= len(p)
			continue
		}
		if c.werr == nil {
			c.write(p[n:]) // what the socket did not take at once
		}
		n = 0
	}
	return nil
}

// respond appends the reply to r to dst.
func (c *client) respond(dst []byte, r *clientReq) []byte {
	req := r.req
	switch {
	case r.act != forward:
		return req.appendLocal(dst)
	case r.planned():
		return c.respondPlan(dst, r)
	case r.ncalls == 0:
		return req.appendError(dst, r.err)
	case r.split:
		for _, cl := range r.calls[:r.ncalls] {
			if cl.err != nil {
				c.pool.stats.forwardErr.Add(1)
			}
		}
		return req.merge(dst, r.keyCall, r.calls[:r.ncalls], r.err)
	}
	cl := r.calls[0]
	if cl.err != nil {
		c.pool.stats.forwardErr.Add(1)
		return req.appendError(dst, cl.err)
	}
	return req.appendReply(dst, cl.reply)
}
