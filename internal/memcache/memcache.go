// Package memcache reads and writes the memcached text protocol: the classic
// commands (get, set, delete, incr, ...) and the meta commands (mg, ms, md, ma, me,
// mn), requests as a server reads them and responses as a client reads them.
//
// The protocol is described in memcached's doc/protocol.txt. Reading is bounded:
// a key is at most MaxKeyLen bytes, a line at most Limits.MaxLine and a value at
// most Limits.MaxValue, and nothing larger is ever held in memory. Bad input is
// reported as an *Error carrying the reply memcached gives for it ("ERROR",
// "CLIENT_ERROR bad command line format", ...), after consuming exactly what
// memcached would consume, so a server can answer and go on reading.
//
// Writing normalizes: AppendRequest and AppendResponse write single spaces between
// tokens and "\r\n" line ends, which is how memcached writes its replies, so a
// response read and written again is the same bytes. A request read, written and
// read again is the same request.
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

// Default limits; see Limits.
const (
	DefaultMaxLine  = 64 << 10
	DefaultMaxValue = 1 << 20
)

// Limits bound what a Reader accepts.
type Limits struct {
	// MaxLine is the longest command or response line, in bytes, without its line
	// end. If zero, it defaults to DefaultMaxLine (64 KiB), room for a get of 250
	// maximal keys; memcached itself allows 2048 bytes except for get lines.
	MaxLine int
	// MaxValue is the largest value, in bytes. If zero, it defaults to
	// DefaultMaxValue (1 MiB), memcached's default item size (-I).
	MaxValue int
}

func (l Limits) maxLine() int {
	if l.MaxLine > 0 {
		return l.MaxLine
	}
	return DefaultMaxLine
}

func (l Limits) maxValue() int {
	if l.MaxValue > 0 {
		return l.MaxValue
	}
	return DefaultMaxValue
}

// Command is a memcached command.
type Command uint8

// The commands a Reader knows. Others (stats, flush_all, verbosity, ...) are read
// as unknown commands and answered "ERROR".
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
	return c != CmdUnknown && c != CmdVersion && c != CmdQuit && c != CmdMetaNoop
}

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
)

// Error is bad input: a request a server must refuse or a response a client cannot
// read. Reply is what memcached answers to such a request. Unless Fatal is set, the
// Reader consumed exactly the bad request (and, where memcached does, its data
// block) and can go on reading.
type Error struct {
	Reply string
	// Line is the offending line, cut to 128 bytes.
	Line []byte
	// Fatal means the stream cannot be read further: the line was too long, or a
	// response was malformed.
	Fatal bool
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
