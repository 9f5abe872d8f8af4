package memcache

import (
	"math"
	"strconv"
)

// maxMetaTokens is the most tokens (command, key, data length and flags)
// memcached accepts on a meta command line.
const maxMetaTokens = 19

// maxOpaque is the longest opaque token memcached takes, with its O.
const maxOpaque = 32

// tokenKind is what follows a meta flag's letter.
type tokenKind uint8

const (
	noToken     tokenKind = iota + 1
	opaqueToken           // O: any bytes, copied back, at most maxOpaque with the O
	int32Token            // N, R, T: a TTL, as exptime
	uint32Token           // F: client flags
	uint64Token           // C, D, J: a cas unique, a delta, an initial value
	modeToken             // M: one character
	anyToken              // P, L: ignored by memcached, hints for proxies
)

var tokenKinds = [128]tokenKind{
	'b': noToken, 'c': noToken, 'f': noToken, 'h': noToken, 'k': noToken,
	'l': noToken, 'q': noToken, 's': noToken, 't': noToken, 'u': noToken,
	'v': noToken, 'I': noToken,
	'O': opaqueToken,
	'N': int32Token, 'R': int32Token, 'T': int32Token,
	'F': uint32Token,
	'C': uint64Token, 'D': uint64Token, 'J': uint64Token,
	'M': modeToken,
	'P': anyToken, 'L': anyToken,
}

// metaRule is what a meta command takes. memcached parses every flag it knows
// for every meta command and ignores those the command has no use for; a
// Reader takes only the flags protocol.txt lists for the command (and P and L,
// which all take), so that no flag reaches a server that might one day read it
// otherwise.
type metaRule struct {
	flags   string
	modes   string         // the characters of the M flag
	badMode string         // the reply to another mode
	kinds   [128]tokenKind // of the flags taken; 0 for the others
}

var metaRules = [numCommands]*metaRule{
	CmdMetaGet:        {flags: "bcfhklOqstuvNRTPL"},
	CmdMetaSet:        {flags: "bcCFIkOqTMPL", modes: "EAPRS", badMode: ReplyBadSetMode},
	CmdMetaDelete:     {flags: "bCIkOqTPL"},
	CmdMetaArithmetic: {flags: "bCNJDTMqtcvOkPL", modes: "I+D-", badMode: ReplyBadArithmeticMode},
}

func init() {
	for _, r := range metaRules {
		if r != nil {
			for i := 0; i < len(r.flags); i++ {
				r.kinds[r.flags[i]] = tokenKinds[r.flags[i]]
			}
		}
	}
}

// metaFlagSet is a set of meta flags, letters from A to z.
type metaFlagSet uint64

func flagSet(letters string) metaFlagSet {
	var s metaFlagSet
	for i := 0; i < len(letters); i++ {
		s |= 1 << (letters[i] - 'A')
	}
	return s
}

func (s metaFlagSet) has(c byte) bool {
	return c >= 'A' && c <= 'z' && s&(1<<(c-'A')) != 0
}

// checkMetaFlags checks flags, the flag tokens of a meta command cmd, as
// memcached parses them. It returns memcached's reply to the first fault it
// finds while it parses flags (pre), and to the first it finds later, as it
// builds its answer (post), and the flags given. A number that is not written
// as strconv writes it is rewritten in flags, in memory appended to *canon; if
// canon is nil, such a number is a fault (ReplyBadToken).
//
// ReadRequest checks the flags it reads with it, and Validate those of a
// request built in code: one set of rules for both.
func checkMetaFlags(cmd Command, flags [][]byte, canon *[]byte) (pre, post string, seen metaFlagSet) {
	rule := metaRules[cmd]
	for i, t := range flags {
		f := t[0] & 127 // a byte of 128 or more is no flag: 0 is none
		if t[0] != f {
			f = 0
		}
		kind := rule.kinds[f]
		bit := metaFlagSet(1) << (f - 'A') // only letters are taken
		if kind == noToken && len(t) == 1 && seen&bit == 0 {
			seen |= bit // the common case: v, k, q, ...
			continue
		}
		if kind == 0 {
			return flagReply(cmd, ReplyInvalidFlag), "", seen
		}
		if seen&bit != 0 {
			return flagReply(cmd, ReplyDuplicateFlag), "", seen
		}
		seen |= bit
		arg := t[1:]
		bad := ""
		switch kind {
		case noToken:
			if len(arg) > 0 {
				bad = ReplyBadToken // memcached ignores it; its meaning may change
			}
		case opaqueToken:
			if len(t) > maxOpaque && post == "" {
				post = ReplyOpaqueTooLong
			}
		case int32Token:
			n, ok := parseInt32(arg)
			switch {
			case !ok || canon == nil && !canonical(arg):
				bad = ReplyBadToken
			case !canonical(arg):
				flags[i] = appendCanon(canon, strconv.AppendInt(append(*canon, f), n, 10))
			}
		case uint32Token, uint64Token:
			var max uint64 = math.MaxUint64
			if tokenKinds[f] == uint32Token {
				max = math.MaxUint32
			}
			n, ok := parseUint(arg, max)
			switch {
			case ok && !canonical(arg) && canon != nil:
				flags[i] = appendCanon(canon, strconv.AppendUint(append(*canon, f), n, 10))
			case ok && canonical(arg):
			case f == 'F':
				bad = ReplyBadFormat // memcached sets no message of its own
			case f == 'D':
				bad = ReplyBadMetaDelta
			case f == 'J':
				bad = ReplyBadInitial
			default:
				bad = ReplyBadToken
			}
		case modeToken:
			switch {
			case len(arg) != 1:
				bad = ReplyBadModeLength
			case !containsByte(rule.modes, arg[0]):
				post = rule.badMode // memcached checks the mode first
			}
		}
		if bad != "" && pre == "" {
			pre = flagReply(cmd, bad)
		}
	}
	return pre, post, seen
}

// flagReply returns the reply to a bad flag: md and ma answer one reply for any.
func flagReply(cmd Command, reply string) string {
	if cmd == CmdMetaDelete || cmd == CmdMetaArithmetic {
		return ReplyInvalidOrDuplicate
	}
	return reply
}

// appendCanon takes *canon with a flag token appended, keeps it and returns
// the token. Tokens returned before keep pointing into the old array if canon
// grew: their bytes do not change.
func appendCanon(canon *[]byte, grown []byte) []byte {
	start := len(*canon)
	*canon = grown
	return grown[start:len(grown):len(grown)]
}

// echoesRaw reports whether memcached may write the key of a meta command
// with the flags seen, decoded from base64 (the flag b), back as it is, not in
// base64: mg's k writes the key of the item found as it is unless ms stored it
// with b (mg and ma with N make an item whose key memcached does not mark as
// base64); me writes the key of the item found as mg does. The other
// commands' k writes the key as the request gave it.
func echoesRaw(cmd Command, seen metaFlagSet) bool {
	if cmd == CmdMetaGet {
		return seen.has('k')
	}
	return cmd == CmdMetaDebug
}

// canonical reports whether a number that parsed is written as strconv writes
// it: no leading zeros, no "-0".
func canonical(b []byte) bool {
	if b[0] == '-' {
		return b[1] != '0'
	}
	return b[0] != '0' || len(b) == 1
}

func containsByte(s string, b byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return true
		}
	}
	return false
}
