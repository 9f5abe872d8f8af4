package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/memcache"
	"github.com/chash-dev/chash/internal/memstore"
	"github.com/chash-dev/chash/internal/proxy"
)

func init() { register(newProxy) }

type proxyFlags struct {
	config      string
	testConf    bool
	admin       string
	ejectErrors bool
	idle        time.Duration
	maxValue    int
	tlsCert     string
	tlsKey      string
	logJSON     bool
	verbose     bool
	procs       int
}

func newProxy() *Command {
	f := new(proxyFlags)
	c := &Command{
		UsageLine: "proxy [--config FILE] [--test-conf] [--admin ADDR] [--eject-errors] [--idle-timeout D] [--max-value N] [--tls-cert F --tls-key F] [--procs N]",
		Short:     "run a memcached sharding proxy, a drop-in for twemproxy",
		Long: `Proxy serves the pools of the configuration FILE, an unchanged twemproxy
nutcracker.yml: each pool listens on its listen address and sends each
memcached request to the server its distribution names for the key, exactly
where nutcracker would. Clients speak the memcached text protocol, classic
and meta commands (mg, ms, md, ma, me, mn); a get of many keys is split by
server, sent in parallel and merged in the order of the keys.

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

SIGHUP, or POST /reload on the admin listener, reloads FILE: an invalid file,
or TLS files that do not load, is refused and the old configuration keeps
serving; servers that stay keep their connections, and the fraction of the
key space that moved is logged. A pool whose listen address or TLS files
changed restarts on its new listener, closing its clients; a pool keeping
its TLS files reads them again for new clients, so a renewed certificate
needs no restart. eject_errors and client_idle_timeout apply at once.

SIGTERM and SIGINT stop accepting clients, answer what clients have sent
(each client's connection closes once it has sent nothing for 50ms), let
requests in flight finish (at most 10s in all), and exit 0.

--procs sets how many threads run Go code. By default (0) it adapts to the
load: one thread while the proxy uses less than most of a core, where
handing requests between goroutines on one thread costs far less CPU than
waking other threads, and every CPU once one thread is busy; the GOMAXPROCS
environment variable, if set, fixes it instead.

The admin listener (--admin, 127.0.0.1:22222 by default, "" for none) serves
/metrics (Prometheus), /stats (JSON shaped like nutcracker's stats port),
/reload and /healthz.

--test-conf checks FILE as 'nutcracker -t' does and exits: 0 if it is valid,
2 otherwise. redis: true pools are refused: chash proxy speaks memcached only.

Without --config, proxy starts on 127.0.0.1:22121 in front of three small
in-process memcached-compatible stores (64 MiB each, LRU eviction, expiry,
cas), and says so in its log: a way to try it with nc on a machine without
memcached. It is not for production; point a configuration file at real
memcached servers for that.`,
	}
	c.Flag.StringVar(&f.config, "config", "", "the twemproxy configuration `FILE`")
	c.Flag.BoolVar(&f.testConf, "test-conf", false, "check the configuration and exit")
	c.Flag.StringVar(&f.admin, "admin", "127.0.0.1:22222", "admin HTTP listener `ADDR`; empty for none")
	c.Flag.BoolVar(&f.ejectErrors, "eject-errors", false, "answer an ejected server's keys with errors instead of moving them; a pool's eject_errors overrides")
	c.Flag.DurationVar(&f.idle, "idle-timeout", 0, "close clients idle this long, 0 keeps them; a pool's client_idle_timeout overrides")
	c.Flag.IntVar(&f.maxValue, "max-value", memcache.DefaultMaxValue, "largest value in bytes a client may store")
	c.Flag.StringVar(&f.tlsCert, "tls-cert", "", "serve clients over TLS with this certificate `FILE` (PEM); a pool's tls_cert_file overrides")
	c.Flag.StringVar(&f.tlsKey, "tls-key", "", "the TLS certificate's key `FILE` (PEM); a pool's tls_key_file overrides")
	c.Flag.IntVar(&f.procs, "procs", 0, "threads running Go code; 0 adapts between 1 and the CPUs to the load")
	c.Flag.BoolVar(&f.logJSON, "log-json", false, "log in JSON")
	c.Flag.BoolVar(&f.verbose, "v", false, "log debug messages")
	c.Run = func(ctx context.Context, c *Command, env *Env, args []string) int {
		return runProxy(ctx, c, env, f, args)
	}
	return c
}

func runProxy(ctx context.Context, c *Command, env *Env, f *proxyFlags, args []string) int {
	if len(args) > 0 {
		return c.UsageError(env.Stderr, "unexpected arguments %q", args)
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return c.UsageError(env.Stderr, "--tls-cert and --tls-key go together")
	}
	if f.procs < 0 {
		return c.UsageError(env.Stderr, "--procs %d: want 0 (adapt to the load) or more", f.procs)
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
	if err != nil {
		c.Errorf(env.Stderr, "%v", err)
		return 2
	}
	if f.testConf {
		fmt.Fprintf(env.Stdout, "chash proxy: configuration file '%s' syntax is ok\n", f.config)
		return 0
	}
	level := slog.LevelInfo
	if f.verbose {
		level = slog.LevelDebug
	}
	var h slog.Handler = slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: level})
	if f.logJSON {
		h = slog.NewJSONHandler(env.Stderr, &slog.HandlerOptions{Level: level})
	}
	p := &proxy.Proxy{
		Logger:      slog.New(h),
		Limits:      memcache.Limits{MaxValue: f.maxValue},
		EjectErrors: f.ejectErrors,
		IdleTimeout: f.idle,
		ConfigPath:  f.config,
		Admin:       f.admin,
	}
	if f.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			c.Errorf(env.Stderr, "%v", err)
			return 2
		}
		p.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if err := p.Start(file); err != nil {
		c.Errorf(env.Stderr, "%v", err)
		return 1
	}
	switch _, set := os.LookupEnv("GOMAXPROCS"); {
	case f.procs > 0:
		defer proxy.SetProcs(proxy.SetProcs(f.procs))
	case !set:
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			proxy.ScaleProcs(sctx, runtime.GOMAXPROCS(0), p.Logger)
		}()
		defer func() { cancel(); <-done }()
	}
	if stores != nil {
		p.Logger.Warn("no --config: serving 127.0.0.1:22121 in front of three embedded in-process stores, for trying chash proxy out; point --config at real memcached servers for real use")
	}
	for {
		select {
		case <-hup:
			p.ReloadFile() // logs its outcome; a refused file leaves the old one serving
		case <-ctx.Done():
			p.Logger.Info("shutting down: finishing requests in flight")
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := p.Shutdown(sctx)
			cancel()
			if err != nil {
				p.Logger.Warn("shutdown timed out; requests in flight were cut", "err", err)
			}
			return 0
		}
	}
}

// embeddedDefault starts three in-process stores on free ports of 127.0.0.1 and
// returns the configuration of a pool in front of them, listening on
// 127.0.0.1:22121.
func embeddedDefault() (*config.File, []*memstore.Store, error) {
	var stores []*memstore.Store
	// chash's own ring and key hash (xxh64), not the fnv1a_64 and ketama common
	// in nutcracker.yml files: twemproxy's fnv1a_64 sends keys that differ only
	// at their end, as a newcomer's "key1", "key2", ... do, to one server two
	// times in three.
	yaml := "embedded:\n  listen: 127.0.0.1:22121\n  distribution: chash\n  timeout: 400\n  servers:\n"
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
		yaml += fmt.Sprintf("   - %s:1 embedded-%d\n", ln.Addr(), i+1)
	}
	f, err := config.Parse("(embedded default)", []byte(yaml))
	return f, stores, err
}
