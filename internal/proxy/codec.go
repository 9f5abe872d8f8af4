package proxy

import (
	"errors"
	"io"
)

// A codec is all the proxy knows of a protocol. The rest of the proxy — the
// client loop, routing, the pipelined server connections, timeouts, ejection,
// reloads, metrics, TLS and shutdown — moves requests and replies it never
// looks inside. memcacheCodec is the first codec; a Redis codec is the second.
//
// The life of a request:
//
//  1. A client connection's clientCodec reads it into a request and says what
//     to do with it (an action): forward it, answer it locally, or answer it
//     and close the connection. Bad input is answered locally, with the
//     protocol's own error; the codec keeps whatever state a connection has
//     (a Redis client's AUTH, say) and answers the commands that need no
//     server (memcached's mn; Redis's PING, ECHO, SELECT 0, AUTH, QUIT).
//  2. To forward it, the proxy routes each of its keys (nkeys, routeKey) to a
//     server. A request whose keys may go to different servers (splits: a get
//     of many keys, Redis's MGET, MSET, DEL, EXISTS) becomes one call per
//     server, each carrying its share of the keys; the others go whole to the
//     server of their keys, and are refused when their keys belong to several.
//  3. For each call, appendRequest writes the bytes a server receives. A codec
//     writes them from the request's parsed and validated fields, never from
//     the client's bytes, so that a server reads exactly what the proxy
//     understood: nothing a client sends can reach a server connection shared
//     by other clients in a form the server reads differently. appendRequest
//     also readies the call's reply for the grammar of what was sent.
//  4. A server connection's serverCodec reads the replies in order. A reply out
//     of the grammar of its request is an error: the connection is reset, every
//     request waiting on it is answered with an error, and the bad reply never
//     reaches a client. A new connection first goes through handshake (Redis's
//     AUTH and SELECT), and ejected servers are probed with probe.
//  5. The client's reply is appendReply of the call's reply, merge of the
//     calls' replies in the order of the request's keys (a get's VALUE items,
//     MGET's array, MSET's +OK, DEL's sum), appendError for a request no server
//     answered, or appendLocal. The codec applies noreply and quiet modes
//     there, and a server connection never loses step: a server is asked for
//     a reply, or (memcached's meta commands in quiet mode) sent a no-op after
//     the request, whose answer stands where a hidden reply would be.
//
// Replicas and warm-up (replica.go) plug in through two more interfaces that
// a codec may implement, itemCodec and planRequest (codec_memcache_plan.go
// for memcached): a request says how it uses its keys (a write goes to every
// replica, a read fails over to the next) and a reply whether it is a miss;
// warm-up after a ring change turns a miss at a key's new owner into a read
// from its previous owner of the key with its flags and remaining time to
// live, then into a write of that value to the new owner: requests a codec
// builds from a key and a reply, sent and read like any other.
//
// A codec and its requests and replies are used from many goroutines, but each
// request, reply, clientCodec and serverCodec by one at a time. Requests and
// replies are reused: nothing on the path of a request allocates once the
// proxy has warmed up.
type codec interface {
	// commands names the protocol's commands, indexed as request.command
	// returns them; an empty name (index 0, bad input) has no metrics.
	commands() []string
	// newRequest and newReply return an empty request and reply to reuse.
	newRequest() request
	newReply() reply
	// newClient returns the codec of a new client connection that reads r.
	newClient(r io.Reader) clientCodec
	// newServer returns the codec of a new server connection that reads r.
	newServer(r io.Reader) serverCodec
	// probe asks a server, over a connection of its own with a deadline set,
	// whether it serves requests, and returns nil if it does.
	probe(rw io.ReadWriter) error
}

// action is what the proxy does with a request a clientCodec has read.
type action uint8

const (
	// forward sends the request to the servers of its keys.
	forward action = iota
	// local answers it with appendLocal, without a server.
	local
	// closeAfter answers it with appendLocal, then closes the connection once
	// every earlier request is answered: quit, or bad input after which the
	// rest of the stream cannot be read.
	closeAfter
	// localAlone is local for a request answered before the next is read:
	// memcached's stats, which counts the requests before it and none after.
	localAlone
)

// clientCodec reads the requests of one client connection and keeps the
// protocol's state of that connection.
type clientCodec interface {
	// read reads the next request into req and says what to do with it. It
	// returns an error only when the connection cannot be read: io.EOF at its
	// end, or what the read failed with; bad input is a request answered
	// locally.
	read(req request) (action, error)
	// buffered returns the number of bytes read from the connection and not
	// yet consumed by read: the proxy answers what it has read before it
	// waits for more, and releases the codec's buffers while it waits.
	buffered() int
	// whole reports whether b, the first bytes read while the connection was
	// idle, holds whole requests only: reading them, read needs no more
	// bytes. A request after which the connection closes ends b's requests
	// wherever b ends. It must agree with read, whose parser it runs, and
	// leave the connection's state alone.
	whole(b []byte) bool
	// release gives up the read buffer, so that an idle connection holds
	// none; it is called only when buffered is zero, and the next read takes
	// a buffer again.
	release()
}

// request is one client request. The proxy calls its methods only after a
// clientCodec's read filled it, and reuses it once its reply is written.
type request interface {
	// command returns the index of the request's command in the codec's
	// commands, for metrics: 0 for bad input.
	command() int
	// nkeys returns the number of keys the request names; a request without
	// keys (memcached's version) goes to the server of the empty key.
	nkeys() int
	// routeKey returns key i as the distribution hashes it (before the pool's
	// hash tag): a base64 meta key decoded, say.
	routeKey(i int) []byte
	// splits says whether the keys may belong to different servers, each
	// server getting its share; if not, all must belong to one.
	splits() bool
	// broadcast says whether the request goes whole to every server of the
	// pool (memcached's flush_all): its reply is merge's of every call, with
	// a nil keyCall.
	broadcast() bool
	// appendRequest appends what the server of a call receives: the whole
	// request if keyCall is nil, else the request for the keys i with
	// keyCall[i] == part, in order. It readies rep to read the reply to what
	// it appended.
	appendRequest(dst []byte, keyCall []int, part int, rep reply) []byte
	// appendReply appends the client's reply to the request sent whole, from
	// the server's reply rep.
	appendReply(dst []byte, rep reply) []byte
	// merge appends the client's reply to a request split over calls, from
	// their replies (call.reply, or call.err for a call that failed);
	// keyCall[i] is the call of key i, -1 for a key no server could take,
	// and err says why no server could take such keys.
	merge(dst []byte, keyCall []int, calls []*call, err error) []byte
	// appendError appends the client's reply to a request no server
	// answered, err saying why ("Connection timed out", "no live servers").
	appendError(dst []byte, err error) []byte
	// appendLocal appends the reply to a request read with the action local or
	// closeAfter.
	appendLocal(dst []byte) []byte
	// size returns the bytes the request holds (its value), for the memory
	// the proxy accounts to a client.
	size() int
}

// lender is a request that can send its large values to its server without
// copying them: the call takes them from the request, and the server
// connection writes them in their places (writev) and gives their memory
// back (bigbuf.Give). A Redis SET of 100 KB was copied twice on its way
// otherwise, into the call's request and into the connection's write buffer.
type lender interface {
	// appendLent is appendRequest, but for the values it lends: parts gets
	// one for each, whose bytes go out before dst[at:], and which the
	// request no longer holds. Each value goes to one call only.
	appendLent(dst []byte, keyCall []int, part int, rep reply, parts []lentPart) ([]byte, []lentPart)
}

// lentPart is a value lent by a request (lender), which goes out before the
// call's out[at:].
type lentPart struct {
	at int
	b  []byte
}

// reply is a server's reply to one call.
type reply interface {
	// size returns the bytes read for it.
	size() int
	// lookups returns the keys a read found and missed (a get's VALUE items
	// and the keys without one, Redis's GET and its nil, the bulks and nils
	// of MGET's array), for the hit and miss counters, and whether they were
	// touched too (memcached's gat, gats) or only touched (touch); 0, 0 for
	// a reply to a request that looks up no key.
	lookups() (hits, misses int, t touching)
}

// touching says whether the keys a reply looked up were touched (lookups):
// memcached counts the keys of gat and gats, and touch, as touches, not gets.
type touching uint8

const (
	notTouched  touching = iota // reads: get, gets, mg; Redis's
	readTouched                 // gat, gats: reads that touch the items found
	touchOnly                   // touch: the item touched, not read
)

// serverCodec reads the replies of one server connection.
type serverCodec interface {
	// handshake runs on a new connection before any request: it writes to w
	// what the server must receive first and reads the replies, all within
	// the deadline set on the connection. A codec that needs none returns nil.
	handshake(w io.Writer) error
	// wait waits until the next reply begins to arrive, or the read fails; a
	// failed wait may be retried (after a read deadline, say).
	wait() error
	// read reads the next reply into rep, which appendRequest readied. A
	// reply out of its request's grammar is an error wrapping errBadReply:
	// the connection is out of step and is reset.
	read(rep reply) error
	// buffered returns the bytes read from the connection and not yet
	// used.
	buffered() int
	// whole reports whether the bytes buffered are whole replies, those of
	// the calls queued in order (queued(i) is the reply of the i-th, nil
	// past the last): read would read them without reading the connection.
	// Bytes read would fail on (out of protocol, or more replies than
	// calls) count as whole: read fails on them just the same.
	whole(queued func(i int) reply) bool
}

// errBadReply is the error, wrapped, of a reply out of its request's grammar.
var errBadReply = errors.New("Protocol error")

// errRefused is the error, wrapped, of a server that refused a new
// connection's handshake (Redis's AUTH or SELECT, a wrong password, say). It
// reaches clients with the server's words, so that they and the logs say
// what to fix.
var errRefused = errors.New("server refused the connection's setup")
