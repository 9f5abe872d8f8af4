package memcache

import (
	"bytes"
	"errors"
	"math"
	"strconv"
)

// Item is one VALUE of a retrieval response.
type Item struct {
	Key   []byte
	Flags uint32
	// Cas is the item's cas unique, present (HasCas) in replies to gets and gats.
	Cas    uint64
	HasCas bool
	Value  []byte
}

// Response is a server's reply to one request.
type Response struct {
	// Items holds the VALUE items of a retrieval reply, in the order sent.
	Items []Item
	// Line is the last line without its "\r\n": "END", "STORED", "HD", "VA 2 f1",
	// "SERVER_ERROR out of memory", ...
	Line []byte
	// Value is the data block that follows a meta "VA" line.
	Value []byte
	// Quiet means that the server sent no reply: the request had the meta
	// flag q, and memcached's quiet mode hid the reply (see ReadReply).
	// AppendResponse appends nothing for it.
	Quiet bool

	buf  []byte
	offs []itemOffsets
	tok  [][]byte
}

type itemOffsets struct{ key, keyEnd, val, valEnd int }

// Reset clears r, keeping its memory for reuse, except a buffer grown past 64
// KiB for one large reply, which it gives back for other replies (bigbuf):
// nothing of r's last reply may be used afterwards.
func (r *Response) Reset() {
	// Field by field: reslicing writes only lengths, where assigning a whole
	// Response would write every pointer again.
	r.Items = r.Items[:0]
	r.Line, r.Value, r.Quiet = nil, nil, false
	r.buf = keepOwn(r.buf)
	r.offs = r.offs[:0]
	r.tok = r.tok[:0]
}

// IsError reports whether line is an error reply: ERROR, CLIENT_ERROR or
// SERVER_ERROR.
func IsError(line []byte) bool {
	return string(line) == "ERROR" ||
		bytes.HasPrefix(line, []byte("CLIENT_ERROR ")) ||
		bytes.HasPrefix(line, []byte("SERVER_ERROR "))
}

// Status returns the first token of the last line: "END", "STORED", "HD", "EN",
// "VA", "SERVER_ERROR", ...
func (r *Response) Status() []byte {
	if i := bytes.IndexByte(r.Line, ' '); i >= 0 {
		return r.Line[:i]
	}
	return r.Line
}

// ReadResponse reads the reply to a request of command cmd into resp, reusing
// resp's memory. A retrieval reply may hold at most maxItems items. A reply
// outside the grammar of cmd (see ReadReply, which also knows the request's
// keys and flags) is a fatal *Error: the stream is out of step and must be
// closed.
func (r *Reader) ReadResponse(resp *Response, cmd Command, maxItems int) error {
	return r.readReply(resp, cmd, maxItems, nil, false)
}

// ReadReply reads the reply to req, as AppendRequest wrote it to the server,
// into resp, reusing resp's memory. The reply must fit the request: one of the
// lines memcached answers req's command with, or an error line; VALUE items
// only for req's keys, in their order; meta return flags only as req asked for
// them, its opaque and key echoed as memcached echoes them. Anything else is a
// fatal *Error: the stream is out of step and must be closed.
//
// A meta request with the flag q must have been followed on the stream by mn
// (the request of CmdMetaNoop). memcached answers a quiet request only when
// its quiet mode lets the reply through: errors always, and otherwise all but
// EN of mg, HD of ms and md, and the HD or VA of an ma that found its item.
// ReadReply reads the reply, if memcached sent one, and the MN; if it sent
// none, resp.Quiet is set. Whether a reply is hidden is memcached's decision:
// the mn tells where the reply would have been, so a reader need not know.
//
// A classic request with noreply may get no reply at all, and no mn tells, so
// ReadReply refuses it; so it does quit, which is answered by closing.
func (r *Reader) ReadReply(resp *Response, req *Request) error {
	if req.Noreply || req.Command == CmdQuit {
		return errors.New("memcache: ReadReply: " + req.Command.String() + " request asks for no reply")
	}
	quiet := req.Command.IsMeta() && req.HasMetaFlag('q')
	if err := r.readReply(resp, req.Command, len(req.Keys), req, quiet); err != nil || !quiet || resp.Quiet {
		return err
	}
	line, err := r.readLine(r.lim.maxLine())
	if err != nil {
		return err
	}
	if string(line) != "MN" {
		return newError("no MN after the reply to a quiet "+req.Command.String(), line, true)
	}
	return nil
}

// readReply reads a reply to cmd (and to req, if not nil). If quiet, an MN in
// place of the reply means the reply was hidden, and sets resp.Quiet.
func (r *Reader) readReply(resp *Response, cmd Command, maxItems int, req *Request, quiet bool) error {
	resp.Reset()
	next := 0 // the first of req's keys that a VALUE may be for
	for {
		line, err := r.readLine(r.lim.maxLine())
		if err != nil {
			return err
		}
		if quiet && string(line) == "MN" {
			resp.Quiet = true
			return nil
		}
		if cmd.IsRetrieval() && bytes.HasPrefix(line, []byte("VALUE ")) {
			if err := r.readItem(resp, cmd, line, maxItems, req, &next); err != nil {
				return err
			}
			continue
		}
		if hasControl(line) {
			return badReply(cmd, line)
		}
		size, ok := resp.checkLast(cmd, line, req, r.lim.maxValue())
		if !ok {
			return badReply(cmd, line)
		}
		start := len(resp.buf)
		resp.buf = append(resp.buf, line...)
		end := len(resp.buf)
		if size >= 0 {
			var ended bool
			if resp.buf, ended, err = r.readBlock(resp.buf, size); err != nil {
				return err
			}
			if !ended || cmd == CmdMetaArithmetic && !isNumber(resp.buf[end:]) {
				return newError("bad data chunk", resp.buf[start:], true)
			}
			resp.Value = resp.buf[end:len(resp.buf):len(resp.buf)]
		}
		// Point into buf only now that it no longer grows.
		for i, o := range resp.offs {
			resp.Items[i].Key = resp.buf[o.key:o.keyEnd:o.keyEnd]
			resp.Items[i].Value = resp.buf[o.val:o.valEnd:o.valEnd]
		}
		resp.Line = resp.buf[start:end:end]
		return nil
	}
}

func badReply(cmd Command, line []byte) *Error {
	return newError("bad reply to "+cmd.String(), line, true)
}

// readItem reads the VALUE item of line and its data block.
func (r *Reader) readItem(resp *Response, cmd Command, line []byte, maxItems int, req *Request, next *int) error {
	t, ctl, tidy := split(resp.tok[:0], line)
	resp.tok = t
	n := 4
	if cmd == CmdGets || cmd == CmdGats {
		n = 5 // VALUE <key> <flags> <bytes> <cas unique>
	}
	if ctl || !tidy || len(t) != n || len(t[1]) > MaxKeyLen {
		return newError("bad VALUE line", line, true)
	}
	key := t[1]
	if req != nil {
		for *next < len(req.Keys) && !bytes.Equal(req.Keys[*next], key) {
			*next++
		}
		if *next == len(req.Keys) {
			return newError("VALUE of a key not asked for", line, true)
		}
		*next++
	} else if len(resp.offs) >= maxItems {
		return newError("bad VALUE line", line, true)
	}
	flags, ok1 := parseUint(t[2], math.MaxUint32)
	size, ok2 := parseSize(t[3])
	var cas uint64
	ok3 := true
	if n == 5 {
		cas, ok3 = parseUint(t[4], math.MaxUint64)
	}
	if !ok1 || !ok2 || !ok3 || size > r.lim.maxValue() {
		return newError("bad VALUE line", line, true)
	}
	o := itemOffsets{key: len(resp.buf)}
	resp.buf = append(resp.buf, key...)
	o.keyEnd = len(resp.buf)
	o.val = o.keyEnd
	var ended bool
	var err error
	if resp.buf, ended, err = r.readBlock(resp.buf, size); err != nil {
		return err
	}
	o.valEnd = len(resp.buf)
	if !ended {
		return newError("bad data chunk", resp.buf[o.val:o.valEnd], true)
	}
	resp.offs = append(resp.offs, o)
	resp.Items = append(resp.Items, Item{Flags: uint32(flags), Cas: cas, HasCas: n == 5})
	return nil
}

// checkLast checks the line that ends a reply to cmd (and to req, if not nil).
// It returns the size of the data block that follows, or -1 if none does.
func (resp *Response) checkLast(cmd Command, line []byte, req *Request, maxValue int) (size int, ok bool) {
	size, ok = resp.checkAnswer(cmd, line, req, maxValue)
	if !ok && IsError(line) {
		return -1, len(resp.Items) == 0
	}
	return size, ok
}

// checkAnswer is checkLast for the lines that are not errors.
func (resp *Response) checkAnswer(cmd Command, line []byte, req *Request, maxValue int) (size int, ok bool) {
	// string(line) in each comparison copies nothing.
	switch cmd {
	case CmdGet, CmdGets, CmdGat, CmdGats:
		return -1, string(line) == "END"
	case CmdSet, CmdAdd, CmdReplace, CmdAppend, CmdPrepend, CmdCas:
		return -1, string(line) == "STORED" || string(line) == "NOT_STORED" || string(line) == "EXISTS" || string(line) == "NOT_FOUND"
	case CmdDelete:
		return -1, string(line) == "DELETED" || string(line) == "NOT_FOUND"
	case CmdIncr, CmdDecr:
		return -1, string(line) == "NOT_FOUND" || isNumber(line)
	case CmdTouch:
		return -1, string(line) == "TOUCHED" || string(line) == "NOT_FOUND"
	case CmdVersion:
		t, _, tidy := split(resp.tok[:0], line) // line holds no control character
		resp.tok = t
		return -1, tidy && len(t) > 1 && string(t[0]) == "VERSION"
	case CmdFlushAll, CmdVerbosity:
		return -1, string(line) == "OK"
	case CmdMetaNoop:
		return -1, string(line) == "MN"
	case CmdMetaDebug:
		return -1, string(line) == "EN" || resp.checkDebug(line, req)
	case CmdMetaGet, CmdMetaSet, CmdMetaDelete, CmdMetaArithmetic:
		return resp.checkMeta(cmd, line, req, maxValue)
	}
	// quit is answered by closing; unknown commands only by errors; stats
	// is never sent to a server.
	return -1, false
}

// isNumber reports whether b is the decimal number of an incr, decr or ma.
func isNumber(b []byte) bool {
	_, ok := parseUint(b, math.MaxUint64)
	return ok
}

// checkDebug checks "ME <key> <name>=<value>*", the answer of me to a hit.
func (resp *Response) checkDebug(line []byte, req *Request) bool {
	t, _, tidy := split(resp.tok[:0], line) // line holds no control character
	resp.tok = t
	if !tidy || len(t) < 2 || string(t[0]) != "ME" {
		return false
	}
	// memcached writes the key of the item found, as mg does for k.
	if req == nil {
		return true
	}
	key := req.RouteKey(0)
	return isItemKey(t[1], false, key) || isItemKey(t[1], true, key)
}

// The return flags a meta reply may carry, as memcached 1.6.18 writes them:
// s, t, c, f, l, h and W, X and Z only with an item; ms answers c with every
// code. The flag b is no flag of its own here: memcached writes it only after
// a key (k) it wrote in base64.
var (
	getItemFlags   = flagSet("cfhklOstWXZ")
	setFlags       = flagSet("ckO")
	arithItemFlags = flagSet("cktO")
	missFlags      = flagSet("kO")
)

// metaCode returns the return flags that code may carry in a reply to cmd, or
// none if cmd is not answered with code, and whether code answers with the
// item found (a hit of mg), whose key memcached echoes as it stored it.
func metaCode(cmd Command, code []byte) (flags metaFlagSet, hit bool) {
	switch cmd {
	case CmdMetaGet:
		switch string(code) {
		case "VA", "HD":
			return getItemFlags, true
		case "EN":
			return missFlags, false
		}
	case CmdMetaSet:
		switch string(code) {
		case "HD", "NS", "EX", "NF":
			return setFlags, false
		}
	case CmdMetaDelete:
		switch string(code) {
		case "HD", "NF", "EX":
			return missFlags, false
		}
	case CmdMetaArithmetic:
		switch string(code) {
		case "VA", "HD":
			return arithItemFlags, false
		case "NF", "EX", "NS":
			return missFlags, false
		}
	}
	return 0, false
}

// checkMeta checks the reply line of a meta command: "<code> <flag>*", or
// "VA <size> <flag>*" before a data block of size bytes.
func (resp *Response) checkMeta(cmd Command, line []byte, req *Request, maxValue int) (size int, ok bool) {
	t, _, tidy := split(resp.tok[:0], line) // line holds no control character
	resp.tok = t
	if !tidy {
		return -1, false
	}
	code := t[0]
	allowed, hit := metaCode(cmd, code)
	if allowed == 0 {
		return -1, false
	}
	size, flags := -1, t[1:]
	va := string(code) == "VA"
	if va {
		if len(flags) == 0 {
			return -1, false
		}
		n, ok := parseSize(flags[0])
		if !ok || n > maxValue {
			return -1, false
		}
		size, flags = n, flags[1:]
	}
	if req != nil && (va || string(code) == "HD") && cmd != CmdMetaSet && cmd != CmdMetaDelete &&
		req.HasMetaFlag('v') != va {
		return -1, false // mg and ma answer VA if and only if v asks for the value
	}
	var seen metaFlagSet
	for i := 0; i < len(flags); i++ {
		f := flags[i]
		c := f[0]
		if !allowed.has(c) || seen.has(c) {
			return -1, false
		}
		seen |= 1 << (c - 'A')
		if c != 'k' {
			if !checkReturnFlag(f, req) {
				return -1, false
			}
			continue
		}
		// A key in base64 is followed by b.
		b64 := i+1 < len(flags) && string(flags[i+1]) == "b"
		if b64 {
			i++
		}
		if !checkKeyEcho(f[1:], b64, hit, req) {
			return -1, false
		}
	}
	return size, true
}

// checkKeyEcho checks the key k of a meta reply's return flag k, in base64 if
// b64, against req, if not nil, which must have asked for it. memcached echoes
// the key of the request, in base64 if the request's was (the flag b), except
// in a hit of mg (hit), where it echoes the key of the item found: in base64 if
// the item was stored with b (by ms), as it is otherwise (by set, or made by
// mg or ma with N, even with b) — whether the request had b or not.
func checkKeyEcho(k []byte, b64, hit bool, req *Request) bool {
	if len(k) == 0 || len(k) > MaxKeyLen {
		return false
	}
	switch {
	case req == nil:
		return !b64 || validBase64(k)
	case !req.HasMetaFlag('k'):
		return false
	case !hit:
		return b64 == req.HasMetaFlag('b') && bytes.Equal(k, req.Key())
	}
	return isItemKey(k, b64, req.RouteKey(0))
}

// isItemKey reports whether k is key as memcached writes the key of an item:
// in base64 if b64, as it is otherwise.
func isItemKey(k []byte, b64 bool, key []byte) bool {
	if b64 {
		return sameBase64(k, key)
	}
	return bytes.Equal(k, key)
}

// validBase64 reports whether k is base64 as memcached writes it.
func validBase64(k []byte) bool {
	var buf [MaxKeyLen]byte
	_, ok := decodeKey(buf[:0], k)
	return ok
}

// sameBase64 reports whether k is key in base64, as memcached writes it.
func sameBase64(k, key []byte) bool {
	if len(k) > MaxKeyLen {
		return false
	}
	var buf [MaxKeyLen]byte
	d, ok := decodeKey(buf[:0], k)
	return ok && bytes.Equal(d, key)
}

// checkReturnFlag checks one return flag of a meta reply other than k, and if
// req is not nil, that req asked for it.
func checkReturnFlag(f []byte, req *Request) bool {
	c, v := f[0], f[1:]
	var tok []byte
	if req != nil && c != 'W' && c != 'X' && c != 'Z' {
		var asked bool
		if tok, asked = req.MetaFlag(c); !asked {
			return false
		}
	}
	switch c {
	case 'W', 'X', 'Z':
		return len(v) == 0
	case 'c':
		_, ok := parseUint(v, math.MaxUint64)
		return ok
	case 'f', 's', 'l':
		_, ok := parseUint(v, math.MaxUint32)
		return ok
	case 't':
		_, ok := parseUint(v, math.MaxUint32)
		return ok || string(v) == "-1"
	case 'h':
		return string(v) == "0" || string(v) == "1"
	case 'O':
		return len(f) <= maxOpaque && (req == nil || bytes.Equal(v, tok))
	}
	return false
}

// AppendItem appends one VALUE item as memcached writes it.
func AppendItem(dst []byte, it *Item) []byte {
	dst = AppendItemLine(dst, it)
	dst = append(dst, it.Value...)
	return append(dst, "\r\n"...)
}

// AppendItemLine appends the VALUE line of it, which precedes its value.
func AppendItemLine(dst []byte, it *Item) []byte {
	dst = append(dst, "VALUE "...)
	dst = append(dst, it.Key...)
	dst = append(dst, ' ')
	dst = strconv.AppendUint(dst, uint64(it.Flags), 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(len(it.Value)), 10)
	if it.HasCas {
		dst = append(dst, ' ')
		dst = strconv.AppendUint(dst, it.Cas, 10)
	}
	return append(dst, "\r\n"...)
}

// AppendResponse appends resp as a server sends it: nothing if resp.Quiet.
func AppendResponse(dst []byte, resp *Response) []byte {
	if resp.Quiet {
		return dst
	}
	for i := range resp.Items {
		dst = AppendItem(dst, &resp.Items[i])
	}
	dst = append(append(dst, resp.Line...), "\r\n"...)
	if bytes.HasPrefix(resp.Line, []byte("VA ")) {
		dst = append(append(dst, resp.Value...), "\r\n"...)
	}
	return dst
}
