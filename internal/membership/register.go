package membership

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A Registration describes a server's key for Register to keep in etcd.
type Registration struct {
	// Endpoints are the etcd members' client addresses, "host:port" each.
	Endpoints []string
	// Prefix is the key prefix that the proxies' servers_from URLs name;
	// it begins and ends with "/".
	Prefix string
	// Server is the server's line, "host:port:weight [name]", as in a
	// servers: list. The key is Prefix followed by the server's name (its
	// name if the line gives one, else host:port), so registering the same
	// server again replaces its key.
	Server string
	// TTL is the lease's time to live: how long the key outlives a
	// registrar that stops without Close, such as one killed with its
	// server. It is rounded up to whole seconds, and etcd raises it to its
	// minimum (1.5 election timeouts, 2s with etcd's defaults). If zero, it
	// is 5s.
	TTL time.Duration
	// Timeout bounds each request to etcd. If zero, it is 2s.
	Timeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between attempts to register
	// again, as in Config. If zero, they are 100ms and 5s.
	MinBackoff, MaxBackoff time.Duration
	// Logger receives the registrar's logs: each loss of the lease and each
	// registration after one. Their messages begin "register: ", as those of
	// chash register, which runs it. If nil, slog.Default() is used.
	Logger *slog.Logger
}

// RegistrarStatus is a registrar's state.
type RegistrarStatus struct {
	// Registered says whether the key is known to be under a live lease.
	Registered bool
	// Lease is the ID of the lease of the latest registration.
	Lease int64
	// Registrations counts the times the key was put under a new lease, the
	// first time included.
	Registrations uint64
	// Errors counts the failed attempts to register.
	Errors uint64
	// LastError is the latest failure, or empty if none.
	LastError string
	// HandedBack says that Close put the key back under the lease of the
	// registration this one took it over from, instead of removing it.
	HandedBack bool
}

// A Registrar keeps one server's key alive in etcd; Register starts it and
// Close removes the key. Its methods are safe for concurrent use.
type Registrar struct {
	reg   Registration
	cfg   Config // the timeouts and backoff of reg, as a source's
	key   string
	value string
	ttl   int64 // seconds
	cli   *clientv3.Client
	log   *slog.Logger

	stop   context.CancelFunc
	done   chan struct{} // closed when keep has returned
	closed sync.Once

	mu     sync.Mutex
	status RegistrarStatus
	// ours are the leases the registrar has held; taken is the key as
	// another registration of the server held it when a put of ours
	// replaced it (its lease not one of ours), which Close hands back.
	ours  map[clientv3.LeaseID]bool
	taken *takenKey
}

// takenKey is the value and lease of a key another registration held.
type takenKey struct {
	value string
	lease clientv3.LeaseID
}

// Register puts the registration's server line under its key with a lease of
// TTL, and keeps the lease alive until Close, which revokes it and so
// removes the key at once. If the lease is lost (etcd was unreachable for a
// TTL, was restored, or the lease was revoked), the registrar puts the key
// again under a new lease, retrying with backoff until etcd answers.
//
// Register returns once the key is in etcd. If etcd does not answer it
// retries until ctx is done and then fails with an error naming the
// endpoints: give ctx a deadline. A Register that fails leaves no key
// behind, even one whose put reached etcd as ctx ended. A bad registration (no endpoints, a prefix
// not ending in "/", a server line that is not one) fails at once.
//
// The registrar also watches the key: deleted by someone else, it is put back
// at once under the lease; put by another registration of the server (which
// replaces the key, as Register does), it is left to that one, with a
// warning, and put back when that one's key goes.
func Register(ctx context.Context, reg Registration) (*Registrar, error) {
	if err := reg.Validate(); err != nil {
		return nil, err
	}
	line := strings.TrimSpace(reg.Server)
	if reg.TTL == 0 {
		reg.TTL = 5 * time.Second
	}
	cfg := Config{Logger: reg.Logger, Timeout: reg.Timeout, MinBackoff: reg.MinBackoff, MaxBackoff: reg.MaxBackoff}.withDefaults()
	r := &Registrar{
		reg:   reg,
		cfg:   cfg,
		key:   reg.Key(),
		value: line,
		ttl:   int64((reg.TTL + time.Second - 1) / time.Second),
		done:  make(chan struct{}),
	}
	r.log = cfg.Logger.With("key", r.key)
	var err error
	if r.cli, err = newClient(reg.Endpoints); err != nil {
		return nil, fmt.Errorf("membership: register: %w", err)
	}
	b := newBackoff(cfg)
	lease, rev, err := r.put(ctx)
	for err != nil {
		if ctx.Err() != nil || errors.Is(err, errNameTaken) {
			r.cli.Close()
			return nil, err
		}
		if r.failed(err) == 1 {
			r.log.Warn("register: etcd does not answer; retrying the registration", "err", err)
		}
		if !b.wait(ctx) {
			r.cli.Close()
			return nil, err
		}
		lease, rev, err = r.put(ctx)
	}
	kctx, stop := context.WithCancel(context.Background())
	r.stop = stop
	go r.keep(kctx, lease, rev)
	return r, nil
}

// Validate checks the registration as Register does before it speaks to
// etcd: endpoints "host:port", a prefix that begins and ends with "/", a
// server line, and a TTL of zero (the default) or at least 1s.
func (reg Registration) Validate() error {
	if len(reg.Endpoints) == 0 {
		return errors.New("membership: no etcd endpoint")
	}
	for _, h := range reg.Endpoints {
		if err := checkEndpoint(h); err != nil {
			return fmt.Errorf("membership: %w", err)
		}
	}
	if err := checkPrefix(reg.Prefix); err != nil {
		return fmt.Errorf("membership: %w", err)
	}
	if _, err := parseLine(strings.TrimSpace(reg.Server)); err != nil {
		return fmt.Errorf("membership: %w", err)
	}
	if reg.TTL != 0 && reg.TTL < time.Second {
		return fmt.Errorf("membership: TTL %v is under etcd's unit of 1s", reg.TTL)
	}
	return nil
}

// Key returns the etcd key of a valid registration: the prefix and the
// server's name.
func (reg Registration) Key() string {
	s, _ := parseLine(strings.TrimSpace(reg.Server))
	return reg.Prefix + s.Name()
}

// Key returns the registration's etcd key.
func (r *Registrar) Key() string { return r.key }

// Status returns the registrar's state.
func (r *Registrar) Status() RegistrarStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

// put grants a lease and puts the key under it; it returns the lease and the
// revision of the put.
func (r *Registrar) put(ctx context.Context) (clientv3.LeaseID, int64, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	r.mu.Lock()
	first := r.status.Registrations == 0
	r.mu.Unlock()
	var checked int64 // the revision checkName read the prefix at
	var err error
	if first {
		if checked, err = r.checkName(ctx, 0); err != nil {
			return 0, 0, err
		}
	}
	lease, err := r.cli.Grant(ctx, r.ttl)
	if err != nil {
		return 0, 0, etcdError("register "+r.key, r.reg.Endpoints, start, err)
	}
	resp, err := r.putChecked(ctx, start, lease.ID, first, checked)
	if err != nil {
		// The put may have reached etcd, its answer lost or given up on
		// (ctx done by a signal, say), or a key naming this server came
		// meanwhile: revoke the lease, and the key with it, rather than
		// leave a key to lapse after the caller was told there was none.
		rctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
		r.cli.Revoke(rctx, lease.ID)
		cancel()
		return 0, 0, err
	}
	rev := resp.Header.Revision
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ours == nil {
		r.ours = map[clientv3.LeaseID]bool{}
	}
	r.ours[lease.ID] = true
	if kv := resp.Responses[0].GetResponsePut().GetPrevKv(); kv != nil && kv.Lease != 0 && !r.ours[clientv3.LeaseID(kv.Lease)] {
		r.taken = &takenKey{value: string(kv.Value), lease: clientv3.LeaseID(kv.Lease)}
	}
	if t := r.taken; t != nil && r.status.Registrations == 0 && !sameAddress(t.value, r.value) {
		// Meant (a server moved) or a name given twice by mistake: either
		// way, every proxy now sends the server's keys to another address.
		r.log.Warn("register: took the key over from a registration of the name at another address; the proxies now send its keys here",
			"was", t.value, "now", r.value)
	}
	if r.status.Registrations > 0 {
		r.log.Info("register: registered again", "lease", fmt.Sprintf("%x", int64(lease.ID)))
	} else {
		r.log.Info("register: registered", "lease", fmt.Sprintf("%x", int64(lease.ID)), "ttl", time.Duration(r.ttl)*time.Second)
	}
	r.status.Registered, r.status.Lease = true, int64(lease.ID)
	r.status.Registrations++
	return lease.ID, rev, nil
}

// putChecked puts the key under lease. A first registration puts it only if
// no key of the prefix changed since checkName read it at revision checked:
// one put in between by hand, or by another registration, naming this
// server, would go unseen. If one did, it looks at the keys put since (many
// servers registering at once each see the others') and tries again.
func (r *Registrar) putChecked(ctx context.Context, start time.Time, lease clientv3.LeaseID, first bool, checked int64) (*clientv3.TxnResponse, error) {
	for {
		if first && testHookNameChecked != nil {
			testHookNameChecked()
		}
		txn := r.cli.Txn(ctx)
		if first {
			txn = txn.If(clientv3.Compare(clientv3.ModRevision(r.reg.Prefix), "<", checked+1).WithPrefix())
		}
		resp, err := txn.Then(clientv3.OpPut(r.key, r.value, clientv3.WithLease(lease), clientv3.WithPrevKV())).Commit()
		if err != nil {
			return nil, etcdError("register "+r.key, r.reg.Endpoints, start, err)
		}
		if resp.Succeeded {
			return resp, nil
		}
		if checked, err = r.checkName(ctx, checked); err != nil {
			return nil, err
		}
	}
}

// errNameTaken is a registration whose server's name another key of the
// prefix has: registered, it would make every proxy refuse the list.
var errNameTaken = errors.New("server name taken")

// testHookNameChecked, if set, runs between a first registration's checkName
// and its put.
var testHookNameChecked func()

// checkName fails with errNameTaken if a key of the prefix other than the
// registration's holds a server of the same name: one put by hand under
// another key, or a line naming its server what is this one's host:port.
// Proxies refuse a list with a name twice, so the registration would take
// every server of the pool away from them. With since above 0, only the keys
// put after that revision are looked at. It returns the revision it read the
// prefix at, which the put compares the prefix with.
func (r *Registrar) checkName(ctx context.Context, since int64) (int64, error) {
	start := time.Now()
	opts := []clientv3.OpOption{clientv3.WithPrefix()}
	if since > 0 {
		opts = append(opts, clientv3.WithMinModRev(since+1))
	}
	resp, err := r.cli.Get(ctx, r.reg.Prefix, opts...)
	if err != nil {
		return 0, etcdError("register "+r.key, r.reg.Endpoints, start, err)
	}
	mine, _ := parseLine(r.value)
	for _, kv := range resp.Kvs {
		if string(kv.Key) == r.key {
			continue
		}
		if s, err := parseLine(strings.TrimSpace(string(kv.Value))); err == nil && s.Name() == mine.Name() {
			return 0, fmt.Errorf("membership: register %s: key %q holds %q, a server of the same name %q: the proxies would refuse the list; "+
				"delete that key, or give this server another name: %w", r.key, kv.Key, kv.Value, mine.Name(), errNameTaken)
		}
	}
	return resp.Header.Revision, nil
}

// failed records a failed attempt to register and returns the number of
// failures so far.
func (r *Registrar) failed(err error) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status.Errors++
	r.status.LastError = err.Error()
	return r.status.Errors
}

// keep keeps the lease alive and registers again when it is lost, until ctx
// is done (by Close); meanwhile guard keeps the key. rev is the revision of
// the lease's put.
func (r *Registrar) keep(ctx context.Context, lease clientv3.LeaseID, rev int64) {
	defer close(r.done)
	b := newBackoff(r.cfg)
	for {
		gctx, stopGuard := context.WithCancel(ctx)
		guarded := make(chan struct{})
		go func() {
			defer close(guarded)
			r.guard(gctx, lease, rev)
		}()
		// The channel closes when the lease is gone or has had no answer
		// for its TTL, or when ctx is done.
		kept := false
		if ka, err := r.cli.KeepAlive(ctx, lease); err == nil {
			for range ka {
				kept = true
			}
		}
		stopGuard()
		<-guarded
		if ctx.Err() != nil {
			return
		}
		r.mu.Lock()
		r.status.Registered = false
		r.mu.Unlock()
		r.log.Warn("register: lease lost; registering again", "lease", fmt.Sprintf("%x", int64(lease)))
		if kept {
			b.reset()
		} else if !b.wait(ctx) {
			// A lease that no keep-alive reached: do not spin on
			// registrations that cannot be kept.
			return
		}
		var err error
		for lease, rev, err = r.put(ctx); err != nil; lease, rev, err = r.put(ctx) {
			r.failed(err)
			if !b.wait(ctx) {
				return
			}
		}
	}
}

// guard watches the key from the revision after rev while the registrar
// holds lease, until ctx is done. The key deleted by someone else (by hand,
// or by another registration of the same server that stopped) is put back
// under lease; the key put under another lease (another registration of the
// server, which replaces it) is left to that one, with a warning, until it
// goes. Without it a server stayed out of every ring while its registrar
// ran.
func (r *Registrar) guard(ctx context.Context, lease clientv3.LeaseID, rev int64) {
	b := newBackoff(r.cfg)
	others := false // another lease holds the key
	for {
		wch := r.cli.Watch(clientv3.WithRequireLeader(ctx), r.key, clientv3.WithRev(rev+1))
		compacted := false
		for resp := range wch {
			if resp.CompactRevision != 0 {
				compacted = true
				break
			}
			if resp.Err() != nil || resp.Canceled {
				break
			}
			b.reset()
			for _, ev := range resp.Events {
				rev = ev.Kv.ModRevision
				switch {
				case ctx.Err() != nil:
					return // Close revokes the lease: the key goes
				case ev.Type == clientv3.EventTypeDelete:
					r.putBack(ctx, lease, others)
					others = false
				case clientv3.LeaseID(ev.Kv.Lease) != lease:
					if !others {
						r.log.Warn("register: another registration of the server took the key over; this one puts it back when it goes",
							"lease", fmt.Sprintf("%x", int64(lease)), "their_lease", fmt.Sprintf("%x", ev.Kv.Lease), "value", string(ev.Kv.Value))
					}
					others = true
				default:
					if others {
						r.log.Info("register: the registration that took the key over has gone; it handed the key back", "lease", fmt.Sprintf("%x", int64(lease)))
					}
					others = false
				}
			}
		}
		if ctx.Err() != nil {
			return
		}
		if compacted {
			// The events are gone: look at the key as it is now.
			gctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
			resp, err := r.cli.Get(gctx, r.key)
			cancel()
			if err == nil {
				rev = resp.Header.Revision
				if len(resp.Kvs) == 0 {
					r.putBack(ctx, lease, others)
					others = false
				}
			}
		}
		if !b.wait(ctx) {
			return
		}
	}
}

// putBack puts the key again under lease, if it is still absent, after
// someone deleted it (the one who took it over, if others), retrying with
// backoff while etcd does not answer, until the lease is found gone (keep
// then registers again) or ctx is done.
func (r *Registrar) putBack(ctx context.Context, lease clientv3.LeaseID, others bool) {
	b := newBackoff(r.cfg)
	for {
		pctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
		resp, err := r.cli.Txn(pctx).
			If(clientv3.Compare(clientv3.CreateRevision(r.key), "=", 0)).
			Then(clientv3.OpPut(r.key, r.value, clientv3.WithLease(lease))).
			Commit()
		cancel()
		switch {
		case ctx.Err() != nil:
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			// The lease lapsed, which deleted the key: keep registers again.
		case err != nil:
			r.failed(err)
			if b.wait(ctx) {
				continue
			}
		case !resp.Succeeded:
			// Someone put it meanwhile: the watch tells who.
		case others:
			r.log.Info("register: the registration that took the key over has gone; put it back", "lease", fmt.Sprintf("%x", int64(lease)))
		default:
			r.log.Warn("register: the key was deleted while registered; put it back", "lease", fmt.Sprintf("%x", int64(lease)))
		}
		return
	}
}

// Close stops keeping the lease and revokes it, which removes the key at
// once. If the registrar took the key over from another registration of the
// server whose lease lives, it first puts the key back under that lease, as
// that one had it, in one transaction: the server does not leave the
// proxies' rings for the moment between the delete and the other's put.
// A lease that has already lapsed is no error. Close may be called more than
// once; later calls return nil.
func (r *Registrar) Close() error {
	var err error
	r.closed.Do(func() {
		r.stop()
		<-r.done
		r.mu.Lock()
		lease := clientv3.LeaseID(r.status.Lease)
		r.status.Registered = false
		taken := r.taken
		r.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
		defer cancel()
		if taken != nil {
			resp, terr := r.cli.Txn(ctx).
				If(clientv3.Compare(clientv3.LeaseValue(r.key), "=", lease)).
				Then(clientv3.OpPut(r.key, taken.value, clientv3.WithLease(taken.lease))).
				Commit()
			if terr == nil && resp.Succeeded {
				r.mu.Lock()
				r.status.HandedBack = true
				r.mu.Unlock()
				r.log.Info("register: handed the key back to the registration it took over from", "their_lease", fmt.Sprintf("%x", int64(taken.lease)))
			}
			// Else the other's lease is gone (ErrLeaseNotFound), or the
			// key is not ours: the revoke removes what is.
		}
		if _, rerr := r.cli.Revoke(ctx, lease); rerr != nil && !errors.Is(rerr, rpctypes.ErrLeaseNotFound) {
			err = fmt.Errorf("membership: unregister %s: revoke lease %x: %w", r.key, int64(lease), rerr)
		}
		r.cli.Close()
	})
	return err
}

// sameAddress reports whether two server lines name one address.
func sameAddress(a, b string) bool {
	sa, errA := parseLine(strings.TrimSpace(a))
	sb, errB := parseLine(strings.TrimSpace(b))
	return errA == nil && errB == nil && sa.Host == sb.Host && sa.Port == sb.Port
}
