package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chash-dev/chash/internal/bigbuf"
)

// maxInflight bounds the requests written to one server connection and not yet
// answered.
const maxInflight = 1024

// A call is one request to one server and its reply.
type call struct {
	srv      *server
	cmd      int    // the request's command, as the codec numbers them
	out      []byte // the request as sent, but for its lent values
	lent     []lentPart
	lentLen  int // the bytes of the values lent, which stay counted when lent moves on
	deadline time.Time
	start    time.Time
	reply    reply // made by the codec, readied by request.appendRequest
	held     int64 // the reply's bytes, accounted to the proxy's memory
	err      error
	done     chan struct{} // receives one value when the call completes
	lane     uint32        // the client's (client.lane); 0 for the proxy's own calls
	alone    bool          // no other request can join its write (clientReq.alone)
}

func (c *call) complete(err error) {
	c.err = err
	c.done <- struct{}{}
}

// size returns the bytes of the request as sent.
func (c *call) size() int { return len(c.out) + c.lentLen }

// giveLent gives back the values lent to a call that was not sent.
func (c *call) giveLent() {
	for _, p := range c.lent {
		bigbuf.Give(p.b)
	}
	clear(c.lent)
	c.lent = c.lent[:0]
}

// maxWriteBuffer bounds the requests buffered for one server connection and not
// yet written: a sender that would grow the buffer past it waits until the
// buffer is written (a single larger request is still buffered alone).
const maxWriteBuffer = 256 << 10

// serverConn is one persistent connection to a server, on which the requests of
// many clients are pipelined. A sender queues its call for the reader and
// appends its request to the session's write buffer under mu, so the two stay
// in the same order; system calls happen outside the locks. On an idle
// connection, while Go code runs on several threads, the sender writes the
// buffer itself, which costs no hand-off to another thread; so it does on one
// thread when no other request can join its write (call.alone). Otherwise
// (one thread, where a hand-off is cheap; a busy connection; a write already
// in progress) the session's writer goroutine writes the buffer, having
// first let the goroutines that are ready to run add their requests, so the
// requests of many clients leave in one write, as they do from twemproxy's
// event loop. Each session (net.Conn) also has a reader goroutine that reads
// the responses in order and completes the calls. The reader waits in the
// network read, not on the queue of calls: a request costs no wake-up of the
// reader; its reply wakes it. It reads and waits within one raw read of the
// socket (readWithin), so that after a burst of replies that left nothing it
// waits without a read that would find nothing.
type serverConn struct {
	srv    *server
	mu     sync.Mutex // orders calls; held while dialing and while inflight is full
	ss     *session
	live   atomic.Pointer[session] // ss, for readers that do not hold mu
	closed bool
	queued atomic.Int32 // calls queued whose replies the reader has not begun to read
}

// session is one live net.Conn of a serverConn.
type session struct {
	conn net.Conn
	rw   io.ReadWriter // reads and writes conn; see socketIO
	sc   serverCodec   // reads the replies
	dead chan struct{}
	once sync.Once
	gen  uint64 // the server's owed.gen when the session began

	// The calls written, or about to be, whose replies are not yet read: a
	// ring of maxInflight, with a token in slots for each.
	qmu    sync.Mutex
	ring   [maxInflight]*call
	head   int // the oldest call
	n      int
	failed bool // the reader gave up: no call may be queued
	slots  chan struct{}
	// extendAt is when progress may next extend the read deadline; the
	// reader's alone.
	extendAt time.Time
	srv      *server // whose pool's timeout pop and progress extend by

	// The reader's, for readWithin: its function, made once, and the
	// oldest call and the error of serveReplies; the reader of the replies.
	withinFn func() bool
	queuedFn func(int) reply
	wnext    *call
	werr     error
	cr       *countingReader

	wmu     sync.Mutex // guards the fields below; taken after serverConn.mu
	room    sync.Cond  // signaled when the buffer is taken or the session dies
	wbuf    []byte     // requests not yet written
	wparts  []lentPart // the values lent by requests in wbuf (lender)
	wsize   int        // the bytes of wbuf and wparts
	wcalls  int        // the calls whose requests wbuf holds
	spare   []byte     // the other buffer, when no write holds it
	sparts  []lentPart // and the other parts
	segs    [][]byte   // scratch of writeOut
	writing bool       // a sender or the writer goroutine owns the next write
	waiters int        // senders waiting for room
	kick    chan struct{}
}

func (ss *session) kill() {
	ss.once.Do(func() {
		ss.conn.Close()
		close(ss.dead)
		ss.wmu.Lock()
		ss.room.Broadcast()
		ss.wmu.Unlock()
	})
}

func (ss *session) isDead() bool {
	select {
	case <-ss.dead:
		return true
	default:
		return false
	}
}

// buffer appends cl's request to the write buffer, and takes the values cl
// lent. If nobody is writing, it returns the buffer for the caller to write
// when direct is set, and otherwise wakes the writer goroutine and returns
// nil.
func (ss *session) buffer(cl *call, direct bool) ([]byte, []lentPart) {
	size := cl.size()
	ss.wmu.Lock()
	for ss.wsize > 0 && ss.wsize+size > maxWriteBuffer && !ss.isDead() {
		ss.waiters++
		ss.room.Wait()
		ss.waiters--
	}
	at := len(ss.wbuf)
	ss.wbuf = append(ss.wbuf, cl.out...)
	for _, p := range cl.lent {
		ss.wparts = append(ss.wparts, lentPart{at: at + p.at, b: p.b})
	}
	clear(cl.lent)
	cl.lent = cl.lent[:0]
	ss.wsize += size
	ss.wcalls++
	if ss.writing {
		ss.wmu.Unlock()
		return nil, nil
	}
	ss.writing = true
	if direct {
		buf, parts := ss.take()
		ss.wmu.Unlock()
		return buf, parts
	}
	ss.wmu.Unlock()
	ss.kick <- struct{}{}
	return nil, nil
}

// take returns the write buffer and its parts, putting the spare ones in
// their place; wmu is held.
func (ss *session) take() ([]byte, []lentPart) {
	buf, parts := ss.wbuf, ss.wparts
	ss.wbuf, ss.spare = ss.spare[:0], nil
	ss.wparts, ss.sparts = ss.sparts[:0], nil
	ss.wcalls, ss.wsize = 0, 0
	if ss.waiters > 0 {
		ss.room.Broadcast()
	}
	return buf, parts
}

// written keeps buf and parts, just written, as the spare ones, and gives
// the parts' values back; wmu is held.
func (ss *session) written(buf []byte, parts []lentPart) {
	if cap(buf) <= maxWriteBuffer {
		ss.spare = buf[:0]
	}
	for _, p := range parts {
		bigbuf.Give(p.b)
	}
	clear(parts)
	ss.sparts = parts[:0]
}

// writeOut writes buf and the values lent that go out within it (parts).
func (ss *session) writeOut(buf []byte, parts []lentPart) error {
	if len(parts) == 0 {
		_, err := ss.rw.Write(buf)
		return err
	}
	segs, at := ss.segs[:0], 0
	for _, p := range parts {
		if p.at > at {
			segs = append(segs, buf[at:p.at])
		}
		segs = append(segs, p.b)
		at = p.at
	}
	if at < len(buf) {
		segs = append(segs, buf[at:])
	}
	var err error
	if w, ok := ss.rw.(interface{ writeAll([][]byte) error }); ok {
		err = w.writeAll(segs)
	} else {
		nb := net.Buffers(segs)
		_, err = nb.WriteTo(ss.rw)
	}
	clear(segs[:cap(segs)])
	ss.segs = segs[:0]
	return err
}

// write writes buf and parts, taken by buffer, and hands what was buffered
// meanwhile to the writer goroutine.
func (ss *session) write(buf []byte, parts []lentPart) {
	if err := ss.writeOut(buf, parts); err != nil {
		ss.kill()
	}
	ss.wmu.Lock()
	ss.written(buf, parts)
	more := len(ss.wbuf) > 0 && !ss.isDead()
	if !more {
		ss.writing = false
	}
	ss.wmu.Unlock()
	if more {
		ss.kick <- struct{}{}
	}
}

// writeLoop is a session's writer goroutine. Woken when requests wait to be
// written, it first lets the goroutines that are ready to run (typically other
// clients whose requests arrived together) buffer theirs, then writes the
// buffer, until it is empty; so requests of many clients leave in one write, as
// from an event loop. It exits when the session dies.
func (c *serverConn) writeLoop(ss *session) {
	defer c.srv.wg.Done()
	for {
		select {
		case <-ss.kick:
		case <-ss.dead:
			return
		}
		for {
			runtime.Gosched()
			ss.wmu.Lock()
			if len(ss.wbuf) == 0 || ss.isDead() {
				ss.writing = false
				ss.wmu.Unlock()
				break
			}
			buf, parts := ss.take()
			ss.wmu.Unlock()
			if err := ss.writeOut(buf, parts); err != nil {
				ss.kill()
			}
			ss.wmu.Lock()
			ss.written(buf, parts)
			ss.wmu.Unlock()
		}
	}
}

// drop ends the current session; c.mu is held. Its reader fails the calls left.
func (c *serverConn) drop() {
	if c.ss != nil {
		c.ss.kill()
		c.setSession(nil)
	}
}

// push queues cl for the reader, unless the reader gave up. The read deadline
// is the oldest call's: set here when cl is the only one, by pop after.
func (ss *session) push(cl *call) bool {
	ss.qmu.Lock()
	defer ss.qmu.Unlock()
	if ss.failed {
		return false
	}
	ss.ring[(ss.head+ss.n)%maxInflight] = cl
	if ss.n++; ss.n == 1 {
		ss.conn.SetReadDeadline(cl.deadline)
	}
	return true
}

// queuedReply returns the reply of the i-th oldest call queued, or nil if
// fewer are queued: what serverCodec.whole parses for.
func (ss *session) queuedReply(i int) reply {
	ss.qmu.Lock()
	defer ss.qmu.Unlock()
	if i >= ss.n {
		return nil
	}
	return ss.ring[(ss.head+i)%maxInflight].reply
}

// peek returns the oldest call, or nil.
func (ss *session) peek() *call {
	ss.qmu.Lock()
	defer ss.qmu.Unlock()
	if ss.n == 0 {
		return nil
	}
	return ss.ring[ss.head]
}

// pop removes the oldest call, whose reply has been read, sets the read
// deadline for the next one and returns it, or nil if none is queued. Only
// the reader removes calls, so the call returned stays the oldest until the
// reader pops it.
//
// The next call has its timeout from when it was sent or from now, when the
// server has just answered the one before, whichever is later: a server
// still sending the replies of a pipeline (fifty replies of a megabyte) is
// answering, not late, and timing out the last of them would also count
// against the server and eject it. A server that stops answering still
// times out a timeout after its last reply.
func (ss *session) pop() *call {
	ss.qmu.Lock()
	ss.ring[ss.head] = nil
	ss.head = (ss.head + 1) % maxInflight
	var next *call
	if ss.n--; ss.n > 0 {
		next = ss.ring[ss.head]
		d := next.deadline
		if t := ss.timeout(); !d.IsZero() && t > 0 {
			if n := time.Now().Add(t); n.After(d) {
				d = n
			}
		}
		ss.conn.SetReadDeadline(d)
	}
	ss.qmu.Unlock()
	<-ss.slots
	return next
}

// progress extends the read deadline of the oldest call when the server
// sends part of its reply, and before the read that follows: a timeout
// after the bytes that came last (a timeout of waiting for them), not after
// the request. A server sending a large reply (a multi-get of sixty
// values of 500 KB, 30 MB) is answering, not late, and timing it out would
// also count against the server and eject it; a server that stops sending
// times out a timeout after its last bytes. It costs a clock read a read, and
// a new deadline at most every eighth of the timeout. Only the reader calls
// it, from its reads.
func (ss *session) progress() {
	now := time.Now()
	if now.Before(ss.extendAt) {
		return
	}
	t := ss.timeout()
	ss.qmu.Lock()
	if ss.n > 0 && t > 0 && !ss.ring[ss.head].deadline.IsZero() {
		ss.conn.SetReadDeadline(now.Add(t))
		ss.extendAt = now.Add(t / 8)
	}
	ss.qmu.Unlock()
}

// late looks once more at the socket, with r, of a read that failed with err
// at its deadline: bytes found there came while the reader waited for a
// processor (on a loaded machine a goroutine may wait past a deadline), not
// for the server, and are read as in time, a new deadline a timeout from
// now, as nutcracker handles the events it finds before its timeouts. With
// none, or a reader that cannot look without waiting, err stands.
func (ss *session) late(r io.Reader, p []byte, err error) (int, error) {
	nr, ok := r.(nowReader)
	if !ok {
		return 0, err
	}
	var deadline time.Time
	if t := ss.timeout(); t > 0 {
		deadline = time.Now().Add(t)
	}
	ss.conn.SetReadDeadline(deadline)
	n, again, rerr := nr.readNow(p)
	if again {
		return 0, err
	}
	return n, rerr
}

// timeout returns the pool's timeout, which pop and progress give a call
// from its server's last bytes: not a call's own (its deadline less its
// start), which for a call of a later stage of a request (a failover, a
// warm-up read) counts the request's age too.
func (ss *session) timeout() time.Duration {
	if ss.srv == nil {
		return 0
	}
	return ss.srv.pool.state.Load().timeout()
}

// idle clears the read deadline, that of a call since answered, and reports
// true if no call is queued; otherwise it leaves the deadline be.
func (ss *session) idle() bool {
	ss.qmu.Lock()
	defer ss.qmu.Unlock()
	if ss.n == 0 {
		ss.conn.SetReadDeadline(time.Time{})
	}
	return ss.n == 0
}

// fail stops the queue and returns the calls left in it, oldest first.
func (ss *session) fail() []*call {
	ss.qmu.Lock()
	defer ss.qmu.Unlock()
	ss.failed = true
	calls := make([]*call, 0, ss.n)
	for ; ss.n > 0; ss.n-- {
		calls = append(calls, ss.ring[ss.head])
		ss.ring[ss.head] = nil
		ss.head = (ss.head + 1) % maxInflight
	}
	return calls
}

// setSession makes ss the connection's session; c.mu is held.
func (c *serverConn) setSession(ss *session) {
	c.ss = ss
	c.live.Store(ss)
}

// queues returns the requests of the connection's session waiting to be
// written (in) and written, or being written, and waiting for their replies
// (out), with their bytes: nutcracker's in_queue and out_queue.
func (c *serverConn) queues() (in, inBytes, out, outBytes int) {
	ss := c.live.Load()
	if ss == nil {
		return 0, 0, 0, 0
	}
	// The two queues are read one after the other, not at one instant: a
	// request that moves meanwhile may count in the wrong one.
	ss.wmu.Lock()
	in, inBytes = ss.wcalls, ss.wsize
	ss.wmu.Unlock()
	ss.qmu.Lock()
	n, bytes := ss.n, 0
	for i := range ss.n {
		bytes += ss.ring[(ss.head+i)%maxInflight].size()
	}
	ss.qmu.Unlock()
	return in, inBytes, max(n-in, 0), max(bytes-inBytes, 0)
}

// close closes the connection for good, failing the calls in flight. The
// session dies first, without mu: a sender waiting for room on it (queue)
// holds mu until it dies.
func (c *serverConn) close() {
	if ss := c.live.Load(); ss != nil {
		ss.kill()
	}
	c.mu.Lock()
	c.closed = true
	c.drop()
	c.mu.Unlock()
}

// send writes cl, dialing first if the connection is down. It never blocks
// past cl's deadline but to dial, while maxInflight calls wait for replies, or
// while maxWriteBuffer bytes wait to be written.
func (c *serverConn) send(cl *call) {
	c.mu.Lock()
	ss, err := c.queue(cl)
	var buf []byte
	var parts []lentPart
	if err == nil {
		// On an idle connection with several threads, or for a request
		// nothing can join, write at once; otherwise let the writer
		// goroutine gather the requests of many clients.
		buf, parts = ss.buffer(cl, c.queued.Load() == 1 && (threads.Load() > 1 || cl.alone))
	}
	c.mu.Unlock()
	if err != nil {
		cl.giveLent()
		cl.complete(err)
		return
	}
	if buf != nil {
		ss.write(buf, parts)
	}
}

// queue queues cl for the session's reader, or returns why it cannot; c.mu is
// held. The caller buffers cl's request before releasing c.mu.
func (c *serverConn) queue(cl *call) (*session, error) {
	if c.closed {
		return nil, errShutdown
	}
	if c.ss != nil && (c.ss.isDead() || c.ss.gen != c.srv.owed.gen.Load()) {
		// Dead, or made before a write failed on the server: a new
		// connection replays the deletes the server owes first (owed.go).
		c.drop()
	}
	if !cl.deadline.IsZero() && time.Now().After(cl.deadline) {
		c.srv.stats.timedout.Add(1)
		return nil, errTimeout
	}
	if c.ss == nil {
		ss, err := c.dial(cl.deadline)
		if err != nil {
			if isTimeout(err) {
				c.srv.stats.timedout.Add(1)
			}
			c.srv.fail(err)
			return nil, dialError(err)
		}
		c.setSession(ss)
	}
	select {
	case c.ss.slots <- struct{}{}:
	default:
		// maxInflight calls wait for replies: wait for room, or the deadline.
		var timeout <-chan time.Time
		if !cl.deadline.IsZero() {
			t := time.NewTimer(time.Until(cl.deadline))
			defer t.Stop()
			timeout = t.C
		}
		select {
		case c.ss.slots <- struct{}{}:
		case <-c.ss.dead:
			c.drop()
			return nil, errClosed
		case <-timeout:
			c.srv.stats.timedout.Add(1)
			return nil, errTimeout
		}
	}
	if !c.ss.push(cl) {
		c.drop()
		return nil, errClosed
	}
	c.queued.Add(1)
	c.srv.stats.requests.Add(1)
	c.srv.stats.requestBytes.Add(uint64(cl.size()))
	return c.ss, nil
}

func (c *serverConn) dial(deadline time.Time) (*session, error) {
	d := net.Dialer{Deadline: deadline}
	if st := c.srv.pool.state.Load(); st != nil && !st.cfg.TCPKeepalive {
		d.KeepAlive = -1
	}
	conn, err := d.DialContext(c.srv.ctx, c.srv.network(), c.srv.addr)
	if err != nil {
		c.srv.markDown(err)
		return nil, err
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	rw := socketIO(conn)
	cr := &countingReader{r: rw}
	sc := c.srv.pool.codec.newServer(cr)
	conn.SetDeadline(deadline)
	// The handshake and replay end when the server closes, too: without a
	// timeout, a server that takes the connection and never answers (frozen)
	// would hold c.mu, and close, for ever.
	stop := context.AfterFunc(c.srv.ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	if err := sc.handshake(rw); err != nil {
		stop()
		conn.Close()
		c.srv.refused(err)
		return nil, err
	}
	c.srv.refused(nil)
	gen := c.srv.owed.gen.Load()
	if c.srv.owes() {
		if err := c.srv.replay(conn, c.srv.pool.state.Load().timeout()); err != nil {
			stop()
			conn.Close()
			return nil, err
		}
	}
	if !stop() {
		conn.Close()
		return nil, c.srv.ctx.Err()
	}
	c.srv.markUp()
	conn.SetDeadline(time.Time{})
	cr.n = &c.srv.stats.responseBytes // replies from now on, not the handshake's
	c.srv.stats.connections.Add(1)
	c.srv.pool.proxy.stats.opened.Add(1)
	ss := &session{
		conn:  conn,
		rw:    rw,
		sc:    sc,
		slots: make(chan struct{}, maxInflight),
		dead:  make(chan struct{}),
		wbuf:  make([]byte, 0, 16<<10),
		spare: make([]byte, 0, 16<<10),
		kick:  make(chan struct{}, 1),
		gen:   gen,
	}
	ss.room.L = &ss.wmu
	ss.srv = c.srv
	cr.ss, ss.cr = ss, cr
	c.srv.wg.Add(2)
	go c.read(ss)
	go c.writeLoop(ss)
	return ss, nil
}

// read is a session's reader goroutine: it waits for the server to send, then
// reads one response per queued call, in order, by the oldest call's deadline.
// A failure kills the session and fails every call queued on it. It exits when
// the session dies.
func (c *serverConn) read(ss *session) {
	defer c.srv.wg.Done()
	defer c.srv.stats.connections.Add(-1)
	wr, _ := ss.rw.(withinReader)
	if wr != nil && !wr.canWithin() {
		wr = nil
	}
	var next *call // the oldest call, when the last pop found one
	for {
		if wr != nil && ss.sc.buffered() == 0 {
			var err error
			if next, err = c.readWithin(ss, wr, next); err != nil {
				c.readFailed(ss, err)
				return
			}
		}
		err := ss.sc.wait()
		if err == nil {
			next, err = c.readReply(ss, next)
		} else if next == nil && isTimeout(err) && !ss.isDead() && ss.idle() {
			continue // the deadline of a call answered since
		}
		if err != nil {
			c.readFailed(ss, err)
			return
		}
	}
}

// readReply reads the reply of the oldest call queued (next, if known),
// completes the call and returns the one queued after it.
func (c *serverConn) readReply(ss *session, next *call) (*call, error) {
	cl := next
	if cl == nil {
		cl = ss.peek()
	}
	if cl == nil {
		return nil, errUnasked
	}
	if err := ss.sc.read(cl.reply); err != nil {
		return nil, err
	}
	return c.answered(ss, cl), nil
}

// errUnasked is a reply with no call queued for it.
var errUnasked = fmt.Errorf("%w: data from the server with no request waiting", errBadReply)

// answered completes cl, whose reply was read, and returns the call queued
// next, if any.
func (c *serverConn) answered(ss *session, cl *call) *call {
	next := ss.pop()
	c.queued.Add(-1)
	c.srv.ok()
	n := cl.reply.size()
	cl.held = int64(n)
	c.srv.pool.proxy.mem.add(cl.held)
	c.srv.stats.responses.Add(1)
	hits, misses, t := cl.reply.lookups()
	if hits+misses > 0 {
		st := c.srv.stats
		if t == touchOnly {
			st.touchHits.Add(uint64(hits))
			st.touchMisses.Add(uint64(misses))
		} else {
			st.hits.Add(uint64(hits))
			st.misses.Add(uint64(misses))
			if t == readTouched {
				st.gatHits.Add(uint64(hits))
				st.gatMisses.Add(uint64(misses))
			}
		}
	}
	if n >= largeValue {
		c.srv.pool.large.record(n / max(hits, 1))
	}
	c.srv.latency.observe(time.Since(cl.start))
	cl.complete(nil)
	return next
}

// withinReader reads a socket within one raw read: rawIO.within.
type withinReader interface {
	canWithin() bool
	within(fn func() (wait bool)) error
	drained() bool
}

// errAgain is a read within withinReader.within that found nothing.
var errAgain = errors.New("proxy: nothing to read yet")

// readWithin reads the replies of whole bursts and completes their calls
// within one raw read of the socket (withinReader.within), waiting for the
// next burst there when the last read left nothing, which saves the read that
// would find nothing after each burst. It returns, with the oldest call queued
// if known, when a burst holds part of a reply (the loop of read reads the
// rest), or the wait failed (a deadline, the session closed: read's wait meets
// it again and deals with it); with an error when a read or reply failed.
func (c *serverConn) readWithin(ss *session, wr withinReader, next *call) (*call, error) {
	ss.wnext, ss.werr = next, nil
	if ss.withinFn == nil { // made once: a func value made per call would be allocated
		ss.withinFn = func() bool { return c.serveReplies(ss, wr) }
		ss.queuedFn = ss.queuedReply
	}
	wr.within(ss.withinFn) // a wait that failed fails read's wait too
	next, err := ss.wnext, ss.werr
	ss.wnext, ss.werr = nil, nil
	return next, err
}

// serveReplies is readWithin's function, within the raw read: it reports
// whether to wait for the socket to be readable.
func (c *serverConn) serveReplies(ss *session, wr withinReader) bool {
	for {
		if err := ss.sc.wait(); err != nil {
			if err != errAgain {
				ss.werr = err
			}
			return err == errAgain
		}
		if !ss.sc.whole(ss.queuedFn) {
			return false
		}
		for ss.sc.buffered() > 0 {
			next, err := c.readReply(ss, ss.wnext)
			if err != nil {
				ss.werr = err
				return false
			}
			ss.wnext = next
		}
		if wr.drained() {
			// The wait begins with the replies read: a deadline it
			// meets is the server's silence since, which the read
			// after it must not take for bytes just read (mid) and
			// wait a timeout more.
			if ss.cr != nil {
				ss.cr.mid = false
			}
			return true
		}
	}
}

// readFailed kills ss after a failed read and fails its calls.
func (c *serverConn) readFailed(ss *session, err error) {
	ss.kill()
	calls := ss.fail()
	c.queued.Add(-int32(len(calls)))
	for range calls {
		<-ss.slots
	}
	bad := errors.Is(err, errBadReply)
	if bad {
		c.srv.stats.badReplies.Add(1)
		c.srv.pool.proxy.log.Warn("server reply out of protocol: connection reset", "pool", c.srv.pool.name,
			"server", c.srv.name, "err", err, "requests_failed", len(calls))
	}
	if errors.Is(err, io.EOF) && c.srv.ctx.Err() == nil {
		c.srv.stats.eof.Add(1) // the server closed the connection
	}
	if len(calls) == 0 && !bad {
		return // closed while idle: nothing failed
	}
	if errors.Is(err, io.EOF) {
		c.srv.stats.eofFailed.Add(1)
	}
	cause := err
	switch {
	case isTimeout(err):
		c.srv.stats.timedout.Add(1)
		err = errTimeout
	case bad:
		err = errBadReply
	default:
		err = dialError(err)
	}
	if c.srv.ctx.Err() == nil { // not closing
		c.srv.pool.proxy.log.Debug("server connection failed", "pool", c.srv.pool.name, "server", c.srv.name, "err", err)
		c.srv.fail(cause)
	}
	// Every call written on the connection fails with its failure, as
	// nutcracker answers them (a timeout or a reset), but for a reply out of
	// protocol: only the oldest call's reply was bad.
	for i, cl := range calls {
		if i > 0 && bad {
			err = errClosed
		}
		cl.complete(err)
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
	case errors.Is(err, syscall.EHOSTUNREACH):
		return errors.New("No route to host")
	case errors.Is(err, syscall.ENETUNREACH):
		return errors.New("Network is unreachable")
	case errors.Is(err, syscall.EPIPE):
		return errors.New("Broken pipe")
	case outOfFiles(err):
		return errors.New("Too many open files")
	case errors.Is(err, context.Canceled):
		return errShutdown
	}
	// A server named by its host name is looked up at each dial: the
	// lookup's failure in getaddrinfo's words.
	if de := (*net.DNSError)(nil); errors.As(err, &de) {
		if de.IsNotFound {
			return errors.New("Name or service not known")
		}
		return errors.New("Temporary failure in name resolution")
	}
	if errors.Is(err, errRefused) {
		return err
	}
	if errors.Is(err, errBadReply) {
		return errBadReply
	}
	return errClosed
}

// countingReader adds the bytes read from r to n, if not nil: a server's
// response_bytes are the bytes of its replies as they came on the wire, values
// of get replies included, as nutcracker counts them.
type countingReader struct {
	r  io.Reader
	n  *atomic.Uint64
	ss *session // told of the bytes read (session.progress), if not nil
	// mid is set when the last read had bytes: the read after it extends
	// the deadline first, since a deadline that passed while the reader was
	// busy with those bytes (or not scheduled, on a loaded machine) would
	// fail it before it looks at the socket.
	mid bool
}

// Readable returns the bytes the socket holds (resp.Readable), so that a
// large reply's buffer is sized at once; 0 if the socket cannot tell.
func (c *countingReader) Readable() int {
	if rr, ok := c.r.(interface{ readable() int }); ok {
		return rr.readable()
	}
	return 0
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.mid && c.ss != nil {
		c.ss.progress()
	}
	n, err := c.r.Read(p)
	if n == 0 && c.ss != nil && isTimeout(err) {
		n, err = c.ss.late(c.r, p, err)
	}
	c.mid = n > 0
	if n > 0 {
		if c.n != nil {
			c.n.Add(uint64(n))
		}
		if c.ss != nil {
			c.ss.progress()
		}
	}
	return n, err
}
