// Package proxy is chash's memcached and Redis proxy, a drop-in for twemproxy:
// it reads nutcracker.yml pools (package config), listens on each pool's
// address, and sends each request to the server that the pool's distribution
// names for its key, exactly where nutcracker sends it. A pool speaks
// memcached's text protocol, or Redis's RESP2 if it sets redis: true.
//
// Each client connection has one goroutine. It reads every request the client
// has already sent, routes each and writes it to its server at once, then writes
// the replies in request order, so pipelined requests are served in parallel. A
// get of many keys is split into one get per server, sent in parallel and merged
// in the order of the keys. The requests of all clients share each server's
// ServerConnections persistent connections, pipelined: a request is written as
// soon as it is routed, and requests that arrive together leave in one write; a
// reader goroutine per connection reads the replies and hands each to its
// client. A server connection never loses step: the proxy keeps noreply itself
// and asks servers for a reply, and sends a meta request in quiet mode followed
// by mn, whose MN stands where memcached hid a reply.
// Sockets are read and written with raw system calls that wait in the network
// poller (see socketIO), and ScaleProcs keeps Go code on one thread until the
// load needs more: both spare the thread wake-ups that would otherwise cost a
// proxy more CPU than its requests. A client that sends whole requests is
// served within one raw read of its socket, which waits for its next request
// without the read that would find nothing (see rawIO.serveClient).
// Every request has the pool's timeout: a server that does not answer in time
// fails the requests waiting on that connection, which is reopened.
//
// Replies of memcached pools are memcached's own, byte for byte, with these
// exceptions: a request that no server can serve is answered "SERVER_ERROR
// <reason>" (as twemproxy does; reasons: Connection timed out, Connection
// refused, server ejected, no live servers, ...); in a get split over servers,
// the keys of a server that failed read as misses, unless every server failed;
// version is answered by the server of the empty key; stats answers the
// pool's own counters (see pool.appendStats), and stats with arguments ERROR;
// verbosity is answered OK and not forwarded; flush_all goes to every server of
// the pool and is answered OK once every server said OK; other commands that
// address no key (shutdown, lru_crawler, ...) are refused with "ERROR", as
// memcached refuses unknown ones. get, gets, gat and gats lines of any length
// are read in parts of at most 64 KiB (2 KiB for gat and gats, which memcached
// reads whole only that long), each sent to its servers as it is read, so that
// a client's long multi-get costs bounded memory; the reply to a part may be
// written before the next part is read, so a key refused in a line longer
// than 64 KiB ends a reply that already holds the values of the keys before it
// (memcached answers the error alone), and in such a line the keys of a server
// that failed read as misses even if every server failed.
//
// Replies of Redis pools are Redis's own, byte for byte, but for what the
// proxy does itself: it routes each command by its keys as package resp's
// command table says (Redis 7.0's commands), refusing a command whose keys
// must be together on one server but are not ("-ERR keys of 'rename' are on
// different servers") and those that cannot be sharded ("-ERR command 'keys'
// is not supported by the proxy"); it splits MGET, MSET, DEL, UNLINK, EXISTS
// and TOUCH by server and merges their replies in the order of their keys;
// it answers PING, ECHO, QUIT, AUTH, SELECT 0 and HELLO 2 itself (with
// redis_auth, a client must AUTH first); and a request no server can serve is
// answered "-ERR <reason>", as twemproxy does. Server connections AUTH with
// redis_auth and SELECT redis_db before their first request.
//
// A server that fails server_failure_limit times in a row is ejected when the
// pool sets auto_eject_hosts: its keys go where the distribution puts them
// without it. Unlike twemproxy, an ejected server comes back only after it
// answers a probe (memcached's "version", Redis's PING after its AUTH and
// SELECT) within the pool's timeout, tried every
// server_retry_timeout; and with eject_errors (or EjectErrors) its keys answer
// errors rather than move, for users who prefer misses to stale data.
//
// The fields EjectErrors, IdleTimeout and TLS are defaults: a pool that sets
// eject_errors, client_idle_timeout or tls_cert_file and tls_key_file uses its
// own.
//
// Nothing a client sends reaches a server as the client sent it: requests are
// written anew from what the proxy parsed, and only those a server reads as
// the proxy did (so none can run a command the proxy did not see, on a server
// connection shared with other clients). Replies are checked against their
// request's grammar; a server that answers out of it is reset, and the
// requests waiting on it get "SERVER_ERROR Protocol error" ("-ERR Protocol
// error" in a Redis pool). The memory held
// for requests in flight is bounded (MaxMemory), and an idle client holds no
// buffer.
//
// A memcached pool may keep its cache warm when it is resized (warmup.go,
// replica.go, owed.go, drain.go): with warmup, for a while after each ring
// change, a retrieval that misses at a key's new server reads the key's
// previous server and copies the value over; with replicas, each key lives
// on several servers, reads failing over between them; a write a server
// misses is owed as a delete, replayed before it serves reads again; and a
// drained server owns no keys but stays connected, its keys warmed from it.
//
// Reload swaps every pool's routing state atomically; see Proxy.Reload.
// UpdateServers replaces one pool's servers, for sources other than the file.
// A pool with servers_from takes its servers from the keys under an etcd
// prefix or from a file, and follows them as they change (sources.go); every
// pool's ring has a fingerprint that proxies with the same servers share,
// which GET /ring and the metrics show. Shutdown answers every request read,
// then closes each client gracefully; its listeners share their addresses
// (SO_REUSEPORT) with a new process that takes over (listen.go).
//
// What is memcached's or Redis's in all this sits behind one interface, codec
// (codec.go; codec_memcache.go, codec_redis.go):
// reading a request and its keys, splitting it by server, encoding it for a
// server, reading and checking a reply, merging replies, error replies and
// the health probe. The rest — the client loop (client.go), routing (route.go),
// the pipelined server connections (serverconn.go), ejection and probes
// (health.go), reloads, metrics, TLS and shutdown — knows no protocol.
//
// Every goroutine the proxy starts ends when Close returns.
package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chash-dev/chash/internal/analyze"
	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/dist"
	"github.com/chash-dev/chash/internal/membership"
	"github.com/chash-dev/chash/internal/memcache"
	"github.com/chash-dev/chash/internal/resp"
)

// Proxy serves the pools of a configuration. Set its fields, then call Start;
// the fields must not change afterwards.
type Proxy struct {
	// Logger receives the proxy's logs. If nil, slog.Default() is used.
	Logger *slog.Logger
	// Limits bound the lines and values the proxy accepts from clients. The zero
	// value means memcache's defaults: 64 KiB lines, 1 MiB values. Replies from
	// servers may carry values of up to 128 MiB (or MaxValue, if larger), so that
	// items stored straight into a memcached with a large -I still read through
	// the proxy.
	Limits memcache.Limits
	// RedisLimits bound the requests the proxy accepts from the clients of
	// Redis pools. The zero value means Redis's own defaults (see
	// resp.Limits): bulk strings of up to 512 MiB (proto-max-bulk-len), inline
	// requests of 64 KiB, requests of 1 GiB. Replies from servers may be as
	// large (or as RedisLimits, if larger).
	RedisLimits resp.Limits
	// EjectErrors makes an ejected server's keys answer "SERVER_ERROR server
	// ejected" instead of moving to other servers, so clients never read data
	// that another server held while this one was out, in pools that do not set
	// eject_errors. Default false: keys move, as in twemproxy.
	EjectErrors bool
	// IdleTimeout closes a client connection that sends nothing for this long,
	// in pools that do not set client_idle_timeout. If zero, idle clients are
	// kept, as in twemproxy.
	IdleTimeout time.Duration
	// MaxMemory bounds, in bytes, what the proxy holds for requests in flight
	// over all its clients: requests read and not yet answered, and replies
	// read and not yet written. Past it, clients read no new request until
	// replies are written. If zero, it is DefaultMaxMemory (1 GiB). The replies
	// to requests already sent, and one request being read per client (within
	// Limits), may take the proxy past it.
	MaxMemory int64
	// TLS, if not nil, makes the listener of every pool without tls_cert_file
	// accept TLS clients. A pool with its own certificate serves it with a copy
	// of TLS (or, if nil, of a config that requires TLS 1.2) in which it
	// replaces Certificates and GetCertificate.
	TLS *tls.Config
	// TLSCertFile and TLSKeyFile, if set, are the certificate and key of every
	// pool without tls_cert_file: read at Start and again at each reload, as
	// a pool's own files are, so that a renewed certificate needs no restart.
	TLSCertFile, TLSKeyFile string
	// ConfigPath is the file ReloadFile reads: the admin endpoint and SIGHUP
	// reload from it.
	ConfigPath string
	// Admin is the address of the admin HTTP listener (status page, metrics,
	// stats, reload). If empty, there is none; chash proxy listens on
	// 127.0.0.1:22223, beside its stats port.
	Admin string
	// StatsAddr is the address of the stats port, nutcracker's: a TCP
	// listener that writes the stats document (StatsJSON) to each client as it
	// connects, then closes the connection, so that scripts and dashboards
	// made for nutcracker ("nc HOST 22222") read it. Its counters are those of
	// the moment the client connects: nutcracker's are as old as its
	// --stats-interval, which chash needs not. If empty, there is none; chash
	// proxy listens on 0.0.0.0:22222, as nutcracker does.
	StatsAddr string
	// Version is the proxy's version as the status page shows it. If empty,
	// it is the version of the main module in the binary's build
	// information.
	Version string
	// Listen overrides a pool's listen address, by pool name: tests listen on
	// "127.0.0.1:0". Pools not named listen where the configuration says.
	Listen map[string]string
	// SourceTimeout bounds how long Start, and a Reload that adds or changes a
	// pool's servers_from, wait for the source's first list. An etcd that
	// does not answer within it fails them with an error that names its
	// endpoints, and nothing changes: a proxy without its servers could only
	// answer errors, and the old configuration, or the old process of a
	// restart, keeps serving instead. If zero, it is DefaultSourceTimeout.
	SourceTimeout time.Duration
	// Sources tunes the pools' servers_from sources: etcd's request timeout
	// and heartbeat, the backoff of retries, a file's polling. The zero value
	// is membership's defaults; a nil Logger is the proxy's.
	Sources membership.Config

	ctx     context.Context
	cancel  context.CancelFunc
	log     *slog.Logger
	metrics *metrics
	mem     *memory

	wg          sync.WaitGroup // goroutines retiring servers and pools, trimming memory
	mu          sync.Mutex     // serializes Start, Reload and Close
	pools       map[string]*pool
	admin       *http.Server
	adminL      net.Listener
	stats       statsPort   // the stats port and the counters it serves (statsport.go)
	statusRates statusRates // the status page's samples and drawings (status.go)
	// sources are the servers_from sources, by pool, guarded by mu.
	sources map[string]*poolSource
	// reloading serializes Reload, which opens sources before it takes mu.
	reloading sync.Mutex
	// reloadMu guards nextReload, before which the admin listener refuses
	// reloads.
	reloadMu   sync.Mutex
	nextReload time.Time
	closed     bool

	maxOwed int      // deletes a server may owe before it is emptied; 0: defaultMaxOwed
	left    leftOwed // deletes owed by servers that left their pool (owed.go)

	noFilesLoggedAt atomic.Int64 // unix milliseconds of the last "out of file descriptors" (health.go)

	// The client connections open in every pool, and the server connections
	// the servers of every pool may open, for clientLimit (health.go).
	clients     atomic.Int64
	serverSlots atomic.Int64
	// filesKept is the descriptors kept for what is neither a client nor a
	// server (listeners, etcd, logs, the runtime); 0 means filesReserved.
	filesKept int64
}

// Start validates f, opens every pool's listener and starts serving. On error
// nothing is left open. The proxy keeps f's pools, which must not change
// after (Reload takes a new File).
func (p *Proxy) Start(f *config.File) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pools != nil {
		return errors.New("proxy: already started")
	}
	threads.Store(int32(runtime.GOMAXPROCS(0)))
	p.log = p.Logger
	if p.log == nil {
		p.log = slog.Default()
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.metrics = newMetrics(p)
	p.mem = newMemory(p.MaxMemory)
	p.pools = make(map[string]*pool)
	p.sources = make(map[string]*poolSource)
	p.metrics.reg.MustRegister((*ringCollector)(p))
	f = p.withTLSDefaults(f)
	if err := Validate(f); err != nil {
		return err
	}
	opened, err := p.openSources(f, nil)
	if err != nil {
		return err
	}
	f = p.withSources(f, opened)
	for _, cfg := range f.Pools {
		_, err := p.startPool(f.Path, cfg, nil, nil)
		if err != nil {
			closeSources(slices.Collect(maps.Values(opened)))
			p.closeLocked()
			return err
		}
	}
	p.installSources(f, opened)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		trimMemory(p.ctx, p.log)
	}()
	// The admin listener opens last: its "admin listening" line tells a
	// restart that every listener is open (chash help proxy).
	if p.StatsAddr != "" {
		if err := p.startStats(); err != nil {
			retired := p.takeSources()
			p.closeLocked()
			closeSources(retired)
			return err
		}
	}
	if p.Admin != "" {
		if err := p.startAdmin(); err != nil {
			retired := p.takeSources()
			p.closeLocked()
			closeSources(retired)
			return err
		}
	}
	return nil
}

// Validate checks that f can be served: every pool has a listen address, its
// servers are valid (as UpdateServers checks them: f may be built in code) and
// its router builds over them, its servers_from, if it has one instead, is a
// valid URL (Validate does not read it), its redis_db is not negative, its
// TLS certificate and key, if it names them, load, and no other pool listens
// on an overlapping TCP address (resolved as the proxy binds it: a host
// name's first address, see Proxy.Start; see CheckListens for addresses that
// do not resolve). A pool without servers is
// valid, if its distribution is known: its requests are answered "no live
// servers" errors until UpdateServers gives it some.
func Validate(f *config.File) error {
	if len(f.Pools) == 0 {
		return fmt.Errorf("proxy: %s: no pools", f.Path)
	}
	for _, cfg := range f.Pools {
		if cfg.RedisDB < 0 {
			return fmt.Errorf("proxy: %s:%d: pool %q: redis_db %d is not a database number (0 or more)", f.Path, cfg.KeyLine("redis_db"), cfg.Name, cfg.RedisDB)
		}
		if cfg.Listen == "" {
			return fmt.Errorf("proxy: %s:%d: pool %q: no listen address", f.Path, cfg.Line, cfg.Name)
		}
		if cfg.Redis {
			for _, x := range []struct {
				key string
				set bool
			}{{"replicas", cfg.Replicas > 1}, {"warmup", cfg.Warmup > 0}} {
				if key := x.key; x.set {
					return fmt.Errorf("proxy: %s:%d: pool %q: %s is served in memcached pools only, not in Redis pools (redis: true)", f.Path, cfg.KeyLine(key), cfg.Name, key)
				}
			}
		}
		if err := checkServers(cfg.Servers); err != nil {
			return fmt.Errorf("proxy: %s:%d: pool %q: %w", f.Path, cfg.Line, cfg.Name, err)
		}
		if err := checkServersFrom(cfg); err != nil {
			return fmt.Errorf("proxy: %s:%d: pool %q: %w", f.Path, cfg.KeyLine("servers_from"), cfg.Name, err)
		}
		if len(cfg.Servers) == 0 {
			if _, err := dist.EntryOf(cfg); err != nil {
				return err
			}
		} else if _, err := dist.Build(cfg, cfg.Servers); err != nil {
			return err
		}
		if cfg.TLSCertFile != "" {
			if _, err := loadCert(f.Path, cfg); err != nil {
				return err
			}
		}
	}
	return checkListens(f, false)
}

// CheckListens resolves the TCP listen address of every pool of f, as the
// proxy binds them, and refuses one that does not resolve or two that
// overlap: what nutcracker -t checks of them. Validate checks the overlaps
// only, among the addresses that resolve (a reload that keeps a pool's
// listener must not fail on a name server), and the bind of a new listener
// says what does not resolve.
func CheckListens(f *config.File) error { return checkListens(f, true) }

// checkListens refuses two pools of f whose TCP listen addresses, resolved as
// the proxy binds them, overlap: the kernel would spread their clients over
// both (listenApart refuses them too, and the admin listener's and stats
// port's, which f does not name); strict, it refuses an address that does
// not resolve too.
func checkListens(f *config.File, strict bool) error {
	addrs := map[string]net.Addr{}
	for _, cfg := range f.Pools {
		if unixPath(cfg.Listen) {
			continue
		}
		ta, err := resolveListen(cfg.Listen)
		if err != nil && !strict {
			continue
		}
		if err != nil {
			return fmt.Errorf("proxy: %s:%d: pool %q: %w", f.Path, cfg.KeyLine("listen"), cfg.Name, err)
		}
		if ta.Port == 0 {
			continue // the system picks a free port
		}
		if other := overlapping(ta, addrs); other != "" {
			return fmt.Errorf("proxy: %s:%d: pool %q: listen %s: %s listens there too, and clients would be spread over both",
				f.Path, cfg.KeyLine("listen"), cfg.Name, ta, other)
		}
		addrs[fmt.Sprintf("pool %q (line %d)", cfg.Name, cfg.KeyLine("listen"))] = ta
	}
	return nil
}

// withTLSDefaults returns f with the proxy's TLSCertFile and TLSKeyFile as
// the files of every pool that names none; f itself is left as it is.
func (p *Proxy) withTLSDefaults(f *config.File) *config.File {
	if p.TLSCertFile == "" {
		return f
	}
	g := *f
	g.Pools = make([]*config.Pool, len(f.Pools))
	for i, cfg := range f.Pools {
		if cfg.TLSCertFile == "" {
			c := *cfg
			c.TLSCertFile, c.TLSKeyFile = p.TLSCertFile, p.TLSKeyFile
			cfg = &c
		}
		g.Pools[i] = cfg
	}
	return &g
}

// loadCert loads the pool's tls_cert_file and tls_key_file.
func loadCert(path string, cfg *config.Pool) (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
	if err != nil && !cfg.Has("tls_cert_file") {
		return nil, fmt.Errorf("proxy: pool %q: the proxy's TLS files %q and %q: %w", cfg.Name, cfg.TLSCertFile, cfg.TLSKeyFile, err)
	}
	if err != nil {
		return nil, fmt.Errorf("proxy: %s:%d: pool %q: tls_cert_file %q, tls_key_file %q: %w",
			path, cfg.KeyLine("tls_cert_file"), cfg.Name, cfg.TLSCertFile, cfg.TLSKeyFile, err)
	}
	return &cert, nil
}

// ejectErrors says whether the pool's ejected servers answer errors.
func (p *Proxy) ejectErrors(cfg *config.Pool) bool {
	if cfg.EjectErrors != nil {
		return *cfg.EjectErrors
	}
	return p.EjectErrors
}

// idleTimeout returns how long the pool keeps an idle client; zero is forever.
func (p *Proxy) idleTimeout(cfg *config.Pool) time.Duration {
	if cfg.ClientIdleTimeout != nil {
		return *cfg.ClientIdleTimeout
	}
	return p.IdleTimeout
}

// tlsConfig returns the TLS configuration of the pool's listener, nil for none.
// A pool with its own certificate serves pl.cert, which Reload replaces when it
// reads the files again.
func (p *Proxy) tlsConfig(pl *pool, path string, cfg *config.Pool) (*tls.Config, error) {
	if cfg.TLSCertFile == "" {
		return p.TLS, nil
	}
	cert, err := loadCert(path, cfg)
	if err != nil {
		return nil, err
	}
	pl.cert.Store(cert)
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if p.TLS != nil {
		c = p.TLS.Clone()
	}
	c.Certificates = nil
	c.GetCertificate = pl.certificate
	return c, nil
}

func (p *Proxy) listenAddr(cfg *config.Pool) (network, addr string) {
	addr = cfg.Listen
	if a, ok := p.Listen[cfg.Name]; ok {
		addr = a
	}
	if unixPath(addr) {
		return "unix", addr
	}
	return "tcp", addr
}

// unixPath reports whether a listen address is a Unix socket's path.
func unixPath(addr string) bool {
	_, _, err := net.SplitHostPort(addr)
	return err != nil && len(addr) > 0 && addr[0] == '/'
}

// startPool starts serving the pool cfg of the file at path; old, if not
// nil, is the pool of its name that a reload restarts, whose counters it
// takes over.
func (p *Proxy) startPool(path string, cfg *config.Pool, ln net.Listener, old *pool) (*pool, error) {
	pl := &pool{proxy: p, name: cfg.Name, done: make(chan struct{}), stopped: make(chan struct{}),
		stats: new(poolStats), refused: new(refusals)}
	var oldServers map[string]*server
	if old != nil {
		// A pool restarted by a reload counts on: its stats and those of
		// the servers it keeps go on from where they were.
		pl.stats, pl.refused = old.stats, old.refused
		oldServers = old.state.Load().servers
	}
	pl.codec = p.newCodec(cfg, pl)
	pl.reqs.New = func() any { return &clientReq{req: pl.codec.newRequest()} }
	pl.copier.pl = pl
	tc, err := p.tlsConfig(pl, path, cfg)
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return nil, err
	}
	if ln == nil {
		others := p.listeners(func(name string) bool { return name == cfg.Name })
		if ln, err = p.listen(cfg, others); err != nil {
			return nil, err
		}
	}
	pl.raw = ln
	if tc != nil {
		ln = tls.NewListener(ln, tc)
	}
	pl.ln = ln
	p.stats.opened.Add(1) // nutcracker counts a pool's listener as a connection
	pl.cmds, pl.lat = p.metrics.poolMetrics(cfg.Name, pl.codec.commands())
	servers := make([]*server, len(cfg.Servers))
	for i, s := range cfg.Servers {
		servers[i] = newServer(pl, s, cfg.ServerConnections)
		servers[i].carryCounters(oldServers[s.Name()])
	}
	st, err := newState(cfg, servers, p.ejectErrors(cfg), pl.drainedLocked(cfg), nil)
	if err != nil {
		ln.Close()
		for _, s := range servers {
			s.close()
		}
		return nil, err
	}
	for _, s := range servers {
		p.left.take(s) // a pool that restarts (a reload) keeps what its servers owe
	}
	pl.state.Store(st)
	p.pools[cfg.Name] = pl
	if cfg.Preconnect {
		for _, s := range servers {
			s.preconnect()
		}
	}
	p.log.Info("pool listening", "pool", cfg.Name, "addr", ln.Addr().String(), "servers", len(servers),
		"distribution", cfg.Distribution, "tls", tc != nil)
	p.warnClusters(pl, cfg)
	p.logShared(fmt.Sprintf("pool %q", cfg.Name), pl.raw)
	go pl.serve()
	return pl, nil
}

// warnClusters warns if the pool's hash and distribution send keys that
// differ only in their last character ("user:1", "user:2", ...) to one of its
// servers (analyze.HashClusters), as twemproxy's default fnv1a_64 does on
// ketama: a pool that must route as a deployed twemproxy keeps it, a new one
// should not. It runs as the pool starts, as a reload gives it another hash
// or distribution, and after the changes of its servers (moveLog), and logs
// as the pool starts and when the pool turns to clustering; the status page
// says it while it holds.
func (p *Proxy) warnClusters(pl *pool, cfg *config.Pool) {
	c, err := analyze.HashClusters(cfg)
	if err != nil || c == nil || !c.Clustered() {
		pl.clusters.Store(nil)
		return
	}
	note := fmt.Sprintf("hash %s sends keys that differ only in their last character to one server (%d of %d groups): for a new pool prefer md5 or xxh64",
		dist.HashOf(cfg), c.Together, c.Groups)
	if pl.clusters.Swap(&note) != nil {
		return // said already
	}
	p.log.Warn("pool's hash sends keys that differ only in their last character to one server",
		"pool", cfg.Name, "hash", dist.HashOf(cfg), "distribution", cfg.Distribution,
		"groups_on_one_server", fmt.Sprintf("%d of %d", c.Together, c.Groups),
		"advice", "keep it to route as a deployed twemproxy does; for a new pool prefer md5 or xxh64 (chash analyze measures it)")
}

// listen opens the listener of cfg, unless a TCP listener's address overlaps
// one of others (listenApart).
func (p *Proxy) listen(cfg *config.Pool, others map[string]net.Addr) (net.Listener, error) {
	network, addr := p.listenAddr(cfg)
	var ln net.Listener
	var err error
	if network == "tcp" {
		// Shared with a new process (listen.go).
		ln, err = listenApart(p.ctx, addr, others)
	} else {
		ln, err = (&net.ListenConfig{}).Listen(p.ctx, network, addr)
		if errors.Is(err, syscall.EADDRINUSE) && staleSocket(addr) {
			// Left by a process that died without removing it, as
			// nutcracker removes it: nothing answers there.
			os.Remove(addr)
			ln, err = (&net.ListenConfig{}).Listen(p.ctx, network, addr)
		}
	}
	if err != nil {
		// At the listen line: the operator finds what to change there.
		return nil, fmt.Errorf("proxy: %w", cfg.ErrorAt("listen", err))
	}
	if network == "unix" && cfg.ListenPerm != 0 {
		os.Chmod(addr, cfg.ListenPerm)
	}
	if err := setBacklog(ln, cfg.Backlog); err != nil {
		ln.Close()
		return nil, fmt.Errorf("proxy: %w", cfg.ErrorAt("backlog", err))
	}
	return ln, nil
}

// staleSocket reports whether path is a Unix socket that no process listens
// on: connecting to it is refused.
func staleSocket(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 {
		return false
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// Addr returns the address of the named pool's listener, or nil.
func (p *Proxy) Addr(pool string) net.Addr {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pl := p.pools[pool]; pl != nil {
		return pl.ln.Addr()
	}
	return nil
}

// Reload makes f the proxy's configuration. It validates f first, reading every
// pool's TLS files, and changes nothing if f is invalid. A pool whose
// servers_from is new or changed gets its first list from its new source
// before anything changes (see SourceTimeout), and changes nothing if the
// source has none to give; a pool that keeps its servers_from keeps its source
// and the list it serves; a source that no pool names any more is stopped. Pools are matched by
// name: a new pool starts listening, a removed pool stops and its clients are
// closed, and a pool whose listen address, protocol (redis, and a Redis
// pool's redis_auth and redis_db) or TLS files (tls_cert_file, tls_key_file,
// added, removed or renamed) changed stops, closing its clients, and starts
// anew on its new listener (if that fails,
// Reload stops the pools it started and returns the error). In the other
// pools, servers that keep their name, address and connection count keep
// their connections, health and counters (a new weight changes the ring
// only), and the routing state is swapped
// atomically, as by UpdateServers; a pool whose settings and servers did not
// change is left as it is. Requests already routed finish on the servers they
// were sent to, and servers that left are closed once those requests are done
// (after twice the pool's timeout, at least a second). The other settings take
// effect at once: eject_errors for the next request, client_idle_timeout when
// each client next waits for a request, and a pool's TLS files, read again,
// for the next client to connect, so a renewed certificate needs no restart.
// For each pool, Reload logs the fraction of the key space that moved, per
// pair of servers, measured in the background once the new state serves
// (at most once a second: a change within a second of the last measurement
// is measured with those that follow it in that second, from the state before
// the first to the state after the last, so two changes 4 ms apart give two
// lines, the second a second later).
func (p *Proxy) Reload(f *config.File) error {
	p.reloading.Lock()
	defer p.reloading.Unlock()
	f = p.withTLSDefaults(f)
	if err := Validate(f); err != nil {
		return err
	}
	// Wait for new sources' first lists without holding mu, which requests'
	// metrics and the running sources' updates take.
	p.mu.Lock()
	running := maps.Clone(p.sources)
	p.mu.Unlock()
	opened, err := p.openSources(f, running)
	if err != nil {
		return err
	}
	p.mu.Lock()
	err = p.reloadLocked(p.withSources(f, opened))
	retired := slices.Collect(maps.Values(opened))
	if err == nil {
		retired = p.installSources(f, opened)
	}
	p.mu.Unlock()
	closeSources(retired)
	return err
}

// reloadLocked is Reload, f's servers_from pools given their servers, with mu
// held.
func (p *Proxy) reloadLocked(f *config.File) error {
	if p.closed || p.pools == nil {
		return errors.New("proxy: not running")
	}
	// Open the listeners of new pools and of those whose address changed
	// first, so that one that cannot open leaves the running pools untouched.
	keep := map[string]bool{}
	var updates, moves []*config.Pool
	listens := map[string]bool{} // the moves that open a listener
	for _, cfg := range f.Pools {
		keep[cfg.Name] = true
		old := p.pools[cfg.Name]
		switch {
		case old != nil && p.sameListener(old, cfg):
			updates = append(updates, cfg)
		default:
			moves = append(moves, cfg)
			listens[cfg.Name] = old == nil || !p.sameAddr(old, cfg)
		}
	}
	// A new listener must not share its address with another of the
	// process: the pools that keep theirs, those that restart on the
	// address they have (new TLS files, a new protocol), the new ones opened
	// before it, the admin listener and the stats port. The pools that move
	// or go do not count.
	others := p.listeners(func(name string) bool { return !keep[name] || listens[name] })
	lns := make([]net.Listener, len(moves))
	for i, cfg := range moves {
		o := others
		if !listens[cfg.Name] {
			// It restarts where it listens. A TCP listener opens beside
			// the old one, which closes once it does, so that no
			// connection is refused meanwhile; a Unix socket, which
			// cannot be shared, opens once the old pool has closed its own.
			if network, _ := p.listenAddr(cfg); network != "tcp" {
				continue
			}
			o = p.listeners(func(name string) bool { return !keep[name] || listens[name] || name == cfg.Name })
		}
		ln, err := p.listen(cfg, o)
		if err != nil {
			for _, ln := range lns {
				if ln != nil {
					ln.Close()
				}
			}
			return err
		}
		if rl, ok := ln.(*reuseListener); ok && p.listensAt(ln.Addr()) {
			rl.shared = false // with a pool of this process, which moves or restarts
		}
		lns[i] = ln
		if listens[cfg.Name] {
			others[fmt.Sprintf("pool %q", cfg.Name)] = ln.Addr()
		}
	}
	// What the servers of the pools that restart or go owe is kept for the
	// servers of their addresses (leftOwed), those of the pools that start
	// now among them; what they owe while they finish is handed on when
	// they stop (retirePool).
	restarted := map[string]bool{}
	for _, cfg := range moves {
		restarted[cfg.Name] = true
	}
	for name, pl := range p.pools {
		if restarted[name] || !keep[name] {
			for _, s := range pl.state.Load().list {
				p.left.keep(s, p.maxOwedKeys(), !restarted[name]) // a pool removed: its servers left
			}
		}
	}
	for i, cfg := range moves {
		old := p.pools[cfg.Name]
		var gone []string
		if old != nil {
			// The pool moves: its old address stops serving now, and its
			// clients once they are answered. The new pool counts on with
			// its counters and those of the servers it keeps.
			p.log.Info("pool restarting: its clients are closed once answered", "pool", cfg.Name,
				"why", restartWhy(old.state.Load().cfg, cfg, listens[cfg.Name]),
				"from", old.raw.Addr().String(), "clients", old.nconns.Load())
			old.drain()
			for _, s := range old.state.Load().list {
				if !slices.ContainsFunc(cfg.Servers, func(n config.Server) bool { return n.Name() == s.name }) {
					gone = append(gone, s.name)
				}
			}
			delete(p.pools, cfg.Name)
		}
		if _, err := p.startPool(f.Path, cfg, lns[i], old); err != nil {
			// Only TLS files that broke since Validate read them get here.
			p.log.Error("reload: pool not restarted", "pool", cfg.Name, "err", err)
		} else if old != nil {
			old.handedOn.Store(true) // its refusals are the new pool's now
		}
		if old != nil {
			p.retirePool(old, gone)
		}
	}
	for name, pl := range p.pools {
		if !keep[name] {
			p.log.Info("pool removed", "pool", name)
			pl.drain()
			var gone []string
			for _, s := range pl.state.Load().list {
				gone = append(gone, s.name)
			}
			p.retirePool(pl, gone)
			delete(p.pools, name)
		}
	}
	for _, cfg := range updates {
		pl := p.pools[cfg.Name]
		if cfg.Backlog != pl.state.Load().cfg.Backlog {
			if err := setBacklog(pl.raw, cfg.Backlog); err != nil {
				p.log.Error("reload: backlog not changed", "pool", cfg.Name, "err", err)
			}
		}
		old := pl.state.Load().cfg
		if err := pl.update(f.Path, cfg); err != nil {
			p.log.Error("reload: pool not updated", "pool", cfg.Name, "err", err)
		} else if old.Distribution != cfg.Distribution || dist.HashOf(old) != dist.HashOf(cfg) {
			p.warnClusters(pl, cfg)
		}
	}
	p.log.Info("configuration reloaded", "file", f.Path, "pools", len(f.Pools))
	return nil
}

// UpdateServers replaces the server list of the named pool, for sources of
// server lists other than the configuration file (a membership service, a
// test). It is safe for concurrent use with requests, Reload and itself. The
// list is checked first (every server has a host, a port from 1 to 65535 or 0
// for a Unix socket path, a weight of at least 1, and a name no other server
// of the list has) and the pool's router must build over it; if not, nothing
// changes and the error says why. Otherwise the pool's routing state is
// swapped atomically as by Reload: servers that keep their name and address
// keep their connections, health and counters, requests already routed finish
// where they were sent, servers that left are closed once those requests are
// done, and the fraction of the key space that moved is logged, as Reload
// logs it. An empty list
// is valid: the pool's requests are then answered "SERVER_ERROR no live
// servers". The pool keeps the list until the next UpdateServers, or a
// Reload, which applies the servers of its file, or, for a pool with
// servers_from, the next list of its source. servers is not retained.
func (p *Proxy) UpdateServers(pool string, servers []config.Server) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.pools == nil {
		return errors.New("proxy: not running")
	}
	pl := p.pools[pool]
	if pl == nil {
		return fmt.Errorf("proxy: no pool %q", pool)
	}
	return pl.setServers(servers, "servers updated")
}

// setServers is UpdateServers of the pool, saying why in its log.
func (pl *pool) setServers(servers []config.Server, why string) error {
	if err := checkServers(servers); err != nil {
		return fmt.Errorf("proxy: pool %q: %w", pl.name, err)
	}
	cfg := *pl.state.Load().cfg
	cfg.Servers = slices.Clone(servers)
	if err := pl.swap(&cfg, why); err != nil {
		return fmt.Errorf("proxy: pool %q: %w", pl.name, err)
	}
	return nil
}

// checkServers checks a list of servers built in code, as config checks those
// of a file.
func checkServers(servers []config.Server) error {
	names := make(map[string]int, len(servers))
	for i, s := range servers {
		what := fmt.Sprintf("server %d (%q)", i+1, s.Name())
		switch {
		case s.Host == "":
			return fmt.Errorf("%s: no host", what)
		case s.Port < 0 || s.Port > 65535:
			return fmt.Errorf("%s: port %d is not from 1 to 65535", what, s.Port)
		case s.Port == 0 && s.Host[0] != '/':
			return fmt.Errorf("%s: port 0 is for a Unix socket, whose path begins with /", what)
		case s.Weight < 1:
			return fmt.Errorf("%s: weight %d is not a positive integer", what, s.Weight)
		}
		if j, dup := names[s.Name()]; dup {
			return fmt.Errorf("%s: the name of server %d too", what, j)
		}
		names[s.Name()] = i + 1
	}
	return nil
}

// retirePool stops, in the background, a pool that a reload removed or
// restarted elsewhere, and drained: its clients have twice the pool's timeout
// (at least a second), and the linger of their close, to be answered; then
// what is left is closed, and the metrics of the servers named in forget
// dropped.
func (p *Proxy) retirePool(pl *pool, forget []string) {
	grace := max(2*pl.state.Load().cfg.Timeout, time.Second) + closeLinger
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		answered := make(chan struct{})
		go func() {
			pl.clients.Wait()
			close(answered)
		}()
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-answered:
		case <-t.C:
		case <-p.ctx.Done():
		}
		pl.stop(forget)
		// The deletes its servers came to owe since the reload. Close
		// holds mu while it waits for this goroutine, having cancelled
		// ctx first: then the deletes go with the process.
		for !p.mu.TryLock() {
			if p.ctx.Err() != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
		defer p.mu.Unlock()
		for _, s := range pl.state.Load().list {
			p.handOwed(s)
		}
	}()
}

// handOwed passes on what s, a server of a pool that stopped, owes still: to
// a server of its address in a memcached pool that serves, else to those
// kept for its address (leftOwed); p.mu is held.
func (p *Proxy) handOwed(s *server) {
	if !s.owes() {
		return
	}
	var list []*server
	for _, pl := range p.pools {
		if _, ok := pl.codec.(forgetter); ok {
			list = append(list, pl.state.Load().list...)
		}
	}
	s.pool.handOwed(s, list)
}

// sameListener says whether the pool can serve cfg on its listener: the address,
// TLS files and protocol are the same.
func (p *Proxy) sameListener(pl *pool, cfg *config.Pool) bool {
	old := pl.state.Load().cfg
	return p.sameAddr(pl, cfg) && old.TLSCertFile == cfg.TLSCertFile && old.TLSKeyFile == cfg.TLSKeyFile &&
		sameProtocol(old, cfg)
}

// restartWhy names what of cfg restarts a pool of old: its listen address
// (moved), TLS files or protocol.
func restartWhy(old, cfg *config.Pool, moved bool) []string {
	why := []string{}
	if moved {
		why = append(why, "listen")
	}
	if old.TLSCertFile != cfg.TLSCertFile || old.TLSKeyFile != cfg.TLSKeyFile {
		why = append(why, "tls")
	}
	if !sameProtocol(old, cfg) {
		why = append(why, "protocol")
	}
	return why
}

// sameProtocol says whether a pool of old speaks cfg's protocol with cfg's
// settings: the codec of a Redis pool holds its password and database.
func sameProtocol(old, cfg *config.Pool) bool {
	return old.Redis == cfg.Redis && old.RedisAuth == cfg.RedisAuth && old.RedisDB == cfg.RedisDB
}

// newCodec returns the codec of the pool's protocol, pl's. A pool keeps its
// codec while it runs: a reload that changes the protocol restarts the pool.
func (p *Proxy) newCodec(cfg *config.Pool, pl *pool) codec {
	if cfg.Redis {
		return newRedisCodec(p.RedisLimits, cfg)
	}
	c := newMemcacheCodec(p.Limits)
	c.stats = pl
	return c
}

// sameAddr says whether the pool listens where cfg says.
func (p *Proxy) sameAddr(pl *pool, cfg *config.Pool) bool {
	_, oa := p.listenAddr(pl.state.Load().cfg)
	_, na := p.listenAddr(cfg)
	return oa == na
}

// Shutdown stops accepting clients and stops reading requests: each client
// is answered every request the proxy has read from it (those in its buffers
// included; none is cut short by a reply never sent), then its connection is
// closed for writing, so that it reads every reply before the end of the
// stream, and closed once the client closes its side too, or after a moment.
// Shutdown returns when every client is done, or when ctx ends; then it
// closes everything, and requests still in flight fail.
func (p *Proxy) Shutdown(ctx context.Context) error {
	start := time.Now()
	p.mu.Lock()
	pools := make([]*pool, 0, len(p.pools))
	for _, pl := range p.pools {
		pools = append(pools, pl)
	}
	p.mu.Unlock()
	for _, pl := range pools {
		pl.drain()
	}
	done := make(chan struct{})
	go func() {
		for _, pl := range pools {
			pl.clients.Wait()
		}
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	p.Close()
	<-done
	// One line says how the proxy ended: every client answered, or cut off
	// when ctx ended first.
	p.log.Info("proxy shut down", "pools", len(pools), "graceful", err == nil, "took", time.Since(start).Round(time.Millisecond))
	return err
}

// Close closes every listener, client and server connection at once and waits
// for the proxy's goroutines to end. Requests in flight fail.
func (p *Proxy) Close() error {
	p.mu.Lock()
	retired := p.takeSources()
	p.closeLocked()
	p.mu.Unlock()
	// Out of mu: a source's last update may wait for it.
	closeSources(retired)
	return nil
}

func (p *Proxy) closeLocked() {
	if p.closed || p.cancel == nil {
		return
	}
	p.closed = true
	p.cancel()
	if p.admin != nil {
		p.admin.Close()
	}
	names := slices.Sorted(maps.Keys(p.pools))
	for _, name := range names {
		pl := p.pools[name]
		var all []string
		for _, s := range pl.state.Load().list {
			all = append(all, s.name)
		}
		pl.stop(all)
	}
	p.wg.Wait()
}

func itoa(n int) string { return strconv.Itoa(n) }

// sleep waits for d, or until ctx is done, and reports whether d passed (at
// once if d is not positive).
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
