package proxy

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/resp"
)

// redisCodec is the codec of Redis's protocol, RESP2, read and written by
// package resp, for one pool: clients authenticate with the pool's redis_auth,
// and server connections are set up with it and its redis_db. A pool whose
// redis, redis_auth or redis_db changes in a reload gets a new codec (the pool
// restarts).
//
// Commands are served as resp's table says (resp.Check, resp.Route): a
// command of one key, or of keys that must be on one server (RENAME, SDIFF,
// EVAL), goes whole to that server; MGET, MSET, DEL, UNLINK, EXISTS and TOUCH
// are split by server and merged in the order of their keys; commands with no
// key that any server answers alike (COMMAND) go to the server of the empty
// key; PING, ECHO, QUIT, AUTH, SELECT and HELLO are answered by the proxy; the
// rest (KEYS, SCAN, MULTI, SUBSCRIBE, CONFIG, ...) are refused with an error
// naming them, and the connection reads on.
type redisCodec struct {
	lim    resp.Limits // what clients may send
	srvLim resp.Limits // what servers may answer
	auth   string      // redis_auth: clients must AUTH with it, servers are sent it
	db     int         // redis_db: server connections SELECT it
	// readers holds the read buffers of client connections that are idle.
	readers sync.Pool
	dry     sync.Pool // whole's parsers
	names   []string
	ids     atomic.Int64 // the last client id HELLO reported
}

var _ codec = (*redisCodec)(nil)

// helloVersion is the Redis version HELLO reports: resp's command table is
// that of Redis 7.0.
const helloVersion = "7.0.0"

// maxKeptRequest bounds the memory a request or reply keeps for reuse once
// answered, and maxKeptKeys the keys it keeps room for: one that held more (a
// large value, an MGET of many keys) lets it go, so that pooled requests stay
// small.
const (
	maxKeptRequest = 64 << 10
	maxKeptKeys    = 1 << 10
)

func newRedisCodec(lim resp.Limits, cfg *config.Pool) *redisCodec {
	c := &redisCodec{
		lim: lim,
		// Replies may be larger than what clients may send: a string grown by
		// APPEND to Redis's 512 MiB, a list read whole.
		srvLim: resp.Limits{MaxBulk: max(lim.MaxBulk, resp.DefaultMaxBulk), MaxSize: max(lim.MaxSize, resp.DefaultMaxSize)},
		auth:   cfg.RedisAuth,
		db:     cfg.RedisDB,
	}
	cmds := resp.Commands()
	c.names = make([]string, len(cmds)+1)
	for _, cmd := range cmds {
		c.names[cmd.ID()+1] = cmd.Name
	}
	return c
}

func (c *redisCodec) commands() []string  { return c.names }
func (c *redisCodec) newRequest() request { return new(redisRequest) }
func (c *redisCodec) newReply() reply     { return new(redisReply) }

func (c *redisCodec) newClient(r io.Reader) clientCodec {
	return &redisClient{codec: c, src: r}
}

func (c *redisCodec) newServer(r io.Reader) serverCodec {
	return &redisServer{codec: c, rd: resp.NewReader(r, c.srvLim)}
}

// setup appends the requests that set up a server connection, AUTH with
// redis_auth and SELECT of redis_db, and returns them with their names.
func (c *redisCodec) setup(dst []byte) ([]byte, []string) {
	var names []string
	if c.auth != "" {
		dst = resp.AppendBulkString(resp.AppendBulkString(resp.AppendArray(dst, 2), "AUTH"), c.auth)
		names = append(names, "AUTH")
	}
	if c.db != 0 {
		dst = resp.AppendBulkString(resp.AppendBulkString(resp.AppendArray(dst, 2), "SELECT"), strconv.Itoa(c.db))
		names = append(names, "SELECT "+strconv.Itoa(c.db))
	}
	return dst, names
}

// probe sets the connection up as a server connection is, then sends PING:
// a server is back once it takes the password and database and answers
// PONG.
func (c *redisCodec) probe(rw io.ReadWriter) error {
	out, names := c.setup(nil)
	out = resp.AppendBulkString(resp.AppendArray(out, 1), "PING")
	if _, err := rw.Write(out); err != nil {
		return err
	}
	rd := resp.NewReaderSize(rw, resp.Limits{MaxBulk: 1 << 10, MaxSize: 4 << 10}, 256)
	if err := readSetup(rd, names); err != nil {
		return err
	}
	var rp resp.Reply
	if err := rd.ReadReply(&rp); err != nil {
		return err
	}
	if rp.Kind != resp.KindSimple || string(rp.Str) != "PONG" {
		return fmt.Errorf("PING answered %q", rp.Bytes())
	}
	return nil
}

// readSetup reads the replies to setup's requests, named by names: each must
// be +OK, or the server refused the setup (errRefused).
func readSetup(rd *resp.Reader, names []string) error {
	var rp resp.Reply
	for _, name := range names {
		if err := rd.ReadReply(&rp); err != nil {
			return badRedisReply(err)
		}
		if rp.Kind == resp.KindSimple && string(rp.Str) == "OK" {
			continue
		}
		if rp.Kind == resp.KindError {
			return fmt.Errorf("%w: %s: %s", errRefused, name, rp.Str)
		}
		return fmt.Errorf("%w: %s answered %q", errRefused, name, rp.Bytes())
	}
	return nil
}

// redisClient reads the requests of one client connection and keeps its
// state: whether it has authenticated, its id.
type redisClient struct {
	codec  *redisCodec
	src    io.Reader
	rd     *resp.Reader // nil while the connection is idle
	authed bool         // the client sent the pool's password
	id     int64        // the id HELLO and CLIENT ID report, 0 until one did
	name   []byte       // set by CLIENT SETNAME or HELLO's SETNAME
	// multi is set from a MULTI the proxy refused to the EXEC or DISCARD
	// that ends it: the commands between are not run (inMulti).
	multi bool
}

func (c *redisClient) buffered() int {
	if c.rd == nil {
		return 0
	}
	return c.rd.Buffered()
}

func (c *redisClient) release() {
	if c.rd != nil && c.rd.Buffered() == 0 {
		c.rd.Reset(nil)
		c.codec.readers.Put(c.rd)
		c.rd = nil
	}
}

// locked reports whether the client has yet to authenticate.
func (c *redisClient) locked() bool { return c.codec.auth != "" && !c.authed }

func (c *redisClient) read(r request) (action, error) {
	req := r.(*redisRequest)
	req.reset()
	if c.rd == nil {
		if rd, ok := c.codec.readers.Get().(*resp.Reader); ok {
			rd.Reset(c.src)
			c.rd = rd
		} else {
			c.rd = resp.NewReaderSize(c.src, c.codec.lim, clientReadBuffer)
		}
		// Until it authenticates, a client gets Redis's tighter limits.
		c.rd.SetAuthRequired(c.locked())
	}
	if err := c.rd.ReadRequest(&req.q); err != nil {
		var e *resp.Error
		if !errors.As(err, &e) {
			return 0, err
		}
		// Redis answers a protocol error and closes the connection: the
		// rest of the stream cannot be read in step.
		req.refuse(refusedProtocol, e.Reply)
		// The log quotes the input up to its first space: a length line
		// whole, an inline command by its name, not its arguments.
		near := e.Near
		if i := bytes.IndexAny(near, " \t"); i >= 0 {
			near = near[:i]
		}
		req.near = append(req.near[:0], near...)
		return closeAfter, nil
	}
	args := req.q.Args
	cmd, err := resp.Check(args)
	req.cmd = cmd
	if cmd == nil && len(args) > 0 && isHTTP(args[0]) {
		// Not a command: looked for among the unknown ones alone.
		req.class = refusedHTTP
		return closeAfter, nil
	}
	if c.multi {
		return c.inMulti(req), nil
	}
	if err != nil {
		var e *resp.Error
		if !errors.As(err, &e) {
			return 0, err
		}
		class, msg := refusedArity, e.Reply
		switch {
		case cmd == nil:
			class = refusedUnknown
		case cmd.Route == resp.RouteNone && msg == resp.UnsupportedError(cmd).Reply:
			class = refusedUnsupported
			// Redis refuses a stranger's command for want of AUTH once it
			// knows the command and its arguments fit; the proxy refuses
			// the commands it cannot shard at that point, so a stranger
			// gets NOAUTH for them.
			if c.locked() && !cmd.NoAuth {
				class, msg = refusedNoAuth, resp.ReplyNoAuth
			}
			c.multi = class == refusedUnsupported && cmd.Name == "multi"
		}
		req.refuse(class, msg)
		return local, nil
	}
	if c.locked() && !cmd.NoAuth {
		req.refuse(refusedNoAuth, resp.ReplyNoAuth)
		return local, nil
	}
	if cmd.Route == resp.RouteLocal {
		return c.answer(req), nil
	}
	if (cmd.Name == "move" || cmd.Name == "copy") && !checkDatabase(req) {
		return local, nil
	}
	args = req.q.Args
	keys, ok := cmd.AppendKeys(req.keys[:0], args)
	if !ok {
		// A count of keys that is not one, XINFO HELP: Redis answers without
		// a key, so any server does; it goes to that of the empty key.
		keys = keys[:0]
	}
	req.keys = keys
	if ok && cmd.Patterned() {
		req.pat = len(keys)
		req.keys = resp.AppendSortPatterns(req.keys, args)
	}
	if ok && len(keys) == 0 && cmd.Route == resp.RouteKeys {
		req.refuse(refusedNoKeys, resp.NoKeyError(cmd).Reply)
		return local, nil
	}
	return forward, nil
}

// Replies to the requests of a MULTI the proxy refused (inMulti).
const (
	replyNotRun    = "ERR not run: the proxy refused this connection's MULTI; EXEC or DISCARD ends the transaction"
	replyExecAbort = "EXECABORT Transaction discarded because of previous errors."
)

// inMulti answers a request sent after a MULTI the proxy refused, up to the
// EXEC or DISCARD that ends the transaction. None is run: a client that
// pipelines a transaction (go-redis's TxPipeline sends MULTI, its commands
// and EXEC in one write) must not have its commands run one by one, without
// the transaction's atomicity, and be told that EXEC failed; DISCARD must
// leave nothing done. As Redis with a transaction that failed to queue, EXEC
// answers EXECABORT and DISCARD OK.
func (c *redisClient) inMulti(req *redisRequest) action {
	name := ""
	if req.cmd != nil {
		name = req.cmd.Name
	}
	switch {
	case name == "exec":
		c.multi = false
		req.refuse(refusedUnsupported, replyExecAbort)
	case name == "discard" && len(req.q.Args) == 1:
		c.multi = false
		req.local = resp.AppendSimple(req.local, "OK")
	case name == "quit":
		req.local = resp.AppendSimple(req.local, "OK")
		return closeAfter
	default:
		req.refuse(refusedUnsupported, replyNotRun)
	}
	return local
}

// answer answers a command the proxy serves itself (resp.RouteLocal).
func (c *redisClient) answer(req *redisRequest) action {
	args := req.q.Args
	switch req.cmd.Name {
	case "ping":
		switch len(args) {
		case 1:
			req.local = resp.AppendSimple(req.local, "PONG")
		case 2:
			req.local = resp.AppendBulk(req.local, args[1])
		default:
			req.refuse(refusedArity, "ERR wrong number of arguments for 'ping' command")
		}
	case "echo":
		req.local = resp.AppendBulk(req.local, args[1])
	case "quit":
		req.local = resp.AppendSimple(req.local, "OK")
		return closeAfter
	case "auth":
		c.authCommand(req)
	case "select":
		selectCommand(req)
	case "hello":
		c.helloCommand(req)
	case "client":
		c.clientCommand(req)
	default: // a connection command of a newer table, unknown here
		req.refuse(refusedUnsupported, resp.UnsupportedError(req.cmd).Reply)
	}
	return local
}

// authCommand answers AUTH [user] password as Redis does with the pool's
// password as the default user's (and with none, the default user's nopass).
func (c *redisClient) authCommand(req *redisRequest) {
	args := req.q.Args
	var user, pass []byte
	switch len(args) {
	case 2:
		pass = args[1]
	case 3:
		user, pass = args[1], args[2]
	default:
		req.refuse(refusedArgument, "ERR syntax error")
		return
	}
	if user == nil && c.codec.auth == "" {
		req.refuse(refusedWrongPass, resp.ReplyNoPassword)
		return
	}
	if !c.authenticate(user, pass) {
		req.refuse(refusedWrongPass, resp.ReplyWrongPass)
		return
	}
	req.local = resp.AppendSimple(req.local, "OK")
}

// authenticate checks a user (nil for the default user) and password, as
// Redis checks them for its default user, and marks the client
// authenticated if they pass. A failed attempt leaves the client as it was.
func (c *redisClient) authenticate(user, pass []byte) bool {
	if !c.passes(user, pass) {
		return false
	}
	c.authed = true
	c.rd.SetAuthRequired(false)
	return true
}

// passes reports whether user (nil: the default user) and pass are the
// pool's.
func (c *redisClient) passes(user, pass []byte) bool {
	if user != nil && string(user) != "default" {
		return false
	}
	return c.codec.auth == "" || subtle.ConstantTimeCompare(pass, []byte(c.codec.auth)) == 1
}

// selectCommand answers SELECT: database 0, the pool's (whichever redis_db
// the servers use), is selected; another is refused, with Redis's errors for
// numbers that name none.
func selectCommand(req *redisRequest) {
	arg := req.q.Args[1]
	n, ok := parseRedisInt(arg)
	switch {
	case !ok:
		req.refuse(refusedArgument, resp.ReplyNotInteger)
	case n < -1<<31 || n > 1<<31-1:
		req.refuse(refusedArgument, replyIntRange)
	case n < 0:
		req.refuse(refusedArgument, resp.ReplyDBRange)
	case n > 0:
		req.refuse(refusedDB, "ERR database "+string(arg)+" is not served by the proxy (only 0)")
	default:
		req.local = resp.AppendSimple(req.local, "OK")
	}
}

// checkDatabase checks the database that MOVE key db and COPY ... DB db
// name. The proxy serves one database, which its clients see as 0 and the
// servers as redis_db: database 0 is answered as Redis answers it (MOVE to
// the same database is an error; COPY's DB 0 is dropped, so that the copy
// stays in redis_db), another is refused as SELECT of it is, and a request
// that names none goes on. It reports whether the request goes on.
// replyIntRange is Redis's reply to a number past 32 bits where it takes
// an int (a database's).
const replyIntRange = "ERR value is out of range, value must between -2147483648 and 2147483647"

func checkDatabase(req *redisRequest) bool {
	args := req.q.Args
	number := func(arg []byte) (int64, bool) {
		n, ok := parseRedisInt(arg)
		switch {
		case !ok:
			req.refuse(refusedArgument, resp.ReplyNotInteger)
			return 0, false
		case n < -1<<31 || n > 1<<31-1:
			req.refuse(refusedArgument, replyIntRange)
			return 0, false
		}
		return n, true
	}
	db := func(n int64, arg []byte) bool {
		switch {
		case n < 0:
			req.refuse(refusedArgument, resp.ReplyDBRange)
		case n > 0:
			req.refuse(refusedDB, "ERR database "+string(arg)+" is not served by the proxy (only 0)")
		}
		return n == 0
	}
	if req.cmd.Name == "move" {
		if n, ok := number(args[2]); ok && db(n, args[2]) {
			req.refuse(refusedArgument, "ERR source and destination objects are the same")
		}
		return false
	}
	// COPY source destination [DB db] [REPLACE]: Redis reads the options in
	// order, each DB's a number, and copies into the last one's database.
	var last []byte
	kept := args[:3]
	for i := 3; i < len(args); i++ {
		if i+1 < len(args) && bytes.EqualFold(args[i], []byte("db")) {
			if _, ok := number(args[i+1]); !ok {
				return false
			}
			last = args[i+1]
			i++
			continue
		}
		kept = append(kept, args[i])
	}
	if last == nil {
		return true
	}
	if n, _ := parseRedisInt(last); !db(n, last) {
		return false
	}
	req.q.Args = kept
	return true
}

// helloCommand answers HELLO [protover [AUTH user pass] [SETNAME name]] as
// Redis 7.0 does, for protocol 2, checking what Redis checks in its order;
// protocol 3 is refused where Redis would switch to it, which tells clients
// such as go-redis to speak RESP2. A refused HELLO changes nothing: its AUTH
// does not authenticate the client.
func (c *redisClient) helloCommand(req *redisRequest) {
	args := req.q.Args
	resp3 := false
	if len(args) >= 2 {
		v, ok := parseRedisInt(args[1])
		switch {
		case !ok:
			req.refuse(refusedArgument, resp.ReplyBadProto)
			return
		case v == 3:
			resp3 = true
		case v != 2:
			req.refuse(refusedProto, resp.ReplyNoProto)
			return
		}
	}
	var user, pass, name []byte
	for i := 2; i < len(args); i++ {
		more := len(args) - 1 - i
		switch opt := args[i]; {
		case equalFoldASCII(opt, "auth") && more >= 2:
			user, pass = args[i+1], args[i+2]
			i += 2
		case equalFoldASCII(opt, "setname") && more >= 1:
			name = args[i+1]
			i++
		default:
			req.refuse(refusedArgument, "ERR Syntax error in HELLO option '"+string(opt)+"'")
			return
		}
	}
	if user != nil && !c.passes(user, pass) {
		req.refuse(refusedWrongPass, resp.ReplyWrongPass)
		return
	}
	if !validClientName(name) {
		req.refuse(refusedArgument, replyBadClientName)
		return
	}
	if user == nil && c.locked() {
		req.refuse(refusedNoAuth, resp.ReplyHelloNoAuth)
		return
	}
	if resp3 {
		req.refuse(refusedProto, resp.ReplyNoProto+": the proxy speaks RESP2 only")
		return
	}
	if user != nil {
		c.authenticate(user, pass)
	}
	if name != nil {
		c.name = append(c.name[:0], name...)
	}
	dst := resp.AppendArray(req.local, 14)
	dst = resp.AppendBulkString(resp.AppendBulkString(dst, "server"), "redis")
	dst = resp.AppendBulkString(resp.AppendBulkString(dst, "version"), helloVersion)
	dst = resp.AppendInt(resp.AppendBulkString(dst, "proto"), 2)
	dst = resp.AppendInt(resp.AppendBulkString(dst, "id"), c.clientID())
	dst = resp.AppendBulkString(resp.AppendBulkString(dst, "mode"), "standalone")
	dst = resp.AppendBulkString(resp.AppendBulkString(dst, "role"), "master")
	req.local = resp.AppendArray(resp.AppendBulkString(dst, "modules"), 0)
}

// replyBadClientName is Redis's refusal of a client name.
const replyBadClientName = "ERR Client names cannot contain spaces, newlines or special characters."

// validClientName reports whether Redis takes name as a client's name:
// printable ASCII without spaces.
func validClientName(name []byte) bool {
	for _, b := range name {
		if b < '!' || b > '~' {
			return false
		}
	}
	return true
}

// clientID returns the client's id, given at first use: clients of a pool
// count from 1, as Redis's clients of a server do.
func (c *redisClient) clientID() int64 {
	if c.id == 0 {
		c.id = c.codec.ids.Add(1)
	}
	return c.id
}

// clientCommand answers CLIENT SETNAME, GETNAME and ID as Redis 7.0 does, and
// SETINFO as 7.2 does, for
// the client's connection to the proxy: clients (go-redis's ClientName,
// redis-py's client_name) name their connections when they open them. The
// other subcommands see or change the server's connections, which are the
// proxy's: refused.
func (c *redisClient) clientCommand(req *redisRequest) {
	args := req.q.Args
	sub := strings.ToLower(string(args[1]))
	switch want, ok := clientArity[sub]; {
	case !ok && !clientSubcommands[sub]:
		// As Redis: the subcommand as sent, CR and LF as spaces.
		name := strings.NewReplacer("\r", " ", "\n", " ").Replace(string(args[1][:min(len(args[1]), 128)]))
		req.refuse(refusedUnknown, "ERR unknown subcommand '"+name+"'. Try "+strings.ToUpper(string(args[0]))+" HELP.")
	case !ok:
		req.refuse(refusedUnsupported, "ERR command 'client|"+sub+"' is not supported by the proxy")
	case len(args) != want:
		req.refuse(refusedArity, "ERR wrong number of arguments for 'client|"+sub+"' command")
	case sub == "setname":
		if !validClientName(args[2]) {
			req.refuse(refusedArgument, replyBadClientName)
			return
		}
		c.name = append(c.name[:0], args[2]...)
		req.local = resp.AppendSimple(req.local, "OK")
	case sub == "getname":
		if len(c.name) == 0 {
			req.local = resp.AppendNull(req.local)
		} else {
			req.local = resp.AppendBulk(req.local, c.name)
		}
	case sub == "id":
		req.local = resp.AppendInt(req.local, c.clientID())
	case sub == "setinfo":
		// Redis 7.2's, which go-redis and redis-py send on every new
		// connection (ignoring an error): answered as 7.2 does, and
		// dropped, so that it costs them no refusal logged.
		attr := strings.ToLower(string(args[2]))
		switch {
		case attr != "lib-name" && attr != "lib-ver":
			req.refuse(refusedArgument, "ERR Unrecognized option '"+string(args[2])+"'")
		case !validClientName(args[3]):
			req.refuse(refusedArgument, "ERR "+attr+" cannot contain spaces, newlines or special characters.")
		default:
			req.local = resp.AppendSimple(req.local, "OK")
		}
	}
}

// clientArity is the arity of the CLIENT subcommands the proxy answers.
var clientArity = map[string]int{"setname": 3, "getname": 2, "id": 2, "setinfo": 4}

// clientSubcommands are Redis 7.0's other CLIENT subcommands.
var clientSubcommands = map[string]bool{
	"caching": true, "getredir": true, "help": true, "info": true, "kill": true, "list": true,
	"no-evict": true, "pause": true, "reply": true, "tracking": true, "trackinginfo": true,
	"unblock": true, "unpause": true,
}

// parseRedisInt parses b as Redis's string2ll does: an int64 written without
// a sign but '-', leading zeros or spaces.
func parseRedisInt(b []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil && strconv.FormatInt(n, 10) == string(b)
}

// equalFoldASCII reports whether b is s (lower case) in any case.
func equalFoldASCII(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// redisRequest is a Redis request and how the proxy answers it.
type redisRequest struct {
	q    resp.Request
	lent int           // the bytes of the arguments lent (appendLent)
	cmd  *resp.Command // nil for bad input
	keys []int         // the indexes in q.Args of the keys routed
	pat  int           // if not 0, keys[pat:] are SORT's patterns (pattern)
	// local is the reply to a request the proxy answers itself.
	local []byte
	// class is the class of the refusal that local is, "" if it is none;
	// near quotes the input of a protocol error, and line is refusal's.
	class      string
	near, line []byte
	// Scratch of merge: the parts of the keys, the replies of the parts, and
	// the reply of keys no server took.
	parts   []int
	part    []int // appendLent's: the arguments of a part
	replies []*resp.Reply
	noSrv   resp.Reply
}

var _ request = (*redisRequest)(nil)

func (r *redisRequest) broadcast() bool { return false }

func (r *redisRequest) reset() {
	if r.q.Size() > maxKeptRequest {
		r.q.Release()
	}
	if cap(r.local) > maxKeptRequest {
		r.local = nil
	}
	if cap(r.keys) > maxKeptKeys {
		r.keys, r.parts, r.part, r.replies = nil, nil, nil, nil
	}
	r.q.Reset()
	r.cmd, r.local, r.class, r.lent, r.pat = nil, r.local[:0], "", 0, 0
}

// The classes of a Redis pool's refusals (see refuser): fixed words rather
// than the error replies, which name commands and quote what clients sent,
// so that the label of chash_proxy_refused_requests_total takes a few values
// whatever clients send. The words become the label as memcached's replies
// do: "wrong number of arguments" is wrong_number_of_arguments.
const (
	refusedProtocol    = "protocol error"            // malformed RESP: the connection closes
	refusedUnknown     = "unknown command"           // a name Redis 7.0 does not know
	refusedUnsupported = "unsupported command"       // KEYS, MULTI, SUBSCRIBE, ...: not shardable
	refusedArity       = "wrong number of arguments" // as Redis checks them
	refusedArgument    = "invalid argument"          // of AUTH, SELECT, HELLO: not a number, a bad option
	refusedNoAuth      = "noauth"                    // a command before AUTH, with redis_auth
	refusedWrongPass   = "wrongpass"                 // AUTH with a password the pool does not have
	refusedDB          = "unsupported database"      // SELECT, MOVE, COPY of a database other than 0
	refusedProto       = "unsupported protocol"      // HELLO 3: the proxy speaks RESP2
	refusedNoKeys      = "script without keys"       // EVAL, FCALL, ...: nothing to route by
)

// refuse makes the request's reply the error msg, a refusal of class.
func (r *redisRequest) refuse(class, msg string) {
	r.class = class
	r.local = resp.AppendError(r.local[:0], msg)
}

// maxRefusedName bounds the command name a refusal's log line quotes.
const maxRefusedName = 64

// refusal returns the class of the request's refusal, "" if it was not
// refused, and what the log line quotes of it: the input where a protocol
// error was found, up to a space, or the command's name as sent and its
// number of arguments; never the arguments themselves, which may be a
// password (AUTH, HELLO, MIGRATE, CONFIG SET) or a value. It is called
// before the next read.
func (r *redisRequest) refusal() (string, []byte) {
	switch {
	case r.class == "":
		return "", nil
	case r.class == refusedProtocol:
		return r.class, r.near
	}
	return r.class, r.quote()
}

// quote returns what a log line quotes of the request: its command's name as
// sent and its number of arguments.
func (r *redisRequest) quote() []byte {
	r.line = r.line[:0]
	if len(r.q.Args) > 0 {
		name := r.q.Args[0]
		r.line = append(r.line, name[:min(len(name), maxRefusedName)]...)
		n := len(r.q.Args) - 1
		r.line = append(strconv.AppendInt(append(r.line, " ["...), int64(n), 10), " argument"...)
		if n != 1 {
			r.line = append(r.line, 's')
		}
		r.line = append(r.line, ']')
	}
	return r.line
}

var _ refuser = (*redisRequest)(nil)

func (r *redisRequest) command() int {
	if r.cmd == nil {
		return 0
	}
	return r.cmd.ID() + 1
}

func (r *redisRequest) pattern(i int) bool    { return r.pat > 0 && i >= r.pat }
func (r *redisRequest) nkeys() int            { return len(r.keys) }
func (r *redisRequest) routeKey(i int) []byte { return r.q.Args[r.keys[i]] }
func (r *redisRequest) splits() bool          { return r.cmd.Route == resp.RouteSplit }
func (r *redisRequest) size() int             { return r.q.Size() + r.lent }

// appendRequest writes the request from its parsed arguments, always as a
// multibulk: the whole request, or the part of a split with the keys of the
// call (with their values, for MSET) in the request's order.
func (r *redisRequest) appendRequest(dst []byte, keyCall []int, part int, rp reply) []byte {
	r.ready(rp)
	if keyCall == nil {
		return resp.AppendRequest(dst, &r.q)
	}
	return resp.AppendPart(dst, r.cmd, r.q.Args, keyCall, part)
}

// ready readies rp for the reply to the request.
func (r *redisRequest) ready(rp reply) {
	rep := rp.(*redisReply)
	if len(rep.rp.Bytes()) > maxKeptRequest {
		rep.rp.Release()
	}
	if cap(rep.elems) > maxKeptKeys {
		rep.elems = nil
	}
	rep.lookup = lookupNone
	if r.cmd != nil {
		rep.lookup = redisLookups[r.cmd.ID()]
	}
}

// appendLent lends the arguments of resp.BigArg bytes or more that the
// request read into memory of their own, but for its command's name and its
// keys, which logs and counters may still read.
func (r *redisRequest) appendLent(dst []byte, keyCall []int, part int, rp reply, parts []lentPart) ([]byte, []lentPart) {
	r.ready(rp)
	if keyCall == nil {
		dst = resp.AppendArray(dst, len(r.q.Args))
		for i := range r.q.Args {
			dst, parts = r.appendArg(dst, i, parts)
		}
		return dst, parts
	}
	r.part = resp.PartArgs(r.part[:0], r.cmd, keyCall, part)
	dst = resp.AppendBulk(resp.AppendArray(dst, 1+len(r.part)), r.q.Args[0])
	for _, i := range r.part {
		dst, parts = r.appendArg(dst, i, parts)
	}
	return dst, parts
}

// appendArg appends argument i as a bulk string, or lends it.
func (r *redisRequest) appendArg(dst []byte, i int, parts []lentPart) ([]byte, []lentPart) {
	a := r.q.Args[i]
	if i > 0 && len(a) >= resp.BigArg && !slices.Contains(r.keys, i) {
		if b, ok := r.q.TakeArg(i); ok {
			r.lent += len(b)
			dst = resp.AppendBulkHeader(dst, len(b))
			parts = append(parts, lentPart{at: len(dst), b: b})
			return append(dst, '\r', '\n'), parts
		}
	}
	return resp.AppendBulk(dst, a), parts
}

func (r *redisRequest) appendReply(dst []byte, rp reply) []byte {
	return resp.AppendReply(dst, &rp.(*redisReply).rp)
}

// replyParts is appendReply in parts (see mcRequest.replyParts): a Redis
// reply goes to the client as the server sent it, the whole reply the value.
func (r *redisRequest) replyParts(dst []byte, rp reply) (head, value, tail []byte) {
	return dst, rp.(*redisReply).rp.Bytes(), nil
}

// merge merges the replies of a split request as resp.MergeParts does: a
// failed call's keys, and those no server took, fail the request with the
// error that says why, as twemproxy fails it.
func (r *redisRequest) merge(dst []byte, keyCall []int, calls []*call, err error) []byte {
	r.replies = r.replies[:0]
	for _, cl := range calls {
		rep := cl.reply.(*redisReply)
		if cl.err != nil {
			rep.rp.SetError("ERR " + cl.err.Error())
		}
		r.replies = append(r.replies, &rep.rp)
	}
	parts := keyCall
	if err != nil && slices.Contains(keyCall, -1) {
		// The keys no server took get a reply of their own, the error.
		r.parts = append(r.parts[:0], keyCall...)
		for i, p := range r.parts {
			if p < 0 {
				r.parts[i] = len(calls)
			}
		}
		r.noSrv.SetError("ERR " + err.Error())
		r.replies = append(r.replies, &r.noSrv)
		parts = r.parts
	}
	return resp.MergeParts(dst, r.cmd, parts, r.replies)
}

// appendError answers a request no server answered, "-ERR <why>" as
// twemproxy words it; keys of one request on different servers are refused
// with resp's words for it.
func (r *redisRequest) appendError(dst []byte, err error) []byte {
	if err == errKeysSpread && r.cmd != nil {
		return resp.AppendError(dst, resp.CrossServerError(r.cmd).Reply)
	}
	if err == errPattern && r.cmd != nil {
		return resp.AppendError(dst, resp.PatternError(r.cmd).Reply)
	}
	return resp.AppendError(dst, "ERR "+err.Error())
}

func (r *redisRequest) appendLocal(dst []byte) []byte { return append(dst, r.local...) }

// redisReply is a Redis server's reply to one call.
type redisReply struct {
	rp resp.Reply
	// lookup says whether and how the reply tells the keys its request
	// found; elems is the scratch of lookups.
	lookup redisLookup
	elems  [][]byte
}

var _ reply = (*redisReply)(nil)

// redisLookup is how a reply tells the keys its request found, for the hit
// and miss counters.
type redisLookup uint8

const (
	lookupNone   redisLookup = iota // the reply is no key's value
	lookupValue                     // a bulk, a key's value, or nil, a miss
	lookupValues                    // an array of those, one for each key
)

// redisLookups is the redisLookup of each command, by ID: the commands whose
// reply is the value of each key they read, or nil for a key that does not
// exist. redis-server counts their keys in its keyspace_hits and
// keyspace_misses as the proxy does, so that a server's counts in the proxy
// are its own (a key of another type is a hit: GET's WRONGTYPE), but for
// MGET's nil for a key of another type, a hit for Redis and a miss for the
// proxy, which cannot tell it from a missing key. Redis
// counts other reads too (HGET, EXISTS, LRANGE, ...); the proxy does not, as
// their replies do not say whether the key was there.
var redisLookups = func() []redisLookup {
	cmds := resp.Commands()
	kinds := make([]redisLookup, len(cmds))
	for _, c := range cmds {
		switch c.Name {
		case "get", "getex", "getdel", "getset":
			kinds[c.ID()] = lookupValue
		case "mget":
			kinds[c.ID()] = lookupValues
		}
	}
	return kinds
}()

// wrongType begins Redis's error for a key of another type.
var wrongType = []byte("WRONGTYPE ")

func (r *redisReply) size() int { return len(r.rp.Bytes()) }

func (r *redisReply) lookups() (hits, misses int, t touching) {
	switch r.lookup {
	case lookupValue:
		switch {
		case r.rp.Kind == resp.KindBulk && r.rp.IsNull():
			return 0, 1, notTouched
		case r.rp.Kind == resp.KindBulk, r.rp.IsError() && bytes.HasPrefix(r.rp.Str, wrongType):
			// WRONGTYPE: Redis found the key, and counts a hit.
			return 1, 0, notTouched
		}
	case lookupValues:
		// An MGET's array, or the array of a part of one split over
		// servers: its elements are bulks and nils. An error reads nothing.
		r.elems = r.rp.AppendElems(r.elems[:0])
		for _, e := range r.elems {
			switch {
			case len(e) < 2 || e[0] != byte(resp.KindBulk):
			case e[1] == '-':
				misses++
			default:
				hits++
			}
		}
	}
	return hits, misses, notTouched
}

// redisServer reads the replies of one server connection.
type redisServer struct {
	codec *redisCodec
	rd    *resp.Reader
	dry   *replyDry // whole's, made on first use
}

func (s *redisServer) buffered() int { return s.rd.Buffered() }

// handshake authenticates the connection and selects the pool's database.
func (s *redisServer) handshake(w io.Writer) error {
	out, names := s.codec.setup(nil)
	if len(names) == 0 {
		return nil
	}
	if _, err := w.Write(out); err != nil {
		return err
	}
	return readSetup(s.rd, names)
}

func (s *redisServer) wait() error { return s.rd.Wait() }

// read reads one reply. Any well-formed reply is in step: Redis may answer
// any request with an error, and the replies of split requests are checked
// for their shape when merged.
func (s *redisServer) read(rp reply) error {
	return badRedisReply(s.rd.ReadReply(&rp.(*redisReply).rp))
}

// badRedisReply wraps a *resp.Error, a reply out of the protocol, in
// errBadReply.
func badRedisReply(err error) error {
	if err == nil {
		return nil
	}
	var e *resp.Error
	if errors.As(err, &e) {
		return fmt.Errorf("%w: %v", errBadReply, err)
	}
	return err
}
