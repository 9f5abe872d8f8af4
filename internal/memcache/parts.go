package memcache

import (
	"bufio"
	"bytes"
	"io"
)

// memcached reads a get or gets line of any length: it grows its read buffer
// until the line ends, then answers key by key. A Reader with Limits.Parts
// reads such lines too, but never holds one whole: it returns a long line as
// parts of a bounded size, each a request of some of its keys, so that the
// memory a client costs stays bounded however long its line. gat and gats
// lines are read the same way: memcached reads them whole when they arrive in
// one read of its buffer, and closes the connection otherwise; the parts keep
// each line written to a server within MaxCommandLine, which memcached always
// reads.

// readPiece returns the next line without its line end, or, when the line is
// longer than max, its first max bytes or more (at most max plus the buffer's
// size), with whole false and the rest of the line unread. The piece is valid
// until the next read.
func (r *Reader) readPiece(max int) (line []byte, whole bool, err error) {
	line, err = r.br.ReadSlice('\n')
	switch {
	case err == nil:
		return trimEOL(line), true, nil
	case err == bufio.ErrBufferFull:
		r.long, whole, err = r.fill(append(r.long[:0], line...), max)
		line = r.long
		if cap(r.long) > maxKeep {
			r.long = nil // line stays valid until the next read, as documented
		}
		return line, whole, err
	case err == io.EOF && len(line) > 0:
		err = io.ErrUnexpectedEOF
	}
	return nil, false, err
}

// fill appends to dst the next bytes of the line being read, until its end
// (whole, and stripped) or until dst holds max bytes or more.
func (r *Reader) fill(dst []byte, max int) ([]byte, bool, error) {
	for len(dst) < max {
		s, err := r.br.ReadSlice('\n')
		dst = append(dst, s...)
		switch {
		case err == nil:
			return trimEOL(dst), true, nil
		case err == io.EOF:
			return dst, false, io.ErrUnexpectedEOF
		case err != bufio.ErrBufferFull:
			return dst, false, err
		}
	}
	return dst, false, nil
}

// partMax is the most bytes of keys, spaces between them included, of one
// part of a line of command c: a part's line, as AppendRequest writes it,
// fits in MaxLine (MaxCommandLine for gat and gats) with the command, the
// exptime and the line end.
func (r *Reader) partMax(c Command) int {
	if c == CmdGat || c == CmdGats {
		return r.lim.maxCommandLine() - len("gats -2147483648 ")
	}
	return r.lim.maxLine() - len("gets ")
}

// firstPart starts reading r.req's line in parts: it keeps the bytes of the
// line after the command (and the exptime) and returns the first part.
// whole says whether the line read so far is the whole line.
func (r *Reader) firstPart(whole bool) error {
	req := r.req
	tok := req.tokens
	before := 1 // the tokens before the keys
	if req.Command == CmdGat || req.Command == CmdGats {
		if len(tok) < 2 {
			r.skipLine(whole)
			return r.fail(ReplyError)
		}
		if !whole && tokenEnd(req.line, tok[1]) == len(req.line) {
			// The exptime goes on past the bytes read: longer than any
			// line memcached reads.
			return newError(ReplyLineTooLong, req.line, true)
		}
		e, ok := parseInt32(tok[1]) // tok holds more than a line's worth of bytes
		if !ok {
			r.skipLine(whole)
			return r.fail(ReplyBadExptime)
		}
		req.Exptime, r.partExp = e, e
		before = 2
	}
	if whole {
		// A line read whole is refused whole, as memcached refuses it;
		// only a longer one has parts answered before a bad key is read.
		for _, k := range tok[before:] {
			if r.badKey(k) {
				return r.fail(ReplyBadFormat)
			}
		}
	}
	r.pbuf = append(r.pbuf[:0], req.line[tokenEnd(req.line, tok[before-1]):]...)
	r.poff, r.pwhole, r.part = 0, whole, req.Command
	return r.nextPart()
}

// tokenEnd returns where token t of line ends in line.
func tokenEnd(line, t []byte) int {
	return cap(line) - cap(t) + len(t)
}

// nextPart returns the next part of the line being read in parts into r.req:
// one with keys, or the last.
func (r *Reader) nextPart() error {
	for {
		err := r.readPart()
		if err != nil || len(r.req.Keys) > 0 || !r.req.More {
			return err
		}
	}
}

// readPart reads the next part of the line being read in parts into r.req.
func (r *Reader) readPart() error {
	req := r.req
	c := r.part
	max := r.partMax(c)
	if !r.pwhole && len(r.pbuf)-r.poff < max {
		n := copy(r.pbuf, r.pbuf[r.poff:])
		var err error
		r.pbuf, r.pwhole, err = r.fill(r.pbuf[:n], max)
		r.poff = 0
		if err != nil {
			r.endParts()
			return err
		}
	}
	rest := r.pbuf[r.poff:]
	cut := len(rest)
	if !r.pwhole || cut > max {
		// The part ends after the last space within max bytes; the key
		// it cuts goes to the next part.
		cut = bytes.LastIndexByte(rest[:min(max+1, len(rest))], ' ') + 1
	}
	req.Command, req.Exptime = c, r.partExp
	req.line = append(req.line[:0], rest[:cut]...)
	r.poff += cut
	var ctl bool
	req.tokens, ctl, _ = split(req.tokens[:0], req.line)
	r.ctl = ctl
	if cut == 0 {
		// No space within max bytes: a key far longer than memcached takes.
		req.line = append(req.line, rest[:min(len(rest), MaxKeyLen+1)]...)
		r.skipLine(r.pwhole)
		r.endParts()
		return r.fail(ReplyBadFormat)
	}
	for _, k := range req.tokens {
		if r.badKey(k) {
			r.skipLine(r.pwhole)
			r.endParts()
			return r.fail(ReplyBadFormat)
		}
	}
	req.Keys = append(req.Keys[:0], req.tokens...)
	req.More = !r.pwhole || r.poff < len(r.pbuf)
	if !req.More {
		r.endParts()
	}
	return nil
}

// endParts ends the reading of a line in parts, keeping its buffer for the
// next unless one line grew it large.
func (r *Reader) endParts() {
	r.part, r.poff, r.pwhole = CmdUnknown, 0, false
	r.pbuf = keep(r.pbuf)
	if r.pbuf != nil {
		r.pbuf = r.pbuf[:0]
	}
}

// skipLine reads and discards the rest of a line refused part way, unless
// whole says it was read to its end: memcached reads a get line whole before
// it answers, and the next request begins after it.
func (r *Reader) skipLine(whole bool) {
	for !whole {
		_, err := r.br.ReadSlice('\n')
		whole = err != bufio.ErrBufferFull
	}
}
