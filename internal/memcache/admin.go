package memcache

import (
	"math"
	"strconv"
)

// admin parses stats, flush_all and verbosity as memcached 1.6 does:
//
//	stats [<args>]                 any arguments; memcached answers those it
//	                               does not know with ERROR
//	flush_all [<delay>] [noreply]  a delay memcached's strtol reads
//	verbosity <level> [noreply]    a level of 32 bits
//
// A wrong number of tokens is ERROR, answered even with noreply.
func (r *Reader) admin() error {
	req, tok := r.req, r.req.tokens
	if r.ctl {
		return r.fail(ReplyBadFormat)
	}
	switch req.Command {
	case CmdStats:
		req.Args = append(req.Args, tok[1:]...)
	case CmdFlushAll:
		if len(tok) > 3 {
			return r.fail(ReplyError)
		}
		r.noreply()
		n := 1
		if req.Noreply {
			n = 2
		}
		if len(tok) != n {
			// memcached reads the delay from the second token, whatever the
			// third ("flush_all 10 x" flushes in 10 seconds).
			d, err := strconv.ParseInt(string(tok[1]), 10, 64)
			if err != nil {
				return r.fail(ReplyBadExptime)
			}
			req.Exptime = d
		}
	case CmdVerbosity:
		if len(tok) < 2 || len(tok) > 3 {
			return r.fail(ReplyError)
		}
		r.noreply()
		if _, ok := parseUint(tok[1], math.MaxUint32); !ok {
			return r.fail(ReplyBadFormat) // silent with noreply: "verbosity noreply" is
		}
		req.Args = append(req.Args, tok[1])
	}
	return nil
}

// validateAdmin is Validate's check of stats, flush_all and verbosity.
func (req *Request) validateAdmin() error {
	switch req.Command {
	case CmdStats:
		for _, a := range req.Args {
			if !plainToken(a) {
				return req.invalid(ReplyBadFormat)
			}
		}
	case CmdVerbosity:
		if len(req.Args) != 1 {
			return req.invalid(ReplyError)
		}
		if _, ok := parseUint(req.Args[0], math.MaxUint32); !ok {
			return req.invalid(ReplyBadFormat)
		}
	}
	return nil
}
