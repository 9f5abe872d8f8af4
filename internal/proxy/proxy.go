// Package proxy is chash's memcached proxy, a drop-in for twemproxy: it reads
// nutcracker.yml pools (package config), listens on each pool's address, and sends
// each request to the memcached server that the pool's distribution names for its
// key, exactly where nutcracker sends it.
//
// Each client connection has one goroutine. It reads every request the client
// has already sent, routes each and writes it to its server at once, then writes
// the replies in request order, so pipelined requests are served in parallel. A
// get of many keys is split into one get per server, sent in parallel and merged
// in the order of the keys. The requests of all clients share each server's
// ServerConnections persistent connections, pipelined: a request is written as
// soon as it is routed, and requests that arrive together leave in one write; a
// reader goroutine per connection reads the replies and hands each to its
// client. noreply and the meta commands' quiet mode are kept by the proxy, which
// always asks servers for a reply, so a server connection never loses step.
// Sockets are read and written with raw system calls that wait in the network
// poller (see socketIO), and ScaleProcs keeps Go code on one thread until the
// load needs more: both spare the thread wake-ups that would otherwise cost a
// proxy more CPU than its requests.
// Every request has the pool's timeout: a server that does not answer in time
// fails the requests waiting on that connection, which is reopened.
//
// Replies are memcached's own, byte for byte, with these exceptions: a request
// that no server can serve is answered "SERVER_ERROR <reason>" (as twemproxy
// does; reasons: Connection timed out, Connection refused, server ejected, no
// live servers, ...); in a get split over servers, the keys of a server that
// failed read as misses, unless every server failed; version is answered by the
// server of the empty key; and commands that address no key (stats, flush_all,
// verbosity, ...) are refused with "ERROR", as memcached refuses unknown ones.
//
// A server that fails server_failure_limit times in a row is ejected when the
// pool sets auto_eject_hosts: its keys go where the distribution puts them
// without it. Unlike twemproxy, an ejected server comes back only after it
// answers a probe ("version") within the pool's timeout, tried every
// server_retry_timeout; and with eject_errors (or EjectErrors) its keys answer
// errors rather than move, for users who prefer misses to stale data.
//
// The fields EjectErrors, IdleTimeout and TLS are defaults: a pool that sets
// eject_errors, client_idle_timeout or tls_cert_file and tls_key_file uses its
// own.
//
// Reload swaps every pool's routing state atomically; see Proxy.Reload.
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
	"time"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/internal/analyze"
	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/dist"
	"github.com/chash-dev/chash/internal/memcache"
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
	// EjectErrors makes an ejected server's keys answer "SERVER_ERROR server
	// ejected" instead of moving to other servers, so clients never read data
	// that another server held while this one was out, in pools that do not set
	// eject_errors. Default false: keys move, as in twemproxy.
	EjectErrors bool
	// IdleTimeout closes a client connection that sends nothing for this long,
	// in pools that do not set client_idle_timeout. If zero, idle clients are
	// kept, as in twemproxy.
	IdleTimeout time.Duration
	// TLS, if not nil, makes the listener of every pool without tls_cert_file
	// accept TLS clients. A pool with its own certificate serves it with a copy
	// of TLS (or, if nil, of a config that requires TLS 1.2) in which it
	// replaces Certificates and GetCertificate.
	TLS *tls.Config
	// ConfigPath is the file ReloadFile reads: the admin endpoint and SIGHUP
	// reload from it.
	ConfigPath string
	// Admin is the address of the admin HTTP listener (metrics, stats, reload).
	// If empty, there is none; chash proxy listens on 127.0.0.1:22222, the port
	// of nutcracker's stats.
	Admin string
	// Listen overrides a pool's listen address, by pool name: tests listen on
	// "127.0.0.1:0". Pools not named listen where the configuration says.
	Listen map[string]string

	ctx     context.Context
	cancel  context.CancelFunc
	log     *slog.Logger
	metrics *metrics

	wg       sync.WaitGroup // goroutines retiring servers
	stopping atomic.Bool    // Shutdown has begun: clients read no further requests
	mu       sync.Mutex     // serializes Start, Reload and Close
	pools    map[string]*pool
	admin    *http.Server
	adminL   net.Listener
	closed   bool
}

// Start validates f, opens every pool's listener and starts serving. On error
// nothing is left open.
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
	p.pools = make(map[string]*pool)
	if err := Validate(f); err != nil {
		return err
	}
	for _, cfg := range f.Pools {
		if _, err := p.startPool(f.Path, cfg, nil); err != nil {
			p.closeLocked()
			return err
		}
	}
	if p.Admin != "" {
		if err := p.startAdmin(); err != nil {
			p.closeLocked()
			return err
		}
	}
	return nil
}

// Validate checks that f can be served: every pool is a memcached pool with a
// listen address, its router builds, and its TLS certificate and key, if it
// names them, load.
func Validate(f *config.File) error {
	if len(f.Pools) == 0 {
		return fmt.Errorf("proxy: %s: no pools", f.Path)
	}
	for _, cfg := range f.Pools {
		if cfg.Redis {
			return fmt.Errorf("proxy: %s:%d: pool %q: redis: true is not supported yet; chash proxy speaks only the memcached protocol", f.Path, cfg.KeyLine("redis"), cfg.Name)
		}
		if cfg.Listen == "" {
			return fmt.Errorf("proxy: %s:%d: pool %q: no listen address", f.Path, cfg.Line, cfg.Name)
		}
		if _, err := dist.Build(cfg, cfg.Servers); err != nil {
			return err
		}
		if cfg.TLSCertFile != "" {
			if _, err := loadCert(f.Path, cfg); err != nil {
				return err
			}
		}
	}
	return nil
}

// loadCert loads the pool's tls_cert_file and tls_key_file.
func loadCert(path string, cfg *config.Pool) (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
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
	if _, _, err := net.SplitHostPort(addr); err != nil && (len(addr) > 0 && addr[0] == '/') {
		return "unix", addr
	}
	return "tcp", addr
}

// startPool starts serving the pool cfg of the file at path.
func (p *Proxy) startPool(path string, cfg *config.Pool, ln net.Listener) (*pool, error) {
	pl := &pool{proxy: p, name: cfg.Name, done: make(chan struct{})}
	tc, err := p.tlsConfig(pl, path, cfg)
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return nil, err
	}
	if ln == nil {
		if ln, err = p.listen(cfg); err != nil {
			return nil, err
		}
	}
	if tc != nil {
		ln = tls.NewListener(ln, tc)
	}
	pl.ln = ln
	pl.cmds, pl.lat = p.metrics.poolMetrics(cfg.Name)
	servers := make([]*server, len(cfg.Servers))
	for i, s := range cfg.Servers {
		servers[i] = newServer(pl, s, cfg.ServerConnections)
	}
	st, err := newState(cfg, servers, p.ejectErrors(cfg))
	if err != nil {
		ln.Close()
		for _, s := range servers {
			s.close()
		}
		return nil, err
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
	go pl.serve()
	return pl, nil
}

// listen opens the listener of cfg.
func (p *Proxy) listen(cfg *config.Pool) (net.Listener, error) {
	network, addr := p.listenAddr(cfg)
	lc := net.ListenConfig{}
	ln, err := lc.Listen(p.ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("proxy: pool %q: %w", cfg.Name, err)
	}
	if network == "unix" && cfg.ListenPerm != 0 {
		os.Chmod(addr, cfg.ListenPerm)
	}
	return ln, nil
}

// preconnect dials every connection of the server, in the background.
func (s *server) preconnect() {
	for _, c := range s.conns {
		s.spawn(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.ss == nil && !c.closed {
				if ss, err := c.dial(time.Now().Add(max(s.pool.state.Load().timeout(), time.Second))); err == nil {
					c.ss = ss
				}
			}
		})
	}
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
// pool's TLS files, and changes nothing if f is invalid. Pools are matched by
// name: a new pool starts listening, a removed pool stops and its clients are
// closed, and a pool whose listen address or TLS files (tls_cert_file,
// tls_key_file, added, removed or renamed) changed stops, closing its clients,
// and starts anew on its new listener (if that fails, Reload stops the pools it
// started and returns the error). In the other pools, servers that keep their
// name, address, weight and connection count keep their connections and
// health, and the routing state is swapped atomically; requests already routed
// finish on the servers they were sent to, and servers that left are closed
// once those requests are done (after twice the pool's timeout, at least a
// second). The other settings take effect at once: eject_errors for the next
// request, client_idle_timeout when each client next waits for a request, and
// a pool's TLS files, read again, for the next client to connect, so a renewed
// certificate needs no restart. For each pool, Reload logs the fraction of the
// key space that moved, per pair of servers.
func (p *Proxy) Reload(f *config.File) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.pools == nil {
		return errors.New("proxy: not running")
	}
	if err := Validate(f); err != nil {
		return err
	}
	// Open the listeners of new pools and of those whose address changed
	// first, so that one that cannot open leaves the running pools untouched.
	keep := map[string]bool{}
	var updates, moves []*config.Pool
	var lns []net.Listener
	for _, cfg := range f.Pools {
		keep[cfg.Name] = true
		old := p.pools[cfg.Name]
		if old != nil && p.sameListener(old, cfg) {
			updates = append(updates, cfg)
			continue
		}
		var ln net.Listener
		if old == nil || !p.sameAddr(old, cfg) {
			var err error
			if ln, err = p.listen(cfg); err != nil {
				for _, ln := range lns {
					if ln != nil {
						ln.Close()
					}
				}
				return err
			}
		}
		moves, lns = append(moves, cfg), append(lns, ln)
	}
	for i, cfg := range moves {
		if old := p.pools[cfg.Name]; old != nil {
			// The pool moves: its old address stops serving now.
			old.stop()
			delete(p.pools, cfg.Name)
		}
		if _, err := p.startPool(f.Path, cfg, lns[i]); err != nil {
			// Only TLS files that broke since Validate read them get here.
			p.log.Error("reload: pool not restarted", "pool", cfg.Name, "err", err)
		}
	}
	for name, pl := range p.pools {
		if !keep[name] {
			p.log.Info("pool removed", "pool", name)
			pl.stop()
			delete(p.pools, name)
		}
	}
	for _, cfg := range updates {
		if err := p.pools[cfg.Name].update(f.Path, cfg); err != nil {
			p.log.Error("reload: pool not updated", "pool", cfg.Name, "err", err)
		}
	}
	p.log.Info("configuration reloaded", "file", f.Path, "pools", len(f.Pools))
	return nil
}

// sameListener says whether the pool can serve cfg on its listener: the address
// and TLS files are the same.
func (p *Proxy) sameListener(pl *pool, cfg *config.Pool) bool {
	old := pl.state.Load().cfg
	return p.sameAddr(pl, cfg) && old.TLSCertFile == cfg.TLSCertFile && old.TLSKeyFile == cfg.TLSKeyFile
}

// sameAddr says whether the pool listens where cfg says.
func (p *Proxy) sameAddr(pl *pool, cfg *config.Pool) bool {
	_, oa := p.listenAddr(pl.state.Load().cfg)
	_, na := p.listenAddr(cfg)
	return oa == na
}

// update swaps in the routing state of cfg, the pool of the file at path,
// reusing unchanged servers, and reads the pool's TLS files again.
func (pl *pool) update(path string, cfg *config.Pool) error {
	if cfg.TLSCertFile != "" {
		// Validate has just read the files; if they broke since, the
		// certificate in use stays, and the routing is updated all the same.
		if cert, err := loadCert(path, cfg); err != nil {
			pl.proxy.log.Error("reload: TLS certificate not replaced", "pool", pl.name, "err", err)
		} else {
			pl.cert.Store(cert)
		}
	}
	pl.mu.Lock()
	cur := pl.state.Load()
	var servers, added []*server
	reused := map[*server]bool{}
	for _, s := range cfg.Servers {
		old := cur.servers[s.Name()]
		if old != nil && old.addr == serverAddr(s) && len(old.conns) == max(cfg.ServerConnections, 1) && old.cfg.Weight == s.Weight {
			servers = append(servers, old)
			reused[old] = true
			continue
		}
		ns := newServer(pl, s, cfg.ServerConnections)
		servers = append(servers, ns)
		added = append(added, ns)
	}
	st, err := newState(cfg, servers, pl.proxy.ejectErrors(cfg))
	if err != nil {
		pl.mu.Unlock()
		for _, s := range added {
			s.close()
		}
		return err
	}
	pl.state.Store(st)
	pl.mu.Unlock()

	var gone []*server
	for _, s := range cur.list {
		if !reused[s] {
			gone = append(gone, s)
		}
	}
	pl.logMoves(cur, st)
	if len(gone) > 0 {
		// Let requests already routed to the leaving servers finish.
		grace := max(2*cfg.Timeout, time.Second)
		pl.proxy.wg.Add(1)
		go pl.retire(gone, grace)
	}
	return nil
}

// retire closes servers that left the configuration after grace.
func (pl *pool) retire(gone []*server, grace time.Duration) {
	defer pl.proxy.wg.Done()
	t := time.NewTimer(grace)
	select {
	case <-t.C:
	case <-pl.proxy.ctx.Done():
		t.Stop()
	}
	for _, s := range gone {
		s.close()
		pl.proxy.metrics.forgetServer(pl.name, s.name)
	}
}

// logMoves logs the fraction of the key space each server gained or lost.
func (pl *pool) logMoves(old, cur *state) {
	if old.router == nil || cur.router == nil || old.dist.Random || cur.dist.Random {
		return // nothing to measure, or keys routed at random
	}
	d, err := analyze.Compare(old.router, cur.router, nodesOf(old.live), nodesOf(cur.live), analyze.SampleKeys(100000, 1))
	if err != nil {
		pl.proxy.log.Warn("reload: cannot measure movement", "pool", pl.name, "err", err)
		return
	}
	attrs := []any{"pool", pl.name, "moved", strconv.FormatFloat(d.Moved, 'f', 6, 64), "method", d.Method,
		"added", d.Added, "removed", d.Removed}
	for _, fl := range d.Flows {
		attrs = append(attrs, fl.From+"->"+fl.To, strconv.FormatFloat(fl.Share, 'f', 6, 64))
	}
	pl.proxy.log.Info("reload: key space moved", attrs...)
}

func nodesOf(servers []*server) []chash.Node {
	ns := make([]chash.Node, len(servers))
	for i, s := range servers {
		ns[i] = chash.Node{Name: s.name, Weight: s.cfg.Weight}
	}
	return ns
}

// stop closes the pool's listener and clients and, once they are done, its
// servers.
func (pl *pool) stop() {
	pl.ln.Close()
	<-pl.done
	pl.conns.Range(func(k, _ any) bool {
		k.(net.Conn).Close()
		return true
	})
	pl.clients.Wait()
	for _, s := range pl.state.Load().list {
		s.close()
		pl.proxy.metrics.forgetServer(pl.name, s.name)
	}
}

// Shutdown stops accepting clients, serves what clients send until each has
// sent nothing for 50ms (so requests already on their way are answered), waits
// for the replies, or for ctx to end, then closes everything.
func (p *Proxy) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	pools := make([]*pool, 0, len(p.pools))
	for _, pl := range p.pools {
		pools = append(pools, pl)
	}
	p.mu.Unlock()
	p.stopping.Store(true)
	for _, pl := range pools {
		pl.ln.Close()
		<-pl.done
		// Wake idle clients: their reads end unless they send more within
		// drainWait.
		pl.conns.Range(func(k, _ any) bool {
			k.(net.Conn).SetReadDeadline(time.Now().Add(drainWait))
			return true
		})
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
	return err
}

// Close closes every listener, client and server connection at once and waits
// for the proxy's goroutines to end. Requests in flight fail.
func (p *Proxy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeLocked()
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
		p.pools[name].stop()
	}
	p.wg.Wait()
}

func itoa(n int) string { return strconv.Itoa(n) }

// serverLimits bound what the proxy reads from servers.
func (p *Proxy) serverLimits() memcache.Limits {
	return memcache.Limits{MaxLine: p.Limits.MaxLine, MaxValue: max(p.Limits.MaxValue, 128<<20)}
}
