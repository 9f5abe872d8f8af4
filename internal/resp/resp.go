// Package resp reads and writes the Redis protocol, RESP2, as a sharding proxy
// needs it: requests as redis-server reads them, replies as a client reads them,
// the commands a proxy can route with the keys of each, and the splitting of
// multi-key requests over servers and the merging of their replies.
//
// # Requests
//
// A Reader reads requests in both of Redis's forms, multibulk
// ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n") and inline ("GET k\r\n", split with
// Redis's quoting rules), pipelined. It accepts what redis-server 7.0 accepts
// and refuses what it refuses, with the same error reply, byte for byte:
//
//	ERR Protocol error: invalid multibulk length
//	ERR Protocol error: invalid bulk length
//	ERR Protocol error: expected '$', got 'x'
//	ERR Protocol error: too big mbulk count string
//	ERR Protocol error: too big bulk count string
//	ERR Protocol error: too big inline request
//	ERR Protocol error: unbalanced quotes in request
//	ERR Protocol error: unauthenticated multibulk length
//	ERR Protocol error: unauthenticated bulk length
//
// Redis answers a protocol error and closes the connection: the rest of the
// stream cannot be read in step. So does a Reader: an *Error from ReadRequest
// carries the reply to send, and the stream is not to be read further. Requests
// read before it are whole and are to be answered first, as Redis answers them.
//
// Where Redis is lenient, so is the Reader, so that a client gets from a proxy
// what it gets from Redis: the byte after the "\r" of a length line and the two
// bytes after a bulk argument are skipped unread ("$3\rXabcYZ" is "abc"), and
// empty requests (a blank line, "*0\r\n", "*-1\r\n") are skipped unanswered.
// Redis looks for the end of a line with strchr, which stops at a NUL byte: to
// Redis a line with a NUL before its end has no end, so it waits for more input
// and, past 64 KiB, answers "too big ..."; a Reader does the same. Where Redis
// depends on how its reads fall, a Reader takes the strict side: a line (inline
// request or length line) must end within its first Limits.MaxInline bytes, as
// in Redis when bytes arrive one at a time, while Redis accepts a longer line if
// its end arrives in the same read as the 64 KiB mark.
//
// Every length is checked before its bytes are read and nothing is allocated
// for a length before its bytes arrive: a bulk grows as it is read. Limits
// bounds a bulk (Redis's proto-max-bulk-len), a line and a whole request or
// reply. In steady state reading a request allocates nothing: a Request keeps
// its memory for the next one.
//
// # Replies
//
// ReadReply reads one reply strictly: simple strings, errors, integers, bulk
// strings, arrays (nested), null bulk and null array, each exactly as Redis
// writes it. Anything else is an *Error after which the stream cannot be read:
// a server that sends it is out of step. A Reply keeps the bytes it was read
// from, so a proxy forwards it as it came; AppendElems finds an array's
// elements for merging. AppendSimple, AppendError, AppendInt, AppendBulk,
// AppendArray and the rest write replies; AppendRequest writes a request, always
// as a multibulk (inline requests too), which is what servers are sent.
//
// # Commands
//
// Lookup finds a command of redis-server 7.0 by name, without allocating;
// Check checks a request as Redis does before running it (the command exists,
// its number of arguments) and refuses commands that cannot be sharded, each with
// the error reply Redis (or, for a refusal, a proxy) gives. A Command tells how
// a proxy serves it (its Route), AppendKeys finds its keys where Redis's
// COMMAND GETKEYS finds them and ServerOf finds the one server they are all on.
// A multi-key request of MGET, MSET, DEL, UNLINK, EXISTS or TOUCH goes to
// its servers in parts, one per server, and their replies merge back in the
// order of the request's keys: AppendPart writes a part and MergeParts merges,
// for a proxy that assigns keys to parts itself, and Split does it all given a
// function from a key to its server.
//
// A Reader is not safe for concurrent use; nor are Requests, Replies and Splits,
// which own their memory and are meant to be reused. Lookup, Check and the
// Commands they return are safe for concurrent use.
package resp

import (
	"fmt"
)

// Default limits; see Limits.
const (
	DefaultMaxBulk   = 512 << 20 // Redis's proto-max-bulk-len
	DefaultMaxInline = 64 << 10  // Redis's PROTO_INLINE_MAX_SIZE
	DefaultMaxSize   = 1 << 30   // Redis's client-query-buffer-limit
)

// Limits bound what a Reader accepts.
type Limits struct {
	// MaxBulk is the longest bulk string of a request or reply, in bytes; a
	// request announcing a longer one is answered "invalid bulk length", as
	// Redis does past its proto-max-bulk-len. If zero, it defaults to
	// DefaultMaxBulk (512 MiB), Redis's default.
	MaxBulk int
	// MaxInline is the longest inline request or length line of a request, in
	// bytes before the byte that ends it: the "\n" of an inline request (so its
	// "\r" counts), the "\r" of a length line. If zero, it defaults to
	// DefaultMaxInline (64 KiB), which Redis does not let one change.
	MaxInline int
	// MaxSize bounds the memory one request or reply holds: its bytes as sent
	// and, for a request, 32 bytes more for each argument (what its argument
	// list costs). Past it a request is answered "too big request" and a reply
	// is refused. If zero, it defaults to DefaultMaxSize (1 GiB), the bound Redis
	// puts on a client's unread input by default; a proxy holding many clients
	// may want less.
	MaxSize int
}

func (l Limits) maxBulk() int {
	if l.MaxBulk > 0 {
		return l.MaxBulk
	}
	return DefaultMaxBulk
}

func (l Limits) maxInline() int {
	if l.MaxInline > 0 {
		return l.MaxInline
	}
	return DefaultMaxInline
}

func (l Limits) maxSize() int {
	if l.MaxSize > 0 {
		return l.MaxSize
	}
	return DefaultMaxSize
}

// The least numbers of arguments and bytes of a bulk Redis refuses from a client
// that has yet to authenticate (see Reader.SetAuthRequired).
const (
	unauthMaxArgs = 10
	unauthMaxBulk = 16384
)

// argCost is what an argument costs a Request besides its bytes: its place in
// the argument list. Counting it bounds the memory of a request of many empty
// arguments.
const argCost = 32

// Error replies a Reader reports, without the "-" and the line end. Each is what
// redis-server 7.0 answers for the same bytes, except ReplyTooBig, which Redis
// has no reply for: past its client-query-buffer-limit it closes the connection
// unanswered.
const (
	ReplyInvalidMultibulk = "ERR Protocol error: invalid multibulk length"
	ReplyInvalidBulk      = "ERR Protocol error: invalid bulk length"
	ReplyTooBigMultibulk  = "ERR Protocol error: too big mbulk count string"
	ReplyTooBigBulk       = "ERR Protocol error: too big bulk count string"
	ReplyTooBigInline     = "ERR Protocol error: too big inline request"
	ReplyUnbalancedQuotes = "ERR Protocol error: unbalanced quotes in request"
	ReplyUnauthMultibulk  = "ERR Protocol error: unauthenticated multibulk length"
	ReplyUnauthBulk       = "ERR Protocol error: unauthenticated bulk length"
	ReplyTooBig           = "ERR Protocol error: too big request"
	// ReplyExpectedDollar is followed by the byte found and a quote: "x'".
	ReplyExpectedDollar = "ERR Protocol error: expected '$', got '"
)

// Error is bad input. From ReadRequest, Reply is the error reply Redis sends for
// it (without the "-" and the line end) before it closes the connection; from
// ReadReply, Reply says what is wrong with the reply; from Check, Reply is the
// error reply for the request, after which the stream reads on.
type Error struct {
	Reply string
	// Near quotes the input where the error was found, cut to 64 bytes, for
	// logs; nil where there is nothing to quote.
	Near []byte
}

func (e *Error) Error() string {
	if e.Near == nil {
		return "resp: " + e.Reply
	}
	return fmt.Sprintf("resp: %s: near %q", e.Reply, e.Near)
}

func newError(reply string, near []byte) *Error {
	if len(near) > 64 {
		near = near[:64]
	}
	return &Error{Reply: reply, Near: append([]byte{}, near...)}
}

// Kind is the type of a reply: its first byte.
type Kind byte

// The kinds of RESP2 replies.
const (
	KindSimple  Kind = '+' // simple string: "+OK"
	KindError   Kind = '-' // error: "-ERR ..."
	KindInteger Kind = ':' // integer: ":42"
	KindBulk    Kind = '$' // bulk string, or null bulk: "$3\r\nabc", "$-1"
	KindArray   Kind = '*' // array, or null array: "*2\r\n...", "*-1"
)

// String returns the kind's name: "simple string", "error", ...
func (k Kind) String() string {
	switch k {
	case KindSimple:
		return "simple string"
	case KindError:
		return "error"
	case KindInteger:
		return "integer"
	case KindBulk:
		return "bulk string"
	case KindArray:
		return "array"
	}
	return fmt.Sprintf("Kind(%q)", byte(k))
}

// parseInt parses b as Redis's string2ll does: an optional '-', then digits
// without leading zeros ("0" alone excepted), at most 20 bytes, in range of an
// int64. No '+', no spaces, no "-0".
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1)/10 || v*10 > 1<<64-1-d {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}
