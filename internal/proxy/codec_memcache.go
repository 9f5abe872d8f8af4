package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/chash-dev/chash/internal/memcache"
)

// memcacheCodec is the codec of memcached's text protocol, classic and meta
// commands, read and written by package memcache.
type memcacheCodec struct {
	lim    memcache.Limits // what clients may send
	srvLim memcache.Limits // what servers may answer
	// readers holds the read buffers of client connections that are idle.
	readers sync.Pool
	names   []string
}

var _ codec = (*memcacheCodec)(nil)

// clientReadBuffer is the read buffer of a busy client connection: enough for
// a burst of pipelined requests, small enough that many busy clients cost
// little. Longer lines and values are read past it.
const clientReadBuffer = 4 << 10

// maxServerLine bounds the line of every request but get and gets that the
// proxy sends a server. memcached 1.6 closes a connection whose unfinished
// line, as far as it has read it, is over 2048 bytes, unless it is a get or
// gets: so a longer line may close the connection or not, depending on how
// its bytes arrive, and on a connection shared by many clients that would
// fail them all. Such lines need a meta flag or a gat key list far longer
// than any client sends in earnest.
const maxServerLine = 2048

func newMemcacheCodec(lim memcache.Limits) *memcacheCodec {
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
	return &mcClient{codec: c, src: &textOnly{r: r}}
}

// errBinary ends a client connection that speaks memcached's binary protocol,
// which the proxy does not: memcached tells the protocols apart by the first
// byte of a connection, 0x80 for binary, and so does the proxy, rather than
// wait for a text line that never comes.
var errBinary = errors.New("memcached's binary protocol is not served")

// textOnly reads r, and fails with errBinary if its first byte is 0x80.
type textOnly struct {
	r    io.Reader
	seen bool // the first byte was read
}

func (t *textOnly) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if !t.seen && n > 0 {
		t.seen = true
		if p[0] == 0x80 {
			return 0, errBinary
		}
	}
	return n, err
}

func (c *memcacheCodec) newServer(r io.Reader) serverCodec {
	return &mcServer{rd: memcache.NewReader(r, c.srvLim)}
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
}

func (c *mcClient) buffered() int {
	if c.rd == nil {
		return 0
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
	}
	if err := c.rd.ReadRequest(&req.Request); err != nil {
		var me *memcache.Error
		if !errors.As(err, &me) {
			return 0, err
		}
		req.bad = me.Reply
		if me.Fatal {
			return closeAfter, nil
		}
		return local, nil
	}
	switch cmd := req.Command; {
	case cmd == memcache.CmdQuit:
		return closeAfter, nil
	case cmd == memcache.CmdMetaNoop:
		return local, nil
	case cmd.IsRetrieval() && len(req.Keys) == 0:
		return local, nil // gat with no keys: memcached answers END
	}
	if bad := forServer(&req.Request); bad != "" {
		// memcached answers nothing to a noreply request it refuses once it
		// has read the line.
		req.bad, req.noreply = bad, req.Noreply
		return local, nil
	}
	// Servers are always asked for a reply, so that a server connection never
	// loses step; the proxy keeps the reply from the client instead.
	if req.Noreply {
		req.noreply, req.Noreply = true, false
	}
	if req.Command.IsMeta() && req.RemoveMetaFlag('q') {
		req.quiet = true
	}
	return forward, nil
}

// forServer checks what a server will read of req, beyond the parser's
// checks, and returns memcached's reply refusing req, or "" if it may go.
// Whatever the parser accepts, a server must split the line the proxy writes
// into exactly the tokens the proxy parsed: only keys and meta flags are
// written as the client sent them (numbers and the rest are written anew), so
// they may hold no space and no control byte (memcached ends a line at a NUL,
// for one), and a key is at most 250 bytes as sent, a base64 key too. And the
// line must be one a shared connection takes whole (maxServerLine).
func forServer(req *memcache.Request) string {
	n := len(req.Command.String()) + 100 // and numbers, noreply, line end
	for _, k := range req.Keys {
		if len(k) > memcache.MaxKeyLen || !plainToken(k) {
			return memcache.ReplyBadFormat
		}
		n += 1 + len(k)
	}
	for _, f := range req.MetaFlags {
		if !plainToken(f) {
			return memcache.ReplyBadFormat
		}
		n += 1 + len(f)
	}
	if n > maxServerLine && req.Command != memcache.CmdGet && req.Command != memcache.CmdGets {
		return memcache.ReplyLineTooLong
	}
	return ""
}

// plainToken reports whether t is one or more bytes, none a space or a
// control byte (NUL, CR, LF, tab, DEL, ...).
func plainToken(t []byte) bool {
	if len(t) == 0 {
		return false
	}
	for _, b := range t {
		if b <= ' ' || b == 0x7f {
			return false
		}
	}
	return true
}

// mcRequest is a memcached request and how the proxy answers it.
type mcRequest struct {
	memcache.Request
	bad     string // memcached's reply refusing the request; empty if it is good
	noreply bool   // the client asked for no reply (the server is asked for one)
	quiet   bool   // a meta command's q flag: no reply for its usual success
}

var _ request = (*mcRequest)(nil)

func (r *mcRequest) reset() {
	r.bad, r.noreply, r.quiet = "", false, false
}

func (r *mcRequest) command() int {
	if r.bad != "" {
		return 0
	}
	return int(r.Command)
}

func (r *mcRequest) nkeys() int            { return len(r.Keys) }
func (r *mcRequest) routeKey(i int) []byte { return r.RouteKey(i) }
func (r *mcRequest) splits() bool          { return r.Command.IsRetrieval() }
func (r *mcRequest) size() int             { return len(r.Value) }

func (r *mcRequest) appendRequest(dst []byte, keyCall []int, part int, rp reply) []byte {
	rep := rp.(*mcReply)
	rep.cmd = r.Command
	if keyCall == nil {
		rep.maxItems = len(r.Keys)
		return memcache.AppendRequest(dst, &r.Request)
	}
	// A retrieval split over servers: the command and this call's keys.
	dst = append(dst, r.Command.String()...)
	if r.Command == memcache.CmdGat || r.Command == memcache.CmdGats {
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, r.Exptime, 10)
	}
	n := 0
	for i, k := range r.Keys {
		if keyCall[i] == part {
			dst = append(append(dst, ' '), k...)
			n++
		}
	}
	rep.maxItems = n
	return append(dst, "\r\n"...)
}

func (r *mcRequest) appendReply(dst []byte, rp reply) []byte {
	rep := rp.(*mcReply)
	if r.noreply {
		return dst
	}
	if r.quiet {
		s := rep.resp.Status()
		if r.Command == memcache.CmdMetaGet && string(s) == "EN" ||
			r.Command != memcache.CmdMetaGet && string(s) == "HD" {
			return dst
		}
	}
	return memcache.AppendResponse(dst, &rep.resp)
}

// merge appends the reply to a get split over servers: the values found, in
// the order of the request's keys, and END. The keys of servers that failed
// read as misses; if every server failed, the reply is the first failure.
func (r *mcRequest) merge(dst []byte, keyCall []int, calls []*call, _ error) []byte {
	var failed *call
	ok := 0
	for _, cl := range calls {
		if cl.err == nil && !memcache.IsError(cl.reply.(*mcReply).resp.Line) {
			ok++
		} else if failed == nil {
			failed = cl
		}
	}
	if ok == 0 {
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
	return append(dst, "END\r\n"...)
}

func (r *mcRequest) appendError(dst []byte, err error) []byte {
	if r.noreply {
		return dst
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
	case r.Command.IsRetrieval():
		return append(dst, "END\r\n"...)
	}
	return dst // quit
}

// mcReply is a memcached server's reply to one call.
type mcReply struct {
	resp     memcache.Response
	cmd      memcache.Command // of the request sent
	maxItems int              // the keys of a retrieval sent
	line     []byte           // a line rewritten by a warm-up (adopt)
}

var _ reply = (*mcReply)(nil)

func (r *mcReply) size() int {
	n := len(r.resp.Line) + len(r.resp.Value)
	for i := range r.resp.Items {
		n += len(r.resp.Items[i].Key) + len(r.resp.Items[i].Value)
	}
	return n
}

// mcServer reads the replies of one server connection.
type mcServer struct {
	rd *memcache.Reader
}

func (s *mcServer) handshake(io.Writer) error { return nil }
func (s *mcServer) wait() error               { return s.rd.Wait() }

func (s *mcServer) read(rp reply) error {
	rep := rp.(*mcReply)
	err := s.rd.ReadResponse(&rep.resp, rep.cmd, rep.maxItems)
	if err != nil {
		return badReply(err)
	}
	if !validReply(rep.cmd, rep.resp.Line) {
		return fmt.Errorf("%w: %q is no reply to %s", errBadReply, rep.resp.Line, rep.cmd)
	}
	return nil
}

// validReply reports whether line, the last line of a reply that
// memcache.Reader read, is one memcached sends for cmd: its status (the first
// token) is one of cmd's, or an error; no byte of it is a control byte.
func validReply(cmd memcache.Command, line []byte) bool {
	for _, b := range line {
		if b < ' ' || b == 0x7f {
			return false
		}
	}
	if memcache.IsError(line) {
		return true
	}
	status, rest, _ := bytes.Cut(line, []byte(" "))
	switch cmd {
	case memcache.CmdGet, memcache.CmdGets, memcache.CmdGat, memcache.CmdGats:
		return string(line) == "END"
	case memcache.CmdSet, memcache.CmdAdd, memcache.CmdReplace, memcache.CmdAppend, memcache.CmdPrepend, memcache.CmdCas:
		return oneOf(line, "STORED", "NOT_STORED", "EXISTS", "NOT_FOUND")
	case memcache.CmdDelete:
		return oneOf(line, "DELETED", "NOT_FOUND")
	case memcache.CmdTouch:
		return oneOf(line, "TOUCHED", "NOT_FOUND")
	case memcache.CmdIncr, memcache.CmdDecr:
		return isNumber(line) || string(line) == "NOT_FOUND"
	case memcache.CmdVersion:
		return string(status) == "VERSION" && len(rest) > 0
	case memcache.CmdMetaGet:
		return oneOf(status, "VA", "HD", "EN")
	case memcache.CmdMetaSet:
		return oneOf(status, "HD", "NS", "EX", "NF")
	case memcache.CmdMetaDelete:
		return oneOf(status, "HD", "NF", "EX")
	case memcache.CmdMetaArithmetic:
		return oneOf(status, "HD", "VA", "NF", "NS", "EX")
	case memcache.CmdMetaDebug:
		return string(status) == "ME" && len(rest) > 0 || string(line) == "EN"
	}
	return false
}

func oneOf(s []byte, set ...string) bool {
	for _, t := range set {
		if string(s) == t {
			return true
		}
	}
	return false
}

// isNumber reports whether b is the decimal number of an incr or decr reply:
// 1 to 20 digits.
func isNumber(b []byte) bool {
	if len(b) == 0 || len(b) > 20 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// badReply wraps a *memcache.Error, a reply out of grammar, in errBadReply.
func badReply(err error) error {
	var me *memcache.Error
	if errors.As(err, &me) {
		return fmt.Errorf("%w: %v", errBadReply, err)
	}
	return err
}
