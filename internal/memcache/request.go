package memcache

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"math"
	"strconv"
)

// maxMetaTokens is the most tokens (command, key, data length and flags) memcached
// accepts on a meta command line.
const maxMetaTokens = 19

// Request is one command as a client sends it.
type Request struct {
	Command Command
	// Keys holds the keys as sent: one for most commands, one or more for
	// retrievals; none for version, quit and mn. A meta command's key is the token
	// as sent, base64 when the b flag is given; RouteKey decodes it.
	Keys [][]byte
	// Flags is the client flags of a classic storage command.
	Flags uint32
	// Exptime is the expiration time of a classic storage command, touch, gat and
	// gats.
	Exptime int64
	// Cas is the compare-and-swap token of a cas command.
	Cas uint64
	// Delta is the amount of incr and decr.
	Delta uint64
	// Noreply asks a classic command not to be answered.
	Noreply bool
	// MetaFlags holds the flag tokens of a meta command, after the key (and, for ms,
	// the data length), as sent: "v", "T30", "O123", ...
	MetaFlags [][]byte
	// Value is the data block of a storage command, without its "\r\n".
	Value []byte

	line    []byte // copy of the command line; Keys and MetaFlags point into it
	tokens  [][]byte
	decoded []byte // the decoded key of a meta command with the b flag
}

// Reset clears r, keeping its memory for reuse.
func (r *Request) Reset() {
	*r = Request{
		Keys:      r.Keys[:0],
		MetaFlags: r.MetaFlags[:0],
		Value:     r.Value[:0],
		line:      r.line[:0],
		tokens:    r.tokens[:0],
		decoded:   r.decoded[:0],
	}
}

// Key returns the first key, or nil.
func (r *Request) Key() []byte {
	if len(r.Keys) == 0 {
		return nil
	}
	return r.Keys[0]
}

// RouteKey returns key i as the server stores it: the key itself, or for a meta
// command with the b flag, the key base64-decoded.
func (r *Request) RouteKey(i int) []byte {
	if r.Command.IsMeta() && i == 0 && r.HasMetaFlag('b') {
		return r.decoded
	}
	return r.Keys[i]
}

// HasMetaFlag reports whether the meta flag f (a letter) was given.
func (r *Request) HasMetaFlag(f byte) bool {
	for _, t := range r.MetaFlags {
		if t[0] == f {
			return true
		}
	}
	return false
}

// RemoveMetaFlag removes every meta flag f and reports whether there was one.
func (r *Request) RemoveMetaFlag(f byte) bool {
	out := r.MetaFlags[:0]
	for _, t := range r.MetaFlags {
		if t[0] != f {
			out = append(out, t)
		}
	}
	found := len(out) != len(r.MetaFlags)
	r.MetaFlags = out
	return found
}

// A Reader reads requests or responses from a stream.
type Reader struct {
	br   *bufio.Reader
	lim  Limits
	long []byte // a line longer than br's buffer
}

// NewReader returns a Reader of rd with the given limits and a 16 KiB buffer.
func NewReader(rd io.Reader, lim Limits) *Reader {
	return NewReaderSize(rd, lim, 16<<10)
}

// NewReaderSize is NewReader with a buffer of the given size.
func NewReaderSize(rd io.Reader, lim Limits, size int) *Reader {
	return &Reader{br: bufio.NewReaderSize(rd, size), lim: lim}
}

// Reset makes r read from rd, discarding buffered data.
func (r *Reader) Reset(rd io.Reader) {
	r.br.Reset(rd)
}

// Buffered returns the number of bytes that can be read without waiting.
func (r *Reader) Buffered() int { return r.br.Buffered() }

// Wait waits until at least one byte can be read without waiting, or the read
// fails. A failed Wait may be retried (after a read deadline, say).
func (r *Reader) Wait() error {
	_, err := r.br.Peek(1)
	return err
}

// readLine returns the next line without its "\n" or "\r\n". The line is valid
// until the next read. A line longer than the limit is a fatal *Error; the stream
// is left somewhere inside it.
func (r *Reader) readLine() ([]byte, error) {
	max := r.lim.maxLine()
	line, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		r.long = append(r.long[:0], line...)
		for err == bufio.ErrBufferFull && len(r.long) <= max+1 {
			line, err = r.br.ReadSlice('\n')
			r.long = append(r.long, line...)
		}
		line = r.long
	}
	if err != nil && err != bufio.ErrBufferFull {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = trimEOL(line)
	if err == bufio.ErrBufferFull || len(line) > max {
		return nil, newError(ReplyLineTooLong, line, true)
	}
	return line, nil
}

func trimEOL(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
	}
	return line
}

// split appends the space-separated tokens of line to dst.
func split(dst [][]byte, line []byte) [][]byte {
	for {
		for len(line) > 0 && line[0] == ' ' {
			line = line[1:]
		}
		if len(line) == 0 {
			return dst
		}
		i := bytes.IndexByte(line, ' ')
		if i < 0 {
			return append(dst, line)
		}
		dst = append(dst, line[:i])
		line = line[i+1:]
	}
}

// readData reads a data block of n bytes and its "\r\n" into dst.
func (r *Reader) readData(dst []byte, n int) ([]byte, error) {
	if cap(dst) < n+2 {
		dst = make([]byte, n+2)
	}
	dst = dst[:n+2]
	if _, err := io.ReadFull(r.br, dst); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return dst[:0], err
	}
	if dst[n] != '\r' || dst[n+1] != '\n' {
		return dst[:0], errBadChunk
	}
	return dst[:n], nil
}

var errBadChunk = errors.New("bad chunk")

// swallow discards n bytes.
func (r *Reader) swallow(n int) error {
	_, err := r.br.Discard(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// ReadRequest reads the next request into req, reusing req's memory. At the end
// of the stream it returns io.EOF. Bad input is an *Error: the request was
// consumed as memcached consumes it, and unless the error is Fatal the next
// request can be read.
func (r *Reader) ReadRequest(req *Request) error {
	req.Reset()
	line, err := r.readLine()
	if err != nil {
		return err
	}
	req.line = append(req.line[:0], line...)
	line = req.line
	req.tokens = split(req.tokens[:0], line)
	tok := req.tokens
	if len(tok) == 0 {
		return newError(ReplyError, line, false)
	}
	req.Command = parseCommand(tok[0])
	switch c := req.Command; {
	case c.IsRetrieval():
		return req.parseRetrieval(tok)
	case c == CmdMetaSet:
		return r.parseMetaSet(req, tok)
	case c.IsStorage():
		return r.parseStorage(req, tok)
	case c.IsMeta():
		return req.parseMeta(tok)
	}
	switch req.Command {
	case CmdDelete:
		return req.parseDelete(tok)
	case CmdIncr, CmdDecr:
		if len(tok) != 3 && len(tok) != 4 {
			return newError(ReplyError, line, false)
		}
		if err := req.setKey(tok[1]); err != nil {
			return err
		}
		d, ok := parseUint(tok[2], 64)
		if !ok {
			return newError(ReplyBadDelta, line, false)
		}
		req.Delta = d
		req.Noreply = len(tok) == 4 && isNoreply(tok[3])
	case CmdTouch:
		if len(tok) != 3 && len(tok) != 4 {
			return newError(ReplyError, line, false)
		}
		if err := req.setKey(tok[1]); err != nil {
			return err
		}
		e, ok := parseInt(tok[2])
		if !ok {
			return newError(ReplyBadExptime, line, false)
		}
		req.Exptime = e
		req.Noreply = len(tok) == 4 && isNoreply(tok[3])
	case CmdVersion, CmdQuit:
		// memcached ignores further tokens.
	default:
		return newError(ReplyError, line, false)
	}
	return nil
}

func isNoreply(t []byte) bool { return string(t) == "noreply" }

func parseCommand(t []byte) Command {
	switch string(t) {
	case "get":
		return CmdGet
	case "gets":
		return CmdGets
	case "gat":
		return CmdGat
	case "gats":
		return CmdGats
	case "set":
		return CmdSet
	case "add":
		return CmdAdd
	case "replace":
		return CmdReplace
	case "append":
		return CmdAppend
	case "prepend":
		return CmdPrepend
	case "cas":
		return CmdCas
	case "delete":
		return CmdDelete
	case "incr":
		return CmdIncr
	case "decr":
		return CmdDecr
	case "touch":
		return CmdTouch
	case "version":
		return CmdVersion
	case "quit":
		return CmdQuit
	case "mg":
		return CmdMetaGet
	case "ms":
		return CmdMetaSet
	case "md":
		return CmdMetaDelete
	case "ma":
		return CmdMetaArithmetic
	case "me":
		return CmdMetaDebug
	case "mn":
		return CmdMetaNoop
	}
	return CmdUnknown
}

func (req *Request) setKey(k []byte) error {
	if len(k) > MaxKeyLen {
		return newError(ReplyBadFormat, req.line, false)
	}
	req.Keys = append(req.Keys, k)
	return nil
}

func (req *Request) parseRetrieval(tok [][]byte) error {
	first := 1
	if req.Command == CmdGat || req.Command == CmdGats {
		if len(tok) < 2 {
			return newError(ReplyError, req.line, false)
		}
		e, ok := parseInt(tok[1])
		if !ok {
			return newError(ReplyBadExptime, req.line, false)
		}
		req.Exptime = e
		first = 2
	}
	if len(tok) <= first {
		if first == 2 {
			// memcached answers a gat without keys with an empty result.
			return nil
		}
		return newError(ReplyError, req.line, false)
	}
	for _, k := range tok[first:] {
		if err := req.setKey(k); err != nil {
			return err
		}
	}
	return nil
}

// parseStorage parses "set <key> <flags> <exptime> <bytes> [noreply]" and the
// other classic storage commands, cas with <cas unique> before noreply, and reads
// the data block. Like memcached, it leaves the data block unread when the command
// line is bad (so it is read as the next command) and swallows it when the value is
// too large.
func (r *Reader) parseStorage(req *Request, tok [][]byte) error {
	n := 5
	if req.Command == CmdCas {
		n = 6
	}
	if len(tok) != n && len(tok) != n+1 {
		return newError(ReplyError, req.line, false)
	}
	if err := req.setKey(tok[1]); err != nil {
		return err
	}
	// memcached keeps the low 32 bits of larger flags.
	flags, ok1 := parseUint(tok[2], 64)
	exp, ok2 := parseInt(tok[3])
	size, ok3 := parseUint(tok[4], 31)
	ok4 := true
	if req.Command == CmdCas {
		req.Cas, ok4 = parseUint(tok[5], 64)
	}
	if !ok1 || !ok2 || !ok3 || !ok4 || size > math.MaxInt32-2 {
		return newError(ReplyBadFormat, req.line, false)
	}
	req.Flags, req.Exptime = uint32(flags), exp
	req.Noreply = len(tok) == n+1 && isNoreply(tok[n])
	return r.readValue(req, int(size))
}

func (r *Reader) readValue(req *Request, size int) error {
	if size > r.lim.maxValue() {
		if err := r.swallow(size + 2); err != nil {
			return err
		}
		return newError(ReplyTooLarge, req.line, false)
	}
	v, err := r.readData(req.Value, size)
	req.Value = v
	if err == errBadChunk {
		return newError(ReplyBadChunk, req.line, false)
	}
	return err
}

// parseDelete parses "delete <key> [0] [noreply]", accepting what memcached
// accepts.
func (req *Request) parseDelete(tok [][]byte) error {
	if len(tok) < 2 {
		return newError(ReplyError, req.line, false)
	}
	if len(tok) > 4 {
		return newError(ReplyBadDeleteUsage, req.line, false)
	}
	if err := req.setKey(tok[1]); err != nil {
		return err
	}
	switch len(tok) {
	case 3:
		req.Noreply = isNoreply(tok[2])
		if !req.Noreply && string(tok[2]) != "0" {
			return newError(ReplyBadDeleteUsage, req.line, false)
		}
	case 4:
		req.Noreply = isNoreply(tok[3])
		if !req.Noreply || string(tok[2]) != "0" {
			return newError(ReplyBadDeleteUsage, req.line, false)
		}
	}
	return nil
}

// parseMeta parses mg, md, ma, me and mn. Flags are kept as sent; the server
// checks them.
func (req *Request) parseMeta(tok [][]byte) error {
	if req.Command == CmdMetaNoop {
		return nil
	}
	if len(tok) < 2 {
		return newError(ReplyError, req.line, false)
	}
	if req.Command != CmdMetaDebug && len(tok) > maxMetaTokens {
		reply := "CLIENT_ERROR options flags too long"
		if req.Command == CmdMetaGet {
			reply = "CLIENT_ERROR options flags are too long"
		}
		return newError(reply, req.line, false)
	}
	req.MetaFlags = append(req.MetaFlags, tok[2:]...)
	return req.setMetaKey(tok[1])
}

// setMetaKey sets the key of a meta command, decoding it if the b flag is given.
func (req *Request) setMetaKey(k []byte) error {
	if !req.HasMetaFlag('b') {
		return req.setKey(k)
	}
	if len(k) > base64.StdEncoding.EncodedLen(MaxKeyLen) {
		return newError(ReplyBadFormat, req.line, false)
	}
	req.Keys = append(req.Keys, k)
	n := base64.StdEncoding.DecodedLen(len(k))
	if cap(req.decoded) < n {
		req.decoded = make([]byte, n)
	}
	n, err := base64.StdEncoding.Decode(req.decoded[:n], k)
	if err != nil || n == 0 || n > MaxKeyLen {
		return newError(ReplyBadKeyEncoding, req.line, false)
	}
	req.decoded = req.decoded[:n]
	return nil
}

// parseMetaSet parses "ms <key> <datalen> <flags>*" and reads the data block.
func (r *Reader) parseMetaSet(req *Request, tok [][]byte) error {
	if len(tok) < 3 {
		if len(tok) < 2 {
			return newError(ReplyError, req.line, false)
		}
		return newError(ReplyBadFormat, req.line, false)
	}
	if len(tok) > maxMetaTokens {
		return newError("CLIENT_ERROR options flags too long", req.line, false)
	}
	req.MetaFlags = append(req.MetaFlags, tok[3:]...)
	size, ok := parseUint(tok[2], 31)
	if !ok || size > math.MaxInt32-2 || len(tok[1]) > base64.StdEncoding.EncodedLen(MaxKeyLen) {
		return newError(ReplyBadFormat, req.line, false)
	}
	if err := req.setMetaKey(tok[1]); err != nil {
		var e *Error
		if errors.As(err, &e) && e.Reply == ReplyBadKeyEncoding {
			// memcached swallows the data of an ms whose key does not decode.
			if err := r.swallow(int(size) + 2); err != nil {
				return err
			}
		}
		return err
	}
	return r.readValue(req, int(size))
}

// parseUint parses a decimal number of at most the given bits, digits only.
func parseUint(b []byte, bitSize int) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if bitSize < 64 && n >= 1<<bitSize {
		return 0, false
	}
	return n, true
}

// parseInt parses a signed decimal number.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	n, ok := parseUint(b, 63)
	if !ok {
		return 0, false
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}

// AppendRequest appends req as a client sends it. A request that ReadRequest
// returned without error is written so that reading it again gives the same
// request; extra tokens memcached ignores are left out.
func AppendRequest(dst []byte, req *Request) []byte {
	c := req.Command
	dst = append(dst, c.String()...)
	switch {
	case c.IsRetrieval():
		if c == CmdGat || c == CmdGats {
			dst = append(dst, ' ')
			dst = strconv.AppendInt(dst, req.Exptime, 10)
		}
		for _, k := range req.Keys {
			dst = append(append(dst, ' '), k...)
		}
	case c == CmdMetaSet:
		dst = append(append(dst, ' '), req.Key()...)
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, int64(len(req.Value)), 10)
		dst = appendFlags(dst, req.MetaFlags)
	case c.IsStorage():
		dst = append(append(dst, ' '), req.Key()...)
		dst = append(dst, ' ')
		dst = strconv.AppendUint(dst, uint64(req.Flags), 10)
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, req.Exptime, 10)
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, int64(len(req.Value)), 10)
		if c == CmdCas {
			dst = append(dst, ' ')
			dst = strconv.AppendUint(dst, req.Cas, 10)
		}
	case c.IsMeta():
		if c != CmdMetaNoop {
			dst = append(append(dst, ' '), req.Key()...)
			dst = appendFlags(dst, req.MetaFlags)
		}
	case c == CmdDelete:
		dst = append(append(dst, ' '), req.Key()...)
	case c == CmdIncr || c == CmdDecr:
		dst = append(append(dst, ' '), req.Key()...)
		dst = append(dst, ' ')
		dst = strconv.AppendUint(dst, req.Delta, 10)
	case c == CmdTouch:
		dst = append(append(dst, ' '), req.Key()...)
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, req.Exptime, 10)
	}
	if req.Noreply && !c.IsMeta() && !c.IsRetrieval() && c != CmdVersion && c != CmdQuit {
		dst = append(dst, " noreply"...)
	}
	dst = append(dst, "\r\n"...)
	if c.IsStorage() {
		dst = append(append(dst, req.Value...), "\r\n"...)
	}
	return dst
}

func appendFlags(dst []byte, flags [][]byte) []byte {
	for _, f := range flags {
		dst = append(append(dst, ' '), f...)
	}
	return dst
}
