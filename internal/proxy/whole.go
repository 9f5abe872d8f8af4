package proxy

import (
	"bytes"
	"errors"
	"io"

	"github.com/chash-dev/chash/internal/memcache"
	"github.com/chash-dev/chash/internal/resp"
)

// mcDry is what mcClient.whole parses with: a reader and request of its own.
type mcDry struct {
	src bytes.Reader
	rd  *memcache.Reader
	req memcache.Request
}

// whole parses b as read would, on a reader of its own.
func (c *mcClient) whole(b []byte) bool {
	d, _ := c.codec.dry.Get().(*mcDry)
	if d == nil {
		d = new(mcDry)
		d.rd = memcache.NewReaderSize(nil, c.codec.lim, clientReadBuffer)
	}
	defer c.codec.dry.Put(d)
	d.src.Reset(b)
	d.rd.Reset(&d.src)
	for d.src.Len() > 0 || d.rd.Buffered() > 0 {
		err := d.rd.ReadRequest(&d.req)
		if err == nil {
			switch {
			case d.req.More:
				return false // a retrieval line read in parts: not for whole
			case d.req.Command == memcache.CmdQuit:
				return true // nothing is read after it
			}
			continue
		}
		var me *memcache.Error
		if !errors.As(err, &me) || me.Cut {
			return false // the stream ended inside a request
		}
		if me.Fatal {
			return true // the connection closes after it
		}
	}
	return true
}

// redisDry is what redisClient.whole parses with.
type redisDry struct {
	src bytes.Reader
	rd  *resp.Reader
	q   resp.Request
}

// whole parses b as read would, on a reader of its own. Not for a client
// that has to authenticate: an AUTH in b lifts the limits of lengths that
// read applies before it (resp.Reader.SetAuthRequired), so b's parse cannot
// tell whether a request after it is refused or waits for more bytes.
func (c *redisClient) whole(b []byte) bool {
	if c.locked() {
		return false
	}
	d, _ := c.codec.dry.Get().(*redisDry)
	if d == nil {
		d = new(redisDry)
		d.rd = resp.NewReaderSize(nil, c.codec.lim, clientReadBuffer)
	}
	defer c.codec.dry.Put(d)
	d.src.Reset(b)
	d.rd.Reset(&d.src)
	for d.src.Len() > 0 || d.rd.Buffered() > 0 {
		if err := d.rd.ReadRequest(&d.q); err != nil {
			// A protocol error closes the connection after it; any other
			// error is the stream ending inside a request.
			var e *resp.Error
			return errors.As(err, &e)
		}
	}
	return true
}

// replyDry is what a serverCodec's whole parses with: a reader of its own,
// reading src, and the codec's parse of one reply by it.
type replyDry struct {
	src bytes.Reader
	rd  interface {
		Reset(io.Reader)
		Buffered() int
	}
	// parse reads the reply to rp's request from rd with the codec's read:
	// out of protocol is an error wrapping errBadReply.
	parse func(rp reply) error
}

// whole parses b as read would parse the replies of the calls queued, in
// order, and reports whether b holds whole replies; bytes read would fail on
// (out of protocol, or more than the calls queued) count as whole.
func (d *replyDry) whole(b []byte, queued func(i int) reply) bool {
	d.src.Reset(b)
	d.rd.Reset(&d.src)
	defer d.rd.Reset(nil)
	for i := 0; d.src.Len() > 0 || d.rd.Buffered() > 0; i++ {
		rp := queued(i)
		if rp == nil {
			return true
		}
		if err := d.parse(rp); err != nil {
			return errors.Is(err, errBadReply) // else the bytes ended
		}
	}
	return true
}

// whole parses the bytes buffered with read, on a server codec and reply of
// its own with the same limits and buffer size.
func (s *mcServer) whole(queued func(i int) reply) bool {
	if s.dry == nil {
		dry := &mcServer{rd: memcache.NewReader(nil, s.lim)}
		var rep mcReply
		s.dry = &replyDry{rd: dry.rd, parse: func(rp reply) error {
			rep.req = rp.(*mcReply).req // the grammar of the reply
			err := dry.read(&rep)
			rep.req = nil
			return err
		}}
	}
	return s.dry.whole(s.rd.Pending(), queued)
}

// whole parses the bytes buffered with read, on a server codec and reply of
// its own with the same limits and buffer size.
func (s *redisServer) whole(queued func(i int) reply) bool {
	if s.dry == nil {
		dry := &redisServer{codec: s.codec, rd: resp.NewReader(nil, s.codec.srvLim)}
		var rep redisReply
		s.dry = &replyDry{rd: dry.rd, parse: func(reply) error { return dry.read(&rep) }}
	}
	return s.dry.whole(s.rd.Pending(), queued)
}
