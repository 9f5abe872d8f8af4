package resp

import "bytes"

// Reply is one reply as a server sends it. It keeps the reply's bytes as read,
// which Bytes returns and AppendReply writes, and the top-level value's kind and
// contents; AppendElems finds the elements of an array.
type Reply struct {
	Kind Kind
	// Str is the text of a simple string or error, or the contents of a bulk
	// string; nil for a null bulk, an integer or an array. It points into the
	// Reply's own memory, valid until it is reused.
	Str []byte
	// Int is the value of an integer, or the length of a bulk string or array:
	// -1 for a null bulk or null array.
	Int int64

	raw []byte
}

// Reset clears rp, keeping its memory for reuse.
func (rp *Reply) Reset() {
	*rp = Reply{raw: rp.raw[:0]}
}

// Bytes returns the reply as it was read, or as SetError made it.
func (rp *Reply) Bytes() []byte { return rp.raw }

// IsNull reports whether rp is a null bulk or a null array.
func (rp *Reply) IsNull() bool {
	return (rp.Kind == KindBulk || rp.Kind == KindArray) && rp.Int < 0
}

// IsError reports whether rp is an error reply.
func (rp *Reply) IsError() bool { return rp.Kind == KindError }

// SetError makes rp the error reply msg, which starts with its code: "ERR no
// server". Line ends in msg become spaces, as Redis writes them. A proxy puts
// it in place of the reply of a server that gave none, for Split.Merge.
func (rp *Reply) SetError(msg string) {
	rp.Reset()
	rp.raw = AppendError(rp.raw, msg)
	rp.Kind, rp.Str = KindError, rp.raw[1:len(rp.raw)-2]
}

// AppendElems appends the elements of an array reply to dst, each as the bytes
// it was read from (a nested array whole), and returns the extended slice; for
// other replies and a null array it returns dst unchanged.
func (rp *Reply) AppendElems(dst [][]byte) [][]byte {
	if rp.Kind != KindArray || rp.Int <= 0 {
		return dst
	}
	b := rp.raw
	p := bytes.IndexByte(b, '\n') + 1
	for range rp.Int {
		end := skipValue(b, p)
		dst = append(dst, b[p:end:end])
		p = end
	}
	return dst
}

// skipValue returns where the value at b[p:] ends; b was read, and so checked,
// by ReadReply.
func skipValue(b []byte, p int) int {
	for pending := 1; pending > 0; pending-- {
		nl := p + bytes.IndexByte(b[p:], '\n')
		switch b[p] {
		case '$':
			if n, _ := parseInt(b[p+1 : nl-1]); n >= 0 {
				nl += int(n) + 2
			}
		case '*':
			if n, _ := parseInt(b[p+1 : nl-1]); n > 0 {
				pending += int(n)
			}
		}
		p = nl + 1
	}
	return p
}

// Descriptions of malformed replies, the Reply of the *Error ReadReply returns.
const (
	replyBadType   = "ERR Protocol error: unknown reply type"
	replyBadLine   = "ERR Protocol error: invalid reply line"
	replyLongLine  = "ERR Protocol error: too long reply line"
	replyBadInt    = "ERR Protocol error: invalid integer reply"
	replyBadBulk   = "ERR Protocol error: invalid bulk length in reply"
	replyBadEnd    = "ERR Protocol error: bulk string not followed by CRLF in reply"
	replyBadArray  = "ERR Protocol error: invalid array length in reply"
	replyTooBig    = "ERR Protocol error: too big reply"
	maxNumberLine  = 1 + 20 + 2 // type byte, string2ll's 20 bytes, "\r\n"
	minElementSize = 3          // "+\r\n"
)

// ReadReply reads the next reply into rp. It returns io.EOF if the stream ends
// before a reply begins and io.ErrUnexpectedEOF if it ends inside one. A
// malformed reply is an *Error, after which the stream cannot be read in step.
// rp is reset first and, on error, holds nothing of use.
func (r *Reader) ReadReply(rp *Reply) error {
	rp.Reset()
	if err := r.readReply(rp); err != nil {
		rp.Reset()
		return err
	}
	return nil
}

func (r *Reader) readReply(rp *Reply) error {
	if r.r == r.w {
		if err := r.fill(len(r.buf)); err != nil {
			return err
		}
	}
	maxSize, maxBulk := r.lim.maxSize(), r.lim.maxBulk()
	r.stack = r.stack[:0]
	start, end := 0, 0 // Str is raw[start:end], once raw stops moving
	for top := true; ; top = false {
		from := len(rp.raw)
		var err error
		if rp.raw, err = r.replyLine(rp.raw, maxBulk, maxSize); err != nil {
			return err
		}
		line := rp.raw[from : len(rp.raw)-2]
		if len(rp.raw) > maxSize {
			return newError(replyTooBig, line)
		}
		// line's memory is given back if readN grows rp.raw: keep what
		// is used of it after.
		typ, lineLen := line[0], len(line)
		var n int64 // the integer, or the length of a bulk or array
		switch typ {
		case '+', '-':
		case ':':
			var ok bool
			if n, ok = parseInt(line[1:]); !ok {
				return newError(replyBadInt, line)
			}
		case '$':
			var ok bool
			if n, ok = parseInt(line[1:]); !ok || n < -1 || n > int64(maxBulk) {
				return newError(replyBadBulk, line)
			}
			if n >= 0 {
				if len(rp.raw)+int(n)+2 > maxSize {
					return newError(replyTooBig, line)
				}
				from := len(rp.raw)
				if rp.raw, err = r.readN(rp.raw, int(n)+2); err != nil {
					return err
				}
				if crlf := rp.raw[len(rp.raw)-2:]; crlf[0] != '\r' || crlf[1] != '\n' {
					return newError(replyBadEnd, rp.raw[from:])
				}
			}
		case '*':
			var ok bool
			if n, ok = parseInt(line[1:]); !ok || n < -1 {
				return newError(replyBadArray, line)
			}
			if n > int64((maxSize-len(rp.raw))/minElementSize) {
				return newError(replyTooBig, line)
			}
		}
		if top {
			rp.Kind, rp.Int = Kind(typ), n
			switch rp.Kind {
			case KindSimple, KindError:
				start, end = 1, lineLen
			case KindBulk:
				start, end = lineLen+2, lineLen+2+int(n)
			}
		}
		if d := len(r.stack); d > 0 {
			r.stack[d-1]--
		}
		if typ == '*' && n > 0 {
			r.stack = append(r.stack, int(n))
			continue
		}
		for len(r.stack) > 0 && r.stack[len(r.stack)-1] == 0 {
			r.stack = r.stack[:len(r.stack)-1]
		}
		if len(r.stack) == 0 {
			break
		}
	}
	if rp.Kind == KindSimple || rp.Kind == KindError || rp.Kind == KindBulk && rp.Int >= 0 {
		rp.Str = rp.raw[start:end:end]
	}
	return nil
}

// replyLine appends the next line of a reply, "\r\n" included, to dst and
// checks its type byte and ending: a simple string or error may be up to
// maxText bytes long, an integer or length line no longer than string2ll reads.
func (r *Reader) replyLine(dst []byte, maxText, maxSize int) ([]byte, error) {
	if r.r == r.w {
		if err := r.more(len(r.buf)); err != nil {
			return dst, err
		}
	}
	limit := maxNumberLine
	switch r.buf[r.r] {
	case '+', '-':
		limit = min(maxText+3, maxSize-len(dst))
	case ':', '$', '*':
	default:
		return dst, newError(replyBadType, r.buf[r.r:r.w])
	}
	start := len(dst)
	for {
		b := r.buf[r.r:r.w]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			dst = append(dst, b[:i+1]...)
			r.r += i + 1
			break
		}
		dst = append(dst, b...)
		r.r = r.w
		if len(dst)-start >= limit {
			return dst, newError(replyLongLine, dst[start:])
		}
		if err := r.more(len(r.buf)); err != nil {
			return dst, err
		}
	}
	line := dst[start:]
	if len(line) > limit {
		return dst, newError(replyLongLine, line)
	}
	if len(line) < 3 || line[len(line)-2] != '\r' || bytes.IndexByte(line[:len(line)-2], '\r') >= 0 {
		return dst, newError(replyBadLine, line)
	}
	return dst, nil
}

// AppendReply appends rp as it was read.
func AppendReply(dst []byte, rp *Reply) []byte { return append(dst, rp.raw...) }

// appendText appends s with '\r' and '\n' as spaces, so that it stays one line.
func appendText(dst []byte, s string) []byte {
	for {
		i := indexLineEnd(s)
		if i < 0 {
			return append(dst, s...)
		}
		dst = append(append(dst, s[:i]...), ' ')
		s = s[i+1:]
	}
}

func indexLineEnd(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '\r' || s[i] == '\n' {
			return i
		}
	}
	return -1
}

// AppendSimple appends the simple string reply s: "+OK\r\n". Line ends in s
// become spaces.
func AppendSimple(dst []byte, s string) []byte {
	return append(appendText(append(dst, '+'), s), '\r', '\n')
}

// AppendError appends the error reply msg, which starts with its code: "ERR
// syntax error" is written "-ERR syntax error\r\n". Line ends in msg become
// spaces, as Redis writes them.
func AppendError(dst []byte, msg string) []byte {
	return append(appendText(append(dst, '-'), msg), '\r', '\n')
}

// AppendInt appends the integer reply n: ":42\r\n".
func AppendInt(dst []byte, n int64) []byte { return appendLen(dst, ':', n) }

// AppendBulk appends the bulk string b: "$3\r\nabc\r\n".
func AppendBulk(dst, b []byte) []byte {
	return append(append(appendLen(dst, '$', int64(len(b))), b...), '\r', '\n')
}

// AppendBulkString is AppendBulk for a string.
func AppendBulkString(dst []byte, s string) []byte {
	return append(append(appendLen(dst, '$', int64(len(s))), s...), '\r', '\n')
}

// AppendNull appends the null bulk reply, "$-1\r\n", which Redis sends for a
// missing value.
func AppendNull(dst []byte) []byte { return append(dst, "$-1\r\n"...) }

// AppendArray appends the header of an array of n elements, "*n\r\n", which
// the n elements are to follow. A request is an array of bulk strings.
func AppendArray(dst []byte, n int) []byte { return appendLen(dst, '*', int64(n)) }

// AppendBulkHeader appends the header of a bulk string of n bytes, "$n\r\n",
// for a writer that sends the n bytes and the final "\r\n" itself.
func AppendBulkHeader(dst []byte, n int) []byte { return appendLen(dst, '$', int64(n)) }

// AppendNullArray appends the null array reply, "*-1\r\n".
func AppendNullArray(dst []byte) []byte { return append(dst, "*-1\r\n"...) }
