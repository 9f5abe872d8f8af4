// Package memcache reads and writes the memcached text protocol: the classic
// commands (get, set, delete, incr, ...) and the meta commands (mg, ms, md, ma, me,
// mn), requests as a server reads them and replies as a client reads them.
//
// The protocol is described in memcached's doc/protocol.txt. This package reads it
// as memcached 1.6 does, and more strictly: a proxy that forwards what it read
// must never send a server bytes that the server reads differently, or a client
// could hide a command in a value ("request smuggling"). So a request is read
// whole and checked before it is returned, and anything memcached could read
// otherwise is refused:
//
//   - A line holds no control characters (bytes below 0x20, and 0x7f): memcached
//     stops reading a line at a NUL byte, and keys must not hold them. A storage
//     command with one in the token memcached ignores after its numbers, and a
//     value too large, is refused as too large, as memcached refuses it.
//   - A key is at most MaxKeyLen bytes as sent, a base64 key (meta flag b) too,
//     and it must be base64 as memcached writes it (padded, canonical).
//   - Numbers are decimal digits, with a sign only where memcached takes a
//     negative number, and must fit the field memcached stores them in: memcached
//     cuts a length of 4294967298 to 2 and reads the rest as the next command.
//   - A line other than get or gets is at most MaxCommandLine bytes with its
//     "\r\n": memcached closes a connection whose line is longer, so a
//     longer line is refused (after the data block of a storage command).
//   - Meta commands take only the flags their documentation lists, each once,
//     with the token each flag takes (an opaque of at most 31 bytes, a mode of one
//     character, ...).
//   - A base64 key that decodes to a space or a control character is refused
//     in me (ReplyUnsafeBinaryKey), which may write it back decoded, breaking
//     its reply. mg with k may too; ReadRequest returns such an mg, which
//     Validate refuses, for a proxy to drop its k and write the key back
//     itself (Request.EchoesKeyRaw).
//
// A refused request is an *Error whose Reply is what memcached answers to it (or
// to its nearest case, where memcached would accept it but read it differently).
// The Reader consumed the request: after a refused storage command it also skips
// the data block when the command's length could be read, and otherwise the
// error is Fatal, because the next bytes are not a command. A Fatal error means
// the stream must be closed.
//
// Replies are read against the grammar of the request they answer: a reply that
// does not fit it (a line no such request is answered with, a value for a key
// that was not asked, a meta flag that was not requested, a key not echoed as
// memcached 1.6.18 echoes it) is a Fatal *Error. A meta request in quiet mode
// (flag q) is sent followed by mn, so that a reader can tell where memcached
// hid a reply.
//
// Memory grows with what arrived: a value is read into a buffer that grows as its
// bytes arrive, never to the length a line announces, and lines are bounded by
// Limits.
//
// Writing normalizes: AppendRequest writes a request from its parsed fields, with
// single spaces, canonical numbers and "\r\n", never the bytes as they were
// read; a request read, written and read again is the same request. Validate
// holds a request built in code to the rules ReadRequest reads by. AppendResponse
// writes a reply as memcached does, so a reply read and written again is the
// same bytes.
//
// A Reader is not safe for concurrent use; Requests and Responses own their memory
// and may be reused after the caller is done with them.
package memcache

import (
	"fmt"
	"strconv"
)

// MaxKeyLen is the longest key memcached accepts, in bytes.
const MaxKeyLen = 250

// MaxCommandLine is the most bytes of a request line, other than get or gets,
// that memcached holds before it finds the line's newline: past it, memcached
// closes the connection (get and gets lines it reads at any length). A Reader
// takes such lines of at most MaxCommandLine bytes with their "\r\n".
const MaxCommandLine = 2048

// Default limits; see Limits.
const (
	DefaultMaxLine  = 64 << 10
	DefaultMaxValue = 1 << 20
)

// Limits bound what a Reader accepts.
type Limits struct {
	// MaxLine is the longest get or gets line and the longest reply line, in
	// bytes, without the line end. If zero, it defaults to DefaultMaxLine (64
	// KiB), room for a get of 250 maximal keys. Other request lines are bounded
	// by MaxCommandLine, or by MaxLine if it is smaller.
	MaxLine int
	// MaxValue is the largest value, in bytes. If zero, it defaults to
	// DefaultMaxValue (1 MiB), memcached's default item size (-I).
	MaxValue int
	// Parts makes a Reader read retrieval lines of any length, as memcached
	// reads get and gets lines, in parts: a get or gets line longer than
	// MaxLine, or a gat or gats line longer than MaxCommandLine, is returned
	// as several requests of the same command, each with some of its keys, all
	// but the last with More set. A part's line, as AppendRequest writes it,
	// is at most MaxLine bytes (MaxCommandLine for gat and gats), so that each
	// can go to memcached as it is. A line with a bad key is refused whole
	// if it fits in MaxLine; in a longer line, the parts before the bad key
	// are returned before the error, which ends the line. If false, such
	// lines are refused with ReplyLineTooLong. Parts needs a MaxLine of at
	// least 512 bytes, room for a part of one key.
	Parts bool
}

func (l Limits) maxLine() int {
	if l.MaxLine > 0 {
		return l.MaxLine
	}
	return DefaultMaxLine
}

// maxCommandLine is the longest request line, without its line end, of a
// command other than get and gets.
func (l Limits) maxCommandLine() int {
	return min(l.maxLine(), MaxCommandLine-2)
}

func (l Limits) maxValue() int {
	if l.MaxValue > 0 {
		return l.MaxValue
	}
	return DefaultMaxValue
}

// Command is a memcached command.
type Command uint8

// The commands a Reader knows. Others (lru_crawler, slabs, shutdown, ...) are
// read as unknown commands and answered "ERROR".
const (
	CmdUnknown Command = iota
	CmdGet
	CmdGets
	CmdGat
	CmdGats
	CmdSet
	CmdAdd
	CmdReplace
	CmdAppend
	CmdPrepend
	CmdCas
	CmdDelete
	CmdIncr
	CmdDecr
	CmdTouch
	CmdVersion
	CmdQuit
	CmdMetaGet        // mg
	CmdMetaSet        // ms
	CmdMetaDelete     // md
	CmdMetaArithmetic // ma
	CmdMetaDebug      // me
	CmdMetaNoop       // mn
	CmdStats          // stats [<args>]
	CmdFlushAll       // flush_all [delay] [noreply]
	CmdVerbosity      // verbosity <level> [noreply]
	numCommands
)

var commandNames = [numCommands]string{
	CmdUnknown:        "unknown",
	CmdGet:            "get",
	CmdGets:           "gets",
	CmdGat:            "gat",
	CmdGats:           "gats",
	CmdSet:            "set",
	CmdAdd:            "add",
	CmdReplace:        "replace",
	CmdAppend:         "append",
	CmdPrepend:        "prepend",
	CmdCas:            "cas",
	CmdDelete:         "delete",
	CmdIncr:           "incr",
	CmdDecr:           "decr",
	CmdTouch:          "touch",
	CmdVersion:        "version",
	CmdQuit:           "quit",
	CmdMetaGet:        "mg",
	CmdMetaSet:        "ms",
	CmdMetaDelete:     "md",
	CmdMetaArithmetic: "ma",
	CmdMetaDebug:      "me",
	CmdMetaNoop:       "mn",
	CmdStats:          "stats",
	CmdFlushAll:       "flush_all",
	CmdVerbosity:      "verbosity",
}

// String returns the command's name as it is sent: "get", "ms", ...
func (c Command) String() string {
	if c < numCommands {
		return commandNames[c]
	}
	return "Command(" + strconv.Itoa(int(c)) + ")"
}

// Commands returns every known command, in declaration order.
func Commands() []Command {
	cs := make([]Command, 0, numCommands-1)
	for c := CmdGet; c < numCommands; c++ {
		cs = append(cs, c)
	}
	return cs
}

// IsRetrieval reports whether c is get, gets, gat or gats: commands of any number
// of keys whose reply is VALUE items ended by END.
func (c Command) IsRetrieval() bool { return c >= CmdGet && c <= CmdGats }

// IsStorage reports whether c carries a value: set, add, replace, append, prepend,
// cas and ms.
func (c Command) IsStorage() bool { return c >= CmdSet && c <= CmdCas || c == CmdMetaSet }

// IsMeta reports whether c is a meta command.
func (c Command) IsMeta() bool { return c >= CmdMetaGet && c <= CmdMetaNoop }

// HasKey reports whether requests of c name at least one key.
func (c Command) HasKey() bool {
	return c != CmdUnknown && c != CmdVersion && c != CmdQuit && c != CmdMetaNoop && c < CmdStats
}

// IsAdmin reports whether c is stats, flush_all or verbosity: commands about
// the server rather than items.
func (c Command) IsAdmin() bool { return c >= CmdStats && c <= CmdVerbosity }

// Replies memcached sends for bad input, and the proxy's own.
const (
	ReplyError          = "ERROR"
	ReplyBadFormat      = "CLIENT_ERROR bad command line format"
	ReplyBadChunk       = "CLIENT_ERROR bad data chunk"
	ReplyLineTooLong    = "CLIENT_ERROR line too long"
	ReplyTooLarge       = "SERVER_ERROR object too large for cache"
	ReplyBadDelta       = "CLIENT_ERROR invalid numeric delta argument"
	ReplyBadExptime     = "CLIENT_ERROR invalid exptime argument"
	ReplyBadDeleteUsage = "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]"
	ReplyBadKeyEncoding = "CLIENT_ERROR error decoding key"
	// ReplyBinary answers a request in memcached's binary protocol, which is not
	// read: memcached speaks it on connections that start with byte 0x80.
	ReplyBinary = "CLIENT_ERROR binary protocol is not supported"
	// ReplyUnsafeBinaryKey refuses a base64 key (meta flag b) that decodes to
	// a space or a control character where memcached may write the key back
	// decoded: in me, and mg's k (see Request.EchoesKeyRaw). memcached would
	// then break its own reply, and a proxy's connection to it.
	ReplyUnsafeBinaryKey = "CLIENT_ERROR base64 key decodes to a space or control character"

	// Replies to bad meta commands.
	ReplyMetaTooManyFlags    = "CLIENT_ERROR options flags too long"
	ReplyMetaGetTooManyFlags = "CLIENT_ERROR options flags are too long" // mg's wording
	ReplyInvalidFlag         = "CLIENT_ERROR invalid flag"
	ReplyDuplicateFlag       = "CLIENT_ERROR duplicate flag"
	ReplyInvalidOrDuplicate  = "CLIENT_ERROR invalid or duplicate flag" // md's and ma's, for any bad flag
	ReplyBadToken            = "CLIENT_ERROR bad token in command line format"
	ReplyBadModeLength       = "CLIENT_ERROR incorrect length for M token"
	ReplyBadInitial          = "CLIENT_ERROR invalid numeric initial value"
	ReplyBadMetaDelta        = "CLIENT_ERROR invalid numeric delta value"
	ReplyOpaqueTooLong       = "CLIENT_ERROR opaque token too long"
	ReplyBadSetMode          = "CLIENT_ERROR invalid mode for ms M token"
	ReplyBadArithmeticMode   = "CLIENT_ERROR invalid mode for ma M token"
)

// Error is bad input: a request a server must refuse or a reply a client cannot
// read. Unless Fatal is set, the Reader consumed exactly the bad request (and
// its data block, if it has one) and can go on reading.
type Error struct {
	// Reply is what memcached answers to the request, one of the Reply
	// constants; for a reply that cannot be read, what is wrong with it ("bad
	// reply to set", "VALUE of a key not asked for", ...).
	Reply string
	// Line is the offending line, cut to 128 bytes.
	Line []byte
	// Fatal means the stream cannot be read further: a line was longer than
	// Limits.MaxLine, a data block was not where its command said, a storage
	// command was refused before its length could be read, or a reply was
	// malformed. Reply is still the answer to send before closing.
	Fatal bool
	// Noreply means memcached answers nothing to this request, so neither should
	// a server or proxy: a classic command whose last token is "noreply" is
	// silent about its errors, except ERROR for a wrong number of tokens. Meta
	// commands always answer errors.
	Noreply bool
	// Cut means the input ended within the refused request's data block:
	// Noreply is set, as memcached answers nothing then, and the next read
	// finds the end of the input. A reader of a part of a stream, which
	// goes on, would read the rest of the block.
	Cut bool
}

func (e *Error) Error() string {
	return fmt.Sprintf("memcache: %s: %q", e.Reply, e.Line)
}

func newError(reply string, line []byte, fatal bool) *Error {
	if len(line) > 128 {
		line = line[:128]
	}
	return &Error{Reply: reply, Line: append([]byte(nil), line...), Fatal: fatal}
}
