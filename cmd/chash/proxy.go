package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chash-dev/chash/internal/analyze"
	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/dist"
	"github.com/chash-dev/chash/internal/memcache"
	"github.com/chash-dev/chash/internal/memstore"
	"github.com/chash-dev/chash/internal/proxy"
	"github.com/chash-dev/chash/internal/resp"
)

func init() { register(newProxy) }

type proxyFlags struct {
	config      string
	testConf    bool
	admin       string
	ejectErrors bool
	idle        time.Duration
	maxValue    int
	maxBulk     int
	maxMemory   int64
	tlsCert     string
	tlsKey      string
	logJSON     bool
	verbose     verbosity
	procs       int
	srcTimeout  time.Duration
	// nutcracker's own flags.
	statsPort     int
	statsAddr     string
	statsInterval int
	output        string
	pidFile       string
	daemonize     bool
	mbufSize      int
	describeStats bool
	version       bool
}

// verbosity is --verbose: nutcracker's log level, 0 to 11 (5 by default),
// or, as -v alone, chash's debug messages.
type verbosity int

const defaultVerbosity = 5 // nutcracker's LOG_NOTICE

func (v *verbosity) String() string {
	if v == nil {
		return strconv.Itoa(defaultVerbosity)
	}
	return strconv.Itoa(int(*v))
}

func (v *verbosity) Set(s string) error {
	if s == "true" { // -v alone
		*v = 7
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 11 {
		return fmt.Errorf("verbosity %q: want a level from 0 to 11, as nutcracker's", s)
	}
	*v = verbosity(n)
	return nil
}

func (v *verbosity) IsBoolFlag() bool { return true }

// level returns the slog level of a nutcracker log level: up to 3 (LOG_ERR)
// errors only, 4 (LOG_WARN) warnings, 5 and 6 (LOG_NOTICE, LOG_INFO) what
// chash logs by default, 7 (LOG_DEBUG) and more its debug messages too.
func (v verbosity) level() slog.Level {
	switch {
	case v <= 3:
		return slog.LevelError
	case v == 4:
		return slog.LevelWarn
	case v <= 6:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// nutcrackerGetopt rewrites the getopt forms of nutcracker's short options
// that the flag package does not read: a value glued to its option
// ("-v6", "-c/etc/nutcracker.yml"), options bundled ("-dt", "-tc FILE"), and
// -v with a level as the next argument ("-v 6"; -v alone is chash's debug
// switch). Arguments the flag package reads as they are (-procs,
// --config=F) stay as they are.
func nutcrackerGetopt(fs *flag.FlagSet, args []string) []string {
	const withValue, without = "csaiopm", "hVtdD"
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case a == "-v" || a == "--verbose":
			if i+1 < len(args) && isDigits(args[i+1]) {
				out = append(out, a+"="+args[i+1])
				i++
				continue
			}
		case len(a) > 2 && a[0] == '-' && a[1] != '-' && !strings.Contains(a, "=") && fs.Lookup(a[1:]) == nil:
			if bundle, ok := getoptBundle(a[1:], withValue, without); ok {
				if last := len(bundle) - 1; bundle[last] == "-v" && i+1 < len(args) && isDigits(args[i+1]) {
					bundle[last] = "-v=" + args[i+1] // "-Dv 6"
					i++
				}
				out = append(out, bundle...)
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// getoptBundle returns the flags of a bundle of short options, as getopt
// reads it: options without a value, then perhaps one with its value, glued
// ("-tcFILE") or the next argument ("-tc FILE", left to the flag package);
// -v takes a level only glued. It reports false if the bundle is not made of
// nutcracker's options.
func getoptBundle(b, withValue, without string) ([]string, bool) {
	var out []string
	for k := 0; k < len(b); k++ {
		c := b[k]
		switch {
		case c == 'v' && isDigits(b[k+1:]):
			return append(out, "-v="+b[k+1:]), true
		case strings.IndexByte(withValue, c) >= 0:
			if k+1 < len(b) {
				return append(out, "-"+string(c)+"="+b[k+1:]), true
			}
			return append(out, "-"+string(c)), true
		case strings.IndexByte(without, c) >= 0 || c == 'v':
			out = append(out, "-"+string(c))
		default:
			return nil, false
		}
	}
	return out, true
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

func newProxy() *Command {
	f := &proxyFlags{verbose: defaultVerbosity}
	c := &Command{
		UsageLine: "proxy [--config FILE] [--test-conf] [--admin ADDR] [--stats-port N] [--stats-addr IP] [--output FILE] [--pid-file FILE] [--verbose N] [--eject-errors] [--idle-timeout D] [--max-value N] [--max-bulk N] [--max-memory N] [--tls-cert F --tls-key F] [--source-timeout D] [--procs N]",
		Short:     "run a memcached and Redis sharding proxy, a drop-in for twemproxy",
		Long: `Proxy serves the pools of the configuration FILE, an unchanged twemproxy
nutcracker.yml: each pool listens on its listen address and sends each
request to the server its distribution names for the key, exactly where
nutcracker would. A file may mix memcached pools and Redis pools.

Clients of a memcached pool speak the memcached text protocol, classic and
meta commands (mg, ms, md, ma, me, mn); a get of many keys is split by
server, sent in parallel and merged in the order of the keys (the keys of a
server that fails read as misses, where nutcracker fails the whole get). The proxy
answers stats itself (its own STAT lines for the pool: connections, commands,
gets and touches with their hits and misses, counted as memcached counts
them, bytes), sends flush_all to every server of the pool (OK once all said
OK; a server ejected then is emptied before it serves again), and answers
verbosity OK without passing it on. Commands that act on or report on one
server (stats reset, settings, items and the like; shutdown, slabs, lru,
lru_crawler, watch, cache_memlimit, extstore, refresh_certs) are refused
with "CLIENT_ERROR not supported by the proxy. A server's own command: send
it to a server".

Every request is read, checked and written anew for its server, never
passed on as the client sent it (a get, gets, gat or gats line of any length
is read and sent in parts of at most 64 KiB, so a client's multi-get of
thousands of keys needs no buffer of its size): a request memcached could read otherwise
than the proxy (a control byte or space in a key, a key over 250 bytes as
sent, a line too long for a server connection that other clients share) is
refused with memcached's own error and reaches no server. So are numbers
memcached would cut to their field or read with a sign (flags past 2^32-1,
an exptime outside signed 32 bits, "+5"), meta flags memcached 1.6 ignores, and a
base64 key that decodes to a space or control byte in me, whose reply may
hold the key as it is. memcached's mg with k writes such a key back raw for
an item mg or ma made with N, and such bytes in a reply would end its line
early on a server connection other clients share: the proxy sends that mg
without k and writes "k<key> b" into the reply itself, where memcached
writes the key of an item stored with b. After a storage command refused at its line, its data block is
skipped (memcached reads it as a command); where its length cannot be
known (a wrong number of tokens, a bad length) or the data block does not
end where its length says, the connection is closed. A get line longer than
64 KiB with a bad key in a later part is refused after the values of the
parts before it. A server reply
that does not fit its request resets that server connection, whose waiting
requests are answered SERVER_ERROR; it never reaches a client. The binary
protocol is not served: such a connection is answered CLIENT_ERROR binary
protocol is not supported, and closed.

Clients of a Redis pool (redis: true) speak RESP2, multibulk or inline,
pipelined. A command of one key goes to the server of its key; one of many
keys that must be together (RENAME, SDIFF, SINTERSTORE, ZUNIONSTORE, BITOP,
PFMERGE, LMOVE, EVAL, EVALSHA, FCALL, ...) goes to their server if they all
have one, which a common hash tag ensures, and is refused otherwise ("-ERR
keys of 'rename' are on different servers"); MGET, MSET, DEL, UNLINK,
EXISTS and TOUCH are split by server and merged in the order of their keys
(not atomically, as with nutcracker); a server that fails fails the whole
command with its error, as with nutcracker (a nil would say the key is not
there). The proxy answers PING, ECHO, QUIT,
AUTH, SELECT 0, HELLO (protocol 2; HELLO 3 is refused with NOPROTO, and
clients fall back to RESP2) and CLIENT SETNAME, GETNAME, ID and SETINFO (of
the client's connection to the proxy) itself, and refuses what cannot be sharded
(KEYS, SCAN, RANDOMKEY, DBSIZE, FLUSHALL, MULTI/EXEC, WATCH, blocking pops,
SUBSCRIBE and Pub/Sub, XREAD, SCRIPT, FUNCTION, CLIENT's other subcommands, CONFIG, INFO,
CLUSTER, ...) with "-ERR command 'keys' is not supported by the proxy", the
connection staying open. After a refused MULTI, no command runs until the
EXEC (answered EXECABORT) or DISCARD (OK) that ends the transaction: a
client that pipelines one gets no command of it run outside it. Unknown commands and wrong numbers of arguments get
Redis 7.0's own errors without a round trip, and malformed RESP Redis's own
"-ERR Protocol error: ..." before the connection closes, as Redis closes it.
With redis_auth, clients must AUTH (or HELLO 2 AUTH default PASSWORD) with
it first, and the proxy authenticates its server connections and its probes
with it; with redis_db, server connections SELECT that database, which
clients see as database 0. Where nutcracker 0.5.0 differs: it closes the
connection on every command it does not serve (and on an unknown command or
a wrong number of arguments); its AUTH errors have its own words; and with
both redis_auth and redis_db it sends SELECT before AUTH, which the server
refuses, so its keys land in database 0.

Requests the proxy refuses are counted by class in
chash_proxy_refused_requests_total{pool,class} (and in the refused_<class>
lines of a memcached pool's stats), and each class is logged once a minute
at most: a refusal at once, those that follow within the minute in one line
with their number when it ends. A memcached pool's classes are the
words of memcached's error (error, bad_command_line_format, line_too_long,
...); a Redis pool's are fixed: protocol_error, unknown_command,
unsupported_command, wrong_number_of_arguments, invalid_argument (of AUTH,
SELECT, HELLO), noauth, wrongpass, unsupported_database (SELECT of another
than 0), unsupported_protocol (HELLO 3), script_without_keys and
pattern_of_keys_on_other_servers (SORT's BY or GET patterns); either's
keys_on_different_servers is a request whose keys must be together and are
not, slow_reader a client closed under --max-memory (below), and
client_connections a connection closed at once because the pool has
client_connections clients (counted in client_err too, as nutcracker
counts it), open_files one closed at once because the proxy has as many
clients, in all its pools, as its open files limit (ulimit -n) leaves room
for beside its servers' connections (server_connections for each server)
and 64 descriptors it keeps, as nutcracker limits them (it keeps 32); the
first in 10 s is also logged as an error. A Redis refusal's log line quotes the command's name and its number of
arguments, never the arguments. The lines are warnings but for
unsupported_protocol's, at Info: go-redis offers RESP3 on each new
connection and goes on in RESP2 when refused.

A server's first failure after an answer (a timeout, a reset, a bad reply)
is logged, "server failing", and its next answer, "server answering again":
two lines a streak, at most one streak in 10 s; a server that cannot be
connected to logs "server down" and "server up" instead. Both lines of a
pair, and "server ejected" and "server readmitted", are warnings, so that a
log kept at -v 4 shows a server's return as well as its failure.

With auto_eject_hosts, a server that fails server_failure_limit times in a
row leaves the ring and its keys go to the next server; unlike nutcracker, it
comes back only once it answers a probe, tried every server_retry_timeout.
--eject-errors answers an ejected server's keys with an error instead of
moving them, for users who prefer misses to stale data.

--eject-errors, --idle-timeout and --tls-cert with --tls-key are defaults: a
pool may set its own with the keys eject_errors: true|false (which needs
auto_eject_hosts: true), client_idle_timeout: MS (milliseconds, as timeout;
0 keeps idle clients) and tls_cert_file: F with tls_key_file: F. 'chash help
config' describes every key of a pool.

A memcached pool may keep its cache warm when it is resized. With warmup: MS,
for MS milliseconds after a ring change (reload, membership update,
ejection, readmission, drain), a retrieval that misses at a key's new server,
for a key whose server changed, reads the key's previous server, answers
with its value and copies it to the new server with its flags and time to
live; writes in the window delete the previous server's copy. With
replicas: N (chash, rendezvous, multiprobe, balanced), each key is stored on
N servers: writes go to all, or to the first for commands whose outcome
depends on the stored item, whose result is then copied to the others;
reads go to the first replica that is up and fail over to the next (on a
miss too, with read_miss_failover: true). A write a server misses is
remembered as a delete and replayed before it serves reads again, also if
it leaves the pool and joins again later: by the proxy that saw the write
fail, while it runs (another proxy of a fleet that did not eject the server
reads it meanwhile; a proxy restarted has forgotten). A server
listed in drain:, or drained with POST /drain?pool=P&server=S[&ms=N] on the
admin listener (DELETE takes it back), owns no keys but stays connected, its
keys warmed from it, and may leave the pool once the window closes. A drain
by POST is the proxy's own: drain the server on every proxy, or their rings
differ meanwhile.

SIGHUP, or POST /reload on the admin listener, reloads FILE: an invalid file,
or TLS files that do not load, is refused and the old configuration keeps
serving; servers that stay keep their connections and counters (a weight
changed too; their counters also where their server_connections changed or
their pool restarts, below), and the fraction of the key space that moved is logged, with
the servers added, removed, reweighted and readdressed and the routing
settings changed (distribution, hash, hash_tag, points, label). A pool whose listen
address, TLS files or protocol (redis, redis_auth, redis_db) changed
restarts on its new listener, closing its clients (its counters and those
of the servers that stay go on); a pool keeping its TLS
files (its own, or --tls-cert's and --tls-key's) reads them again for new
clients, so a renewed certificate needs no restart. eject_errors and client_idle_timeout apply at once.

SIGTERM and SIGINT stop accepting clients and reading requests: every
request the proxy has read is answered (none is run and left unanswered),
then each client's connection is closed for writing, so the client reads
its last reply and the end of the stream, and the proxy waits up to 500 ms
for the client to close its side (a close with bytes unread would reset the
connection and could lose the last reply); it exits 0 once all are done,
cutting what is still in flight after 10s, or at once at a second SIGTERM
or SIGINT.

A pool may take its servers from etcd or from a file instead of listing
them (servers_from:, see 'chash help config'):

    servers_from: etcd://10.0.0.1:2379,10.0.0.2:2379/chash/cache/
    servers_from: file:/etc/chash/cache.servers

Every key under the etcd prefix holds one server line ("host:port:weight
[name]"; the list is in the keys' order); the file has one server line a
line. The proxy reads the list at start, then follows it: it watches the
prefix, or reads the file again when it changes (a new file renamed over
it included). Each change is applied as a reload applies new servers:
checked, swapped at once, servers that stay keep their connections, and
the moved key space logged (in the background, changes less than a second
apart together). A list that is not valid (a bad line, a name twice, a
ring that does not build) is refused, logged and counted, and the last
good list keeps serving. An etcd that stops answering leaves the last list
serving while the proxy retries with backoff, logging the change of state
once; once etcd is back the proxy reads the whole prefix again. At start,
and at a reload that adds or changes a servers_from, the proxy waits at
most --source-timeout for the first list, then fails and names the
endpoints: a proxy without its servers could only answer errors, and the
old process, or the old configuration, keeps serving instead. An empty
prefix is a valid list: the pool answers "SERVER_ERROR no live servers"
until servers register. 'chash register' keeps a server's key alive under
a lease next to its memcached or Redis; if it dies with the server, the
lease lapses and every proxy drops the server.

Every pool's ring has a fingerprint: 16 hex digits, a pure function of the
pool's routing settings (distribution, hash, hash_tag, points, label, each
default filled in; replicas, above 1) and of its servers' names, addresses
and weights (in name order where the distribution's order does not
matter). Proxies that show a pool the same fingerprint route each of its
keys, and its copies, alike. GET /ring
on the admin listener shows it, as JSON:

    {"pools": {"NAME": {"fingerprint": "HEX", "distribution": "ketama",
      "servers": ["NAME", ...], "ejected": ["NAME", ...],
      "drained": [{"server": "NAME", "state": "draining"}, ...],
      "source": "URL", "revision": N, "connected": true}}}

servers are the ring's, named as 'chash route' names them (an ejected
server whose keys move to the others is out of the ring, and of the
fingerprint, while it is out); drained are the pool's drained servers
(drain: and POST /drain), out of the ring and of the fingerprint, each
"draining" while a warm-up window reads its former keys from it, then
"drained": it may leave the pool; source is the servers_from URL, "" for
servers listed in the file; revision is the etcd revision at which the
proxy last read or was told the list, which differs between proxies that
read the same list at different moments: compare fingerprints (for a file,
the proxy's own count of changes); connected
says whether the source answers. The metric
chash_proxy_ring_info{pool,fingerprint} is 1 for the fingerprint in use, so
a dashboard shows proxies that disagree:

    count by (pool) (count by (pool, fingerprint) (chash_proxy_ring_info)) > 1

and chash_proxy_source_connected, _revision, _updates_total,
_refused_total, _errors_total, _relists_total and _state_since_seconds
show each source's state.

Hitless restart: every TCP listener, the pools', the admin's and the
stats port's, sets
SO_REUSEPORT, so a new process listens on the same addresses while the old
one runs, the kernel spreading new connections over both. To restart (a
new binary, new flags, a configuration that nutcracker would need a
restart for):

    1. start the new process, with the configuration it is to serve;
    2. wait until it logs "admin listening" (it has opened every listener);
    3. send SIGTERM to the old process.

The old process closes its listeners, so that new connections go to the
new one only, first serving the connections already waiting in its listen
queue; then it answers every request it has read and closes its clients,
which connect again, to the new process. No connection is refused, and no
request read is left unanswered; a client whose connection ends before a
reply sends the request again, as the proxy ran none it did not answer.
On Linux 5.14 and later, sysctl net.ipv4.tcp_migrate_req=1 hands over even
a connection whose handshake ends in the instant the old listener closes.
Pools on Unix sockets cannot be shared so: the new process fails to listen
while the old one runs (a socket file that nothing serves, left by a process
that died, is replaced, as nutcracker does). Only processes of one user share an address, and a
second proxy started by mistake on the same address serves alongside the
first rather than fail to start, as nutcracker would; a process that opens
a listener where another process listens logs so, a warning for each ("another
process listens on this address too"), the new process of a restart too.

--max-memory bounds the bytes of requests read and not yet answered and of
replies read from servers and not yet written, over all clients (1 GiB by
default): past it, clients are not read until replies are written, so a
client that sends faster than its replies are read cannot make the proxy
hold ever more; a reply's bytes count until it is written, so a client that
reads slowly holds only what it has not taken. Replies to requests already
sent may take it past the bound: at most 256 requests and 4,096 keys per
client are in flight, and where the pool has seen values of 64 KiB or more
in the last 10 s, no more keys than bring a sixteenth of --max-memory at
the largest such size (one request at least: with values of 1 MB and the
default bound, 64 keys), and no more once the requests in flight of all
clients may bring --max-memory at that size (one request each still goes:
with 24 clients pipelining gets of 1 MiB values, 1 GiB in flight, not
1.5); where it has seen none, a client's requests count
as values of 1 MiB until its first replies are written (a client that
pipelines gets as it connects has 64 in flight at first, by default).
So may the one request each client is reading, counted once read whole (up
to --max-value or --max-bulk). The bound counts bytes of requests and
replies, not the memory that holds them: a value of 16 KiB or more is held
in a buffer of a power of two bytes (up to twice its size), and garbage
not yet collected adds to the process's size (GOMEMLIMIT bounds that). While past it, a
client that takes more than 5 s to take a write of its replies (64 KiB, or
one larger reply) is closed, as Redis closes one past its output buffer
limit: the clients that wait must not wait on one that does not read (class
slow_reader below). An idle client holds no buffer.

--procs sets how many threads run Go code. By default (0) it adapts to the
load: one thread while the proxy uses less than most of a core, where
handing requests between goroutines on one thread costs far less CPU than
waking other threads, and every CPU once one thread is busy, if they serve
more: after a second on them, the proxy must serve 5% more requests a
second than on one thread, or it goes back to one for 10 s (20, 40, up to a
minute while trials fail), as more threads serve no more where the other
cores are busy (with the servers or the clients) and cost CPU. The other
way too: every CPU using less than a core for a second try one thread, which
stays unless it serves 5% less (then every CPU for 10 s, 20, up to a
minute): one client pipelining to one server served 70,000 requests a
second on two threads and 125,000 on one. The GOMAXPROCS environment
variable, if set, fixes it instead.

The admin listener (--admin, 127.0.0.1:22223 by default, "" for none)
serves a status page at / (each pool's ring drawn as a circle, each
server's arcs in its colour; its servers with health, ejection, share of the
key space, request and error rates since the page's last view, "–" at the
first view and after a minute without one; the warning of a hash that
sends similar keys to one server; plain HTML with inline SVG that
reloads itself every 5 seconds, readable without JavaScript and in a terminal
browser), /metrics (Prometheus), /stats (JSON shaped like nutcracker's stats
port, always current), /route?pool=P&key=K ({"pool":P,"key":K,"server":NAME},
the server that gets the key now, ejections included, and with replicas
"replicas", the key's replica set in the order reads try it, each
{"server":NAME} with "ejected":true if it is; 400 or 404 with
{"error":...} for a missing key or an unknown pool), /ring (each pool's ring
fingerprint, servers and source), /reload, /drain and /healthz (200 "ok"
while the process serves: a liveness check; a pool whose servers are all
ejected shows on /ring and the status page, and in
chash_proxy_server_ejected). POST
/reload and POST and DELETE /drain must carry the header Chash-Admin, with
any value, and a Host that is the listener's, localhost or an IP address, so
that no web page can make a browser reload the proxy:

    curl -X POST -H 'Chash-Admin: 1' http://127.0.0.1:22223/reload

Reloads through it are at least a second apart (429 Too Many Requests
otherwise).

The stats port (--stats-port, 22222 by default, on --stats-addr, 0.0.0.0 by
default, as nutcracker's; 0 for none) is nutcracker's: a client that connects
reads one JSON document, the stats of every pool and server in nutcracker
0.5.0's shape and order, and the connection closes, so that 'nc HOST 22222',
nutcracker-web and the collectd and telegraf plugins written for nutcracker
read it. Its counters mean what nutcracker's do (response_bytes counts the
replies' bytes as they came from the server, values included) and are always
current. A server object ends with chash's own: server_protocol_errors,
and get_hits and get_misses (the keys of reads it found and did not: get,
gets, gat, gats, mg; Redis's GET, MGET, GETEX, GETDEL, GETSET);
--describe-stats lists them all.

Nutcracker's command line works as it is, so that its init scripts and unit
files run chash unchanged, as 'chash proxy' or through a link named
nutcracker to the chash binary (which then runs proxy, its configuration
/etc/nutcracker/nutcracker.yml unless -c names another, as Debian's
nutcracker's; the embedded default is chash proxy's alone): -c/--conf-file is
--config, -t/--test-conf, -s/--stats-port, -a/--stats-addr, -o/--output
(append the log to a file, which SIGHUP opens again, as nutcracker's does,
so that logrotate's create and copytruncate both work),
-p/--pid-file (checked before the listeners open, so that a file that cannot
be written stops the proxy before it serves; written once serving, as a new
file renamed over it; removed at exit unless another process wrote its id
there since, as the new process of a restart does), -v/--verbose N
(nutcracker's levels: 0 to 3 errors only, 4 warnings, 5 and 6 chash's usual
log, 7 to 11 debug messages too; -v alone is 7), -D/--describe-stats,
-V/--version and -h/--help; getopt's forms too (-v6, -tc FILE). Its
signals too: SIGTTIN and SIGTTOU raise and lower the log level by one of
nutcracker's levels, SIGUSR1 and SIGUSR2 do nothing, SIGHUP opens --output
again (and reloads FILE), and SIGPIPE is ignored: a log going to a pipe whose
reader died does not end the proxy.
-i/--stats-interval and -m/--mbuf-size are accepted and mean nothing
(chash's stats are always current, and it has no mbufs): the log says so
once. -d/--daemonize runs the proxy as a daemon, as Debian's init script
for nutcracker does: a new process of the same program in a session of its
own, its standard input, output and error on /dev/null (log with -o), in
the same working directory; the command returns once the daemon serves
(its pid file written), with status 0, or with the daemon's error and
status if it could not start. A supervisor (systemd with Type=simple, runit,
s6) restarts, logs and limits a foreground process better.

--max-value bounds the values clients of memcached pools store (1 MiB by
default, memcached's -I); --max-bulk bounds the bulk strings clients of
Redis pools send (512 MiB by default, Redis's proto-max-bulk-len). A larger
one is refused as the server would refuse it; a set or ms refused so
deletes the key's old value, as memcached does, so that a failed set
leaves nothing stale to read.

--test-conf checks FILE as 'nutcracker -t' does and exits: 0 if it is valid,
2 otherwise, as proxy does at start with a FILE that is not. It resolves the
listen addresses, refuses one that does not resolve, and refuses two pools
whose addresses overlap (localhost:22121 and 127.0.0.1:22121, or 0.0.0.0:22121 and
127.0.0.1:22121). It checks a servers_from URL but does not read the list, so
that a file can be checked where etcd cannot be reached; 'chash route
--config FILE' reads it once, and fails if it is not valid. A pool whose
hash and distribution send keys that differ only in their last character
("user:1", "user:2", ...) to one server, as twemproxy's default fnv1a_64 on
ketama does, gets a warning on stderr naming its file and line (status 0),
and the proxy logs one as the pool starts, or a change of its hash or its
servers makes it so (under modula, fnv1a_64 clusters over three servers, not
over four; a new server list is measured with its moved key space), and shows
it on the status page while it holds: keep the hash where the pool must
route as a deployed twemproxy does; for a new pool prefer md5 or xxh64.

Without --config, proxy starts on 127.0.0.1:22121 in front of three small
in-process memcached-compatible stores (64 MiB each, LRU eviction, expiry,
cas), and says so in its log: a way to try it with nc on a machine without
memcached. It is not for production; point a configuration file at real
memcached servers for that.`,
	}
	for _, name := range []string{"config", "conf-file", "c"} {
		c.Flag.StringVar(&f.config, name, "", "the twemproxy configuration `FILE`")
	}
	for _, name := range []string{"test-conf", "t"} {
		c.Flag.BoolVar(&f.testConf, name, false, "check the configuration and exit")
	}
	c.Flag.StringVar(&f.admin, "admin", "127.0.0.1:22223", "admin HTTP listener `ADDR` (status page, /metrics, /stats, /route, /reload); empty for none")
	for _, name := range []string{"stats-port", "s"} {
		c.Flag.IntVar(&f.statsPort, name, 22222, "nutcracker's raw TCP stats `PORT`; 0 for none")
	}
	for _, name := range []string{"stats-addr", "a"} {
		c.Flag.StringVar(&f.statsAddr, name, "0.0.0.0", "the stats port's `IP`")
	}
	for _, name := range []string{"stats-interval", "i"} {
		c.Flag.IntVar(&f.statsInterval, name, 30000, "accepted for nutcracker's scripts: chash's stats are always current")
	}
	for _, name := range []string{"output", "o"} {
		c.Flag.StringVar(&f.output, name, "", "append the log to `FILE` instead of standard error; SIGHUP opens it again")
	}
	for _, name := range []string{"pid-file", "p"} {
		c.Flag.StringVar(&f.pidFile, name, "", "write the process id to `FILE`, removed at exit")
	}
	for _, name := range []string{"daemonize", "d"} {
		c.Flag.BoolVar(&f.daemonize, name, false, "run as a daemon; return once it serves")
	}
	for _, name := range []string{"mbuf-size", "m"} {
		c.Flag.IntVar(&f.mbufSize, name, 0, "accepted for nutcracker's scripts: chash has no mbufs")
	}
	for _, name := range []string{"describe-stats", "D"} {
		c.Flag.BoolVar(&f.describeStats, name, false, "print what each counter of the stats port counts and exit")
	}
	for _, name := range []string{"version", "V"} {
		c.Flag.BoolVar(&f.version, name, false, "print the version and exit")
	}
	for _, name := range []string{"verbose", "v"} {
		c.Flag.Var(&f.verbose, name, "log `LEVEL`, nutcracker's 0 to 11; 7 or more, or -v alone, adds debug messages")
	}
	c.Flag.BoolVar(&f.ejectErrors, "eject-errors", false, "answer an ejected server's keys with errors instead of moving them; a pool's eject_errors overrides")
	c.Flag.DurationVar(&f.idle, "idle-timeout", 0, "close clients idle this long (from their connection, or their last reply), 0 keeps them; a pool's client_idle_timeout overrides")
	c.Flag.IntVar(&f.maxValue, "max-value", memcache.DefaultMaxValue, "largest value in bytes a client of a memcached pool may store")
	c.Flag.IntVar(&f.maxBulk, "max-bulk", resp.DefaultMaxBulk, "largest bulk string in bytes a client of a Redis pool may send")
	c.Flag.Int64Var(&f.maxMemory, "max-memory", proxy.DefaultMaxMemory, "bytes of requests and replies in flight past which clients are not read")
	c.Flag.StringVar(&f.tlsCert, "tls-cert", "", "serve clients over TLS with this certificate `FILE` (PEM); a pool's tls_cert_file overrides")
	c.Flag.StringVar(&f.tlsKey, "tls-key", "", "the TLS certificate's key `FILE` (PEM); a pool's tls_key_file overrides")
	c.Flag.DurationVar(&f.srcTimeout, "source-timeout", proxy.DefaultSourceTimeout, "how long to wait for a servers_from's first list at start and reload")
	c.Flag.IntVar(&f.procs, "procs", 0, "threads running Go code; 0 adapts between 1 and the CPUs to the load")
	c.Flag.BoolVar(&f.logJSON, "log-json", false, "log in JSON")
	c.Getopt = nutcrackerGetopt
	c.Run = func(ctx context.Context, c *Command, env *Env, args []string) int {
		return runProxy(ctx, c, env, f, args)
	}
	return c
}

func runProxy(ctx context.Context, c *Command, env *Env, f *proxyFlags, args []string) int {
	stderr := env.Stderr
	var daemon *os.File // the pipe of the process that --daemonize started
	if f.daemonize {
		daemon = daemonChild()
	}
	if daemon != nil {
		// Its start's errors go to the process waiting for it to serve,
		// which writes them where the operator sees them.
		defer daemon.Close()
		env = &Env{Stdin: env.Stdin, Stdout: env.Stdout, Stderr: daemon}
	}
	if len(args) > 0 {
		return c.UsageError(env.Stderr, "unexpected arguments %q: the proxy takes flags only (a log level is -v N, N from 0 to 11)", args)
	}
	switch {
	case f.version:
		info, _ := debug.ReadBuildInfo()
		fmt.Fprintln(env.Stdout, versionLine(info))
		return 0
	case f.describeStats:
		proxy.DescribeStats(env.Stdout)
		return 0
	case f.statsPort < 0 || f.statsPort > 65535:
		return c.UsageError(env.Stderr, "--stats-port %d: want a port from 1 to 65535, or 0 for none", f.statsPort)
	}
	if f.admin != "" {
		if err := checkListenAddr(f.admin); err != nil {
			return c.UsageError(env.Stderr, "--admin %q: %v", f.admin, err)
		}
	}
	if f.statsPort != 0 {
		if err := checkListenAddr(net.JoinHostPort(f.statsAddr, "0")); err != nil {
			return c.UsageError(env.Stderr, "--stats-addr %q: %v", f.statsAddr, err)
		}
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return c.UsageError(env.Stderr, "--tls-cert and --tls-key go together")
	}
	if f.maxValue < 1 || f.maxBulk < 1 {
		return c.UsageError(env.Stderr, "--max-value %d, --max-bulk %d: want positive numbers of bytes", f.maxValue, f.maxBulk)
	}
	if f.maxMemory < 1 {
		return c.UsageError(env.Stderr, "--max-memory %d: want a positive number of bytes", f.maxMemory)
	}
	if f.procs < 0 {
		return c.UsageError(env.Stderr, "--procs %d: want 0 (adapt to the load) or more", f.procs)
	}
	if f.idle < 0 {
		return c.UsageError(env.Stderr, "--idle-timeout %v: want 0 (idle clients stay) or a positive duration", f.idle)
	}
	if f.srcTimeout <= 0 {
		return c.UsageError(env.Stderr, "--source-timeout %v: want a positive duration", f.srcTimeout)
	}
	if f.config == "" && f.testConf {
		return c.UsageError(env.Stderr, "--test-conf needs --config")
	}
	var file *config.File
	var err error
	var stores []*memstore.Store
	if f.config == "" {
		file, stores, err = embeddedDefault()
		defer func() {
			for _, s := range stores {
				s.Close()
			}
		}()
	} else {
		file, err = config.Load(f.config)
	}
	if err == nil {
		err = proxy.Validate(file)
	}
	if err == nil {
		// At start too, not only for --test-conf: a listen address that
		// does not resolve is then a bad configuration, named by its file
		// and line, rather than a bind that fails.
		err = proxy.CheckListens(file)
	}
	if err != nil {
		c.Errorf(env.Stderr, "%v", err)
		return 2
	}
	if f.tlsCert != "" {
		// Checked here, --test-conf too, to fail as a bad flag does; the
		// proxy reads the files again at each reload, as a pool's own
		// (tls_cert_file).
		if _, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey); err != nil {
			return c.UsageError(env.Stderr, "--tls-cert %s --tls-key %s: %v", f.tlsCert, f.tlsKey, err)
		}
	}
	if f.testConf {
		// What the proxy warns of as each pool starts, a warning that
		// does not fail the test.
		for _, pool := range file.Pools {
			if cl, err := analyze.HashClusters(pool); err == nil && cl != nil && cl.Clustered() {
				c.Errorf(env.Stderr, "warning: %v", pool.ErrorAt("hash", fmt.Errorf(
					"hash %s on %s sends keys that differ only in their last character to one server (%d of %d groups): keep it to route as a deployed twemproxy does; for a new pool prefer md5 or xxh64",
					dist.HashOf(pool), pool.Distribution, cl.Together, cl.Groups)))
			}
		}
		fmt.Fprintf(env.Stdout, "chash proxy: configuration file '%s' syntax is ok\n", f.config)
		return 0
	}
	if f.daemonize && daemon == nil {
		// Checked above, the command line and FILE fail here, where the
		// operator reads the error; the daemon reads them again.
		status, err := daemonize(argv, env.Stderr, f.srcTimeout+30*time.Second)
		if err != nil {
			c.Errorf(env.Stderr, "--daemonize: %v", err)
		}
		return status
	}
	ignoreBrokenPipe()          // before the first log line, which may go to a pipe
	level := new(slog.LevelVar) // SIGTTIN and SIGTTOU change it
	level.Set(f.verbose.level())
	logTo := stderr
	var logf *logFile
	if f.output != "" {
		var err error
		if logf, err = openLogFile(f.output); err != nil {
			c.Errorf(env.Stderr, "--output: %v", err)
			return 1
		}
		defer logf.Close()
		logTo = logf
	}
	var h slog.Handler = slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: level})
	if f.logJSON {
		h = slog.NewJSONHandler(logTo, &slog.HandlerOptions{Level: level})
	}
	p := &proxy.Proxy{
		Logger:        slog.New(h),
		Limits:        memcache.Limits{MaxValue: f.maxValue},
		RedisLimits:   resp.Limits{MaxBulk: f.maxBulk},
		EjectErrors:   f.ejectErrors,
		IdleTimeout:   f.idle,
		MaxMemory:     f.maxMemory,
		ConfigPath:    f.config,
		Admin:         f.admin,
		SourceTimeout: f.srcTimeout,
	}
	if f.statsPort != 0 {
		p.StatsAddr = net.JoinHostPort(f.statsAddr, strconv.Itoa(f.statsPort))
	}
	if f.tlsCert != "" {
		p.TLSCertFile, p.TLSKeyFile = f.tlsCert, f.tlsKey
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	sigs := make(chan os.Signal, 4)
	for sig := range nutcrackerSignals {
		signal.Notify(sigs, sig)
	}
	defer signal.Stop(sigs)
	var pf *pidFile
	if f.pidFile != "" {
		// Opened before the listeners: a proxy that cannot write it must
		// not serve, even for a moment (a restart waits for the new
		// process's "admin listening" line, then stops the old one).
		if pf, err = openPidFile(f.pidFile); err != nil {
			c.Errorf(env.Stderr, "--pid-file: %v", err)
			return 1
		}
		defer pf.remove()
	}
	if err := p.Start(file); err != nil {
		c.Errorf(env.Stderr, "%v", err)
		return 1
	}
	if pf != nil {
		if err := pf.write(); err != nil {
			p.Close()
			c.Errorf(env.Stderr, "--pid-file: %v", err)
			return 1
		}
	}
	if daemon != nil {
		daemonStarted(daemon)
		env.Stderr = stderr
	}
	if f.mbufSize != 0 {
		p.Logger.Info("--mbuf-size is accepted for nutcracker's command line and means nothing here: chash proxy sizes its buffers itself", "mbuf_size", f.mbufSize)
	}
	if f.statsInterval != 30000 {
		p.Logger.Info("--stats-interval is accepted for nutcracker's command line and means nothing here: the stats port's counters are always current", "stats_interval_ms", f.statsInterval)
	}
	switch _, set := os.LookupEnv("GOMAXPROCS"); {
	case f.procs > 0:
		defer proxy.SetProcs(proxy.SetProcs(f.procs))
	case !set:
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			proxy.ScaleProcs(sctx, runtime.GOMAXPROCS(0), p.Served, p.Logger)
		}()
		defer func() { cancel(); <-done }()
	}
	if stores != nil {
		p.Logger.Warn("no --config: serving 127.0.0.1:22121 in front of three embedded in-process stores, for trying chash proxy out; point --config at real memcached servers for real use")
	}
	for {
		select {
		case <-hup:
			if logf != nil {
				if err := logf.reopen(); err != nil {
					p.Logger.Error("--output not opened again: the log stays in the file open before", "err", err)
				}
			}
			p.ReloadFile() // logs its outcome; a refused file leaves the old one serving
		case sig := <-sigs:
			v := f.verbose
			switch sig {
			case logUp:
				f.verbose = min(v+1, 11)
			case logDown:
				f.verbose = max(v-1, 0)
			default:
				p.Logger.Info("signal received: nothing to do, as for nutcracker", "signal", nutcrackerSignals[sig])
				continue
			}
			// At the more severe of the two levels: written whichever
			// way the level went.
			p.Logger.Log(context.Background(), max(v.level(), f.verbose.level()), "signal received: log level changed",
				"signal", nutcrackerSignals[sig], "verbose_from", int(v), "verbose_to", int(f.verbose))
			level.Set(f.verbose.level())
		case <-ctx.Done():
			p.Logger.Info("shutting down: finishing requests in flight")
			cut, cutNow := context.WithCancelCause(context.Background())
			sctx, cancel := context.WithTimeoutCause(cut, 10*time.Second, errors.New("not done in 10s"))
			// A second SIGTERM or SIGINT cuts what is in flight at once, as
			// an operator who presses ^C again expects, rather than go
			// unheard until the 10s pass.
			again := make(chan os.Signal, 1)
			signal.Notify(again, syscall.SIGTERM, syscall.SIGINT)
			go func() {
				select {
				case sig := <-again:
					cutNow(fmt.Errorf("a second signal (%v)", sig))
				case <-sctx.Done():
				}
			}()
			err := p.Shutdown(sctx)
			signal.Stop(again)
			if err != nil {
				p.Logger.Warn("requests in flight were cut", "why", context.Cause(sctx).Error())
			}
			cancel()
			cutNow(nil)
			return 0
		}
	}
}

// embeddedDefault starts three in-process stores on free ports of 127.0.0.1 and
// returns the configuration of a pool in front of them, listening on
// 127.0.0.1:22121.
func embeddedDefault() (*config.File, []*memstore.Store, error) {
	pool := config.NewPool("embedded")
	pool.Listen = "127.0.0.1:22121"
	// chash's own ring and key hash (xxh64), not the fnv1a_64 and ketama
	// common in nutcracker.yml files: twemproxy's fnv1a_64 sends keys that
	// differ only at their end, as a newcomer's "key1", "key2", ... do, to one
	// server two times in three.
	pool.Distribution = "chash"
	pool.Timeout = 400 * time.Millisecond
	var stores []*memstore.Store
	for i := range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			for _, s := range stores {
				s.Close()
			}
			return nil, nil, err
		}
		s := &memstore.Store{}
		stores = append(stores, s)
		go s.Serve(ln) // returns when the store is closed
		addr := ln.Addr().(*net.TCPAddr)
		pool.Servers = append(pool.Servers, config.Server{
			Host: addr.IP.String(), Port: addr.Port, Weight: 1, Alias: fmt.Sprintf("embedded-%d", i+1),
		})
	}
	return &config.File{Path: "(embedded default)", Pools: []*config.Pool{pool}}, stores, nil
}

// pidFile is --pid-file: checked writable before the proxy listens, written
// once it serves, removed at exit if it still holds this process's id.
type pidFile struct {
	path    string
	written bool
}

// openPidFile checks that path can be written, as the proxy will write it,
// leaving no file behind that was not there.
func openPidFile(path string) (*pidFile, error) {
	_, err := os.Stat(path)
	created := errors.Is(err, fs.ErrNotExist)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	f.Close()
	if created {
		os.Remove(path)
	}
	return &pidFile{path: path}, nil
}

// write puts the process id in the file: in a new file renamed over the path,
// so that it never lands in a file another process removes meanwhile (the old
// process of a restart, exiting), or in place where the directory takes no
// new file.
func (p *pidFile) write() error {
	data := []byte(strconv.Itoa(os.Getpid()) + "\n")
	tmp, err := os.CreateTemp(filepath.Dir(p.path), "."+filepath.Base(p.path)+".*")
	if err == nil {
		_, err = tmp.Write(data)
		if err2 := tmp.Close(); err == nil {
			err = err2
		}
		if err == nil {
			err = os.Chmod(tmp.Name(), 0o644)
		}
		if err == nil {
			err = os.Rename(tmp.Name(), p.path)
		}
		if err != nil {
			os.Remove(tmp.Name())
		}
	} else {
		err = os.WriteFile(p.path, data, 0o644)
	}
	p.written = err == nil
	return err
}

// remove removes the file if it holds this process's id: in a restart, the
// new process has written its own id over the old one's, and the old one,
// exiting, leaves it.
func (p *pidFile) remove() {
	if !p.written {
		return
	}
	if b, err := os.ReadFile(p.path); err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(os.Getpid()) {
		os.Remove(p.path)
	}
}

// checkListenAddr checks a listen address of a flag, HOST:PORT, as the
// listen would at start, where its error would name a listener rather than
// the flag: a port from 0 to 65535, and a host that is an IP address or a
// name that resolves (empty for every address).
func checkListenAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want HOST:PORT: %w", err)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || strconv.FormatUint(n, 10) != port {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	if host == "" || net.ParseIP(host) != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := net.DefaultResolver.LookupHost(ctx, host); err != nil {
		return err
	}
	return nil
}
