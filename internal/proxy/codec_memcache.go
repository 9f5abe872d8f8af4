package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/chash-dev/chash/internal/bigbuf"
	"github.com/chash-dev/chash/internal/memcache"
)

// memcacheCodec is the codec of memcached's text protocol, classic and meta
// commands, read and written by package memcache.
type memcacheCodec struct {
	lim    memcache.Limits // what clients may send
	srvLim memcache.Limits // what servers may answer
	// readers holds the read buffers of client connections that are idle.
	readers sync.Pool
	dry     sync.Pool // whole's parsers
	names   []string
	// stats answers memcached's stats command on the pool's port; if nil,
	// stats answers END alone.
	stats statsSource
}

// statsSource writes the STAT lines a pool answers to stats: requestCounts
// reads the counters of requests when stats is read, and appendStats writes
// them and the others when it is answered (see pool.appendStats).
type statsSource interface {
	requestCounts() *requestCounts
	appendStats(dst []byte, rc *requestCounts) []byte
}

var _ codec = (*memcacheCodec)(nil)

// clientReadBuffer is the read buffer of a busy client connection: enough for
// a burst of pipelined requests, small enough that many busy clients cost
// little. Longer lines and values are read past it.
const clientReadBuffer = 4 << 10

func newMemcacheCodec(lim memcache.Limits) *memcacheCodec {
	// Retrieval lines of any length are read in parts, each sent to its
	// servers as it is read, as memcached reads get lines of any length.
	lim.Parts = true
	c := &memcacheCodec{
		lim: lim,
		// Replies may carry values of up to 128 MiB (or lim.MaxValue, if
		// larger), so that items stored straight into a memcached with a large
		// -I still read through the proxy.
		srvLim: memcache.Limits{MaxLine: lim.MaxLine, MaxValue: max(lim.MaxValue, 128<<20)},
	}
	c.names = make([]string, len(memcache.Commands())+1)
	for _, cmd := range memcache.Commands() {
		c.names[cmd] = cmd.String()
	}
	return c
}

func (c *memcacheCodec) commands() []string  { return c.names }
func (c *memcacheCodec) newRequest() request { return new(mcRequest) }
func (c *memcacheCodec) newReply() reply     { return new(mcReply) }

func (c *memcacheCodec) newClient(r io.Reader) clientCodec {
	return &mcClient{codec: c, src: r}
}

func (c *memcacheCodec) newServer(r io.Reader) serverCodec {
	return &mcServer{rd: memcache.NewReader(r, c.srvLim), lim: c.srvLim}
}

// probe asks for the server's version.
func (c *memcacheCodec) probe(rw io.ReadWriter) error {
	if _, err := io.WriteString(rw, "version\r\n"); err != nil {
		return err
	}
	var resp memcache.Response
	r := memcache.NewReaderSize(rw, memcache.Limits{}, 256)
	if err := r.ReadResponse(&resp, memcache.CmdVersion, 0); err != nil {
		return err
	}
	if string(resp.Status()) != "VERSION" {
		return fmt.Errorf("unexpected reply %q", resp.Line)
	}
	return nil
}

// mcClient reads the requests of one client connection.
type mcClient struct {
	codec *memcacheCodec
	src   io.Reader
	rd    *memcache.Reader // nil while the connection is idle
	// inLine says that the last request read was a part of a retrieval line
	// that goes on: the next is its next part.
	inLine bool
	// started says a request was read: the readers taken later go on with
	// the stream (memcache.Reader.Resume).
	started bool
}

func (c *mcClient) buffered() int {
	if c.rd == nil {
		return 0
	}
	if c.inLine {
		// The rest of the line is being read: it may not have arrived, but
		// the parts read are answered with the rest.
		return max(c.rd.Buffered(), 1)
	}
	return c.rd.Buffered()
}

func (c *mcClient) release() {
	if c.rd != nil && c.rd.Buffered() == 0 {
		c.rd.Reset(nil)
		c.codec.readers.Put(c.rd)
		c.rd = nil
	}
}

// replyServerOwn refuses memcached's commands that act on one server or
// report on it (stats reset, settings, ...; shutdown, slabs, lru_crawler, ...),
// which memcached answers and the proxy, in front of many, does not: a clear
// refusal rather than memcached's ERROR, which says the command does not
// exist.
const replyServerOwn = "CLIENT_ERROR not supported by the proxy. A server's own command: send it to a server"

// serverOwn reports whether name is one of memcached 1.6's commands that
// replyServerOwn refuses (the proxy's parser knows none of them).
func serverOwn(name []byte) bool {
	switch string(name) {
	case "shutdown", "slabs", "lru", "lru_crawler", "watch", "cache_memlimit", "extstore", "refresh_certs":
		return true
	}
	return false
}

// serverOwnStats reports whether arg is one of memcached 1.6's arguments of
// stats, which replyServerOwn refuses.
func serverOwnStats(arg []byte) bool {
	switch string(arg) {
	case "reset", "detail", "settings", "items", "slabs", "sizes", "conns", "cachedump", "extstore":
		return true
	}
	return false
}

func (c *mcClient) read(r request) (action, error) {
	req := r.(*mcRequest)
	req.reset()
	if c.rd == nil {
		if rd, ok := c.codec.readers.Get().(*memcache.Reader); ok {
			rd.Reset(c.src)
			c.rd = rd
		} else {
			c.rd = memcache.NewReaderSize(c.src, c.codec.lim, clientReadBuffer)
		}
		if c.started {
			c.rd.Resume()
		}
	}
	err := c.rd.ReadRequest(&req.Request)
	c.started = true
	req.part = req.More || c.inLine
	c.inLine = err == nil && req.More
	if req.part {
		req.held = 0
		for _, k := range req.Keys {
			req.held += len(k) + 1
		}
	}
	if err != nil {
		var me *memcache.Error
		if !errors.As(err, &me) {
			return 0, err
		}
		// memcached answers nothing to some bad requests with noreply.
		req.bad, req.noreply = me.Reply, me.Noreply
		req.badLine = append(req.badLine[:0], me.Line...)
		if me.Fatal {
			// The connection closes, where memcached may read on (it takes
			// the rest of a bad data block as commands): the client is told
			// why, though it asked for no reply.
			req.noreply = false
			return closeAfter, nil
		}
		name, _, _ := bytes.Cut(me.Line, space)
		if me.Reply == memcache.ReplyError && isHTTP(name) {
			req.bad, req.noreply = refusedHTTP, true
			return closeAfter, nil
		}
		if me.Reply == memcache.ReplyError && serverOwn(name) {
			req.bad, req.noreply = replyServerOwn, false
		}
		if me.Reply == memcache.ReplyTooLarge && dropStale(&req.Request) {
			return forward, nil
		}
		return local, nil
	}
	switch cmd := req.Command; {
	case cmd == memcache.CmdQuit:
		return closeAfter, nil
	case cmd == memcache.CmdMetaNoop:
		return local, nil
	case cmd == memcache.CmdStats:
		// The proxy's own counters, as memcached's "stats"; memcached's
		// stats with arguments (reset, settings, items, ...) is a server's
		// own. The counters of requests are read now, those
		// of replies (hits, misses) when the reply is written
		// (appendLocal), once every request the client sent before has
		// its reply: they count those requests and none after, as
		// memcached's do.
		switch {
		case len(req.Args) > 0:
			// memcached answers arguments it does not know with ERROR.
			req.bad = memcache.ReplyError
			if serverOwnStats(req.Args[0]) {
				req.bad = replyServerOwn
			}
			req.quoteLine()
		case c.codec.stats != nil:
			req.stats = c.codec.stats
			req.counts = req.stats.requestCounts()
		}
		return localAlone, nil
	case cmd == memcache.CmdVerbosity:
		// The proxy's logging is its own: verbosity is answered, not
		// forwarded, as nutcracker does.
		req.noreply = req.Noreply
		return local, nil
	case cmd.IsRetrieval() && len(req.Keys) == 0:
		return local, nil // gat with no keys: memcached answers END
	}
	if req.EchoesKeyRaw() {
		req.dropEcho()
	}
	if bad := forServer(&req.Request); bad != "" {
		// memcached answers nothing to a noreply request it refuses once it
		// has read the line.
		req.bad, req.noreply = bad, req.Noreply
		req.quoteLine()
		return local, nil
	}
	// Servers are always asked for a reply to a classic command, so that a
	// server connection never loses step; the proxy keeps the reply from the
	// client instead. memcached is silent about every outcome of a noreply
	// request (but for errors the parser refused above), so the proxy is too.
	if req.Noreply {
		req.noreply, req.Noreply = true, false
	}
	// A meta request with q goes as it is, followed by mn, and memcached
	// decides which replies its quiet mode hides (some depend on the item:
	// ma with N answers HD when it makes the item, nothing when it finds it).
	req.quiet = req.Command.IsMeta() && req.HasMetaFlag('q')
	return forward, nil
}

// dropStale turns a set or ms refused for a value too large into a delete of
// its key, sent to the key's server(s) in its place, and reports whether the
// delete may be sent; if not, the request is only refused. memcached drops the key's item when it refuses such a value, so that a
// set that failed leaves no stale value to read; add, replace, append,
// prepend and cas leave it. The client's reply is still the refusal
// (mcRequest.bad), whatever the delete's.
func dropStale(req *memcache.Request) bool {
	switch req.Command {
	case memcache.CmdSet:
		req.Command = memcache.CmdDelete
	case memcache.CmdMetaSet:
		b := req.HasMetaFlag('b')
		req.Command, req.MetaFlags = memcache.CmdMetaDelete, req.MetaFlags[:0]
		if b {
			req.MetaFlags = append(req.MetaFlags, metaFlagB)
		}
	default:
		return false
	}
	req.Noreply, req.Value = false, req.Value[:0]
	return len(req.Keys) == 1 && forServer(req) == ""
}

// metaFlagB is the meta flag b: a base64 key.
var metaFlagB = []byte("b")

// forServer returns memcached's reply refusing req, or "" if req may be
// written to a server connection that other clients share: the guard every
// request the codec forwards passes, read from a client or built in code (a
// request built to serve another must pass it too). The rules are memcache's
// (Request.Validate), the ones its parser reads requests by: the server must
// read the line the proxy writes as exactly the request the proxy understood,
// whole, and keep the connection open. The parts of a get split over servers
// need no check of their own: each has some of a checked request's keys, in
// a shorter line.
func forServer(req *memcache.Request) string {
	if err := req.Validate(); err != nil {
		var me *memcache.Error
		if errors.As(err, &me) {
			return me.Reply
		}
		return memcache.ReplyError
	}
	return ""
}

// mcRequest is a memcached request and how the proxy answers it.
type mcRequest struct {
	memcache.Request
	bad     string // memcached's reply refusing the request; empty if it is good
	badLine []byte // the start of the refused line, for the log
	noreply bool   // the client asked for no reply (the server is asked for one)
	// part says that the request is a part of a retrieval line read in
	// parts (memcache.Limits.Parts): its reply is a part of the line's, the
	// last part's ending with END, and the keys of failed servers read as
	// misses, since the parts before may already be answered. held is the
	// bytes of its keys, which the proxy accounts to the client.
	part bool
	held int
	lent int // the bytes of the value lent (appendLent)
	// stats writes the reply to stats, with the counters of requests read
	// with it; nil for the codec of no pool, or stats with arguments.
	stats  statsSource
	counts *requestCounts
	// quiet is a meta request's flag q: the server gets the request followed
	// by mn, whose MN tells where a reply that q hid would have been.
	quiet bool
	// casTok holds a meta request's C token as setCas rewrote it.
	casTok [24]byte
	// echo says that the proxy dropped the k of an mg, whose key memcached
	// might write back raw, to write the key back itself (dropEcho);
	// echoAt is where k stood among its flags.
	echo   bool
	echoAt int
}

var _ request = (*mcRequest)(nil)

func (r *mcRequest) reset() {
	r.bad, r.noreply, r.quiet, r.part, r.held, r.lent = "", false, false, false, 0, 0
	r.stats, r.counts = nil, nil
	r.echo = false
}

// dropEcho drops the k of an mg whose key memcached may write back decoded,
// as raw bytes that would break its reply (memcache.Request.EchoesKeyRaw),
// and notes where it stood: the reply gets the key from the proxy, in base64
// as memcached writes the key of an item stored with b (appendLine).
func (r *mcRequest) dropEcho() {
	i := slices.IndexFunc(r.MetaFlags, func(t []byte) bool { return t[0] == 'k' })
	r.MetaFlags = slices.Delete(r.MetaFlags, i, i+1)
	r.echo, r.echoAt = true, i
}

// appendLine appends the reply line of r, line as the server wrote it. For an
// mg whose k the proxy dropped (dropEcho), the key goes back where k stood
// among the return flags, which memcached writes in the order of the
// request's: "k<key> b" before the first flag of a request flag after k, or
// the flags memcached adds at the end (W, X, Z), or at the end, on VA, HD
// and EN as memcached writes it there.
func (r *mcRequest) appendLine(dst, line []byte) []byte {
	status, rest, _ := bytes.Cut(line, space)
	switch string(status) {
	case "VA":
		var size []byte
		size, rest, _ = bytes.Cut(rest, space)
		dst = append(append(append(dst, status...), ' '), size...)
	case "HD", "EN":
		dst = append(dst, status...)
	default:
		return append(dst, line...)
	}
	later := func(f byte) bool {
		if f == 'W' || f == 'X' || f == 'Z' {
			return true
		}
		for _, t := range r.MetaFlags[r.echoAt:] {
			if t[0] == f {
				return true
			}
		}
		return false
	}
	echoed := false
	for len(rest) > 0 {
		var tok []byte
		tok, rest, _ = bytes.Cut(rest, space)
		if len(tok) == 0 {
			continue
		}
		if !echoed && later(tok[0]) {
			dst, echoed = r.appendKeyFlag(dst), true
		}
		dst = append(append(dst, ' '), tok...)
	}
	if !echoed {
		dst = r.appendKeyFlag(dst)
	}
	return dst
}

func (r *mcRequest) appendKeyFlag(dst []byte) []byte {
	return append(append(append(dst, " k"...), r.Keys[0]...), " b"...)
}

var space = []byte(" ")

func (r *mcRequest) command() int {
	if r.bad != "" {
		return 0
	}
	return int(r.Command)
}

// quoteLine keeps the start of the request's line, as written anew, for the
// log of its refusal: at most 128 bytes, without its end or a data block.
func (r *mcRequest) quoteLine() {
	r.badLine = memcache.AppendRequest(r.badLine[:0], &r.Request)
	if i := bytes.Index(r.badLine, []byte("\r\n")); i >= 0 {
		r.badLine = r.badLine[:i]
	}
	r.badLine = r.badLine[:min(len(r.badLine), 128)]
}

// refusal's class is the refusal's first sentence: memcached's usage of
// delete, after "bad command line format.", is the same refusal.
func (r *mcRequest) refusal() (string, []byte) {
	class, _, _ := strings.Cut(r.bad, ".")
	return class, r.badLine
}

func (r *mcRequest) nkeys() int            { return len(r.Keys) }
func (r *mcRequest) routeKey(i int) []byte { return r.RouteKey(i) }
func (r *mcRequest) splits() bool          { return r.Command.IsRetrieval() }
func (r *mcRequest) broadcast() bool       { return r.Command == memcache.CmdFlushAll }
func (r *mcRequest) size() int             { return len(r.Value) + r.held + r.lent }

func (r *mcRequest) appendRequest(dst []byte, keyCall []int, part int, rp reply) []byte {
	rep := rp.(*mcReply)
	if keyCall == nil {
		rep.req = &r.Request
		dst = memcache.AppendRequest(dst, &r.Request)
		if r.quiet {
			dst = append(dst, "mn\r\n"...)
		}
		return dst
	}
	// A retrieval split over servers: the command and this call's keys.
	p := &rep.part
	p.Reset()
	p.Command, p.Exptime = r.Command, r.Exptime
	for i, k := range r.Keys {
		if keyCall[i] == part {
			p.Keys = append(p.Keys, k)
		}
	}
	rep.req = p
	return memcache.AppendRequest(dst, p)
}

// appendLent lends a storage command's value of bigbuf.Min bytes or more
// (memcache.Request.TakeValue).
func (r *mcRequest) appendLent(dst []byte, keyCall []int, part int, rp reply, parts []lentPart) ([]byte, []lentPart) {
	if keyCall != nil || !r.Command.IsStorage() || len(r.Value) < bigbuf.Min {
		return r.appendRequest(dst, keyCall, part, rp), parts
	}
	rp.(*mcReply).req = &r.Request
	dst = memcache.AppendRequestHead(dst, &r.Request)
	if b, ok := r.TakeValue(); ok {
		r.lent = len(b)
		parts = append(parts, lentPart{at: len(dst), b: b})
	} else {
		dst = append(dst, r.Value...)
	}
	dst = append(dst, "\r\n"...)
	if r.quiet {
		dst = append(dst, "mn\r\n"...)
	}
	return dst, parts
}

func (r *mcRequest) appendReply(dst []byte, rp reply) []byte {
	rep := rp.(*mcReply)
	switch {
	case r.noreply:
		return dst
	case r.bad != "":
		return r.appendLocal(dst) // a refused set's delete (dropStale)
	case r.part:
		if !memcache.IsError(rep.resp.Line) {
			for i := range rep.resp.Items {
				dst = memcache.AppendItem(dst, &rep.resp.Items[i])
			}
		}
		return r.endPart(dst)
	case r.echo && !rep.resp.Quiet:
		dst = append(r.appendLine(dst, rep.resp.Line), "\r\n"...)
		if bytes.HasPrefix(rep.resp.Line, []byte("VA ")) {
			dst = append(append(dst, rep.resp.Value...), "\r\n"...)
		}
		return dst
	}
	return memcache.AppendResponse(dst, &rep.resp) // nothing if q hid it
}

// replyParts is appendReply in three parts, for a reply of one value of
// flushAt bytes or more: dst with what precedes the value, the value, and what
// follows it, so that the value is written as it came, not copied. For any
// other reply the value is nil.
func (r *mcRequest) replyParts(dst []byte, rp reply) (head, value, tail []byte) {
	resp := &rp.(*mcReply).resp
	switch {
	case r.noreply || r.bad != "" || r.part || resp.Quiet:
	case len(resp.Items) == 1 && string(resp.Line) == "END" && len(resp.Items[0].Value) >= flushAt:
		return memcache.AppendItemLine(dst, &resp.Items[0]), resp.Items[0].Value, crlfEnd
	case len(resp.Items) == 0 && bytes.HasPrefix(resp.Line, []byte("VA ")) && len(resp.Value) >= flushAt:
		if r.echo {
			return append(r.appendLine(dst, resp.Line), "\r\n"...), resp.Value, crlf
		}
		return append(append(dst, resp.Line...), "\r\n"...), resp.Value, crlf
	}
	return dst, nil, nil
}

var (
	crlf    = []byte("\r\n")
	crlfEnd = []byte("\r\nEND\r\n")
)

// endPart ends the reply to a part of a retrieval line: with END if it is the
// line's last.
func (r *mcRequest) endPart(dst []byte) []byte {
	if r.More {
		return dst
	}
	return append(dst, "END\r\n"...)
}

// merge appends the reply to a get split over servers: the values found, in
// the order of the request's keys, and END. The keys of servers that failed
// read as misses; if every server failed, the reply is the first failure.
// The reply to flush_all, sent to every server, is OK if every server said
// OK, and otherwise the first failure.
func (r *mcRequest) merge(dst []byte, keyCall []int, calls []*call, err error) []byte {
	if r.Command == memcache.CmdFlushAll {
		return r.mergeAll(dst, calls, err)
	}
	var failed *call
	ok := 0
	for _, cl := range calls {
		if cl.err == nil && !memcache.IsError(cl.reply.(*mcReply).resp.Line) {
			ok++
		} else if failed == nil {
			failed = cl
		}
	}
	if ok == 0 && !r.part {
		if failed.err != nil {
			return r.appendError(dst, failed.err)
		}
		return append(append(dst, failed.reply.(*mcReply).resp.Line...), "\r\n"...)
	}
	// The next item of each call's reply: replies hold the values found in
	// the order of their keys.
	var stack [16]int
	var next []int
	if len(calls) > len(stack) {
		next = make([]int, len(calls))
	} else {
		next = stack[:len(calls)]
	}
	for i, k := range r.Keys {
		ci := keyCall[i]
		if ci < 0 || calls[ci].err != nil {
			continue
		}
		rep := calls[ci].reply.(*mcReply)
		if memcache.IsError(rep.resp.Line) {
			continue
		}
		items := rep.resp.Items
		if j := next[ci]; j < len(items) && bytes.Equal(items[j].Key, k) {
			dst = memcache.AppendItem(dst, &items[j])
			next[ci]++
		}
	}
	if r.part {
		return r.endPart(dst)
	}
	return append(dst, "END\r\n"...)
}

// mergeAll is merge for a request sent to every server.
func (r *mcRequest) mergeAll(dst []byte, calls []*call, err error) []byte {
	if r.noreply {
		return dst
	}
	if len(calls) == 0 {
		return r.appendError(dst, err)
	}
	for _, cl := range calls {
		if cl.err != nil {
			return r.appendError(dst, fmt.Errorf("%s: %w", cl.srv.name, cl.err))
		}
		if line := cl.reply.(*mcReply).resp.Line; string(line) != "OK" {
			return append(append(dst, line...), "\r\n"...)
		}
	}
	return append(dst, "OK\r\n"...)
}

func (r *mcRequest) appendError(dst []byte, err error) []byte {
	switch {
	case r.noreply:
		return dst
	case r.bad != "":
		return r.appendLocal(dst) // a refused set's delete (dropStale)
	case r.part:
		return r.endPart(dst) // its keys read as misses
	}
	return append(append(append(dst, "SERVER_ERROR "...), err.Error()...), "\r\n"...)
}

func (r *mcRequest) appendLocal(dst []byte) []byte {
	switch {
	case r.noreply:
		return dst
	case r.bad != "":
		return append(append(dst, r.bad...), "\r\n"...)
	case r.Command == memcache.CmdMetaNoop:
		return append(dst, "MN\r\n"...)
	case r.Command == memcache.CmdVerbosity:
		return append(dst, "OK\r\n"...)
	case r.Command == memcache.CmdStats:
		if r.stats != nil {
			dst = r.stats.appendStats(dst, r.counts)
		}
		return append(dst, "END\r\n"...)
	case r.part:
		return r.endPart(dst) // a part of no keys
	case r.Command.IsRetrieval():
		return append(dst, "END\r\n"...)
	}
	return dst // quit
}

// mcReply is a memcached server's reply to one call.
type mcReply struct {
	resp memcache.Response
	// req is the request sent, whose grammar the reply must fit: the
	// client's, or part.
	req *memcache.Request
	// part is the request sent for the keys of one server, of a retrieval
	// split over servers.
	part memcache.Request
	// line is a status line rewritten by a warm-up (adopt).
	line []byte
	// built holds the key and flags of a request the proxy built in part.
	built []byte
}

var _ reply = (*mcReply)(nil)

func (r *mcReply) lookups() (hits, misses int, t touching) {
	if r.req == nil {
		return 0, 0, notTouched
	}
	switch cmd := r.req.Command; {
	case cmd.IsRetrieval():
		if cmd == memcache.CmdGat || cmd == memcache.CmdGats {
			t = readTouched
		}
		return len(r.resp.Items), len(r.req.Keys) - len(r.resp.Items), t
	case cmd == memcache.CmdMetaGet:
		// EN is a miss, which quiet mode hides; any other line (VA, HD)
		// found the item, or an error did not look. memcached counts an
		// item found and touched (T) as a touch, a miss as a get's miss
		// whether it asked to touch or not.
		switch s := r.resp.Status(); {
		case r.resp.Quiet || string(s) == "EN":
			return 0, 1, notTouched
		case string(s) == "VA" || string(s) == "HD":
			if r.req.HasMetaFlag('T') {
				return 1, 0, readTouched
			}
			return 1, 0, notTouched
		}
	case cmd == memcache.CmdTouch:
		switch string(r.resp.Line) {
		case "TOUCHED":
			return 1, 0, touchOnly
		case "NOT_FOUND":
			return 0, 1, touchOnly
		}
	}
	return 0, 0, notTouched
}

func (r *mcReply) size() int {
	n := len(r.resp.Line) + len(r.resp.Value)
	for i := range r.resp.Items {
		n += len(r.resp.Items[i].Key) + len(r.resp.Items[i].Value)
	}
	return n
}

// mcServer reads the replies of one server connection.
type mcServer struct {
	rd  *memcache.Reader
	lim memcache.Limits
	dry *replyDry // whole's, made on first use
}

func (s *mcServer) buffered() int { return s.rd.Buffered() }

func (s *mcServer) handshake(io.Writer) error { return nil }
func (s *mcServer) wait() error               { return s.rd.Wait() }

func (s *mcServer) read(rp reply) error {
	rep := rp.(*mcReply)
	if err := s.rd.ReadReply(&rep.resp, rep.req); err != nil {
		return badReply(err)
	}
	return nil
}

// badReply wraps a *memcache.Error, a reply out of its request's grammar, in
// errBadReply.
func badReply(err error) error {
	var me *memcache.Error
	if errors.As(err, &me) {
		return fmt.Errorf("%w: %v", errBadReply, err)
	}
	return err
}
