package resp

import (
	"bytes"
	"errors"
	"io"

	"github.com/chash-dev/chash/internal/bigbuf"
)

// defaultBufSize is a Reader's buffer unless NewReaderSize says otherwise:
// Redis's own read size (PROTO_IOBUF_LEN).
const defaultBufSize = 16 << 10

// A Reader reads requests or replies from a buffered stream.
type Reader struct {
	rd   io.Reader
	buf  []byte // buf[r:w] is read and not yet used
	size int    // buf's size unless a long line grew it
	r, w int
	err  error // a read error that came with bytes, reported by the next fill
	lim  Limits
	auth bool // the client has yet to authenticate: Redis's tighter limits apply

	stack []int // elements still to read of each array a reply is inside
}

// NewReader returns a Reader of rd with the given limits and a 16 KiB buffer.
func NewReader(rd io.Reader, lim Limits) *Reader {
	return NewReaderSize(rd, lim, defaultBufSize)
}

// NewReaderSize is NewReader with a buffer of the given size (at least 16
// bytes). The buffer grows, up to Limits.MaxInline and a few bytes, for a line
// longer than it; bulk strings never pass through it whole.
func NewReaderSize(rd io.Reader, lim Limits, size int) *Reader {
	size = max(size, 16)
	return &Reader{rd: rd, buf: make([]byte, size), size: size, lim: lim}
}

// Reset makes r read from rd, discarding buffered data, as a new Reader with
// r's limits and buffer size would; the client is taken as authenticated
// again. A proxy keeps the Readers of idle connections in a pool: Reset(nil)
// lets go of the stream, and of a buffer a long line grew.
func (r *Reader) Reset(rd io.Reader) {
	r.rd, r.r, r.w, r.err, r.auth = rd, 0, 0, nil, false
	if len(r.buf) > r.size {
		r.buf = make([]byte, r.size)
	}
}

// Buffered returns the number of bytes that can be read without waiting.
func (r *Reader) Buffered() int { return r.w - r.r }

// Pending returns the bytes that can be read without waiting, without
// consuming them; they are valid until the next read.
func (r *Reader) Pending() []byte { return r.buf[r.r:r.w:r.w] }

// Wait waits until at least one byte can be read without waiting, or the read
// fails. A failed Wait may be retried (after a read deadline, say): it consumes
// nothing. After an error of ReadRequest or ReadReply, by contrast, the stream
// is out of step and not to be read further.
func (r *Reader) Wait() error {
	if r.r < r.w {
		return nil
	}
	return r.fill(len(r.buf))
}

// SetAuthRequired sets whether the client has yet to authenticate. Until it has,
// Redis refuses requests of more than 10 arguments ("unauthenticated multibulk
// length") and bulk strings longer than 16384 bytes ("unauthenticated bulk
// length"), so that a stranger cannot make it buffer much; so does a Reader
// while on is true. A proxy that answers AUTH itself sets it after each AUTH,
// before reading the next request.
func (r *Reader) SetAuthRequired(on bool) { r.auth = on }

// errNoLineEnd is a line without its end within the limit; the caller knows
// which of Redis's "too big" replies it is.
var errNoLineEnd = errors.New("resp: line too long")

// fill reads more input after what is buffered, moving that to the front of
// the buffer, and growing the buffer up to size bytes if it is full. It returns
// nil once at least one byte more is buffered.
func (r *Reader) fill(size int) error {
	if r.r > 0 {
		r.w = copy(r.buf, r.buf[r.r:r.w])
		r.r = 0
	}
	if r.w == len(r.buf) {
		if len(r.buf) >= size {
			return errNoLineEnd
		}
		nb := make([]byte, min(max(2*len(r.buf), 4096), size))
		copy(nb, r.buf[:r.w])
		r.buf = nb
	}
	if r.err != nil {
		err := r.err
		r.err = nil
		return err
	}
	for range 100 {
		n, err := r.rd.Read(r.buf[r.w:])
		if n < 0 || n > len(r.buf)-r.w {
			return errors.New("resp: reader returned an impossible count")
		}
		r.w += n
		if err != nil {
			if n > 0 {
				r.err = err
				return nil
			}
			return err
		}
		if n > 0 {
			return nil
		}
	}
	return io.ErrNoProgress
}

// more is fill for a read that has begun: an end of input there is an
// unexpected one.
func (r *Reader) more(size int) error {
	err := r.fill(size)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// line finds the end of the line at the read position as Redis does: the first
// term byte, unless a NUL byte comes first, which hides the end from Redis's
// strchr. It returns the end's offset from the read position once extra bytes
// after it are buffered too. A line whose end is not within its first
// Limits.MaxInline bytes, which Redis would then have buffered, is
// errNoLineEnd.
func (r *Reader) line(term byte, extra int) (int, error) {
	lim := r.lim.maxInline()
	from := 0 // bytes after the read position searched already
	for {
		b := r.buf[r.r+from : r.w]
		if i := bytes.IndexByte(b, term); i >= 0 {
			if bytes.IndexByte(b[:i], 0) >= 0 {
				return -1, r.noLineEnd(lim)
			}
			i += from
			if i > lim {
				return -1, errNoLineEnd
			}
			for r.w-r.r < i+1+extra {
				if err := r.more(lim + 1 + extra); err != nil {
					return -1, err
				}
			}
			return i, nil
		}
		if bytes.IndexByte(b, 0) >= 0 {
			return -1, r.noLineEnd(lim)
		}
		from = r.w - r.r
		if from > lim {
			return -1, errNoLineEnd
		}
		if err := r.more(lim + 1 + extra); err != nil {
			return -1, err
		}
	}
}

// noLineEnd reads on, discarding, until more than lim bytes have come after the
// read position: there Redis gives up waiting for the end of a line it cannot
// see. It returns errNoLineEnd, or the read's error.
func (r *Reader) noLineEnd(lim int) error {
	n := 0
	for {
		n += r.w - r.r
		r.r = r.w
		if n > lim {
			return errNoLineEnd
		}
		if err := r.more(len(r.buf)); err != nil {
			return err
		}
	}
}

// skip discards n bytes.
func (r *Reader) skip(n int) error {
	for n > 0 {
		if r.r == r.w {
			if err := r.more(len(r.buf)); err != nil {
				return err
			}
		}
		k := min(n, r.w-r.r)
		r.r += k
		n -= k
	}
	return nil
}

// readN appends the next n bytes to dst. It grows dst as bytes arrive, to
// at most twice what has arrived or the buffer's size, and reads large values
// past the buffer. dst's memory may be given back (bigbuf.Grow): the caller
// keeps only the slice returned.
func (r *Reader) readN(dst []byte, n int) ([]byte, error) {
	idle := 0 // reads in a row that returned nothing
	for n > 0 {
		if r.r < r.w {
			k := min(n, r.w-r.r)
			if cap(dst)-len(dst) < k {
				dst = bigbuf.Grow(dst, r.growth(dst, n, k))
			}
			dst = append(dst, r.buf[r.r:r.r+k]...)
			r.r += k
			n -= k
			continue
		}
		if n < len(r.buf) {
			if err := r.more(len(r.buf)); err != nil {
				return dst, err
			}
			continue
		}
		if r.err != nil { // the error that came with the last bytes
			err := r.err
			r.err = nil
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return dst, err
		}
		if cap(dst) == len(dst) {
			dst = bigbuf.Grow(dst, r.growth(dst, n, 1))
		}
		k := min(n, cap(dst)-len(dst))
		m, err := r.rd.Read(dst[len(dst) : len(dst)+k])
		if m < 0 || m > k {
			return dst, errors.New("resp: reader returned an impossible count")
		}
		dst = dst[:len(dst)+m]
		n -= m
		if m == 0 && err == nil {
			if idle++; idle == 100 {
				return dst, io.ErrNoProgress
			}
		}
		if err != nil && n > 0 {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return dst, err
		}
		if err != nil {
			r.err = err
		}
	}
	return dst, nil
}

// growth returns the size to grow dst to for n more bytes of a value, k of
// which are at hand: room for the k, and for the rest up to the next size
// class (twice dst, at least the buffer's size), but no more than the value
// needs. A client that announces a large value and sends it slowly, or never,
// makes the proxy hold at most twice what it sent.
//
// Bytes the stream holds count as arrived when its reader can tell
// (Readable): a value that arrived whole, as most do, gets its buffer at
// once, not one doubling at a time with a copy at each.
func (r *Reader) growth(dst []byte, n, k int) int {
	arrived := 0
	if rr, ok := r.rd.(Readable); ok && n >= bigbuf.Min {
		arrived = r.w - r.r + rr.Readable()
		if arrived >= n {
			return max(len(dst)+n, len(dst)+k)
		}
	}
	size := len(dst) + min(n, max(len(dst), len(r.buf), arrived))
	return max(bigbuf.Class(size), len(dst)+k)
}

// Readable is a reader that can tell how many bytes it has that a read
// returns without waiting: at least that many, as a socket's count of the
// bytes it received and a buffer's are.
type Readable interface {
	Readable() int
}
