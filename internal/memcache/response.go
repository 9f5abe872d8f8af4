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

	buf  []byte
	offs []itemOffsets
	tok  [][]byte
}

type itemOffsets struct{ key, keyEnd, val, valEnd int }

// Reset clears r, keeping its memory for reuse, except a buffer grown past 64
// KiB for one large reply.
func (r *Response) Reset() {
	// Field by field: reslicing writes only lengths, where assigning a whole
	// Response would write every pointer again.
	r.Items = r.Items[:0]
	r.Line, r.Value = nil, nil
	r.buf = keep(r.buf)
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
	return r.readReply(resp, cmd, maxItems, nil)
}

// ReadReply reads the reply to req, as AppendRequest wrote it to the server,
// into resp, reusing resp's memory. The reply must fit the request: one of the
// lines memcached answers req's command with, or an error line; VALUE items
// only for req's keys, in their order; meta return flags only as req asked for
// them, its opaque and key echoed unchanged. Anything else is a fatal *Error:
// the stream is out of step and must be closed.
//
// A request with noreply or the meta flag q may get no reply at all, so
// ReadReply refuses it; so it does quit, which is answered by closing.
func (r *Reader) ReadReply(resp *Response, req *Request) error {
	if req.Noreply || req.Command == CmdQuit || req.Command.IsMeta() && req.HasMetaFlag('q') {
		return errors.New("memcache: ReadReply: " + req.Command.String() + " request asks for no reply")
	}
	return r.readReply(resp, req.Command, len(req.Keys), req)
}

func (r *Reader) readReply(resp *Response, cmd Command, maxItems int, req *Request) error {
	resp.Reset()
	next := 0 // the first of req's keys that a VALUE may be for
	for {
		line, err := r.readLine(r.lim.maxLine())
		if err != nil {
			return err
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
	case CmdMetaNoop:
		return -1, string(line) == "MN"
	case CmdMetaDebug:
		return -1, string(line) == "EN" || resp.checkDebug(line, req)
	case CmdMetaGet, CmdMetaSet, CmdMetaDelete, CmdMetaArithmetic:
		return resp.checkMeta(cmd, line, req, maxValue)
	}
	return -1, false // quit is answered by closing; unknown commands only by errors
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
	// With b, memcached writes a key stored without b as it is.
	return req == nil || bytes.Equal(t[1], req.Key()) || req.HasMetaFlag('b') && bytes.Equal(t[1], req.RouteKey(0))
}

// The return flags a meta reply may carry: h, l, s, t, W, X and Z come only
// with an item; ms answers c with every code.
var (
	getItemFlags   = flagSet("bcfhklOstWXZ")
	setFlags       = flagSet("bckO")
	arithItemFlags = flagSet("bcktO")
	missFlags      = flagSet("bkO")
)

// metaCode returns the return flags that code may carry in a reply to cmd, or
// none if cmd is not answered with code.
func metaCode(cmd Command, code []byte) metaFlagSet {
	switch cmd {
	case CmdMetaGet:
		switch string(code) {
		case "VA", "HD":
			return getItemFlags
		case "EN":
			return missFlags
		}
	case CmdMetaSet:
		switch string(code) {
		case "HD", "NS", "EX", "NF":
			return setFlags
		}
	case CmdMetaDelete:
		switch string(code) {
		case "HD", "NF", "EX":
			return missFlags
		}
	case CmdMetaArithmetic:
		switch string(code) {
		case "VA", "HD":
			return arithItemFlags
		case "NF", "EX", "NS":
			return missFlags
		}
	}
	return 0
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
	allowed := metaCode(cmd, code)
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
	for _, f := range flags {
		c := f[0]
		if !allowed.has(c) || seen.has(c) || !checkReturnFlag(f, req) {
			return -1, false
		}
		seen |= 1 << (c - 'A')
	}
	return size, true
}

// checkReturnFlag checks one return flag of a meta reply, and if req is not nil,
// that req asked for it.
func checkReturnFlag(f []byte, req *Request) bool {
	c, v := f[0], f[1:]
	var tok []byte
	if req != nil && c != 'W' && c != 'X' && c != 'Z' {
		var asked bool
		if tok, asked = req.MetaFlag(c); !asked || c == 'b' && !req.HasMetaFlag('k') {
			return false
		}
	}
	switch c {
	case 'b', 'W', 'X', 'Z':
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
	case 'k':
		return len(v) > 0 && len(v) <= MaxKeyLen && (req == nil || bytes.Equal(v, req.Key()))
	}
	return false
}

// AppendItem appends one VALUE item as memcached writes it.
func AppendItem(dst []byte, it *Item) []byte {
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
	dst = append(dst, "\r\n"...)
	dst = append(dst, it.Value...)
	return append(dst, "\r\n"...)
}

// AppendResponse appends resp as a server sends it.
func AppendResponse(dst []byte, resp *Response) []byte {
	for i := range resp.Items {
		dst = AppendItem(dst, &resp.Items[i])
	}
	dst = append(append(dst, resp.Line...), "\r\n"...)
	if bytes.HasPrefix(resp.Line, []byte("VA ")) {
		dst = append(append(dst, resp.Value...), "\r\n"...)
	}
	return dst
}
