package memcache

import (
	"bufio"
	"encoding/binary"
	"io"

	"github.com/chash-dev/chash/internal/bigbuf"
)

// binaryMagic is the first byte of a request in memcached's binary protocol.
const binaryMagic = 0x80

// minGrow is the least a value buffer grows by when it is full, so that small
// values are read in one step. A buffer never grows by more than what it holds,
// so it is at most twice the bytes that arrived, plus minGrow.
const minGrow = 4 << 10

// maxKeep is the largest buffer a Request or Response keeps for reuse: a larger
// one, held for one large value, would stay pinned to an idle connection.
const maxKeep = 64 << 10

// A Reader reads requests or replies from a stream.
type Reader struct {
	br   *bufio.Reader
	rd   io.Reader // br's source
	lim  Limits
	long []byte // a line longer than br's buffer
	// started says a request of the stream was read: a 0x80 byte then
	// starts a line, as memcached reads it, not the binary protocol, which
	// only a stream's first byte chooses.
	started bool

	// What ReadRequest knows of the request it is reading.
	req    *Request
	ctl    bool // its line holds a control character
	base64 bool // its meta flag b was given

	// What ReadRequest knows of a retrieval line it returns in parts (see
	// Limits.Parts): its command and exptime (CmdUnknown if no line is being
	// read in parts), and the bytes of it read and not yet returned,
	// pbuf[poff:], whose end is the line's if pwhole.
	part    Command
	partExp int64
	pbuf    []byte
	poff    int
	pwhole  bool
}

// NewReader returns a Reader of rd with the given limits and a 16 KiB buffer.
func NewReader(rd io.Reader, lim Limits) *Reader {
	return NewReaderSize(rd, lim, 16<<10)
}

// NewReaderSize is NewReader with a buffer of the given size.
func NewReaderSize(rd io.Reader, lim Limits, size int) *Reader {
	return &Reader{br: bufio.NewReaderSize(rd, size), rd: rd, lim: lim}
}

// Reset makes r read from rd, discarding buffered data.
func (r *Reader) Reset(rd io.Reader) {
	r.br.Reset(rd)
	r.rd = rd
	r.started = false
}

// Resume tells r that its stream's first request was read before, by
// another Reader: a 0x80 byte then starts a line, not the binary protocol.
func (r *Reader) Resume() { r.started = true }

// Buffered returns the number of bytes that can be read without waiting.
func (r *Reader) Buffered() int { return r.br.Buffered() }

// Pending returns the bytes that can be read without waiting, without
// consuming them; they are valid until the next read.
func (r *Reader) Pending() []byte {
	b, _ := r.br.Peek(r.br.Buffered())
	return b
}

// Wait waits until at least one byte can be read without waiting, or the read
// fails. A failed Wait may be retried (after a read deadline, say).
func (r *Reader) Wait() error {
	_, err := r.br.Peek(1)
	return err
}

// readLine returns the next line without its "\n" or "\r\n". The line is valid
// until the next read. A line longer than max is a fatal *Error; the stream is
// left somewhere inside it, having read at most max+2 bytes of it.
func (r *Reader) readLine(max int) ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		r.long = append(r.long[:0], line...)
		for err == bufio.ErrBufferFull && len(r.long) <= max+1 {
			line, err = r.br.ReadSlice('\n')
			r.long = append(r.long, line...)
		}
		line = r.long
		if cap(r.long) > maxKeep {
			r.long = nil // line stays valid until the next read, as documented
		}
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

// split appends the space-separated tokens of line to dst. It reports whether
// line holds a control character (a byte below 0x20, or 0x7f), and whether its
// tokens are apart by single spaces with none before or after, as memcached
// writes its replies. Like memcached, it splits at spaces only: a tab is part
// of a token. It looks at each byte once, eight at a time within a token, as it
// runs on every request.
func split(dst [][]byte, line []byte) (tokens [][]byte, ctl, tidy bool) {
	sp := splitter{start: -1, tidy: true}
	i := 0
	for i+8 <= len(line) {
		x := binary.LittleEndian.Uint64(line[i:])
		if !hasSpaceOrControl(x) {
			if sp.start < 0 {
				sp.start = i
			}
			i += 8
			continue
		}
		for end := i + 8; i < end; i++ {
			dst = sp.step(dst, line, i)
		}
	}
	for ; i < len(line); i++ {
		dst = sp.step(dst, line, i)
	}
	if sp.start >= 0 {
		dst = append(dst, line[sp.start:])
	} else {
		sp.tidy = false // empty, or a space at the end
	}
	return dst, sp.ctl, sp.tidy
}

// splitter is split's state.
type splitter struct {
	start     int // of the token being read, or -1
	ctl, tidy bool
}

// step is split's step for the byte at i.
func (sp *splitter) step(dst [][]byte, line []byte, i int) [][]byte {
	switch c := line[i]; {
	case c == ' ':
		if sp.start < 0 {
			sp.tidy = false // a space at the start, or after another
		} else {
			dst = append(dst, line[sp.start:i])
			sp.start = -1
		}
		return dst
	case c < 0x20 || c == 0x7f:
		sp.ctl = true
	}
	if sp.start < 0 {
		sp.start = i
	}
	return dst
}

// hasSpaceOrControl reports whether one of the eight bytes of x is a space or a
// control character; see hasControl.
func hasSpaceOrControl(x uint64) bool {
	return ((x-0x21*lows)|((x^0x7f*lows)-lows))&^x&highs != 0
}

const (
	lows  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainToken reports whether t could be one token of a line: one or more
// bytes, none a space or a control character. Like hasControl, it looks at
// eight bytes at a time.
func plainToken(t []byte) bool {
	if len(t) == 0 {
		return false
	}
	for len(t) >= 8 {
		if hasSpaceOrControl(binary.LittleEndian.Uint64(t)) {
			return false
		}
		t = t[8:]
	}
	for _, c := range t {
		if c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// hasControl reports whether b holds a control character: a byte below 0x20,
// or 0x7f. It looks at eight bytes at a time, as it runs on every line read.
func hasControl(b []byte) bool {
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		// A byte below 0x20 borrows in x - 0x20 per byte, and a 0x7f byte is
		// zero in x ^ 0x7f per byte; bytes of 0x80 and above are masked by ^x.
		// The test is exact: a borrow only starts at a byte that matches.
		if ((x-0x20*lows)|((x^0x7f*lows)-lows))&^x&highs != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}

// appendData appends the next n bytes of the stream to dst. The buffer grows as
// the bytes arrive, never to n at once: a line that announces a large value
// costs only what was sent. dst is a Request's or Response's own memory: the
// buffers it outgrows are given back for reuse (bigbuf), and it starts at 16
// KiB (bigbuf.Min) for a value that will pass it.
func (r *Reader) appendData(dst []byte, n int) ([]byte, error) {
	for n > 0 {
		if len(dst) == cap(dst) {
			// The class below len+step, which Grow takes as it is, but
			// room for one byte at least; and the smallest class rather
			// than less, for a value that will pass it. A value that has
			// all arrived gets room for the whole of it.
			arrived := r.br.Buffered()
			if rr, ok := r.rd.(interface{ Readable() int }); ok && n >= bigbuf.Min {
				// The bytes the source holds have arrived too: a
				// value that came whole gets its buffer at once.
				arrived += rr.Readable()
			}
			size := len(dst) + min(max(len(dst), minGrow, arrived), n)
			if size < bigbuf.Min && len(dst)+n >= bigbuf.Min {
				size = bigbuf.Min
			}
			if arrived < n {
				size = bigbuf.Class(size)
			}
			dst = bigbuf.Grow(dst, max(size, len(dst)+1))
		}
		m := min(n, cap(dst)-len(dst))
		k, err := io.ReadFull(r.br, dst[len(dst):len(dst)+m])
		dst = dst[:len(dst)+k]
		n -= k
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return dst, err
		}
	}
	return dst, nil
}

// readBlock appends a data block of n bytes to dst, reads the "\r\n" that must
// end it and reports whether it was there. A block already buffered is copied
// at once; a larger one grows dst as it arrives (appendData, whose dst it is).
func (r *Reader) readBlock(dst []byte, n int) ([]byte, bool, error) {
	if n+2 <= r.br.Buffered() {
		b, _ := r.br.Peek(n + 2)
		if cap(dst)-len(dst) < n {
			dst = bigbuf.Grow(dst, len(dst)+n)
		}
		dst = append(dst, b[:n]...)
		r.br.Discard(n + 2)
		return dst, b[n] == '\r' && b[n+1] == '\n', nil
	}
	dst, err := r.appendData(dst, n)
	if err != nil {
		return dst, false, err
	}
	ended, err := r.readCRLF()
	return dst, ended, err
}

// readCRLF reads the "\r\n" that ends a data block, and reports whether it was
// there.
func (r *Reader) readCRLF() (bool, error) {
	b, err := r.br.Peek(2)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return false, err
	}
	ok := b[0] == '\r' && b[1] == '\n'
	r.br.Discard(2)
	return ok, nil
}

// skipData discards a data block of n bytes and reports whether its "\r\n"
// followed.
func (r *Reader) skipData(n int) (bool, error) {
	if _, err := r.br.Discard(n); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return false, err
	}
	return r.readCRLF()
}
