package memcache

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

var (
	k250 = strings.Repeat("k", 250)
	k251 = strings.Repeat("k", 251)
	// Base64 keys: 248 bytes as sent (186 decoded) is a key; 252 as sent (189
	// decoded) is not, nor 320 (240 decoded), though it decodes to less than 250.
	b64k248 = strings.Repeat("eHh4", 62)
	b64k252 = strings.Repeat("eHh4", 63)
	b64k320 = strings.Repeat("eHh4", 80)
	// An opaque of 31 bytes, the longest memcached takes, and one of 32.
	o31 = strings.Repeat("o", 31)
	o32 = strings.Repeat("o", 32)
	// A binary protocol quit request, and memcached's answer to it before it
	// closes the connection.
	binQuit  = "\x80\x07" + strings.Repeat("\x00", 22)
	binQuitR = "\x81\x07" + strings.Repeat("\x00", 22)
)

// closed ends the answer of a memcached that closed the connection.
const closed = "<closed>"

// readRequestTests lists inputs of one request, and what reading them gives:
// the request written back (want), or the reply of the *Error (reply, fatal,
// noreply). After a non-fatal error the reader must be at the next request.
//
// mc is memcached 1.6.18's answer to the input followed by "mn\r\n" on an empty
// cache: TestReadRequestMemcached checks it, and that memcached answers want the
// same. Where the reply differs from memcached's answer, memcached either reads
// the bytes that follow as a command (request smuggling: see "ERROR" or "OK"
// before "MN") or reads the request otherwise than it is written; the Reader is
// stricter there on purpose.
var readRequestTests = []struct {
	in      string
	want    string
	reply   string
	fatal   bool
	noreply bool
	mc      string
}{
	// Retrievals.
	{in: "get a\r\n", want: "get a\r\n", mc: "END\r\nMN\r\n"},
	{in: "get a b  c\r\n", want: "get a b c\r\n", mc: "END\r\nMN\r\n"},
	{in: "  get   a \n", want: "get a\r\n", mc: "END\r\nMN\r\n"},
	{in: "gets a b\r\n", want: "gets a b\r\n", mc: "END\r\nMN\r\n"},
	{in: "gat 10 a b\r\n", want: "gat 10 a b\r\n", mc: "END\r\nMN\r\n"},
	{in: "gats -1 a\r\n", want: "gats -1 a\r\n", mc: "END\r\nMN\r\n"},
	{in: "gat 10\r\n", want: "gat 10\r\n", mc: "END\r\nMN\r\n"},
	{in: "gat 010 a\r\n", want: "gat 10 a\r\n", mc: "END\r\nMN\r\n"},
	{in: "gat -0 a\r\n", want: "gat 0 a\r\n", mc: "END\r\nMN\r\n"},
	{in: "gat -2147483648 a\r\n", want: "gat -2147483648 a\r\n", mc: "END\r\nMN\r\n"},
	{in: "get " + k250 + "\r\n", want: "get " + k250 + "\r\n", mc: "END\r\nMN\r\n"},
	{in: "get \xc3\xa9\xff\r\n", want: "get \xc3\xa9\xff\r\n", mc: "END\r\nMN\r\n"},
	{in: "get\r\n", reply: ReplyError, mc: "ERROR\r\nMN\r\n"},
	{in: "gat\r\n", reply: ReplyError, mc: "ERROR\r\nMN\r\n"},
	{in: "gat x a\r\n", reply: ReplyBadExptime, mc: "CLIENT_ERROR invalid exptime argument\r\nMN\r\n"},
	// memcached cuts exptimes to 32 bits, and takes a sign.
	{in: "gat 2147483648 a\r\n", reply: ReplyBadExptime, mc: "END\r\nMN\r\n"},
	{in: "gat +1 a\r\n", reply: ReplyBadExptime, mc: "END\r\nMN\r\n"},
	{in: "get " + k251 + "\r\n", reply: ReplyBadFormat, mc: "CLIENT_ERROR bad command line format\r\nMN\r\n"},
	{in: "get a " + k251 + " b\r\n", reply: ReplyBadFormat, mc: "CLIENT_ERROR bad command line format\r\nMN\r\n"},
	// Control characters: memcached takes them in keys, and ends a line at NUL.
	{in: "get a\x01b\r\n", reply: ReplyBadFormat, mc: "END\r\nMN\r\n"},
	{in: "get a\x00 b\r\n", reply: ReplyBadFormat, mc: "END\r\nMN\r\n"},
	{in: "get a\tb\r\n", reply: ReplyBadFormat, mc: "END\r\nMN\r\n"},
	{in: "get a\rb\r\n", reply: ReplyBadFormat, mc: "END\r\nMN\r\n"},
	{in: "get a\x7f\r\n", reply: ReplyBadFormat, mc: "END\r\nMN\r\n"},
	{in: "get a\r\r\n", reply: ReplyBadFormat, mc: "END\r\nMN\r\n"},

	// Storage commands.
	{in: "set a 5 0 2\r\nhi\r\n", want: "set a 5 0 2\r\nhi\r\n", mc: "STORED\r\nMN\r\n"},
	{in: "set a 5 0 2 noreply\r\nhi\r\n", want: "set a 5 0 2 noreply\r\nhi\r\n", mc: "MN\r\n"},
	{in: "set a 5 0 2 junk\r\nhi\r\n", want: "set a 5 0 2\r\nhi\r\n", mc: "STORED\r\nMN\r\n"},
	{in: "set a 4294967295 0 1\r\nx\r\n", want: "set a 4294967295 0 1\r\nx\r\n", mc: "STORED\r\nMN\r\n"},
	{in: "set a 0 -1 0\r\n\r\n", want: "set a 0 -1 0\r\n\r\n", mc: "STORED\r\nMN\r\n"},
	{in: "set a 007 -0 01\r\nx\r\n", want: "set a 7 0 1\r\nx\r\n", mc: "STORED\r\nMN\r\n"},
	{in: "set a 0 0 3\r\na\r\n\r\n", want: "set a 0 0 3\r\na\r\n\r\n", mc: "STORED\r\nMN\r\n"},
	{in: "add a 0 0 1\r\nx\r\n", want: "add a 0 0 1\r\nx\r\n", mc: "STORED\r\nMN\r\n"},
	{in: "replace a 0 0 1\r\nx\r\n", want: "replace a 0 0 1\r\nx\r\n", mc: "NOT_STORED\r\nMN\r\n"},
	{in: "append a 0 0 1\r\nx\r\n", want: "append a 0 0 1\r\nx\r\n", mc: "NOT_STORED\r\nMN\r\n"},
	{in: "prepend a 0 0 1\r\nx\r\n", want: "prepend a 0 0 1\r\nx\r\n", mc: "NOT_STORED\r\nMN\r\n"},
	{in: "cas a 0 0 1 99\r\nx\r\n", want: "cas a 0 0 1 99\r\nx\r\n", mc: "NOT_FOUND\r\nMN\r\n"},
	{in: "cas a 0 0 1 99 noreply\r\nx\r\n", want: "cas a 0 0 1 99 noreply\r\nx\r\n", mc: "MN\r\n"},
	// A wrong number of tokens: memcached reads the data block as a command, so
	// where the length is cannot be known.
	{in: "set a 0 0\r\n", reply: ReplyError, fatal: true, mc: "ERROR\r\nMN\r\n"},
	{in: "set a 0 0 1 2 3\r\nx\r\n", reply: ReplyError, fatal: true, mc: "ERROR\r\nERROR\r\nMN\r\n"},
	{in: "cas a 0 0 1\r\nx\r\n", reply: ReplyError, fatal: true, mc: "ERROR\r\nERROR\r\nMN\r\n"},
	// A bad line with a length: memcached runs the data block as a command; the
	// Reader skips it.
	{in: "set " + k251 + " 0 0 1\r\nx\r\n", reply: ReplyBadFormat, mc: "CLIENT_ERROR bad command line format\r\nERROR\r\nMN\r\n"},
	{in: "set " + k251 + " 0 0 1 noreply\r\nx\r\n", reply: ReplyBadFormat, noreply: true, mc: "ERROR\r\nMN\r\n"},
	{in: "set k\x00 0 0 11\r\nflush_all\r\n\r\n", reply: ReplyBadFormat, mc: "ERROR\r\nOK\r\nERROR\r\nMN\r\n"},
	{in: "set a\x01 0 0 1\r\nx\r\n", reply: ReplyBadFormat, mc: "STORED\r\nMN\r\n"},
	{in: "set a -1 0 1\r\nx\r\n", reply: ReplyBadFormat, mc: "CLIENT_ERROR bad command line format\r\nERROR\r\nMN\r\n"},
	{in: "set a 0 x 1\r\nx\r\n", reply: ReplyBadFormat, mc: "CLIENT_ERROR bad command line format\r\nERROR\r\nMN\r\n"},
	{in: "cas a 0 0 1 -1\r\nx\r\n", reply: ReplyBadFormat, mc: "CLIENT_ERROR bad command line format\r\nERROR\r\nMN\r\n"},
	{in: "set a 0 x 1 noreply\r\nx\r\n", reply: ReplyBadFormat, noreply: true, mc: "ERROR\r\nMN\r\n"},
	// Numbers memcached takes but reads otherwise: a sign, or more than 32 bits
	// (it keeps the low 32 bits of flags, and cuts exptimes and lengths).
	{in: "set a +1 0 1\r\nx\r\n", reply: ReplyBadFormat, mc: "STORED\r\nMN\r\n"},
	{in: "set a 4294967296 0 1\r\nx\r\n", reply: ReplyBadFormat, mc: "STORED\r\nMN\r\n"},
	{in: "set a 0 2147483648 1\r\nx\r\n", reply: ReplyBadFormat, mc: "STORED\r\nMN\r\n"},
	{in: "set a 0 0 4294967298\r\nhi\r\n", reply: ReplyBadFormat, fatal: true, mc: "STORED\r\nMN\r\n"},
	{in: "set a 0 0 2147483646\r\n", reply: ReplyBadFormat, fatal: true, mc: "CLIENT_ERROR bad command line format\r\nMN\r\n"},
	{in: "set a 0 0 -1\r\n", reply: ReplyBadFormat, fatal: true, mc: "CLIENT_ERROR bad command line format\r\nMN\r\n"},
	{in: "set a 0 0 zz\r\n", reply: ReplyBadFormat, fatal: true, mc: "CLIENT_ERROR bad command line format\r\nMN\r\n"},
	// A data block longer than its length: memcached runs the rest.
	{in: "set a 0 0 2\r\nhix\r\n", reply: ReplyBadChunk, fatal: true, mc: "CLIENT_ERROR bad data chunk\r\nERROR\r\nMN\r\n"},
	{in: "set a 0 0 0\r\nZZflush_all\r\n", reply: ReplyBadChunk, fatal: true, mc: "CLIENT_ERROR bad data chunk\r\nOK\r\nMN\r\n"},
	{in: "set a 0 0 1 noreply\r\nxyz\r\n", reply: ReplyBadChunk, fatal: true, noreply: true, mc: "ERROR\r\nMN\r\n"},
	{in: "set a 0 0 2000000\r\n" + strings.Repeat("v", 2000000) + "\r\n", reply: ReplyTooLarge, mc: "SERVER_ERROR object too large for cache\r\nMN\r\n"},
	{in: "set a 0 0 2000000 noreply\r\n" + strings.Repeat("v", 2000000) + "\r\n", reply: ReplyTooLarge, noreply: true, mc: "MN\r\n"},
	// A control character in the token memcached ignores after the numbers:
	// refused, but a value too large is refused as memcached refuses it (which
	// drops the key's item), a NUL byte in that token too: it ends memcached's
	// line, and noreply with it.
	{in: "set a 0 0 2000000 \x03\r\n" + strings.Repeat("v", 2000000) + "\r\n", reply: ReplyTooLarge, mc: "SERVER_ERROR object too large for cache\r\nMN\r\n"},
	{in: "set a 0 0 1 \x03\r\nx\r\n", reply: ReplyBadFormat, mc: "STORED\r\nMN\r\n"},
	{in: "set a\x03 0 0 2000000 x\r\n" + strings.Repeat("v", 2000000) + "\r\n", reply: ReplyBadFormat, mc: "SERVER_ERROR object too large for cache\r\nMN\r\n"},
	{in: "set a 0 0 2000000 x\x00\r\n" + strings.Repeat("v", 2000000) + "\r\n", reply: ReplyTooLarge, mc: "SERVER_ERROR object too large for cache\r\nMN\r\n"},
	{in: "set a 0 0 2000000 \x00noreply\r\n" + strings.Repeat("v", 2000000) + "\r\n", reply: ReplyTooLarge, mc: "SERVER_ERROR object too large for cache\r\nMN\r\n"},
	{in: "set a 0 0 2000000 noreply\x00\x01\r\n" + strings.Repeat("v", 2000000) + "\r\n", reply: ReplyTooLarge, noreply: true, mc: "MN\r\n"},
	{in: "set a 0 0 1 noreply\x00\r\nx\r\n", reply: ReplyBadFormat, noreply: true, mc: "MN\r\n"},
	{in: "delete a noreply\x00\r\n", reply: ReplyBadFormat, noreply: true, mc: "MN\r\n"},

	// delete, incr, decr, touch.
	{in: "delete a\r\n", want: "delete a\r\n", mc: "NOT_FOUND\r\nMN\r\n"},
	{in: "delete a 0\r\n", want: "delete a\r\n", mc: "NOT_FOUND\r\nMN\r\n"},
	{in: "delete a noreply\r\n", want: "delete a noreply\r\n", mc: "MN\r\n"},
	{in: "delete a 0 noreply\r\n", want: "delete a noreply\r\n", mc: "MN\r\n"},
	{in: "delete noreply\r\n", want: "delete noreply\r\n", mc: "NOT_FOUND\r\nMN\r\n"},
	{in: "delete\r\n", reply: ReplyError, mc: "ERROR\r\nMN\r\n"},
	{in: "delete a 1\r\n", reply: ReplyBadDeleteUsage, mc: ReplyBadDeleteUsage + "\r\nMN\r\n"},
	{in: "delete a 0 0\r\n", reply: ReplyBadDeleteUsage, mc: ReplyBadDeleteUsage + "\r\nMN\r\n"},
	{in: "delete a 1 noreply\r\n", reply: ReplyBadDeleteUsage, noreply: true, mc: "MN\r\n"},
	{in: "delete a 0 0 0\r\n", reply: ReplyError, mc: "ERROR\r\nMN\r\n"},
	{in: "delete " + k251 + "\r\n", reply: ReplyBadFormat, mc: "CLIENT_ERROR bad command line format\r\nMN\r\n"},
	{in: "delete " + k251 + " noreply\r\n", reply: ReplyBadFormat, noreply: true, mc: "MN\r\n"},
	{in: "incr a 5\r\n", want: "incr a 5\r\n", mc: "NOT_FOUND\r\nMN\r\n"},
	{in: "incr a 5 junk\r\n", want: "incr a 5\r\n", mc: "NOT_FOUND\r\nMN\r\n"},
	{in: "decr a 18446744073709551615 noreply\r\n", want: "decr a 18446744073709551615 noreply\r\n", mc: "MN\r\n"},
	{in: "incr a\r\n", reply: ReplyError, mc: "ERROR\r\nMN\r\n"},
	{in: "incr a x\r\n", reply: ReplyBadDelta, mc: ReplyBadDelta + "\r\nMN\r\n"},
	{in: "incr a -1\r\n", reply: ReplyBadDelta, mc: ReplyBadDelta + "\r\nMN\r\n"},
	{in: "incr a 18446744073709551616\r\n", reply: ReplyBadDelta, mc: ReplyBadDelta + "\r\nMN\r\n"},
	{in: "incr a noreply\r\n", reply: ReplyBadDelta, noreply: true, mc: "MN\r\n"},
	{in: "incr a +1\r\n", reply: ReplyBadDelta, mc: "NOT_FOUND\r\nMN\r\n"},
	{in: "incr a -18446744073709551615\r\n", reply: ReplyBadDelta, mc: "NOT_FOUND\r\nMN\r\n"},
	{in: "incr " + k251 + " x\r\n", reply: ReplyBadFormat, mc: "CLIENT_ERROR bad command line format\r\nMN\r\n"},
	{in: "touch a 10\r\n", want: "touch a 10\r\n", mc: "NOT_FOUND\r\nMN\r\n"},
	{in: "touch a 10 noreply\r\n", want: "touch a 10 noreply\r\n", mc: "MN\r\n"},
	{in: "touch a\r\n", reply: ReplyError, mc: "ERROR\r\nMN\r\n"},
	{in: "touch a x\r\n", reply: ReplyBadExptime, mc: ReplyBadExptime + "\r\nMN\r\n"},
	{in: "touch a 4294967297\r\n", reply: ReplyBadExptime, mc: "NOT_FOUND\r\nMN\r\n"},

	// Other classic commands.
	{in: "version\r\n", want: "version\r\n", mc: "VERSION 1.6.18\r\nMN\r\n"},
	{in: "version 1\r\n", want: "version\r\n", mc: "VERSION 1.6.18\r\nMN\r\n"},
	{in: "quit\r\n", want: "quit\r\n", mc: closed},
	{in: "\r\n", reply: ReplyError, mc: "ERROR\r\nMN\r\n"},
	{in: "   \r\n", reply: ReplyError, mc: "ERROR\r\nMN\r\n"},
	{in: "foo\r\n", reply: ReplyError, mc: "ERROR\r\nMN\r\n"},
	{in: "GET a\r\n", reply: ReplyError, mc: "ERROR\r\nMN\r\n"},
	{in: "get\ta\r\n", reply: ReplyError, mc: "ERROR\r\nMN\r\n"},

	// stats, flush_all and verbosity, which a proxy answers itself or sends
	// to every server.
	{in: "stats foo\r\n", want: "stats foo\r\n", mc: "ERROR\r\nMN\r\n"},
	{in: "stats  noreply\r\n", want: "stats noreply\r\n", mc: "ERROR\r\nMN\r\n"},
	{in: "flush_all\r\n", want: "flush_all\r\n", mc: "OK\r\nMN\r\n"},
	{in: "flush_all 0\r\n", want: "flush_all\r\n", mc: "OK\r\nMN\r\n"},
	{in: "flush_all -1\r\n", want: "flush_all -1\r\n", mc: "OK\r\nMN\r\n"},
	{in: "flush_all 99999999999\r\n", want: "flush_all 99999999999\r\n", mc: "OK\r\nMN\r\n"},
	{in: "flush_all 10 x\r\n", want: "flush_all 10\r\n", mc: "OK\r\nMN\r\n"},
	{in: "flush_all noreply\r\n", want: "flush_all noreply\r\n", mc: "MN\r\n"},
	{in: "flush_all 0 noreply\r\n", want: "flush_all noreply\r\n", mc: "MN\r\n"},
	{in: "flush_all x\r\n", reply: ReplyBadExptime, mc: "CLIENT_ERROR invalid exptime argument\r\nMN\r\n"},
	{in: "flush_all x noreply\r\n", reply: ReplyBadExptime, noreply: true, mc: "MN\r\n"},
	{in: "flush_all 1 2 3\r\n", reply: ReplyError, mc: "ERROR\r\nMN\r\n"},
	{in: "verbosity 1\r\n", want: "verbosity 1\r\n", mc: "OK\r\nMN\r\n"},
	{in: "verbosity 1 2\r\n", want: "verbosity 1\r\n", mc: "OK\r\nMN\r\n"},
	{in: "verbosity 1 noreply\r\n", want: "verbosity 1 noreply\r\n", mc: "MN\r\n"},
	{in: "verbosity\r\n", reply: ReplyError, mc: "ERROR\r\nMN\r\n"},
	{in: "verbosity x\r\n", reply: ReplyBadFormat, mc: "CLIENT_ERROR bad command line format\r\nMN\r\n"},
	{in: "verbosity noreply\r\n", reply: ReplyBadFormat, noreply: true, mc: "MN\r\n"},
	{in: "verbosity 1 2 3\r\n", reply: ReplyError, mc: "ERROR\r\nMN\r\n"},
	{in: binQuit, reply: ReplyBinary, fatal: true, mc: binQuitR + closed},

	// Meta commands.
	{in: "mn\r\n", want: "mn\r\n", mc: "MN\r\nMN\r\n"},
	{in: "mn x y\r\n", want: "mn\r\n", mc: "MN\r\nMN\r\n"},
	{in: "mg a v f t\r\n", want: "mg a v f t\r\n", mc: "EN\r\nMN\r\n"},
	{in: "mg a v O123 k\r\n", want: "mg a v O123 k\r\n", mc: "EN O123 ka\r\nMN\r\n"},
	{in: "mg a O" + o31 + "\r\n", want: "mg a O" + o31 + "\r\n", mc: "EN O" + o31 + "\r\nMN\r\n"},
	{in: "mg a T010 N-0 R07 v\r\n", want: "mg a T10 N0 R7 v\r\n", mc: "VA 0 W\r\n\r\nMN\r\n"},
	{in: "mg a P/path/ Lhint v\r\n", want: "mg a P/path/ Lhint v\r\n", mc: "EN\r\nMN\r\n"},
	{in: "mg a f h k l O1 q s t u v N1 R1 T1 P L\r\n", want: "mg a f h k l O1 q s t u v N1 R1 T1 P L\r\n", mc: "VA 0 f0 h0 ka l0 O1 s0 t-1 W\r\n\r\nMN\r\n"},
	{in: "mg eA== b v k\r\n", want: "mg eA== b v k\r\n", mc: "EN keA== b\r\nMN\r\n"},
	{in: "mg " + b64k248 + " b\r\n", want: "mg " + b64k248 + " b\r\n", mc: "EN\r\nMN\r\n"},
	{in: "mg\r\n", reply: ReplyError, mc: "ERROR\r\nMN\r\n"},
	{in: "mg " + k251 + " v\r\n", reply: ReplyBadFormat, mc: "CLIENT_ERROR bad command line format\r\nMN\r\n"},
	{in: "mg " + b64k252 + " b v\r\n", reply: ReplyBadFormat, mc: "CLIENT_ERROR bad command line format\r\nMN\r\n"},
	{in: "mg a\x00 v\r\n", reply: ReplyBadFormat, mc: "EN\r\nMN\r\n"},
	{in: "mg a v\x7f\r\n", reply: ReplyBadFormat, mc: "EN\r\nMN\r\n"},
	// Base64 that memcached decodes by its own rules: it skips bytes that are
	// not base64, stops at the first padding and ignores stray bits.
	{in: "mg x b v\r\n", reply: ReplyBadKeyEncoding, mc: ReplyBadKeyEncoding + "\r\nMN\r\n"},
	{in: "mg eA b v\r\n", reply: ReplyBadKeyEncoding, mc: ReplyBadKeyEncoding + "\r\nMN\r\n"},
	{in: "mg eB== b v k\r\n", reply: ReplyBadKeyEncoding, mc: "EN keA== b\r\nMN\r\n"},
	{in: "mg e!A== b v k\r\n", reply: ReplyBadKeyEncoding, mc: "EN keA== b\r\nMN\r\n"},
	{in: "mg eA==eHl6 b v k\r\n", reply: ReplyBadKeyEncoding, mc: "EN keA== b\r\nMN\r\n"},
	// A key that decodes to a space or a control character ("a b" is YSBi,
	// "a\r\n" YQ0K), where memcached may write it back decoded, breaking its
	// reply: N makes an item memcached does not mark as base64, whose key mg's k
	// and me write as it is. me is refused; mg with k is read, for its caller
	// to drop k (EchoesKeyRaw; Validate refuses it).
	{in: "mg YSBi b k v\r\n", want: "mg YSBi b k v\r\n", mc: "EN kYSBi b\r\nMN\r\n"},
	{in: "mg YQ0K b N0 v\r\n", want: "mg YQ0K b N0 v\r\n", mc: "VA 0 W\r\n\r\nMN\r\n"},
	{in: "ma YSBi b N0\r\n", want: "ma YSBi b N0\r\n", mc: "HD\r\nMN\r\n"},
	{in: "me YSBi b\r\n", reply: ReplyUnsafeBinaryKey, mc: "EN\r\nMN\r\n"},
	{in: "mg YSBi b v\r\n", want: "mg YSBi b v\r\n", mc: "EN\r\nMN\r\n"},
	{in: "ma YSBi b k\r\n", want: "ma YSBi b k\r\n", mc: "NF kYSBi b\r\nMN\r\n"},
	{in: "md YQ0K b k\r\n", want: "md YQ0K b k\r\n", mc: "NF kYQ0K b\r\nMN\r\n"},
	{in: "ms YQ0K 1 b k\r\nx\r\n", want: "ms YQ0K 1 b k\r\nx\r\n", mc: "HD kYQ0K b\r\nMN\r\n"},
	{in: "mg 4pyT b k v\r\n", want: "mg 4pyT b k v\r\n", mc: "EN k4pyT b\r\nMN\r\n"},
	{in: "mg a" + strings.Repeat(" v", 18) + "\r\n", reply: ReplyMetaGetTooManyFlags, mc: ReplyMetaGetTooManyFlags + "\r\nMN\r\n"},
	{in: "mg a v v\r\n", reply: ReplyDuplicateFlag, mc: ReplyDuplicateFlag + "\r\nMN\r\n"},
	{in: "mg a x\r\n", reply: ReplyInvalidFlag, mc: ReplyInvalidFlag + "\r\nMN\r\n"},
	{in: "mg a T\r\n", reply: ReplyBadToken, mc: ReplyBadToken + "\r\nMN\r\n"},
	{in: "mg a Tx\r\n", reply: ReplyBadToken, mc: ReplyBadToken + "\r\nMN\r\n"},
	{in: "mg a O" + o32 + "\r\n", reply: ReplyOpaqueTooLong, mc: ReplyOpaqueTooLong + "\r\nMN\r\n"},
	{in: "mg a O" + o32 + " x\r\n", reply: ReplyInvalidFlag, mc: ReplyInvalidFlag + "\r\nMN\r\n"},
	// Flags memcached takes but ignores, or reads otherwise.
	{in: "mg a C1\r\n", reply: ReplyInvalidFlag, mc: "EN\r\nMN\r\n"},
	{in: "mg a vx\r\n", reply: ReplyBadToken, mc: "EN\r\nMN\r\n"},
	{in: "mg a T2147483648\r\n", reply: ReplyBadToken, mc: "EN\r\nMN\r\n"},
	{in: "mg a T+1\r\n", reply: ReplyBadToken, mc: "EN\r\nMN\r\n"},

	{in: "ms a 2 T0 F5 I\r\nhi\r\n", want: "ms a 2 T0 F5 I\r\nhi\r\n", mc: "HD\r\nMN\r\n"},
	{in: "ms a 0\r\n\r\n", want: "ms a 0\r\n\r\n", mc: "HD\r\nMN\r\n"},
	{in: "ms a 02 F007 ME k O9\r\nhi\r\n", want: "ms a 2 F7 ME k O9\r\nhi\r\n", mc: "HD ka O9\r\nMN\r\n"},
	{in: "ms a 2 MR q\r\nhi\r\n", want: "ms a 2 MR q\r\nhi\r\n", mc: "NS\r\nMN\r\n"},
	{in: "ms eA== 1 b k\r\nz\r\n", want: "ms eA== 1 b k\r\nz\r\n", mc: "HD keA== b\r\nMN\r\n"},
	{in: "ms\r\n", reply: ReplyError, fatal: true, mc: "ERROR\r\nMN\r\n"},
	{in: "ms a\r\n", reply: ReplyBadFormat, fatal: true, mc: "CLIENT_ERROR bad command line format\r\nMN\r\n"},
	{in: "ms a S2\r\nhi\r\n", reply: ReplyBadFormat, fatal: true, mc: "CLIENT_ERROR bad command line format\r\nERROR\r\nMN\r\n"},
	{in: "ms a 4294967298\r\nhi\r\n", reply: ReplyBadFormat, fatal: true, mc: "HD\r\nMN\r\n"},
	{in: "ms x 2 b\r\nhi\r\n", reply: ReplyBadKeyEncoding, mc: ReplyBadKeyEncoding + "\r\nMN\r\n"},
	// The key is checked as sent, before it is decoded: memcached runs the data.
	{in: "ms " + b64k320 + " 9 b\r\nflush_all\r\n", reply: ReplyBadFormat, mc: "CLIENT_ERROR bad command line format\r\nOK\r\nMN\r\n"},
	{in: "ms " + k251 + " 1\r\nx\r\n", reply: ReplyBadFormat, mc: "CLIENT_ERROR bad command line format\r\nERROR\r\nMN\r\n"},
	{in: "ms a 1" + strings.Repeat(" T1", 17) + "\r\nx\r\n", reply: ReplyMetaTooManyFlags, mc: ReplyMetaTooManyFlags + "\r\nERROR\r\nMN\r\n"},
	{in: "ms a 2\r\nhello\r\n", reply: ReplyBadChunk, fatal: true, mc: "CLIENT_ERROR bad data chunk\r\nERROR\r\nMN\r\n"},
	{in: "ms a 2 q\r\nhello\r\n", reply: ReplyBadChunk, fatal: true, mc: "CLIENT_ERROR bad data chunk\r\nERROR\r\nMN\r\n"},
	{in: "ms a 2 Mx\r\nhi\r\n", reply: ReplyBadSetMode, mc: ReplyBadSetMode + "\r\nMN\r\n"},
	{in: "ms a 2 Ms\r\nhi\r\n", reply: ReplyBadSetMode, mc: ReplyBadSetMode + "\r\nMN\r\n"},
	{in: "ms a 2 MEE\r\nhi\r\n", reply: ReplyBadModeLength, mc: ReplyBadModeLength + "\r\nMN\r\n"},
	{in: "ms a 2 F-1\r\nhi\r\n", reply: ReplyBadFormat, mc: "CLIENT_ERROR bad command line format\r\nMN\r\n"},
	{in: "ms a 2 O" + o32 + "\r\nhi\r\n", reply: ReplyOpaqueTooLong, mc: ReplyOpaqueTooLong + "\r\nMN\r\n"},
	{in: "ms a 2 F4294967296\r\nhi\r\n", reply: ReplyBadFormat, mc: "HD\r\nMN\r\n"},
	{in: "ms a 2 v\r\nhi\r\n", reply: ReplyInvalidFlag, mc: "HD\r\nMN\r\n"},
	{in: "ms a\x00 2\r\nhi\r\n", reply: ReplyBadFormat, mc: "CLIENT_ERROR bad command line format\r\nERROR\r\nMN\r\n"},

	{in: "md a q\r\n", want: "md a q\r\n", mc: "NF\r\nMN\r\n"},
	{in: "md a C0 I T30 k O1\r\n", want: "md a C0 I T30 k O1\r\n", mc: "NF ka O1\r\nMN\r\n"},
	{in: "md " + k251 + "\r\n", reply: ReplyBadFormat, mc: "CLIENT_ERROR bad command line format\r\nMN\r\n"},
	{in: "md a" + strings.Repeat(" q", 18) + "\r\n", reply: ReplyMetaTooManyFlags, mc: ReplyMetaTooManyFlags + "\r\nMN\r\n"},
	{in: "md a q q\r\n", reply: ReplyInvalidOrDuplicate, mc: ReplyInvalidOrDuplicate + "\r\nMN\r\n"},
	{in: "md a O" + o32 + "\r\n", reply: ReplyOpaqueTooLong, mc: ReplyOpaqueTooLong + "\r\nMN\r\n"},
	{in: "md x b\r\n", reply: ReplyInvalidOrDuplicate, mc: ReplyInvalidOrDuplicate + "\r\nMN\r\n"},
	{in: "md a v\r\n", reply: ReplyInvalidOrDuplicate, mc: "NF\r\nMN\r\n"},

	{in: "ma a D5 v\r\n", want: "ma a D5 v\r\n", mc: "NF\r\nMN\r\n"},
	{in: "ma a N0 J10 v t\r\n", want: "ma a N0 J10 v t\r\n", mc: "VA 2 t-1\r\n10\r\nMN\r\n"},
	{in: "ma a MD O1 k\r\n", want: "ma a MD O1 k\r\n", mc: "NF O1 ka\r\nMN\r\n"},
	{in: "ma a M- D018446744073709551615\r\n", want: "ma a M- D18446744073709551615\r\n", mc: "NF\r\nMN\r\n"},
	{in: "ma a Mx\r\n", reply: ReplyBadArithmeticMode, mc: ReplyBadArithmeticMode + "\r\nMN\r\n"},
	{in: "ma a Mi\r\n", reply: ReplyBadArithmeticMode, mc: ReplyBadArithmeticMode + "\r\nMN\r\n"},
	{in: "ma a M\r\n", reply: ReplyInvalidOrDuplicate, mc: ReplyInvalidOrDuplicate + "\r\nMN\r\n"},
	{in: "ma a D-1\r\n", reply: ReplyInvalidOrDuplicate, mc: ReplyInvalidOrDuplicate + "\r\nMN\r\n"},
	{in: "ma a J18446744073709551616\r\n", reply: ReplyInvalidOrDuplicate, mc: ReplyInvalidOrDuplicate + "\r\nMN\r\n"},
	{in: "ma a F1\r\n", reply: ReplyInvalidOrDuplicate, mc: "NF\r\nMN\r\n"},

	{in: "me a\r\n", want: "me a\r\n", mc: "EN\r\nMN\r\n"},
	{in: "me eA== b\r\n", want: "me eA== b\r\n", mc: "EN\r\nMN\r\n"},
	{in: "me\r\n", reply: ReplyBadFormat, mc: "CLIENT_ERROR bad command line format\r\nMN\r\n"},
	{in: "me " + k251 + "\r\n", reply: ReplyBadFormat, mc: "CLIENT_ERROR bad command line format\r\nMN\r\n"},
	{in: "me x b\r\n", reply: ReplyBadFormat, mc: "CLIENT_ERROR bad command line format\r\nMN\r\n"},
	{in: "me a v\r\n", reply: ReplyInvalidFlag, mc: "EN\r\nMN\r\n"},

	// Lines over memcached's limit: it closes the connection once it holds 2048
	// bytes of a line other than get or gets without a newline (at once beyond
	// its 16 KiB buffer; see TestMemcachedLineLimit for the boundary). The
	// Reader refuses them, and skips a storage command's data block.
	{in: "get " + manyKeys(17000) + "\r\n", want: "get " + manyKeys(17000) + "\r\n", mc: "END\r\nMN\r\n"},
	{in: "gat 0 " + manyKeys(17000) + "\r\n", reply: ReplyLineTooLong, mc: closed},
	{in: "mg a v O" + strings.Repeat("o", 20000) + "\r\n", reply: ReplyLineTooLong, mc: closed},
	{in: "set a 0 0 5 " + strings.Repeat(" ", 20000) + "\r\nflush\r\n", reply: ReplyLineTooLong, mc: closed},
	{in: "ms a 5 T0" + strings.Repeat(" ", 20000) + "\r\nflush\r\n", reply: ReplyLineTooLong, mc: closed},
	{in: "set a 0 0 x " + strings.Repeat(" ", 20000) + "\r\nflush\r\n", reply: ReplyLineTooLong, fatal: true, mc: closed},
	{in: "set a 0 0" + strings.Repeat(" ", 20000) + "\r\nflush\r\n", reply: ReplyLineTooLong, fatal: true, mc: closed},
}

// manyKeys returns distinct keys of 9 bytes separated by spaces, about n bytes
// in all.
func manyKeys(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "key:%05d ", i)
	}
	return strings.TrimSuffix(b.String(), " ")
}

func TestReadRequest(t *testing.T) {
	for _, tt := range readRequestTests {
		r := NewReader(strings.NewReader(tt.in+"mn\r\n"), Limits{})
		var req Request
		err := r.ReadRequest(&req)
		if tt.reply != "" {
			var e *Error
			if !errors.As(err, &e) || e.Reply != tt.reply || e.Fatal != tt.fatal || e.Noreply != tt.noreply {
				t.Errorf("ReadRequest(%.80q) = %#v; want reply %q, fatal %v, noreply %v", tt.in, err, tt.reply, tt.fatal, tt.noreply)
				continue
			}
		} else {
			if err != nil {
				t.Errorf("ReadRequest(%.80q) = %v", tt.in, err)
				continue
			}
			if got := string(AppendRequest(nil, &req)); got != tt.want {
				t.Errorf("ReadRequest(%.80q) reads %q; want %q", tt.in, got, tt.want)
			}
			checkValid(t, &req)
		}
		if tt.fatal || req.Command == CmdQuit {
			continue
		}
		if err := r.ReadRequest(&req); err != nil || req.Command != CmdMetaNoop {
			t.Errorf("after %.80q, next request %v, %v; want mn", tt.in, req.Command, err)
		}
	}
}

func TestReadRequestFields(t *testing.T) {
	in := "cas k 7 -3 2 11 noreply\r\nhi\r\nincr n 9\r\nmg eHl6 b v T030\r\ngat 5 a b\r\n"
	r := NewReader(strings.NewReader(in), Limits{})
	var req Request
	if err := r.ReadRequest(&req); err != nil {
		t.Fatal(err)
	}
	if req.Command != CmdCas || string(req.Key()) != "k" || req.Flags != 7 || req.Exptime != -3 ||
		req.Cas != 11 || !req.Noreply || string(req.Value) != "hi" {
		t.Errorf("cas: got %+v", req)
	}
	if err := r.ReadRequest(&req); err != nil || req.Command != CmdIncr || req.Delta != 9 || req.Noreply {
		t.Errorf("incr: got %+v, %v", req, err)
	}
	if err := r.ReadRequest(&req); err != nil || string(req.RouteKey(0)) != "xyz" || !req.HasMetaFlag('v') {
		t.Errorf("mg: got %+v, %v", req, err)
	}
	if tok, ok := req.MetaFlag('T'); !ok || string(tok) != "30" {
		t.Errorf("mg: MetaFlag('T') = %q, %v; want \"30\", true", tok, ok)
	}
	if !req.RemoveMetaFlag('v') || req.HasMetaFlag('v') || string(AppendRequest(nil, &req)) != "mg eHl6 b T30\r\n" {
		t.Errorf("RemoveMetaFlag: got %q", AppendRequest(nil, &req))
	}
	if err := r.ReadRequest(&req); err != nil || req.Exptime != 5 || len(req.Keys) != 2 || string(req.Keys[1]) != "b" {
		t.Errorf("gat: got %+v, %v", req, err)
	}
	if err := r.ReadRequest(&req); err != io.EOF {
		t.Errorf("at end: %v; want io.EOF", err)
	}
}

func TestReadRequestLimits(t *testing.T) {
	tests := []struct {
		lim   Limits
		in    string
		reply string
		fatal bool
	}{
		{Limits{MaxLine: 100}, "get " + strings.Repeat("a", 96) + "\r\n", "", false},
		{Limits{MaxLine: 100}, "get " + strings.Repeat("a", 97) + "\r\n", ReplyLineTooLong, true},
		{Limits{MaxLine: 100}, "get " + strings.Repeat("a ", 1<<20), ReplyLineTooLong, true},
		{Limits{MaxLine: 100}, "mg " + strings.Repeat("a", 98) + "\r\n", ReplyLineTooLong, true},
		// Other lines than get and gets stop at memcached's 2048 bytes.
		{Limits{}, "mg a" + strings.Repeat(" ", 2042) + "\r\n", "", false},
		{Limits{}, "mg a" + strings.Repeat(" ", 2043) + "\r\n", ReplyLineTooLong, false},
		{Limits{}, "gets a" + strings.Repeat(" ", 4000) + "\r\n", "", false},
		{Limits{MaxValue: 10}, "set a 0 0 10\r\n0123456789\r\n", "", false},
		{Limits{MaxValue: 10}, "set a 0 0 11\r\n01234567890\r\n", ReplyTooLarge, false},
		{Limits{MaxValue: 10}, "ms a 11\r\n01234567890\r\n", ReplyTooLarge, false},
		{Limits{MaxValue: 10}, "set a 0 0 11\r\n01234567890xx", ReplyTooLarge, true},
	}
	for _, tt := range tests {
		// A reader that fails past the input proves the bound on reads.
		src := io.MultiReader(strings.NewReader(tt.in), iotestErr{})
		r := NewReaderSize(src, tt.lim, 16)
		var req Request
		err := r.ReadRequest(&req)
		var e *Error
		switch {
		case tt.reply == "" && err != nil:
			t.Errorf("ReadRequest(%.20q...) = %v", tt.in, err)
		case tt.reply != "" && (!errors.As(err, &e) || e.Reply != tt.reply || e.Fatal != tt.fatal):
			t.Errorf("ReadRequest(%.20q...) = %v; want %q, fatal %v", tt.in, err, tt.reply, tt.fatal)
		}
		if len(r.long) > 2*max(tt.lim.MaxLine, MaxCommandLine) {
			t.Errorf("ReadRequest(%.20q...) buffered %d bytes", tt.in, len(r.long))
		}
	}
}

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errors.New("read past the end") }

func TestReadRequestEOF(t *testing.T) {
	for _, in := range []string{"get a", "set a 0 0 5\r\nab", "set a 0 0 5\r\n", "set a 0 0 1\r\nx"} {
		r := NewReader(strings.NewReader(in), Limits{})
		var req Request
		if err := r.ReadRequest(&req); err != io.ErrUnexpectedEOF {
			t.Errorf("ReadRequest(%q) = %v; want io.ErrUnexpectedEOF", in, err)
		}
	}
	// A request refused at its line, whose value the input cuts: memcached
	// answers nothing, but has refused it (a set of a value too large drops
	// the key's item). The end of the input follows.
	for _, tt := range []struct{ in, reply string }{
		{"set " + k251 + " 0 0 5\r\nab", ReplyBadFormat},
		{"set a 0 0 2000000\r\nab", ReplyTooLarge},
		{"set a 0 0 2000000 \xd5\r\x03\r\nab", ReplyTooLarge},
		{"ms a 2000000 T0\r\n", ReplyTooLarge},
	} {
		r := NewReader(strings.NewReader(tt.in), Limits{})
		var req Request
		err := r.ReadRequest(&req)
		var e *Error
		if !errors.As(err, &e) || e.Reply != tt.reply || !e.Noreply || !e.Cut || e.Fatal {
			t.Errorf("ReadRequest(%.30q) = %#v; want %q, cut, not fatal, no reply", tt.in, err, tt.reply)
		} else if tt.reply == ReplyTooLarge && len(req.Keys) != 1 {
			t.Errorf("ReadRequest(%.30q): keys %q; want the request's key", tt.in, req.Keys)
		}
		if err := r.ReadRequest(&req); err != io.EOF {
			t.Errorf("ReadRequest(%.30q), then again: %v; want io.EOF", tt.in, err)
		}
	}
}

// TestValueGrowsAsItArrives checks that a line announcing a large value costs
// what arrived, not what it announced.
func TestValueGrowsAsItArrives(t *testing.T) {
	const announced = 1 << 20
	for _, in := range []string{
		"set a 0 0 1048576\r\n0123456789",
		"ms a 1048576 T0\r\n0123456789",
	} {
		var req Request
		r := NewReader(strings.NewReader(in), Limits{})
		if got := allocated(func() { r.ReadRequest(&req) }); got > announced/8 {
			t.Errorf("ReadRequest(%q) allocates %d bytes; want much less than the %d announced", in, got, announced)
		}
	}
	// Values arriving in small pieces grow to their size and read whole.
	want := strings.Repeat("0123456789", 100000)
	r := NewReaderSize(&trickle{s: "set a 0 0 1000000\r\n" + want + "\r\n"}, Limits{}, 16)
	var req Request
	if err := r.ReadRequest(&req); err != nil || string(req.Value) != want || cap(req.Value) > 2*len(want) {
		t.Errorf("trickled value: %d bytes (cap %d), %v; want %d", len(req.Value), cap(req.Value), err, len(want))
	}
}

// trickle reads s in pieces of at most 1000 bytes.
type trickle struct{ s string }

func (t *trickle) Read(p []byte) (int, error) {
	if len(t.s) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 1000)], t.s)
	t.s = t.s[n:]
	return n, nil
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// TestHasControl checks the eight-bytes-at-a-time test against the plain one.
func TestHasControl(t *testing.T) {
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 17; pos++ {
			b := bytes.Repeat([]byte{'a'}, 17)
			b[pos] = byte(c)
			want := c < 0x20 || c == 0x7f
			if got := hasControl(b); got != want {
				t.Errorf("hasControl with %#x at %d = %v; want %v", c, pos, got, want)
			}
		}
	}
	// Bytes next to the bounds, in every lane.
	for _, c := range []byte{0x1f, 0x20, 0x7e, 0x7f, 0x80, 0x9f, 0xa0, 0xff} {
		b := bytes.Repeat([]byte{c}, 8)
		if got, want := hasControl(b), c < 0x20 || c == 0x7f; got != want {
			t.Errorf("hasControl(%q) = %v; want %v", b, got, want)
		}
	}
}

// TestSplit checks the eight-bytes-at-a-time split against a plain one, on
// lines of every length up to 40 bytes made of spaces, tabs, letters and the
// bytes next to the control characters' bounds.
func TestSplit(t *testing.T) {
	alphabet := []byte{' ', ' ', 'a', 'b', '\t', 0, 0x1f, 0x20, 0x7e, 0x7f, 0x80, 0xff}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		line := make([]byte, r.IntN(41))
		for i := range line {
			line[i] = alphabet[r.IntN(len(alphabet))]
		}
		got, ctl, tidy := split(nil, line)
		want := bytes.FieldsFunc(line, func(r rune) bool { return r == ' ' })
		wantCtl := slices.ContainsFunc(line, func(c byte) bool { return c < 0x20 || c == 0x7f })
		wantTidy := len(line) > 0 && string(bytes.Join(want, []byte(" "))) == string(line)
		if !slices.EqualFunc(got, want, bytes.Equal) || ctl != wantCtl || tidy != wantTidy {
			t.Errorf("split(%q) = %q, %v, %v; want %q, %v, %v", line, got, ctl, tidy, want, wantCtl, wantTidy)
		}
	}
}

func TestReadRequestAllocs(t *testing.T) {
	in := bytes.Repeat([]byte("get a b c\r\nset k 0 0 5\r\nhello\r\nmg k v T030\r\nms k 2 T0\r\nhi\r\nincr n 7\r\n"), 1000)
	var req Request
	if n := readAllocs(t, in, func(r *Reader) error { return r.ReadRequest(&req) }); n != 0 {
		t.Errorf("ReadRequest allocates %v times per request; want 0", n)
	}
}

// readAllocs reads in with read, starting over at its end, and returns the
// allocations per read once warm.
func readAllocs(t *testing.T, in []byte, read func(*Reader) error) float64 {
	rd := bytes.NewReader(in)
	r := NewReader(rd, Limits{})
	once := func() {
		if err := read(r); err == io.EOF {
			rd.Reset(in)
			r.Reset(rd)
		} else if err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		once()
	}
	return testing.AllocsPerRun(1000, once)
}

func BenchmarkReadRequest(b *testing.B) {
	for _, bc := range []struct{ name, in string }{
		{"get", "get some:key:1234\r\n"},
		{"get10", "get k0 k1 k2 k3 k4 k5 k6 k7 k8 k9\r\n"},
		{"set100", "set some:key:1234 0 0 100\r\n" + strings.Repeat("v", 100) + "\r\n"},
		{"mg", "mg some:key:1234 v f t\r\n"},
		{"ms100", "ms some:key:1234 100 T0 F5\r\n" + strings.Repeat("v", 100) + "\r\n"},
	} {
		// With Parts, as the proxy reads requests, and without: reading
		// long lines in parts costs short ones nothing.
		for _, parts := range []bool{false, true} {
			name := bc.name
			if parts {
				name += "/parts"
			}
			b.Run(name, func(b *testing.B) {
				in := bytes.Repeat([]byte(bc.in), 1000)
				rd := bytes.NewReader(in)
				r := NewReader(rd, Limits{Parts: parts})
				var req Request
				b.SetBytes(int64(len(bc.in)))
				for b.Loop() {
					if err := r.ReadRequest(&req); err == io.EOF {
						rd.Reset(in)
						r.Reset(rd)
					}
				}
			})
		}
	}
}

func BenchmarkAppendRequest(b *testing.B) {
	for _, bc := range []struct{ name, in string }{
		{"get", "get some:key:1234\r\n"},
		{"set100", "set some:key:1234 0 0 100\r\n" + strings.Repeat("v", 100) + "\r\n"},
		{"mg", "mg some:key:1234 v f t\r\n"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var req Request
			if err := NewReader(strings.NewReader(bc.in), Limits{}).ReadRequest(&req); err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 0, 1024)
			b.SetBytes(int64(len(bc.in)))
			for b.Loop() {
				buf = AppendRequest(buf[:0], &req)
			}
		})
	}
}

// checkValid checks that req, which ReadRequest returned, passes Validate, and
// that lineLen is the length of the line AppendRequest writes.
func checkValid(t *testing.T, req *Request) {
	t.Helper()
	out := AppendRequest(nil, req)
	err := req.Validate()
	if req.EchoesKeyRaw() {
		// Refused, and passes without its k.
		var e *Error
		if !errors.As(err, &e) || e.Reply != ReplyUnsafeBinaryKey {
			t.Errorf("%.80q, read by ReadRequest: Validate() = %v; want %q", out, err, ReplyUnsafeBinaryKey)
		}
		again := *req
		again.MetaFlags = slices.Clone(req.MetaFlags)
		again.RemoveMetaFlag('k')
		if err := again.Validate(); err != nil {
			t.Errorf("%.80q, read by ReadRequest, without k: Validate() = %v", out, err)
		}
	} else if err != nil {
		t.Errorf("%.80q, read by ReadRequest: Validate() = %v", out, err)
	}
	if got, want := lineLen(req), bytes.IndexByte(out, '\n')+1; got != want {
		t.Errorf("%.80q: lineLen = %d; want %d", out, got, want)
	}
}

// validateTests are requests built in code, and Validate's verdict: the reply
// refusing each, "" if it passes.
var validateTests = []struct {
	req   Request
	reply string
}{
	{Request{Command: CmdSet, Keys: bs("k"), Value: []byte("x")}, ""},
	{Request{Command: CmdSet, Keys: bs("k"), Exptime: -1, Flags: 1<<32 - 1, Noreply: true}, ""},
	{Request{Command: CmdSet, Keys: bs(k250)}, ""},
	{Request{Command: CmdSet, Keys: bs("k\x00")}, ReplyBadFormat},
	{Request{Command: CmdSet, Keys: bs("k\r")}, ReplyBadFormat},
	{Request{Command: CmdSet, Keys: bs("k k")}, ReplyBadFormat},
	{Request{Command: CmdSet, Keys: bs("")}, ReplyBadFormat},
	{Request{Command: CmdSet, Keys: bs(k251)}, ReplyBadFormat},
	{Request{Command: CmdSet, Keys: bs("a", "b")}, ReplyError},
	{Request{Command: CmdSet}, ReplyError},
	{Request{Command: CmdSet, Keys: bs("k"), Exptime: 1 << 31}, ReplyBadFormat},
	{Request{Command: CmdCas, Keys: bs("k"), Cas: 1<<64 - 1}, ""},
	{Request{Command: CmdUnknown, Keys: bs("k")}, ReplyError},
	{Request{Command: numCommands, Keys: bs("k")}, ReplyError},
	{Request{Command: CmdGet, Keys: bs("a", "b\x7f")}, ReplyBadFormat},
	{Request{Command: CmdGet}, ReplyError},
	{Request{Command: CmdGet, Keys: bs(k250, k250, k250, k250, k250, k250, k250, k250, k250, k250)}, ""},
	{Request{Command: CmdGat, Keys: bs(k250, k250, k250, k250, k250, k250, k250, k250)}, ""},
	{Request{Command: CmdGat, Keys: bs(k250, k250, k250, k250, k250, k250, k250, k250, k250)}, ReplyLineTooLong},
	{Request{Command: CmdGat, Exptime: -1 << 31}, ""},
	{Request{Command: CmdGats, Keys: bs("a"), Exptime: 1 << 31}, ReplyBadExptime},
	{Request{Command: CmdTouch, Keys: bs("a"), Exptime: -1<<31 - 1}, ReplyBadExptime},
	{Request{Command: CmdIncr, Keys: bs("a"), Delta: 1<<64 - 1}, ""},
	{Request{Command: CmdVersion}, ""},
	{Request{Command: CmdVersion, Keys: bs("a")}, ReplyError},
	{Request{Command: CmdMetaNoop}, ""},
	{Request{Command: CmdMetaGet, Keys: bs("k"), MetaFlags: bs("v", "T30", "O7", "k", "q")}, ""},
	{Request{Command: CmdMetaGet, Keys: bs("k"), MetaFlags: bs("v", "O\t")}, ReplyBadFormat},
	{Request{Command: CmdMetaGet, Keys: bs("k"), MetaFlags: bs("v", "")}, ReplyBadFormat},
	{Request{Command: CmdMetaGet, Keys: bs("k"), MetaFlags: bs("v", "v")}, ReplyDuplicateFlag},
	{Request{Command: CmdMetaGet, Keys: bs("k"), MetaFlags: bs("x")}, ReplyInvalidFlag},
	{Request{Command: CmdMetaGet, Keys: bs("k"), MetaFlags: bs("C1")}, ReplyInvalidFlag},
	{Request{Command: CmdMetaGet, Keys: bs("k"), MetaFlags: bs("T007")}, ReplyBadToken},
	{Request{Command: CmdMetaGet, Keys: bs("k"), MetaFlags: bs("T-0")}, ReplyBadToken},
	{Request{Command: CmdMetaGet, Keys: bs("k"), MetaFlags: bs("T2147483648")}, ReplyBadToken},
	{Request{Command: CmdMetaGet, Keys: bs("k"), MetaFlags: bs("v", "O"+strings.Repeat("x", 2000))}, ReplyOpaqueTooLong},
	{Request{Command: CmdMetaGet, Keys: bs("k"), MetaFlags: bs(strings.Fields(strings.Repeat("v ", 18))...)}, ReplyMetaGetTooManyFlags},
	{Request{Command: CmdMetaGet, Keys: bs("k"), MetaFlags: bs("P"+strings.Repeat("p", 1024), "L"+strings.Repeat("l", 1024))}, ReplyLineTooLong},
	{Request{Command: CmdMetaGet, Keys: bs("k"), MetaFlags: bs("P" + strings.Repeat("p", MaxCommandLine-8))}, ""},
	{Request{Command: CmdMetaGet, Keys: bs("k"), MetaFlags: bs("P" + strings.Repeat("p", MaxCommandLine-7))}, ReplyLineTooLong},
	{Request{Command: CmdMetaGet, Keys: bs("P" + strings.Repeat("p", 1000)), MetaFlags: bs("P" + strings.Repeat("p", 1024))}, ReplyBadFormat},
	{Request{Command: CmdMetaDelete, Keys: bs("k"), MetaFlags: bs("x")}, ReplyInvalidOrDuplicate},
	{Request{Command: CmdMetaArithmetic, Keys: bs("k"), MetaFlags: bs("D01")}, ReplyInvalidOrDuplicate},
	{Request{Command: CmdMetaArithmetic, Keys: bs("k"), MetaFlags: bs("MX")}, ReplyBadArithmeticMode},
	{Request{Command: CmdMetaSet, Keys: bs("k"), MetaFlags: bs("T0", "F5", "I", "MA"), Value: []byte("hi")}, ""},
	{Request{Command: CmdMetaSet, Keys: bs("k"), MetaFlags: bs(strings.Fields(strings.Repeat("P ", 17))...)}, ReplyMetaTooManyFlags},
	// Base64 keys.
	{Request{Command: CmdMetaGet, Keys: bs("eHl6"), MetaFlags: bs("b", "k", "v")}, ""},
	{Request{Command: CmdMetaGet, Keys: bs("eHl6"), MetaFlags: bs("b", "b")}, ReplyDuplicateFlag},
	{Request{Command: CmdMetaGet, Keys: bs("x"), MetaFlags: bs("b")}, ReplyBadKeyEncoding},
	{Request{Command: CmdMetaGet, Keys: bs("eB=="), MetaFlags: bs("b")}, ReplyBadKeyEncoding},
	{Request{Command: CmdMetaSet, Keys: bs("x"), MetaFlags: bs("b")}, ReplyBadKeyEncoding},
	{Request{Command: CmdMetaDelete, Keys: bs("x"), MetaFlags: bs("b")}, ReplyInvalidOrDuplicate},
	{Request{Command: CmdMetaGet, Keys: bs("YSBi"), MetaFlags: bs("b", "k")}, ReplyUnsafeBinaryKey},
	{Request{Command: CmdMetaGet, Keys: bs("YQ0K"), MetaFlags: bs("b", "N0")}, ""},
	{Request{Command: CmdMetaGet, Keys: bs("YSBi"), MetaFlags: bs("b", "v")}, ""},
	{Request{Command: CmdMetaArithmetic, Keys: bs("YSBi"), MetaFlags: bs("b", "N0")}, ""},
	{Request{Command: CmdMetaArithmetic, Keys: bs("YSBi"), MetaFlags: bs("b", "k")}, ""},
	{Request{Command: CmdMetaDelete, Keys: bs("YSBi"), MetaFlags: bs("b", "k")}, ""},
	{Request{Command: CmdMetaDebug, Keys: bs("eHl6"), MetaFlags: bs("b")}, ""},
	{Request{Command: CmdMetaDebug, Keys: bs("YSBi"), MetaFlags: bs("b")}, ReplyUnsafeBinaryKey},
	{Request{Command: CmdMetaDebug, Keys: bs("x"), MetaFlags: bs("b")}, ReplyBadFormat},
	{Request{Command: CmdMetaDebug, Keys: bs("k"), MetaFlags: bs("v")}, ReplyInvalidFlag},
	{Request{Command: CmdMetaDebug, Keys: bs("k"), MetaFlags: bs("b", "b")}, ReplyInvalidFlag},
}

func bs(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, x := range s {
		out[i] = []byte(x)
	}
	return out
}

// TestValidate checks validateTests, and that a request Validate passes reads
// back, as AppendRequest writes it, as the same request.
func TestValidate(t *testing.T) {
	for _, tt := range validateTests {
		req := tt.req
		err := req.Validate()
		var e *Error
		switch {
		case tt.reply == "" && err != nil:
			t.Errorf("Validate(%.80q) = %v", AppendRequest(nil, &req), err)
		case tt.reply != "" && (!errors.As(err, &e) || e.Reply != tt.reply):
			t.Errorf("Validate(%.80q) = %v; want reply %q", AppendRequest(nil, &req), err, tt.reply)
		case tt.reply == "":
			if msg := readsBack(&req); msg != "" {
				t.Error(msg)
			}
		}
	}
}

// readsBack returns what is wrong with req, which Validate passed, as
// ReadRequest reads it back from what AppendRequest writes: "" if it is the
// same request, whole.
func readsBack(req *Request) string {
	out := AppendRequest(nil, req)
	r := NewReader(bytes.NewReader(out), Limits{MaxValue: 64 << 20})
	var again Request
	if err := r.ReadRequest(&again); err != nil {
		return fmt.Sprintf("%.80q, which Validate passes, reads back with %v", out, err)
	}
	if out2 := AppendRequest(nil, &again); !bytes.Equal(out, out2) || r.Buffered() != 0 ||
		!slices.EqualFunc(req.Keys, again.Keys, bytes.Equal) {
		return fmt.Sprintf("%.80q, which Validate passes, reads back as %.80q", out, out2)
	}
	if got, want := lineLen(req), bytes.IndexByte(out, '\n')+1; got != want {
		return fmt.Sprintf("%.80q: lineLen = %d; want %d", out, got, want)
	}
	return ""
}

// TestRouteKeyBuilt checks RouteKey of meta requests built in code: a base64
// key is decoded on the first call, until Reset.
func TestRouteKeyBuilt(t *testing.T) {
	req := Request{Command: CmdMetaGet, Keys: bs("eHl6"), MetaFlags: bs("b", "v")}
	if got := req.RouteKey(0); string(got) != "xyz" {
		t.Errorf("RouteKey(0) of mg eHl6 b v = %q; want %q", got, "xyz")
	}
	req.Reset()
	req.Command, req.Keys, req.MetaFlags = CmdMetaDelete, bs("YQ=="), bs("b")
	if got := req.RouteKey(0); string(got) != "a" {
		t.Errorf("RouteKey(0) of md YQ== b, after Reset = %q; want %q", got, "a")
	}
	req = Request{Command: CmdMetaGet, Keys: bs("x"), MetaFlags: bs("b")}
	if got := req.RouteKey(0); got != nil {
		t.Errorf("RouteKey(0) of mg x b = %q; want nil", got)
	}
}

// TestAppendRequestHead: the head, the value and "\r\n" are AppendRequest's
// bytes; TakeValue takes a large value read into the request's own memory,
// and no other.
func TestAppendRequestHead(t *testing.T) {
	big := strings.Repeat("v", 100_000)
	for _, in := range []string{
		"set k 1 2 100000\r\n" + big + "\r\n",
		"cas k 1 0 100000 9 noreply\r\n" + big + "\r\n",
		"ms k 100000 T0 F3 q\r\n" + big + "\r\n",
		"append k 0 0 3\r\nabc\r\n",
		"get a b\r\n",
		"delete k noreply\r\n",
	} {
		var req Request
		if err := NewReader(strings.NewReader(in), Limits{}).ReadRequest(&req); err != nil {
			t.Fatalf("%.30q: %v", in, err)
		}
		want := AppendRequest(nil, &req)
		got := AppendRequestHead(nil, &req)
		if req.Command.IsStorage() {
			got = append(append(got, req.Value...), "\r\n"...)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%.30q: head, value and end %.60q; want %.60q", in, got, want)
		}
		v := req.Value
		b, ok := req.TakeValue()
		if ok != (len(v) >= 100_000) || ok && (&b[0] != &v[0] || req.Value != nil) {
			t.Errorf("%.30q: TakeValue = %d bytes, %v; Value %d bytes after", in, len(b), ok, len(req.Value))
		}
	}
	// A value the caller set is not the request's to give.
	req := Request{Command: CmdSet, Keys: [][]byte{[]byte("k")}, Value: []byte(big)}
	if _, ok := req.TakeValue(); ok {
		t.Error("TakeValue took a value the caller set")
	}
}

// TestBinaryFirstByte: only a stream's first byte chooses memcached's
// binary protocol (refused, and the stream closed); later, a 0x80 byte
// starts a line, which memcached answers ERROR, and the stream goes on. A
// Reader that resumes a stream read before takes it as later.
func TestBinaryFirstByte(t *testing.T) {
	var req Request
	r := NewReader(strings.NewReader("get a\r\n\x80\r\nget b\r\n"), Limits{})
	if err := r.ReadRequest(&req); err != nil {
		t.Fatal(err)
	}
	var e *Error
	if err := r.ReadRequest(&req); !errors.As(err, &e) || e.Reply != ReplyError || e.Fatal {
		t.Errorf("a 0x80 line after a request: %v; want %q, not fatal", err, ReplyError)
	}
	if err := r.ReadRequest(&req); err != nil || string(req.Keys[0]) != "b" {
		t.Errorf("then: %v, %q; want get b", err, req.Keys)
	}
	r.Reset(strings.NewReader("\x80\r\n"))
	if err := r.ReadRequest(&req); !errors.As(err, &e) || e.Reply != ReplyBinary || !e.Fatal {
		t.Errorf("a stream's first byte 0x80: %v; want %q, fatal", err, ReplyBinary)
	}
	r.Reset(strings.NewReader("\x80\r\n"))
	r.Resume()
	if err := r.ReadRequest(&req); !errors.As(err, &e) || e.Reply != ReplyError || e.Fatal {
		t.Errorf("a 0x80 line of a resumed stream: %v; want %q, not fatal", err, ReplyError)
	}
}

func TestEchoesKeyRaw(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{"mg YSBi b k v\r\n", true},    // "a b"
		{"mg YQ0K k b\r\n", true},      // "a\r\n"
		{"mg YQ0K b N0 k q\r\n", true}, // with N
		{"mg YQ0K b N0 v\r\n", false},  // no k
		{"mg eHl6 b k\r\n", false},     // "xyz"
		{"mg a k v\r\n", false},
		{"ma YSBi b k\r\n", false}, // ma's k writes the key as sent
		{"md YSBi b k\r\n", false},
	} {
		var req Request
		if err := NewReader(strings.NewReader(tt.in), Limits{}).ReadRequest(&req); err != nil {
			t.Fatalf("%q: %v", tt.in, err)
		}
		if got := req.EchoesKeyRaw(); got != tt.want {
			t.Errorf("%q: EchoesKeyRaw() = %v; want %v", tt.in, got, tt.want)
		}
	}
}
