package main

import (
	"context"
	"log/slog"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/chash-dev/chash/internal/membership"
)

func init() { register(newRegister) }

type registerFlags struct {
	etcd       string
	prefix     string
	server     string
	ttl        time.Duration
	wait       time.Duration
	logJSON    bool
	check      string
	checkEvery time.Duration
	checkFails int
	keepValues bool
}

func newRegister() *Command {
	f := new(registerFlags)
	c := &Command{
		UsageLine: "register --etcd HOST:PORT[,HOST:PORT...] --prefix PREFIX --server LINE [--ttl D] [--wait D] [--check PROTOCOL [--check-every D] [--check-fails N] [--keep-values]]",
		Short:     "keep a server in the lists of the proxies that watch an etcd prefix",
		Long: `Register puts a server's line under an etcd key and keeps it there, for
the proxies whose pools read their servers from that prefix
(servers_from: etcd://HOST:PORT/PREFIX/). Run it next to the memcached or
Redis server it names, as a sidecar or a service bound to it.

LINE is the server as a servers: list writes it, "host:port:weight [name]".
The key is PREFIX followed by the server's name (its name if LINE gives one,
else host:port), under a lease of --ttl (5s by default, whole seconds; etcd
raises a TTL below its minimum, 2s with its defaults), which register keeps
alive. PREFIX begins and ends with "/".

SIGTERM and SIGINT revoke the lease, which removes the key at once, and
register exits 0. If register dies without revoking (killed, or its machine
lost), the lease lapses within --ttl and etcd removes the key: the proxies
watching the prefix drop the server. If the lease is lost while register runs
(etcd was unreachable for longer than --ttl, or restored from a backup, or
someone revoked it), register puts the key again under a new lease as soon
as etcd answers. A key deleted by hand while register runs is put back at
once. A second register of the same server (the same key) takes the key
over; the first logs it, and the second warns if its line names another
address (a server moved, or one name given to two servers by mistake: the
proxies send the name's keys to the new address). When the second stops, it hands the key back under
the first's lease in one step, so that the proxies never see the server
leave; were the first gone meanwhile, the key goes, and if the second dies,
the first puts the key back when its lease lapses. A server whose name
another key of the prefix holds (a key put by hand, "/p/cache-1" holding
"10.0.0.1:11211:1", and a register of 10.0.0.1:11211) is refused, naming
that key: the proxies refuse a list with a name twice, and would keep the
list they had.

At start register waits --wait (10s by default) for etcd to answer, then
exits 1 naming the endpoints; a supervisor that restarts it waits longer. A
signal meanwhile ends it with status 0 and a line saying that nothing stays
registered (a key put before etcd's answer was lost goes with its lease). A
bad flag exits 2.

Without --check, register keeps the key while it runs, whether the server
answers or not: run it so that it dies with the server (in the server's
container, or bound to its service). With --check memcached or --check
redis, it asks the server itself every --check-every (1s by default, which
also bounds each check): memcached's version, or Redis's PING (a NOAUTH
answer counts: the server answers). It registers once the server answers,
removes the key when --check-fails checks in a row (3 by default) get no
answer, and registers again at the first answer after that, each change in
one log line. A memcached server is emptied (flush_all) before it is
registered again: while it was out, its keys were written and deleted on
other servers, and its old values would be read again (with the pool's
warmup, its keys are then warmed from where they were written). Give
--keep-values to register it as it is. A Redis server is not emptied: flush
it yourself if it serves as a cache. A register that outlives its server without --check keeps the
server in every proxy's ring, where its keys fail (with auto_eject_hosts,
until each proxy ejects it on its own).`,
	}
	c.Flag.StringVar(&f.etcd, "etcd", "", "the etcd members' client addresses, `HOST:PORT[,HOST:PORT...]` (required)")
	c.Flag.StringVar(&f.prefix, "prefix", "", "the key `PREFIX` of the pool, as its servers_from URL names it (required)")
	c.Flag.StringVar(&f.server, "server", "", "the server's `LINE`, \"host:port:weight [name]\" (required)")
	c.Flag.DurationVar(&f.ttl, "ttl", 5*time.Second, "the lease's time to live `D`: how long the key outlives a register that dies")
	c.Flag.DurationVar(&f.wait, "wait", 10*time.Second, "wait at most `D` for etcd at start")
	c.Flag.BoolVar(&f.logJSON, "log-json", false, "log in JSON")
	c.Flag.StringVar(&f.check, "check", "", "ask the server whether it answers, in `PROTOCOL` memcached or redis, and keep the key only while it does")
	c.Flag.DurationVar(&f.checkEvery, "check-every", time.Second, "with --check, check every `D`; a check waits at most D")
	c.Flag.IntVar(&f.checkFails, "check-fails", 3, "with --check, remove the key after `N` checks in a row without an answer")
	c.Flag.BoolVar(&f.keepValues, "keep-values", false, "with --check memcached, register a server that answers again without emptying it first")
	c.Run = f.run
	return c
}

func (f *registerFlags) run(ctx context.Context, cmd *Command, env *Env, args []string) int {
	if len(args) > 0 {
		return cmd.UsageError(env.Stderr, "unexpected arguments %q", args)
	}
	for _, req := range []struct{ name, value string }{{"--etcd", f.etcd}, {"--prefix", f.prefix}, {"--server", f.server}} {
		if req.value == "" {
			return cmd.UsageError(env.Stderr, "%s is required", req.name)
		}
	}
	if f.wait <= 0 {
		return cmd.UsageError(env.Stderr, "--wait %v: want a positive duration", f.wait)
	}
	if f.ttl <= 0 {
		return cmd.UsageError(env.Stderr, "--ttl %v: want at least 1s", f.ttl)
	}
	if f.ttl%time.Second != 0 && f.ttl > time.Second {
		// etcd's leases count whole seconds: say so rather than round.
		return cmd.UsageError(env.Stderr, "--ttl %v: want whole seconds (etcd's leases count in seconds)", f.ttl)
	}
	if f.check == "" {
		for _, name := range []string{"check-every", "check-fails", "keep-values"} {
			if flagSet(&cmd.Flag, name) {
				return cmd.UsageError(env.Stderr, "--%s needs --check", name)
			}
		}
	} else if !slices.Contains(membership.Protocols, f.check) {
		return cmd.UsageError(env.Stderr, "--check %q: want %s", f.check, strings.Join(membership.Protocols, " or "))
	} else if f.check != "memcached" && flagSet(&cmd.Flag, "keep-values") {
		return cmd.UsageError(env.Stderr, "--keep-values needs --check memcached (a Redis server is never emptied)")
	}
	if f.checkEvery <= 0 {
		return cmd.UsageError(env.Stderr, "--check-every %v: want a positive duration", f.checkEvery)
	}
	if f.checkFails < 1 {
		return cmd.UsageError(env.Stderr, "--check-fails %d: want at least 1", f.checkFails)
	}
	var h slog.Handler = slog.NewTextHandler(env.Stderr, nil)
	if f.logJSON {
		h = slog.NewJSONHandler(env.Stderr, nil)
	}
	reg := membership.Registration{
		Endpoints: strings.Split(f.etcd, ","),
		Prefix:    f.prefix,
		Server:    f.server,
		TTL:       f.ttl,
		Logger:    slog.New(h),
	}
	if err := reg.Validate(); err != nil {
		return cmd.UsageError(env.Stderr, "%v", err)
	}

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ignoreBrokenPipe() // a dead log reader must not end the registration
	if f.check != "" {
		return f.runChecked(ctx, cmd, env, reg)
	}
	r, code := f.register(ctx, cmd, env, reg)
	if r == nil {
		return code
	}
	<-ctx.Done()
	return unregister(cmd, env, reg, r)
}

// register registers reg, waiting --wait for etcd. If it cannot, it returns
// nil and the exit status: 0 if ctx ended first, else 1, with the error.
func (f *registerFlags) register(ctx context.Context, cmd *Command, env *Env, reg membership.Registration) (*membership.Registrar, int) {
	wctx, cancel := context.WithTimeout(ctx, f.wait)
	r, err := membership.Register(wctx, reg)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			// Stopped before etcd answered: a key put meanwhile went with
			// its lease (membership.Register revokes it).
			reg.Logger.Info("register: stopped before the registration completed; nothing stays registered", "key", reg.Key())
			return nil, 0
		}
		cmd.Errorf(env.Stderr, "%v", err)
		return nil, 1
	}
	return r, 0
}

// unregister removes r's key, or hands it back, and returns the exit status.
func unregister(cmd *Command, env *Env, reg membership.Registration, r *membership.Registrar) int {
	if err := r.Close(); err != nil {
		cmd.Errorf(env.Stderr, "%v", err)
		return 1
	}
	if r.Status().HandedBack {
		reg.Logger.Info("register: key handed back to the registration this one took it over from", "key", r.Key())
	} else {
		reg.Logger.Info("register: key removed", "key", r.Key())
	}
	return 0
}

// runChecked keeps the key while the server answers its checks (--check):
// registered at its first answer, removed after --check-fails checks in a
// row without one, registered again at the next answer. Etcd must answer
// the first registration within --wait, as without checks; a registration
// after a removal that etcd does not answer is tried again at the next
// check.
func (f *registerFlags) runChecked(ctx context.Context, cmd *Command, env *Env, reg membership.Registration) int {
	log := reg.Logger.With("key", reg.Key())
	var r *membership.Registrar
	first, waiting := true, false
	fails := 0 // checks in a row without an answer while registered
	tick := time.NewTicker(f.checkEvery)
	defer tick.Stop()
	for {
		err := membership.CheckServer(ctx, reg.Server, f.check, f.checkEvery)
		switch {
		case ctx.Err() != nil:
		case err == nil && r == nil && first:
			var code int
			if r, code = f.register(ctx, cmd, env, reg); r == nil {
				return code
			}
			first = false
		case err == nil && r == nil:
			fails = 0
			emptied := false
			if f.check == "memcached" && !f.keepValues {
				if err := membership.FlushServer(ctx, reg.Server, f.checkEvery); err != nil {
					if ctx.Err() == nil {
						log.Warn("register: the server answers again, but emptying it failed; trying again at the next check", "err", err)
					}
					break
				}
				emptied = true
			}
			wctx, cancel := context.WithTimeout(ctx, f.wait)
			r, err = membership.Register(wctx, reg)
			cancel()
			switch {
			case err != nil && ctx.Err() == nil:
				log.Warn("register: the server answers again, but registering failed; trying again at the next check", "err", err, "emptied", emptied)
			case err == nil && emptied:
				log.Info("register: the server answers again; emptied (flush_all) and registered")
			case err == nil:
				log.Info("register: the server answers again; registered")
			}
		case err == nil:
			fails = 0
		case r == nil:
			if first && !waiting {
				log.Info("register: waiting for the server to answer before registering", "err", err)
				waiting = true
			}
		default:
			if fails++; fails >= f.checkFails {
				log.Warn("register: the server does not answer; removing its key until it does", "err", err, "checks_failed", fails)
				if err := r.Close(); err != nil {
					log.Warn("register: removing the key failed; it lapses with its lease", "err", err)
				}
				r = nil
			}
		}
		select {
		case <-ctx.Done():
			if r == nil {
				log.Info("register: stopped; nothing stays registered")
				return 0
			}
			return unregister(cmd, env, reg, r)
		case <-tick.C:
		}
	}
}
