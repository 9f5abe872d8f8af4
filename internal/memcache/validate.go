package memcache

import (
	"math"
	"strconv"
)

// Validate reports whether req may be sent to memcached: whether memcached
// reads the line AppendRequest writes of it as the request req describes, whole,
// on a connection it keeps open. It makes the checks ReadRequest makes of the
// requests it reads, with the same rules, on req's fields, so that a request
// built in code is held to them too: keys of 1 to MaxKeyLen bytes without
// spaces or control characters, a base64 key as memcached writes it, numbers
// in the range memcached stores them in, meta flags as ReadRequest takes them
// (numbers written as strconv writes them), and a line of at most
// MaxCommandLine bytes but for get and gets. A request that ReadRequest
// returned passes, but for one whose key memcached may write back raw
// (EchoesKeyRaw), which passes once its k is removed.
//
// If req fails, the error is an *Error whose Reply is what memcached answers
// to the request, or to its nearest case, as ReadRequest would. Fields that
// AppendRequest does not write for req's command are not looked at.
func (req *Request) Validate() error {
	c := req.Command
	keys := 1
	switch {
	case c == CmdUnknown || c >= numCommands:
		return req.invalid(ReplyError)
	case c == CmdGet || c == CmdGets:
		keys = max(len(req.Keys), 1)
	case c == CmdGat || c == CmdGats:
		keys = len(req.Keys) // memcached answers a gat without keys with END
	case !c.HasKey():
		keys = 0
	}
	if len(req.Keys) != keys {
		return req.invalid(ReplyError)
	}
	for _, k := range req.Keys {
		if len(k) > MaxKeyLen || !plainToken(k) {
			return req.invalid(ReplyBadFormat)
		}
	}
	switch {
	case c == CmdTouch || c == CmdGat || c == CmdGats:
		if req.Exptime < math.MinInt32 || req.Exptime > math.MaxInt32 {
			return req.invalid(ReplyBadExptime)
		}
	case c.IsStorage():
		if c != CmdMetaSet && (req.Exptime < math.MinInt32 || req.Exptime > math.MaxInt32) ||
			len(req.Value) > maxSize {
			return req.invalid(ReplyBadFormat)
		}
	}
	if c.IsAdmin() {
		if err := req.validateAdmin(); err != nil {
			return err
		}
	}
	if c.IsMeta() && c != CmdMetaNoop {
		if err := req.validateMeta(); err != nil {
			return err
		}
	}
	if c != CmdGet && c != CmdGets && lineLen(req) > MaxCommandLine {
		return req.invalid(ReplyLineTooLong)
	}
	return nil
}

// validateMeta is Validate's check of a meta command's flags and key.
func (req *Request) validateMeta() error {
	c, flags := req.Command, req.MetaFlags
	var seen metaFlagSet
	if c == CmdMetaDebug {
		// me takes b alone, right after the key.
		switch {
		case len(flags) > 1 || len(flags) == 1 && string(flags[0]) != "b":
			return req.invalid(ReplyInvalidFlag)
		case len(flags) == 1:
			seen = flagSet("b")
		}
	} else {
		n := 2 + len(flags) // the command, the key and the flags
		if c == CmdMetaSet {
			n++ // and the data length
		}
		if n > maxMetaTokens {
			if c == CmdMetaGet {
				return req.invalid(ReplyMetaGetTooManyFlags)
			}
			return req.invalid(ReplyMetaTooManyFlags)
		}
		for _, f := range flags {
			if !plainToken(f) {
				return req.invalid(ReplyBadFormat)
			}
		}
		var pre, post string
		pre, post, seen = checkMetaFlags(c, flags, nil)
		switch {
		case pre != "":
			return req.invalid(pre)
		case post != "":
			return req.invalid(post)
		}
	}
	if !seen.has('b') {
		return nil
	}
	// A key of MaxKeyLen bytes decodes to fewer.
	var buf [MaxKeyLen]byte
	key, ok := decodeKey(buf[:0], req.Keys[0])
	switch {
	case !ok && c == CmdMetaDebug:
		return req.invalid(ReplyBadFormat)
	case !ok:
		return req.invalid(flagReply(c, ReplyBadKeyEncoding))
	case echoesRaw(c, seen) && !plainToken(key):
		return req.invalid(ReplyUnsafeBinaryKey)
	}
	return nil
}

// invalid returns the *Error of Validate, with the command and its first key
// as the line.
func (req *Request) invalid(reply string) *Error {
	line := append([]byte(req.Command.String()), ' ')
	return newError(reply, append(line, req.Key()...), false)
}

// maxSize is the longest data block memcached takes: its length and "\r\n"
// make a 32-bit int.
const maxSize = math.MaxInt32 - 2

// lineLen returns the length of the line AppendRequest writes of req, with its
// "\r\n"; a test holds the two together.
func lineLen(req *Request) int {
	c := req.Command
	n := len(c.String()) + len("\r\n")
	keys := 0
	for _, k := range req.Keys {
		keys += 1 + len(k)
	}
	flags := 0
	for _, f := range req.MetaFlags {
		flags += 1 + len(f)
	}
	switch {
	case c == CmdGat || c == CmdGats:
		n += 1 + intLen(req.Exptime) + keys
	case c.IsRetrieval():
		n += keys
	case c == CmdMetaSet:
		n += 1 + len(req.Key()) + 1 + intLen(int64(len(req.Value))) + flags
	case c.IsStorage():
		n += 1 + len(req.Key()) + 1 + uintLen(uint64(req.Flags)) + 1 + intLen(req.Exptime) + 1 + intLen(int64(len(req.Value)))
		if c == CmdCas {
			n += 1 + uintLen(req.Cas)
		}
	case c == CmdMetaNoop:
	case c.IsMeta():
		n += 1 + len(req.Key()) + flags
	case c == CmdDelete:
		n += 1 + len(req.Key())
	case c == CmdIncr || c == CmdDecr:
		n += 1 + len(req.Key()) + 1 + uintLen(req.Delta)
	case c == CmdTouch:
		n += 1 + len(req.Key()) + 1 + intLen(req.Exptime)
	case c == CmdFlushAll:
		if req.Exptime != 0 {
			n += 1 + intLen(req.Exptime)
		}
	case c.IsAdmin():
		for _, a := range req.Args {
			n += 1 + len(a)
		}
	}
	if req.Noreply && writesNoreply(c) {
		n += len(" noreply")
	}
	return n
}

// intLen and uintLen return the length of n in decimal.
func intLen(n int64) int {
	var b [20]byte
	return len(strconv.AppendInt(b[:0], n, 10))
}

func uintLen(n uint64) int {
	var b [20]byte
	return len(strconv.AppendUint(b[:0], n, 10))
}
