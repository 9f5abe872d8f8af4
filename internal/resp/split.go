package resp

import "errors"

// Split is a request of a RouteSplit command (MGET, MSET, DEL, UNLINK, EXISTS,
// TOUCH) cut into one request per server, and the merging of their replies
// into the one the client is owed. The zero Split is ready for use; Build
// reuses its memory.
type Split struct {
	// Subs holds the sub-requests, one per server, in the order of the first
	// key each has in the request.
	Subs []Sub

	cmd    *Command
	keySub []int32  // the sub of each key (or key and value), in the request's order
	subOf  []int32  // by server index: its sub + 1, or 0; all 0 between Builds
	elems  [][]byte // Merge's: the elements of the subs' arrays
	first  []int    // Merge's: where each sub's elements start in elems
}

// Sub is one server's part of a split request.
type Sub struct {
	// Server is the server of the sub-request's keys, as the route function of
	// Build gave it.
	Server int
	// Request is the sub-request, ready to send: a multibulk of the command's
	// name as the client sent it and the keys (with their values, for MSET) on
	// Server, in the request's order.
	Request []byte
	// Keys is the number of keys in Request.
	Keys int
}

// Build splits the request of c whose arguments are args (args[0] being the
// name), which passed Check, over the servers that server names for each key:
// an index, at least 0, of the proxy's server list, which the proxy passes back
// through Sub.Server. An error of server is returned as it is, to answer the
// client with. Keys on one server keep their order and repeats ("MGET a a" is
// sent as it is), so that each server's reply is the one Redis gives for them.
func (s *Split) Build(c *Command, args [][]byte, server func(key []byte) (int, error)) error {
	step := c.keyStep()
	if step == 0 {
		return errors.New("resp: split of '" + c.Name + "', which is not split")
	}
	s.cmd = c
	s.Subs = s.Subs[:0]
	s.keySub = s.keySub[:0]
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
		s.keySub = append(s.keySub, int32(j))
	}
	for j := range s.Subs {
		sub := &s.Subs[j]
		sub.Request = AppendBulk(AppendArray(sub.Request, 1+sub.Keys*step), args[0])
	}
	for k, j := range s.keySub {
		sub := &s.Subs[j]
		for _, a := range args[1+k*step : 1+(k+1)*step] {
			sub.Request = AppendBulk(sub.Request, a)
		}
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

// Merge appends to dst the reply the client is owed, from replies[j], the
// reply of Subs[j]:
//
//   - MGET: one array, the values in the order of the request's keys;
//   - DEL, UNLINK, EXISTS, TOUCH: the sum of the servers' integers;
//   - MSET: +OK.
//
// If a server answered an error, the client gets that error: the first, in
// the order of Subs, even though other servers may have done their part (as
// with twemproxy, an MSET or DEL split over servers is not atomic). A nil
// reply, a server that gave none, reads as the error "ERR no reply from a
// server"; a proxy with better words for why passes a Reply made by SetError
// instead. A reply of the wrong shape (not an array of as many values as
// keys, not an integer, not +OK) reads as an error naming the command.
func (s *Split) Merge(dst []byte, replies []*Reply) []byte {
	for j := range s.Subs {
		var rp *Reply
		if j < len(replies) {
			rp = replies[j]
		}
		switch {
		case rp == nil:
			return AppendError(dst, "ERR no reply from a server")
		case rp.Kind == KindError:
			return AppendReply(dst, rp)
		case !s.fits(rp, s.Subs[j].Keys):
			return AppendError(dst, "ERR unexpected reply to '"+s.cmd.Name+"' from a server")
		}
	}
	if len(s.Subs) == 1 {
		return AppendReply(dst, replies[0])
	}
	switch s.cmd.merge {
	case mergeArray:
		s.elems, s.first = s.elems[:0], s.first[:0]
		for j := range s.Subs {
			s.first = append(s.first, len(s.elems))
			s.elems = replies[j].AppendElems(s.elems)
		}
		dst = AppendArray(dst, len(s.keySub))
		for _, j := range s.keySub {
			dst = append(dst, s.elems[s.first[j]]...)
			s.first[j]++
		}
		clear(s.elems) // let go of the replies' memory
		return dst
	case mergeSum:
		var sum int64
		for j := range s.Subs {
			sum += replies[j].Int
		}
		return AppendInt(dst, sum)
	}
	return append(dst, "+OK\r\n"...)
}

// fits reports whether rp is the reply the command gives for keys keys.
func (s *Split) fits(rp *Reply, keys int) bool {
	switch s.cmd.merge {
	case mergeArray:
		return rp.Kind == KindArray && rp.Int == int64(keys)
	case mergeSum:
		return rp.Kind == KindInteger
	}
	return rp.Kind == KindSimple && string(rp.Str) == "OK"
}
