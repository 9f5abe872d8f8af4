package memcache

import (
	"bytes"
	"encoding/base64"
	"io"
	"math"
	"strconv"

	"github.com/chash-dev/chash/internal/bigbuf"
)

// Request is one command as a client sends it.
type Request struct {
	Command Command
	// Keys holds the keys: one for most commands, one or more for retrievals;
	// none for version, quit and mn. A meta command's key with the b flag is in
	// base64, as sent and as memcached writes it; RouteKey decodes it.
	Keys [][]byte
	// Flags is the client flags of a classic storage command.
	Flags uint32
	// Exptime is the expiration time of a classic storage command, touch, gat and
	// gats: memcached's 32-bit signed number.
	Exptime int64
	// Cas is the compare-and-swap token of a cas command.
	Cas uint64
	// Delta is the amount of incr and decr.
	Delta uint64
	// Noreply asks a classic command not to be answered.
	Noreply bool
	// MetaFlags holds the flags of a meta command, after the key (and, for ms, the
	// data length), in the order sent and written as AppendRequest writes them:
	// the flag's letter and its token, numbers in canonical decimal ("v", "T30",
	// "O123", ...). Every flag appears at most once.
	MetaFlags [][]byte
	// Value is the data block of a storage command, without its "\r\n".
	Value []byte
	// Args holds the arguments of stats (its subcommand and what follows) and
	// the level of verbosity; the delay of flush_all is in Exptime.
	Args [][]byte
	// More says that the request is a part of a retrieval line that goes on:
	// the next request read holds the next keys of the same line (see
	// Limits.Parts).
	More bool

	value   []byte   // the memory Value was read into, the Request's own
	line    []byte   // copy of the command line; Keys and MetaFlags point into it
	tokens  [][]byte // the line's tokens
	decoded []byte   // the decoded key of a meta command with the b flag
	canon   []byte   // meta flag tokens rewritten in canonical form
}

// Reset clears r, keeping its memory for reuse, except buffers grown past 64 KiB
// for one large request: a value's is given back for other requests and
// replies (bigbuf), and nothing of r's last value may be used afterwards.
func (r *Request) Reset() {
	// Field by field: reslicing writes only lengths, where assigning a whole
	// Request would write every pointer again.
	r.Command = CmdUnknown
	r.Keys = r.Keys[:0]
	r.Flags, r.Exptime, r.Cas, r.Delta, r.Noreply, r.More = 0, 0, 0, 0, false, false
	r.MetaFlags = r.MetaFlags[:0]
	r.Args = r.Args[:0]
	// Value may be memory the caller set, which is not r's to give back.
	r.Value = nil
	r.value = keepOwn(r.value)
	r.line = keep(r.line)
	r.tokens = r.tokens[:0]
	r.decoded = r.decoded[:0]
	r.canon = r.canon[:0]
}

func keep(b []byte) []byte {
	if cap(b) > maxKeep {
		return nil
	}
	return b[:0]
}

// keepOwn is keep for memory that a Request or Response read a value into,
// its own: a buffer it does not keep is given back for reuse (bigbuf).
func keepOwn(b []byte) []byte {
	if cap(b) > maxKeep {
		bigbuf.Give(b)
		return nil
	}
	return b[:0]
}

// Key returns the first key, or nil.
func (r *Request) Key() []byte {
	if len(r.Keys) == 0 {
		return nil
	}
	return r.Keys[0]
}

// RouteKey returns key i as the server stores it: the key itself, or for a meta
// command with the b flag, the key base64-decoded (nil if it does not decode).
// ReadRequest decodes the key as it reads it; for a request built in code, the
// first call decodes it, and keeps it until Reset.
func (r *Request) RouteKey(i int) []byte {
	if r.Command.IsMeta() && i == 0 && r.HasMetaFlag('b') {
		if len(r.decoded) == 0 {
			r.decoded, _ = decodeKey(r.decoded[:0], r.Keys[0])
		}
		return r.decoded
	}
	return r.Keys[i]
}

// HasMetaFlag reports whether the meta flag f (a letter) was given.
func (r *Request) HasMetaFlag(f byte) bool {
	_, ok := r.MetaFlag(f)
	return ok
}

// MetaFlag returns the token of meta flag f, after its letter ("30" of "T30"),
// and whether the flag was given.
func (r *Request) MetaFlag(f byte) ([]byte, bool) {
	for _, t := range r.MetaFlags {
		if t[0] == f {
			return t[1:], true
		}
	}
	return nil, false
}

// EchoesKeyRaw reports whether memcached may write r's key back decoded, as
// raw bytes in its reply line: an mg with b and k whose key decodes to a
// space or a control character. memcached writes k's key in base64 for an
// item ms stored with b, but as it is for one mg or ma made with N. Validate
// refuses such a request; ReadRequest returns it, for a proxy to drop its k
// (RemoveMetaFlag) and write the key back itself as memcached writes a base64
// key: "k<key> b", where k stood among the return flags.
func (r *Request) EchoesKeyRaw() bool {
	if r.Command != CmdMetaGet || len(r.Keys) != 1 || !r.HasMetaFlag('b') || !r.HasMetaFlag('k') {
		return false
	}
	key := r.RouteKey(0)
	return key != nil && !plainToken(key)
}

// RemoveMetaFlag removes the meta flag f and reports whether it was given.
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

// ReadRequest reads the next request into req, reusing req's memory. At the end
// of the stream it returns io.EOF. A request memcached could read otherwise than
// req says is refused with an *Error (see the package documentation): unless the
// error is Fatal, the request was consumed, data block included, and the next
// request can be read.
func (r *Reader) ReadRequest(req *Request) error {
	req.Reset()
	if r.part != CmdUnknown {
		r.req = req
		return r.nextPart()
	}
	b, err := r.br.Peek(1)
	if err != nil {
		return err
	}
	if b[0] == binaryMagic && !r.started {
		return newError(ReplyBinary, b, true)
	}
	r.started = true
	var line []byte
	whole := true
	if r.lim.Parts {
		line, whole, err = r.readPiece(r.lim.maxLine())
	} else {
		line, err = r.readLine(r.lim.maxLine())
	}
	if err != nil {
		return err
	}
	req.line = append(req.line, line...)
	line = req.line
	var ctl bool
	req.tokens, ctl, _ = split(req.tokens[:0], line)
	tok := req.tokens
	c := CmdUnknown
	if len(tok) > 0 {
		c = parseCommand(tok[0])
	}
	if !whole && !c.IsRetrieval() {
		// Only retrievals are read in parts: the stream is left somewhere
		// inside the line, as readLine leaves it.
		return newError(ReplyLineTooLong, line, true)
	}
	if len(tok) == 0 {
		return newError(ReplyError, line, false)
	}
	req.Command = c
	if c == CmdUnknown {
		return newError(ReplyError, line, false)
	}
	r.req, r.ctl, r.base64 = req, ctl, false
	if c.IsRetrieval() && r.lim.Parts && (!whole || len(line) > r.partMax(c)) {
		return r.firstPart(whole)
	}
	if len(line) > r.lim.maxLine() {
		return newError(ReplyLineTooLong, line, true) // as readLine refuses it
	}
	if c != CmdGet && c != CmdGets && len(line) > r.lim.maxCommandLine() {
		return r.tooLong()
	}
	switch {
	case c.IsRetrieval():
		return r.retrieval()
	case c == CmdMetaSet:
		return r.metaSet()
	case c.IsStorage():
		return r.storage()
	case c.IsMeta():
		return r.meta()
	}
	switch c {
	case CmdDelete:
		return r.delete()
	case CmdIncr, CmdDecr, CmdTouch:
		return r.keyNumber()
	case CmdStats, CmdFlushAll, CmdVerbosity:
		return r.admin()
	}
	// version and quit: memcached ignores further tokens.
	if r.ctl {
		return r.fail(ReplyBadFormat)
	}
	return nil
}

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
	case "stats":
		return CmdStats
	case "flush_all":
		return CmdFlushAll
	case "verbosity":
		return CmdVerbosity
	}
	return CmdUnknown
}

// The methods below check r.req, the request ReadRequest is reading, in the
// order memcached checks it, so that a line with several faults is answered as
// memcached answers it. They are methods of the Reader, which holds what they
// share, rather than of a parser made for each request: a request is read in
// tens of nanoseconds, and building one cost a tenth of that.

// fail returns the *Error of reply for the request's line.
func (r *Reader) fail(reply string) *Error {
	e := newError(reply, r.req.line, false)
	e.Noreply = r.req.Noreply
	return e
}

// fatal is fail for a request whose stream cannot be read further.
func (r *Reader) fatal(reply string) *Error {
	e := r.fail(reply)
	e.Fatal = true
	return e
}

// refuse returns the *Error of reply for a storage command, after skipping its
// data block of size bytes if sizeOK says the size could be read. Otherwise, or
// if the block does not end where its size says, the error is fatal: the bytes
// that follow are a value, not a command. If the input ends within the block,
// the error says to answer nothing: memcached refuses the request at its line
// (a set's value too large, it drops the key's item there) and closes the
// connection at the end of the input without a reply.
func (r *Reader) refuse(reply string, size int, sizeOK bool) error {
	if !sizeOK {
		return r.fatal(reply)
	}
	ended, err := r.skipData(size)
	if err == io.ErrUnexpectedEOF {
		e := r.fail(reply)
		e.Noreply, e.Cut = true, true
		return e
	}
	if err != nil {
		return err
	}
	e := r.fail(reply)
	e.Fatal = !ended
	return e
}

// tooLong refuses a line, other than get or gets, longer than memcached reads
// whole: memcached would close the connection. The Reader read the line, so it
// goes on, after the data block of a storage command whose length it can read.
func (r *Reader) tooLong() error {
	c, tok := r.req.Command, r.req.tokens
	switch {
	case c == CmdMetaSet && len(tok) >= 3:
		size, ok := parseSize(tok[2])
		return r.refuse(ReplyLineTooLong, size, ok)
	case c == CmdMetaSet:
		return r.fatal(ReplyLineTooLong)
	case c.IsStorage():
		if n := storageTokens(c); len(tok) == n || len(tok) == n+1 {
			size, ok := parseSize(tok[4])
			return r.refuse(ReplyLineTooLong, size, ok)
		}
		return r.fatal(ReplyLineTooLong)
	}
	return r.fail(ReplyLineTooLong)
}

// storageTokens is the number of tokens of a classic storage command without
// noreply.
func storageTokens(c Command) int {
	if c == CmdCas {
		return 6 // cas <key> <flags> <exptime> <bytes> <cas unique>
	}
	return 5
}

// badKey reports whether k cannot be a key: too long, or on a line with control
// characters. memcached takes such keys, but a line with a NUL byte ends there,
// and keys must not hold control characters; the check stands where memcached
// checks the key's length.
func (r *Reader) badKey(k []byte) bool {
	return len(k) > MaxKeyLen || r.ctl
}

// noreply sets the request's Noreply as memcached does for a classic command:
// its last token is "noreply", whatever the number of tokens.
func (r *Reader) noreply() {
	last := r.req.tokens[len(r.req.tokens)-1]
	if r.ctl {
		// A NUL byte ends memcached's line, and the token with it.
		if i := bytes.IndexByte(last, 0); i >= 0 {
			last = last[:i]
		}
	}
	r.req.Noreply = string(last) == "noreply"
}

// retrieval parses "get <key>*" and gets, and "gat <exptime> <key>*" and gats.
func (r *Reader) retrieval() error {
	req, tok := r.req, r.req.tokens
	if len(tok) < 2 {
		return r.fail(ReplyError)
	}
	keys := tok[1:]
	if req.Command == CmdGat || req.Command == CmdGats {
		e, ok := parseInt32(tok[1])
		if !ok {
			return r.fail(ReplyBadExptime)
		}
		req.Exptime = e
		keys = tok[2:] // memcached answers a gat without keys with END
	}
	for _, k := range keys {
		if r.badKey(k) {
			return r.fail(ReplyBadFormat)
		}
	}
	req.Keys = append(req.Keys, keys...)
	return nil
}

// storage parses "set <key> <flags> <exptime> <bytes> [noreply]", add, replace,
// append and prepend, and cas with <cas unique> before noreply, and reads the
// data block.
func (r *Reader) storage() error {
	req, tok := r.req, r.req.tokens
	if n := storageTokens(req.Command); len(tok) != n && len(tok) != n+1 {
		// Where the line is not a storage command, neither is its length.
		return r.fatal(ReplyError)
	}
	r.noreply()
	size, sizeOK := parseSize(tok[4])
	key := tok[1]
	if len(key) > MaxKeyLen {
		return r.refuse(ReplyBadFormat, size, sizeOK)
	}
	flags, ok1 := parseUint(tok[2], math.MaxUint32)
	exp, ok2 := parseInt32(tok[3])
	ok3 := true
	if req.Command == CmdCas {
		req.Cas, ok3 = parseUint(tok[5], math.MaxUint64)
	}
	if !ok1 || !ok2 || !sizeOK || !ok3 {
		return r.refuse(ReplyBadFormat, size, sizeOK)
	}
	if r.ctl && (size <= r.lim.maxValue() || hasControl(key)) {
		// A control character that can stand only in the key or in the
		// token memcached ignores after the numbers. Where it is in that
		// token and the value is too large, memcached refuses the request
		// as too large and drops the key's item: so does value, below.
		return r.refuse(ReplyBadFormat, size, sizeOK)
	}
	req.Keys = append(req.Keys, key)
	req.Flags, req.Exptime = uint32(flags), exp
	return r.value(size)
}

// value reads the data block of size bytes, refusing one over the limit as
// memcached does, after skipping it.
func (r *Reader) value(size int) error {
	if size > r.lim.maxValue() {
		return r.refuse(ReplyTooLarge, size, true)
	}
	v, ended, err := r.readBlock(r.req.value[:0], size)
	r.req.value, r.req.Value = v, v
	if err != nil {
		return err
	}
	if !ended {
		// memcached would read what follows the value's first size+2 bytes as
		// commands: a client can hide one there.
		return r.fatal(ReplyBadChunk)
	}
	return nil
}

// delete parses "delete <key> [0] [noreply]", accepting what memcached accepts.
func (r *Reader) delete() error {
	req, tok := r.req, r.req.tokens
	if len(tok) < 2 || len(tok) > 4 {
		return r.fail(ReplyError)
	}
	if len(tok) > 2 {
		r.noreply()
		zero := string(tok[2]) == "0"
		if len(tok) == 3 && !zero && !req.Noreply || len(tok) == 4 && !(zero && req.Noreply) {
			return r.fail(ReplyBadDeleteUsage)
		}
	}
	if r.badKey(tok[1]) {
		return r.fail(ReplyBadFormat)
	}
	req.Keys = append(req.Keys, tok[1])
	return nil
}

// keyNumber parses "incr <key> <delta> [noreply]", decr, and "touch <key>
// <exptime> [noreply]".
func (r *Reader) keyNumber() error {
	req, tok := r.req, r.req.tokens
	if len(tok) != 3 && len(tok) != 4 {
		return r.fail(ReplyError)
	}
	r.noreply()
	if r.badKey(tok[1]) {
		return r.fail(ReplyBadFormat)
	}
	var ok bool
	if req.Command == CmdTouch {
		if req.Exptime, ok = parseInt32(tok[2]); !ok {
			return r.fail(ReplyBadExptime)
		}
	} else if req.Delta, ok = parseUint(tok[2], math.MaxUint64); !ok {
		return r.fail(ReplyBadDelta)
	}
	req.Keys = append(req.Keys, tok[1])
	return nil
}

// meta parses mg, md, ma, me and mn.
func (r *Reader) meta() error {
	req, tok := r.req, r.req.tokens
	switch {
	case req.Command == CmdMetaNoop:
		if r.ctl {
			return r.fail(ReplyBadFormat)
		}
		return nil // memcached ignores further tokens
	case req.Command == CmdMetaDebug:
		return r.metaDebug()
	case len(tok) < 2:
		return r.fail(ReplyError)
	case r.badKey(tok[1]):
		return r.fail(ReplyBadFormat)
	case len(tok) > maxMetaTokens:
		if req.Command == CmdMetaGet {
			return r.fail(ReplyMetaGetTooManyFlags)
		}
		return r.fail(ReplyMetaTooManyFlags)
	}
	pre, post := r.metaFlags(tok[2:])
	if pre == "" && r.metaKey(tok[1]) != nil {
		pre = flagReply(req.Command, ReplyBadKeyEncoding)
	}
	switch {
	case pre != "":
		return r.fail(pre)
	case post != "":
		return r.fail(post)
	}
	return nil
}

// metaFlags parses the flag tokens of a meta command into req.MetaFlags; see
// checkMetaFlags.
func (r *Reader) metaFlags(toks [][]byte) (pre, post string) {
	req := r.req
	start := len(req.MetaFlags)
	req.MetaFlags = append(req.MetaFlags, toks...)
	pre, post, seen := checkMetaFlags(req.Command, req.MetaFlags[start:], &req.canon)
	r.base64 = seen.has('b')
	return pre, post
}

// metaDebug parses "me <key> [b]": memcached reads the key as base64 only if b
// is the token right after it, and ignores other tokens, which are refused.
func (r *Reader) metaDebug() error {
	req, tok := r.req, r.req.tokens
	if len(tok) < 2 || r.badKey(tok[1]) {
		return r.fail(ReplyBadFormat)
	}
	switch {
	case len(tok) == 3 && string(tok[2]) == "b":
		req.MetaFlags = append(req.MetaFlags, tok[2])
		r.base64 = true
	case len(tok) > 2:
		return r.fail(ReplyInvalidFlag)
	}
	if err := r.metaKey(tok[1]); err != nil {
		return r.fail(ReplyBadFormat) // me's answer to a key that does not decode
	}
	if r.base64 && !plainToken(req.decoded) {
		return r.fail(ReplyUnsafeBinaryKey)
	}
	return nil
}

// metaSet parses "ms <key> <datalen> <flag>*" and reads the data block.
func (r *Reader) metaSet() error {
	tok := r.req.tokens
	if len(tok) < 3 {
		reply := ReplyBadFormat
		if len(tok) < 2 {
			reply = ReplyError
		}
		return r.fatal(reply)
	}
	size, sizeOK := parseSize(tok[2])
	switch {
	case r.badKey(tok[1]):
		return r.refuse(ReplyBadFormat, size, sizeOK)
	case len(tok) > maxMetaTokens:
		return r.refuse(ReplyMetaTooManyFlags, size, sizeOK)
	case !sizeOK:
		return r.fatal(ReplyBadFormat)
	}
	pre, post := r.metaFlags(tok[3:])
	if pre == "" && r.metaKey(tok[1]) != nil {
		pre = ReplyBadKeyEncoding
	}
	switch {
	case pre != "":
		return r.refuse(pre, size, true)
	case post != "":
		return r.refuse(post, size, true)
	}
	return r.value(size)
}

// metaKey sets the key of a meta command, decoding it if the b flag is given.
func (r *Reader) metaKey(k []byte) *Error {
	req := r.req
	req.Keys = append(req.Keys, k)
	if !r.base64 {
		return nil
	}
	var ok bool
	if req.decoded, ok = decodeKey(req.decoded[:0], k); !ok {
		return r.fail(ReplyBadKeyEncoding)
	}
	return nil
}

// decodeKey appends to dst the base64 key k decoded, and reports whether it
// was base64 as memcached writes it, of a key of at least one byte.
func decodeKey(dst, k []byte) ([]byte, bool) {
	// memcached skips bytes that are not base64 and stops at the first padded
	// quantum, so it decodes "eA==" and "e!A==eHl6" alike: take only what it
	// writes itself, where the two decoders agree.
	n := base64.StdEncoding.DecodedLen(len(k))
	if cap(dst)-len(dst) < n {
		dst = append(make([]byte, 0, len(dst)+n), dst...)
	}
	m, err := base64.StdEncoding.Strict().Decode(dst[len(dst):len(dst)+n], k)
	if err != nil || m == 0 {
		return dst, false
	}
	return dst[:len(dst)+m], true
}

// parseUint parses decimal digits into a number of at most max.
func parseUint(b []byte, max uint64) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	if len(b) < 20 {
		// Nineteen digits fit in 64 bits: no overflow to watch for.
		for _, c := range b {
			d := uint64(c - '0')
			if d > 9 {
				return 0, false
			}
			n = n*10 + d
		}
		return n, n <= max
	}
	for _, c := range b {
		d := uint64(c - '0')
		if d > 9 || n > (max-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// parseInt32 parses an optionally negative decimal number of 32 bits, as
// memcached stores expiration times: it cuts larger numbers to 32 bits.
func parseInt32(b []byte) (int64, bool) {
	if len(b) > 0 && b[0] == '-' {
		n, ok := parseUint(b[1:], -math.MinInt32)
		return -int64(n), ok
	}
	n, ok := parseUint(b, math.MaxInt32)
	return int64(n), ok
}

// parseSize parses the length of a data block: memcached takes at most
// 2^31 - 3, so that the length with its "\r\n" is a 32-bit int.
func parseSize(b []byte) (int, bool) {
	n, ok := parseUint(b, math.MaxInt32-2)
	return int(n), ok
}

// AppendRequest appends req as a client sends it, from its fields: a request
// that ReadRequest returned without error is written so that reading it again
// gives the same request, in a line no longer than the one read.
func AppendRequest(dst []byte, req *Request) []byte {
	dst = AppendRequestHead(dst, req)
	if req.Command.IsStorage() {
		dst = append(append(dst, req.Value...), "\r\n"...)
	}
	return dst
}

// AppendRequestHead is AppendRequest for a writer that sends a storage
// command's data block itself: it appends the command line only, the
// block's "\r\n" to be written after the block.
func AppendRequestHead(dst []byte, req *Request) []byte {
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
	case c == CmdFlushAll:
		if req.Exptime != 0 {
			dst = append(dst, ' ')
			dst = strconv.AppendInt(dst, req.Exptime, 10)
		}
	case c.IsAdmin():
		for _, a := range req.Args {
			dst = append(append(dst, ' '), a...)
		}
	}
	if req.Noreply && writesNoreply(c) {
		dst = append(dst, " noreply"...)
	}
	return append(dst, "\r\n"...)
}

// TakeValue takes the value of a storage command from r, if it was read into
// r's own memory and is bigbuf.Min bytes or more, for a caller that writes it
// on without copying it: b is the caller's from now on, to give back to
// bigbuf once written (bigbuf.Give) or to drop. r's Value is nil afterwards.
// ok is false, and r unchanged, for any other value.
func (r *Request) TakeValue() (b []byte, ok bool) {
	if len(r.Value) < bigbuf.Min || len(r.value) == 0 || &r.Value[0] != &r.value[0] {
		return nil, false
	}
	b, r.Value, r.value = r.Value, nil, nil
	return b, true
}

// writesNoreply reports whether AppendRequest writes noreply for a request of
// c that asks for it: the classic commands that take it.
func writesNoreply(c Command) bool {
	return !c.IsMeta() && !c.IsRetrieval() && c != CmdVersion && c != CmdQuit
}

func appendFlags(dst []byte, flags [][]byte) []byte {
	for _, f := range flags {
		dst = append(append(dst, ' '), f...)
	}
	return dst
}
