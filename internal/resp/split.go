package resp

import (
	"bytes"
	"errors"
)

// A request of a RouteSplit command (MGET, MSET, DEL, UNLINK, EXISTS, TOUCH)
// goes to the servers of its keys in parts, one per server, each with its
// share of the keys; the client's reply is merged from the parts' replies in
// the order of the request's keys. AppendPart writes a part and MergeParts
// merges, given which part each key is in; Split also finds the parts, given
// a function from a key to its server.

// AppendPart appends to dst the part of a request of c, a RouteSplit command,
// whose arguments are args (args[0] being the name) and which passed Check:
// the request for the keys i with parts[i] == part, parts holding the part of
// each key in the order AppendKeys finds them. The part is the command's name
// as the client sent it, then those keys (with their values, for MSET) in the
// request's order, repeats kept ("MGET a a" goes as it is), so that each
// server's reply is the one Redis gives for them.
func AppendPart(dst []byte, c *Command, args [][]byte, parts []int, part int) []byte {
	step, n := c.keyStep(), 0
	for _, p := range parts {
		if p == part {
			n++
		}
	}
	dst = AppendBulk(AppendArray(dst, 1+n*step), args[0])
	for i, p := range parts {
		if p != part {
			continue
		}
		for _, a := range args[1+i*step : 1+(i+1)*step] {
			dst = AppendBulk(dst, a)
		}
	}
	return dst
}

// PartArgs appends to dst the indexes in args of the arguments AppendPart
// writes after the command's name, in its order, for a writer that writes
// them itself.
func PartArgs(dst []int, c *Command, parts []int, part int) []int {
	step := c.keyStep()
	for i, p := range parts {
		if p == part {
			for j := 1 + i*step; j < 1+(i+1)*step; j++ {
				dst = append(dst, j)
			}
		}
	}
	return dst
}

// maxStackParts is the number of parts MergeParts merges without allocating.
const maxStackParts = 16

// MergeParts appends to dst the client's reply to a request of c split into
// parts: parts[i] is the part of key i, as for AppendPart, and replies[p] the
// reply to part p.
//
//   - MGET: one array, the values in the order of the request's keys;
//   - DEL, UNLINK, EXISTS, TOUCH: the sum of the parts' integers;
//   - MSET: +OK.
//
// If a part is answered with an error, the client gets that error: of the
// part of the first key, in the request's order, whose part failed, even
// though other parts may have done their work (as with twemproxy, an MSET or
// DEL split over servers is not atomic). A key whose part has no reply (a
// negative part, past the end of replies, or a nil reply: no server took it or
// answered) fails with "ERR no reply from a server"; a proxy with better words
// for why stands a Reply made by SetError in for it. A reply of the wrong shape
// (not an array of as many values as its part has keys, not an integer, not
// +OK) fails with an error naming the command.
//
// MergeParts allocates nothing for up to 16 parts.
func MergeParts(dst []byte, c *Command, parts []int, replies []*Reply) []byte {
	var stack [2 * maxStackParts]int
	scratch := stack[:]
	if len(replies) > maxStackParts {
		scratch = make([]int, 2*len(replies))
	}
	count, next := scratch[:len(replies)], scratch[len(replies):2*len(replies)]
	clear(count)
	for _, p := range parts {
		if p >= 0 && p < len(replies) {
			count[p]++
		}
	}
	for _, p := range parts {
		var rp *Reply
		if p >= 0 && p < len(replies) {
			rp = replies[p]
		}
		switch {
		case rp == nil:
			return AppendError(dst, "ERR no reply from a server")
		case rp.Kind == KindError:
			return AppendReply(dst, rp)
		case !fits(c, rp, count[p]):
			return AppendError(dst, "ERR unexpected reply to '"+c.Name+"' from a server")
		}
	}
	if used := countUsed(count); used == 1 {
		for _, p := range parts { // one part: its reply is the client's, as it came
			return AppendReply(dst, replies[p])
		}
	}
	switch c.merge {
	case mergeArray:
		for p, rp := range replies {
			if count[p] > 0 {
				next[p] = bytes.IndexByte(rp.raw, '\n') + 1 // the first element
			}
		}
		dst = AppendArray(dst, len(parts))
		for _, p := range parts {
			raw := replies[p].raw
			end := skipValue(raw, next[p])
			dst = append(dst, raw[next[p]:end]...)
			next[p] = end
		}
		return dst
	case mergeSum:
		var sum int64
		for p, rp := range replies {
			if count[p] > 0 {
				sum += rp.Int
			}
		}
		return AppendInt(dst, sum)
	}
	return append(dst, "+OK\r\n"...)
}

// countUsed returns the number of parts with keys.
func countUsed(count []int) int {
	n := 0
	for _, c := range count {
		if c > 0 {
			n++
		}
	}
	return n
}

// fits reports whether rp is the reply c gives for a part of keys keys.
func fits(c *Command, rp *Reply, keys int) bool {
	switch c.merge {
	case mergeArray:
		return rp.Kind == KindArray && rp.Int == int64(keys)
	case mergeSum:
		return rp.Kind == KindInteger
	}
	return rp.Kind == KindSimple && string(rp.Str) == "OK"
}

// Split is a request of a RouteSplit command cut into parts by the servers of
// its keys, for a proxy that leaves the routing of keys to it. The zero Split
// is ready for use; Build reuses its memory.
type Split struct {
	// Subs holds the parts, one per server, in the order of the first key
	// each has in the request.
	Subs []Sub

	cmd   *Command
	parts []int   // the part (index in Subs) of each key, in the request's order
	subOf []int32 // by server index: its part + 1, or 0; all 0 between Builds
}

// Sub is one server's part of a split request.
type Sub struct {
	// Server is the server of the part's keys, as the route function of Build
	// gave it.
	Server int
	// Request is the part, ready to send, as AppendPart writes it.
	Request []byte
	// Keys is the number of keys in Request.
	Keys int
}

// Build splits the request of c whose arguments are args (args[0] being the
// name), which passed Check, into parts by the servers that server names for
// each key: an index, at least 0, of the proxy's server list, which the proxy
// gets back as Sub.Server. An error of server is returned as it is, to answer
// the client with.
func (s *Split) Build(c *Command, args [][]byte, server func(key []byte) (int, error)) error {
	step := c.keyStep()
	if step == 0 {
		return errors.New("resp: split of '" + c.Name + "', which is not split")
	}
	s.cmd = c
	s.Subs = s.Subs[:0]
	s.parts = s.parts[:0]
	defer s.clearSubOf()
	for i := 1; i < len(args); i += step {
		srv, err := server(args[i])
		if err != nil {
			return err
		}
		if srv < 0 {
			return errors.New("resp: split: negative server index")
		}
		if srv >= len(s.subOf) {
			s.subOf = append(s.subOf, make([]int32, srv+1-len(s.subOf))...)
		}
		j := int(s.subOf[srv]) - 1
		if j < 0 {
			j = len(s.Subs)
			s.subOf[srv] = int32(j + 1)
			if j < cap(s.Subs) {
				s.Subs = s.Subs[:j+1]
				s.Subs[j] = Sub{Server: srv, Request: s.Subs[j].Request[:0]}
			} else {
				s.Subs = append(s.Subs, Sub{Server: srv})
			}
		}
		s.Subs[j].Keys++
		s.parts = append(s.parts, j)
	}
	for j := range s.Subs {
		s.Subs[j].Request = AppendPart(s.Subs[j].Request, c, args, s.parts, j)
	}
	return nil
}

// clearSubOf zeroes the entries of subOf that Build set.
func (s *Split) clearSubOf() {
	for _, sub := range s.Subs {
		if sub.Server < len(s.subOf) {
			s.subOf[sub.Server] = 0
		}
	}
}

// Merge appends to dst the client's reply from replies[j], the reply to
// Subs[j], as MergeParts merges them.
func (s *Split) Merge(dst []byte, replies []*Reply) []byte {
	return MergeParts(dst, s.cmd, s.parts, replies)
}
