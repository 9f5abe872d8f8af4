package memcache

import (
	"bytes"
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
}

type itemOffsets struct{ key, keyEnd, val, valEnd int }

// Reset clears r, keeping its memory for reuse.
func (r *Response) Reset() {
	*r = Response{Items: r.Items[:0], buf: r.buf[:0], offs: r.offs[:0]}
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
// resp's memory. A retrieval reply may hold at most maxItems items. Malformed
// replies are fatal *Errors: the stream is out of step and must be closed.
func (r *Reader) ReadResponse(resp *Response, cmd Command, maxItems int) error {
	resp.Reset()
	var tok [6][]byte
	for {
		line, err := r.readLine(r.lim.maxLine())
		if err != nil {
			return err
		}
		if cmd.IsRetrieval() && bytes.HasPrefix(line, []byte("VALUE ")) {
			t := split(tok[:0], line)
			if len(resp.offs) >= maxItems || len(t) < 4 || len(t) > 5 || len(t[1]) > MaxKeyLen {
				return newError("bad VALUE line", line, true)
			}
			flags, ok1 := parseUint(t[2], math.MaxUint32)
			size, ok2 := parseUint(t[3], math.MaxInt32)
			var cas uint64
			ok3 := true
			if len(t) == 5 {
				cas, ok3 = parseUint(t[4], math.MaxUint64)
			}
			if !ok1 || !ok2 || !ok3 || int(size) > r.lim.maxValue() {
				return newError("bad VALUE line", line, true)
			}
			o := itemOffsets{key: len(resp.buf)}
			resp.buf = append(resp.buf, t[1]...)
			o.keyEnd = len(resp.buf)
			o.val = o.keyEnd
			if err := r.appendValue(resp, int(size)); err != nil {
				return err
			}
			o.valEnd = len(resp.buf)
			resp.offs = append(resp.offs, o)
			resp.Items = append(resp.Items, Item{Flags: uint32(flags), Cas: cas, HasCas: len(t) == 5})
			continue
		}
		start := len(resp.buf)
		resp.buf = append(resp.buf, line...)
		end := len(resp.buf)
		valStart, valEnd := -1, -1
		switch {
		case cmd.IsRetrieval():
			if string(line) != "END" && !IsError(line) {
				return newError("bad reply to "+cmd.String(), line, true)
			}
		case string(line) == "VA" || bytes.HasPrefix(line, []byte("VA ")):
			t := split(tok[:0], line)
			var size uint64
			ok := len(t) >= 2
			if ok {
				size, ok = parseUint(t[1], math.MaxInt32)
			}
			if !cmd.IsMeta() || !ok || int(size) > r.lim.maxValue() {
				return newError("bad VA line", line, true)
			}
			valStart = len(resp.buf)
			if err := r.appendValue(resp, int(size)); err != nil {
				return err
			}
			valEnd = len(resp.buf)
		case len(line) == 0 || bytes.HasPrefix(line, []byte("VALUE ")):
			return newError("bad reply to "+cmd.String(), line, true)
		}
		// Point into buf only now that it no longer grows.
		for i, o := range resp.offs {
			resp.Items[i].Key = resp.buf[o.key:o.keyEnd:o.keyEnd]
			resp.Items[i].Value = resp.buf[o.val:o.valEnd:o.valEnd]
		}
		resp.Line = resp.buf[start:end:end]
		if valStart >= 0 {
			resp.Value = resp.buf[valStart:valEnd:valEnd]
		}
		return nil
	}
}

// appendValue reads a data block of n bytes and its "\r\n", appending the data
// to resp.buf as it arrives.
func (r *Reader) appendValue(resp *Response, n int) error {
	start := len(resp.buf)
	var err error
	if resp.buf, err = r.appendData(resp.buf, n); err != nil {
		return err
	}
	if ended, err := r.readCRLF(); err != nil {
		return err
	} else if !ended {
		return newError("bad data chunk", resp.buf[start:], true)
	}
	return nil
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
