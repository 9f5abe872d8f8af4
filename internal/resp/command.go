package resp

import (
	"bytes"
	"strconv"
)

// Route is how a proxy serves a command.
type Route uint8

// The routes. The zero Route is RouteNone: a command is refused unless its
// table entry says otherwise.
const (
	// RouteNone marks a command a sharding proxy cannot serve: one that needs
	// every server (KEYS, SCAN, FLUSHALL, DBSIZE), a connection of its own
	// (SUBSCRIBE, MULTI, WATCH, blocking pops, MONITOR), or a server's
	// administration (CONFIG, CLUSTER, SHUTDOWN). Check refuses it.
	RouteNone Route = iota
	// RouteKeys marks a command sent whole to the server of its keys, which
	// AppendKeys finds; all of them must be on that one server, which ServerOf
	// finds.
	RouteKeys
	// RouteSplit marks MGET, MSET, DEL, UNLINK, EXISTS and TOUCH, whose keys
	// Split spreads over their servers and whose replies it merges.
	RouteSplit
	// RouteAny marks a command that has no keys and that any server answers
	// alike (COMMAND, LOLWUT), as twemproxy sends them.
	RouteAny
	// RouteLocal marks a command about the connection, which the proxy answers
	// itself: PING, ECHO, QUIT, AUTH, SELECT, HELLO and CLIENT.
	RouteLocal
)

// String returns the route's name: "none", "keys", "split", "any" or "local".
func (r Route) String() string {
	switch r {
	case RouteNone:
		return "none"
	case RouteKeys:
		return "keys"
	case RouteSplit:
		return "split"
	case RouteAny:
		return "any"
	case RouteLocal:
		return "local"
	}
	return "Route(" + strconv.Itoa(int(r)) + ")"
}

// Command is a command of redis-server 7.0, as a proxy serves it.
type Command struct {
	// Name is the command's name in lower case, as Redis names it in errors.
	Name string
	// Arity is the number of arguments, the name included, that Redis checks
	// before running the command: exactly Arity if positive, at least -Arity if
	// negative.
	Arity int
	// Route is how a proxy serves the command.
	Route Route
	// ReadOnly reports that the command does not write (Redis's "readonly"
	// flag), so that a replica may answer it.
	ReadOnly bool
	// NoAuth reports that Redis runs the command for a client that has yet to
	// authenticate (Redis's "no_auth" flag: AUTH, HELLO, QUIT, RESET); other
	// commands are answered "-NOAUTH Authentication required.".
	NoAuth bool

	id    int // its index in commands
	keys  keySpec
	merge merge
}

// ID returns the command's place in Commands(), from 0, for tables indexed by
// command, such as a proxy's counts of requests.
func (c *Command) ID() int { return c.id }

// keyKind is how a command's keys are found.
type keyKind uint8

const (
	keyNone       keyKind = iota
	keyRange              // first, last and step, as Redis's legacy key positions
	keyNumkey             // a count of keys then the keys (EVAL, ZUNION, ...)
	keySortStore          // SORT: the key, and that of its last STORE (eachSortOption)
	keySortRead           // SORT_RO: the key (its BY and GET patterns: AppendSortPatterns)
	keyGeoStore           // GEORADIUS[BYMEMBER]: the key, and that of its last STORE or STOREDIST
	keySubcommand         // XINFO, XGROUP, OBJECT: the key after a subcommand that has one
)

// keySpec locates a command's keys; see keyKind.
type keySpec struct {
	kind keyKind
	// keyRange: the first key's index, the last key's (negative counts back
	// from the end: -1 is the last argument) and the step between keys.
	// keyGeoStore: first is the index of the first option.
	first, last, step int8
	// keyNumkey: the index of the count of keys, which the keys follow; the
	// index of a destination key before it, or 0; and the least valid count.
	count, store, minCount int8
	// keySubcommand: the subcommands, in lower case, that name a key after
	// them.
	subs []string
}

// The key specs of the table.
var (
	key1      = keySpec{kind: keyRange, first: 1, last: 1, step: 1}
	keySort   = keySpec{kind: keySortStore}
	keySortRO = keySpec{kind: keySortRead}
)

func span(first, last, step int8) keySpec {
	return keySpec{kind: keyRange, first: first, last: last, step: step}
}

func keyNum(count, store, minCount int8) keySpec {
	return keySpec{kind: keyNumkey, count: count, store: store, minCount: minCount}
}

func keyGeo(from int8) keySpec { return keySpec{kind: keyGeoStore, first: from} }

func keySub(subs ...string) keySpec { return keySpec{kind: keySubcommand, subs: subs} }

// merge is how Split merges the replies of a RouteSplit command.
type merge uint8

const (
	mergeNone  merge = iota
	mergeArray       // MGET: one array, its elements in the order of the keys
	mergeSum         // DEL, UNLINK, EXISTS, TOUCH: the sum of the integers
	mergeOK          // MSET: +OK once every server said it
)

// arityOK reports whether a request of n arguments, the name included, has a
// number of arguments Redis runs the command with.
func (c *Command) arityOK(n int) bool {
	if c.Arity >= 0 {
		return n == c.Arity
	}
	return n >= -c.Arity
}

// keyStep is the number of arguments from one key to the next in a request of
// c that Split can split: 2 for MSET (key, value), 1 for the others; 0 for a
// command Split does not split.
func (c *Command) keyStep() int {
	if c.Route != RouteSplit {
		return 0
	}
	return int(c.keys.step)
}

// AppendKeys appends the indexes in args (args[0] being the command's name) of
// the request's keys to dst, in the order Redis's COMMAND GETKEYS lists them,
// and returns the extended slice. args must have passed Check.
//
// ok is false when the request names its keys by a count (EVAL, ZUNION, LMPOP,
// ...) that is not a valid one for its arguments (not an integer, too small or
// larger than the arguments that follow), and for a subcommand of XINFO, XGROUP
// or OBJECT without a key (HELP, one Redis does not know, one without its
// arguments). Redis then answers without touching a key (an error, which
// depends on the command, or its help), so any one server gives the client the
// right reply. With ok true, dst gets at least one key except for EVAL,
// EVALSHA, FCALL and their _RO forms with a count of 0, which are valid and
// have none.
func (c *Command) AppendKeys(dst []int, args [][]byte) (keys []int, ok bool) {
	n := len(args)
	s := &c.keys
	switch s.kind {
	case keyRange:
		last := int(s.last)
		if last < 0 {
			last += n
		}
		for i := int(s.first); i <= last && i < n; i += int(s.step) {
			dst = append(dst, i)
		}
	case keyNumkey:
		at := int(s.count)
		if at >= n {
			return dst, false
		}
		count, valid := parseInt(args[at])
		if !valid || count < int64(s.minCount) || count > int64(n-at-1) {
			return dst, false
		}
		if s.store > 0 {
			dst = append(dst, int(s.store))
		}
		for i := range int(count) {
			dst = append(dst, at+1+i)
		}
	case keySortStore:
		dst = append(dst, 1)
		store := 0
		eachSortOption(args, func(opt byte, i int) {
			if opt == 's' {
				store = i // the last STORE is the one written
			}
		})
		if store > 0 {
			dst = append(dst, store)
		}
	case keySubcommand:
		if n < 3 {
			return dst, false
		}
		for _, sub := range s.subs {
			if equalFold(args[1], sub) {
				return append(dst, 2), true
			}
		}
		return dst, false
	case keySortRead:
		dst = append(dst, 1)
	case keyGeoStore:
		dst = append(dst, 1)
		// As Redis's geo.c reads the options: COUNT takes an argument, and the
		// last STORE or STOREDIST names the key written.
		store := 0
		for i := int(s.first); i < n-1; i++ {
			switch {
			case equalFold(args[i], "store"), equalFold(args[i], "storedist"):
				store = i + 1
				i++
			case equalFold(args[i], "count"):
				i++
			}
		}
		if store > 0 {
			dst = append(dst, store)
		}
	}
	return dst, true
}

// ServerOf returns the server of a request of a RouteKeys command whose
// arguments are args, which passed Check: the one that server names for all
// its keys. It returns -1 and
//
//   - no error where any server gives the right reply (AppendKeys's ok is
//     false: a bad count of keys, XINFO HELP);
//   - NoKeyError for a script without keys;
//   - CrossServerError if the keys are on different servers;
//   - an error of server as it is.
//
// ServerOf allocates nothing for a request of up to 16 keys.
func (c *Command) ServerOf(args [][]byte, server func(key []byte) (int, error)) (int, error) {
	var buf [16]int
	keys, ok := c.AppendKeys(buf[:0], args)
	if !ok {
		return -1, nil
	}
	if len(keys) == 0 {
		return -1, NoKeyError(c)
	}
	srv := -1
	for _, k := range keys {
		s, err := server(args[k])
		if err != nil {
			return -1, err
		}
		if srv >= 0 && s != srv {
			return -1, CrossServerError(c)
		}
		srv = s
	}
	return srv, nil
}

// equalFold reports whether b is s in any case; s is lower-case ASCII.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if lower(b[i]) != s[i] {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// maxNameLen is the longest command name Lookup can find: the longest of
// Redis 7.0 is "georadiusbymember_ro", 20 bytes.
const maxNameLen = 24

// byName indexes commands by their lower-case names.
var byName = func() map[string]*Command {
	m := make(map[string]*Command, len(commands))
	for i := range commands {
		c := &commands[i]
		if len(c.Name) > maxNameLen || i > 0 && c.Name <= commands[i-1].Name {
			panic("resp: command table not sorted, or a name longer than maxNameLen: " + c.Name)
		}
		c.id = i
		m[c.Name] = c
	}
	return m
}()

// Lookup returns the command of redis-server 7.0 named name, in any case, or
// nil if Redis has none of that name. It allocates nothing.
func Lookup(name []byte) *Command {
	if len(name) > maxNameLen {
		return nil
	}
	var buf [maxNameLen]byte
	for i, c := range name {
		buf[i] = lower(c)
	}
	return byName[string(buf[:len(name)])]
}

// Commands returns every command Lookup knows, sorted by name.
func Commands() []*Command {
	cs := make([]*Command, len(commands))
	for i := range commands { // sorted, as byName checks
		cs[i] = &commands[i]
	}
	return cs
}

// Check returns the command of a request whose arguments are args (args[0]
// being the command's name) once it has passed the checks Redis makes before
// running a command, in Redis's order, and the one a proxy adds. Each failure
// is an *Error whose Reply is the error reply, after which the client's stream
// reads on:
//
//   - an unknown command: "ERR unknown command 'FOO', with args beginning
//     with: 'a' 'b' ", as Redis words it (the name as sent, at most 128 bytes
//     of arguments, each cut at a NUL byte, line ends as spaces);
//   - a wrong number of arguments: "ERR wrong number of arguments for 'get'
//     command", and so for MSET and MSETNX with a key without its value, as
//     Redis answers them (for EXEC, Redis's "EXECABORT Transaction discarded
//     because of: wrong number ...");
//   - a command a proxy cannot shard (RouteNone): "ERR command 'keys' is not
//     supported by the proxy".
//
// Check allocates only for an error. It does not check what only a server can:
// whether a client has authenticated, the options of the command.
func Check(args [][]byte) (*Command, error) {
	if len(args) == 0 {
		return nil, &Error{Reply: "ERR empty request"}
	}
	c := Lookup(args[0])
	if c == nil {
		return nil, unknownCommand(args)
	}
	if !c.arityOK(len(args)) || c.keys.kind == keyRange && c.keys.step == 2 && len(args)%2 == 0 {
		msg := "wrong number of arguments for '" + c.Name + "' command"
		if c.Name == "exec" { // Redis aborts a transaction on any error of EXEC
			return c, &Error{Reply: "EXECABORT Transaction discarded because of: " + msg}
		}
		return c, &Error{Reply: "ERR " + msg}
	}
	if c.Route == RouteNone {
		return c, UnsupportedError(c)
	}
	return c, nil
}

// unknownCommand is Redis's reply to a command it does not know, made as
// server.c's commandCheckExistence makes it: C strings, so cut at a NUL byte.
func unknownCommand(args [][]byte) *Error {
	cstr := func(b []byte, max int) []byte {
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		return b[:min(len(b), max)]
	}
	var list []byte
	for _, a := range args[1:] {
		if len(list) >= 128 {
			break
		}
		list = append(append(append(list, '\''), cstr(a, 128-len(list))...), "' "...)
	}
	msg := "ERR unknown command '" + string(cstr(args[0], 128)) + "', with args beginning with: " + string(list)
	return &Error{Reply: string(appendText(nil, msg))}
}

// UnsupportedError is the error reply to a command a proxy cannot shard:
// "ERR command 'keys' is not supported by the proxy". Check returns it for
// RouteNone commands; a proxy may refuse others with it too, such as SELECT of
// a database other than its own.
func UnsupportedError(c *Command) *Error {
	return &Error{Reply: "ERR command '" + c.Name + "' is not supported by the proxy"}
}

// CrossServerError is the error reply to a RouteKeys request whose keys are on
// different servers: "ERR keys of 'sdiff' are on different servers". Giving
// such keys one hash tag puts them on one server.
func CrossServerError(c *Command) *Error {
	return &Error{Reply: "ERR keys of '" + c.Name + "' are on different servers"}
}

// Patterned reports whether the command names keys by patterns of its
// arguments, as SORT and SORT_RO's BY and GET do (AppendSortPatterns).
func (c *Command) Patterned() bool {
	return c.keys.kind == keySortStore || c.keys.kind == keySortRead
}

// AppendSortPatterns appends to dst the indexes in args, a SORT or SORT_RO
// request, of the patterns that name keys, as Redis's sort.c reads them: that
// of the last BY, and those of GET, that have a '*' (a BY pattern without one
// does not sort, a GET pattern without one reads nil, and "#" is the element
// itself). Each names a key an element of the list makes of it, by its first
// '*' (up to a "->" after it, which names a field of a hash), read on the
// server of the sorted key.
func AppendSortPatterns(dst []int, args [][]byte) []int {
	by := 0
	eachSortOption(args, func(opt byte, i int) {
		switch {
		case opt == 'b':
			by = i // the last BY sorts
		case opt == 'g' && bytes.IndexByte(args[i], '*') >= 0:
			dst = append(dst, i)
		}
	})
	if by > 0 && bytes.IndexByte(args[by], '*') >= 0 {
		dst = append(dst, by)
	}
	return dst
}

// eachSortOption calls fn with the index of the argument of each BY ('b'),
// GET ('g') and STORE ('s') option of a SORT or SORT_RO request (args), in
// order, as Redis's sort.c reads the options: LIMIT takes two arguments,
// each of the others one, and ASC, DESC and ALPHA none. Where sort.c finds a
// word it does not take, or an option without its arguments, it refuses the
// request and reads and writes nothing; here the words after it are read on
// as options, which can only add keys to a request refused anyway.
func eachSortOption(args [][]byte, fn func(opt byte, i int)) {
	for i := 2; i < len(args); i++ {
		left := len(args) - i - 1
		switch {
		case left >= 2 && equalFold(args[i], "limit"):
			i += 2
		case left >= 1 && equalFold(args[i], "by"):
			fn('b', i+1)
			i++
		case left >= 1 && equalFold(args[i], "get"):
			fn('g', i+1)
			i++
		case left >= 1 && equalFold(args[i], "store"):
			fn('s', i+1)
			i++
		}
	}
}

// PatternError is the error reply to a SORT or SORT_RO whose BY or GET
// pattern may name keys on other servers than the sorted key's (a proxy
// reads them on that server alone), as Redis Cluster refuses a pattern of
// keys in other slots. A pattern with the key's hash tag, no '*' in it,
// names keys of the key's server.
func PatternError(c *Command) *Error {
	return &Error{Reply: "ERR BY and GET options of '" + c.Name + "' denied by the proxy when keys formed by a pattern may be on other servers; give the pattern the key's hash tag"}
}

// NoKeyError is the error reply to a script (EVAL, EVALSHA, FCALL and their
// _RO forms) with no keys, which a proxy cannot route: "ERR 'eval' without
// keys cannot be routed".
func NoKeyError(c *Command) *Error {
	return &Error{Reply: "ERR '" + c.Name + "' without keys cannot be routed"}
}
