package resp

import (
	"strconv"

	"github.com/chash-dev/chash/internal/bigbuf"
)

// BigArg is the size from which a multibulk argument is read into memory of
// its own, which a proxy may take from the Request (TakeArg) and write on to
// a server without copying it.
const BigArg = bigbuf.Min

// Request is one command as a client sends it.
type Request struct {
	// Args holds the command's name, as sent, and its arguments. They point into
	// the Request's own memory, valid until it is reused.
	Args [][]byte
	// Inline reports that the request came as an inline command, a line of
	// words, rather than as a multibulk.
	Inline bool

	data   []byte   // the arguments under BigArg bytes, one after another
	ends   []int    // where each argument ends in data, or ^k for big[k]
	big    [][]byte // the arguments of BigArg bytes or more, each in its own memory
	bigLen int      // their bytes
}

// Reset clears q, keeping its memory for reuse but that of its large
// arguments, which goes back to bigbuf.
func (q *Request) Reset() {
	q.giveBig()
	q.Args, q.Inline, q.data, q.ends = q.Args[:0], false, q.data[:0], q.ends[:0]
}

// giveBig gives the memory of q's large arguments back (bigbuf.Give).
func (q *Request) giveBig() {
	for _, b := range q.big {
		bigbuf.Give(b)
	}
	clear(q.big)
	q.big, q.bigLen = q.big[:0], 0
}

// TakeArg takes argument i from q, if it was read into memory of its own (a
// multibulk argument of BigArg bytes or more), for a caller that writes it
// on without copying it: b is the argument, the caller's from now on, to give
// back to bigbuf once written (bigbuf.Give) or to drop. Args[i] is nil
// afterwards, and Size no longer counts it. ok is false, and q unchanged, for
// any other argument.
func (q *Request) TakeArg(i int) (b []byte, ok bool) {
	if i < 0 || i >= len(q.ends) || q.ends[i] >= 0 {
		return nil, false
	}
	k := ^q.ends[i]
	b, q.big[k], q.Args[i] = q.big[k], nil, nil
	q.bigLen -= len(b)
	return b, b != nil
}

// Name returns the command's name as sent (any case), or nil for a request
// without arguments.
func (q *Request) Name() []byte {
	if len(q.Args) == 0 {
		return nil
	}
	return q.Args[0]
}

// Size returns the memory q holds for its arguments, as Limits.MaxSize counts
// it (less the framing): their bytes and 32 for each, for a proxy's
// accounting of what its clients hold.
func (q *Request) Size() int { return len(q.data) + q.bigLen + argCost*len(q.Args) }

// end closes the argument that data ends with.
func (q *Request) end() { q.ends = append(q.ends, len(q.data)) }

// finish points Args at the arguments, now that data no longer moves.
func (q *Request) finish() {
	start := 0
	for _, e := range q.ends {
		if e < 0 {
			b := q.big[^e]
			q.Args = append(q.Args, b[:len(b):len(b)])
			continue
		}
		q.Args = append(q.Args, q.data[start:e:e])
		start = e
	}
}

// ReadRequest reads the next request into q, skipping empty ones as Redis does.
// It returns io.EOF if the stream ends before a request begins and
// io.ErrUnexpectedEOF if it ends inside one. Bad input is an *Error whose Reply
// is what Redis answers before closing the connection; the stream is then not
// to be read further. q is reset first and, on error, holds nothing of use.
func (r *Reader) ReadRequest(q *Request) error {
	q.Reset()
	for {
		if r.r == r.w {
			if err := r.fill(len(r.buf)); err != nil {
				return err
			}
		}
		var err error
		if r.buf[r.r] == '*' {
			err = r.readMultibulk(q)
		} else {
			q.Inline = true
			err = r.readInline(q)
		}
		if err != nil {
			q.Reset()
			return err
		}
		if len(q.ends) > 0 {
			q.finish()
			return nil
		}
		q.Inline = false
	}
}

// readMultibulk reads a request of the form "*N\r\n$L\r\n<L bytes>\r\n...",
// with Redis's checks in Redis's order (networking.c, processMultibulkBuffer).
func (r *Reader) readMultibulk(q *Request) error {
	i, err := r.line('\r', 1)
	if err != nil {
		return r.lineError(err, ReplyTooBigMultibulk)
	}
	line := r.buf[r.r : r.r+i]
	n, ok := parseInt(line[1:])
	if !ok || n > 1<<31-1 {
		return newError(ReplyInvalidMultibulk, line)
	}
	if r.auth && n > unauthMaxArgs {
		return newError(ReplyUnauthMultibulk, line)
	}
	r.r += i + 2 // Redis skips the byte after '\r' unread
	size, maxSize, maxBulk := i+2, r.lim.maxSize(), r.lim.maxBulk()
	for ; n > 0; n-- {
		i, err := r.line('\r', 1)
		if err != nil {
			return r.lineError(err, ReplyTooBigBulk)
		}
		line := r.buf[r.r : r.r+i]
		if i == 0 || line[0] != '$' {
			return newError(expectedDollar(r.buf[r.r]), line)
		}
		l, ok := parseInt(line[1:])
		if !ok || l < 0 || l > int64(maxBulk) {
			return newError(ReplyInvalidBulk, line)
		}
		if r.auth && l > unauthMaxBulk {
			return newError(ReplyUnauthBulk, line)
		}
		if size += i + 2 + int(l) + 2 + argCost; size > maxSize {
			return newError(ReplyTooBig, line)
		}
		r.r += i + 2
		if l >= BigArg {
			// Its own memory, which a proxy can take and write on.
			q.ends = append(q.ends, ^len(q.big))
			q.big = append(q.big, nil)
			b, err := r.readN(nil, int(l))
			q.big[len(q.big)-1] = b // Reset gives it back, read or not
			if err != nil {
				return err
			}
			q.bigLen += len(b)
		} else {
			if q.data, err = r.readN(q.data, int(l)); err != nil {
				return err
			}
			q.end()
		}
		if err := r.skip(2); err != nil { // Redis skips these unread too
			return err
		}
	}
	return nil
}

// lineError turns line's errors into the *Error of the line being read.
func (r *Reader) lineError(err error, tooBig string) error {
	if err == errNoLineEnd {
		return newError(tooBig, r.buf[r.r:r.w])
	}
	return err
}

// expectedDollar is Redis's reply to a bulk that does not start with '$',
// naming the byte found; Redis writes '\r' and '\n' there as spaces.
func expectedDollar(c byte) string {
	if c == '\r' || c == '\n' {
		c = ' '
	}
	return ReplyExpectedDollar + string([]byte{c, '\''})
}

// readInline reads an inline request: a line of words, split as Redis splits it.
func (r *Reader) readInline(q *Request) error {
	i, err := r.line('\n', 0)
	if err != nil {
		return r.lineError(err, ReplyTooBigInline)
	}
	line := r.buf[r.r : r.r+i]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	if !q.splitInline(line) {
		return newError(ReplyUnbalancedQuotes, line)
	}
	r.r += i + 1
	return nil
}

// isSpace is C's isspace in the C locale, which Redis uses between words.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// unescape is the byte a backslash before c stands for in double quotes.
func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}

// splitInline appends the words of line to q as Redis's sdssplitargs splits
// them, and reports false for unbalanced quotes. Words are separated by
// spaces; a word may be, or contain, "double quoted" (with \n \r \t \b \a,
// \xHH and \<any> escapes) or 'single quoted' (with \' only) parts, and a
// closing quote must end the word. Words end at ' ', '\t', '\r' or '\n' only,
// while any isspace byte (\v and \f too) is skipped between them.
func (q *Request) splitInline(line []byte) bool {
	p := 0
	at := func(i int) byte { // line[i], or 0 past its end as in a C string
		if i < len(line) {
			return line[i]
		}
		return 0
	}
	for {
		for p < len(line) && isSpace(line[p]) {
			p++
		}
		if p == len(line) {
			return true
		}
		var quote byte // '"' or '\'' inside quotes
		for done := false; !done; {
			c := at(p)
			switch {
			case quote == '"' && c == '\\' && at(p+1) == 'x' && isHex(at(p+2)) && isHex(at(p+3)):
				q.data = append(q.data, unhex(at(p+2))<<4|unhex(at(p+3)))
				p += 3
			case quote == '"' && c == '\\' && p+1 < len(line):
				p++
				q.data = append(q.data, unescape(line[p]))
			case quote == '\'' && c == '\\' && at(p+1) == '\'':
				p++
				q.data = append(q.data, '\'')
			case quote != 0 && c == quote:
				if p+1 < len(line) && !isSpace(line[p+1]) {
					return false
				}
				done = true
			case quote != 0 && p == len(line):
				return false
			case quote != 0:
				q.data = append(q.data, c)
			case p == len(line) || c == ' ' || c == '\n' || c == '\r' || c == '\t':
				done = true
			case c == '"' || c == '\'':
				quote = c
			default:
				q.data = append(q.data, c)
			}
			if p < len(line) {
				p++
			}
		}
		q.end()
	}
}

// AppendRequest appends q to dst as a multibulk, the form servers are sent,
// whichever form q came in.
func AppendRequest(dst []byte, q *Request) []byte {
	dst = AppendArray(dst, len(q.Args))
	for _, a := range q.Args {
		dst = AppendBulk(dst, a)
	}
	return dst
}

// appendLen appends prefix, n and "\r\n".
func appendLen(dst []byte, prefix byte, n int64) []byte {
	dst = append(dst, prefix)
	if 0 <= n && n < 10 {
		dst = append(dst, byte('0'+n))
	} else {
		dst = strconv.AppendInt(dst, n, 10)
	}
	return append(dst, '\r', '\n')
}
