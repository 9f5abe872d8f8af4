package membership

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
)

// etcdKind is a source that reads the keys under an etcd prefix: a list, then
// a watch from the revision after it.
type etcdKind struct {
	url  *URL
	src  string // url as a string, for errors
	cfg  Config
	cli  *clientv3.Client
	keys *keyList
	// rev is the revision keys are as of. Run's goroutine sets it; the
	// heartbeat reads it.
	rev atomic.Int64
	// conn counts the client's lost connections to etcd, and epoch is its
	// count when the read that keys come from began: a watch resumed on
	// another connection may be another cluster's.
	conn  *connLosses
	epoch uint64
	stop  context.CancelFunc // conn's
}

func newEtcdKind(u *URL, cfg Config) (*etcdKind, error) {
	cli, err := newClient(u.Endpoints)
	if err != nil {
		return nil, fmt.Errorf("membership: %s: %w", u, err)
	}
	// The connection is watched from the start, before the first read:
	// one lost between Open and Run, or before a watch begins, counts.
	ctx, stop := context.WithCancel(context.Background())
	conn := newConnLosses(cli.ActiveConnection())
	go conn.run(ctx)
	return &etcdKind{url: u, src: u.String(), cfg: cfg, cli: cli, keys: newKeyList(), conn: conn, stop: stop}, nil
}

// newClient returns an etcd client of the endpoints. It does not connect:
// requests do, and wait for a connection until their context is done.
func newClient(endpoints []string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints: endpoints,
		// The client's own logs repeat on every retry; the source logs
		// each change of state once instead.
		Logger: zap.NewNop(),
		// No AutoSyncInterval: the endpoints stay the ones the URL names.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(connectParams)},
	})
}

// connectParams paces gRPC's attempts to connect to etcd again: by default
// each waits 1.6 times longer than the last, up to two minutes, so that a
// source or registration came back 5 to 30 seconds after an etcd that had
// been down for a minute, each proxy at another time, while the leases of
// registrations lapsed. Here they wait at most a second: an attempt to
// connect to a few endpoints costs next to nothing.
var connectParams = grpc.ConnectParams{
	Backoff: grpcbackoff.Config{
		BaseDelay:  100 * time.Millisecond,
		Multiplier: 1.6,
		Jitter:     0.2,
		MaxDelay:   time.Second,
	},
	MinConnectTimeout: 5 * time.Second,
}

func (e *etcdKind) close() error {
	e.stop()
	return e.cli.Close()
}

// get reads the whole prefix, waiting at most cfg.Timeout.
func (e *etcdKind) get(ctx context.Context, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	resp, err := e.cli.Get(ctx, e.url.Prefix, append(opts, clientv3.WithPrefix())...)
	if err != nil {
		return nil, etcdError(e.src, e.url.Endpoints, start, err)
	}
	return resp, nil
}

// failed wraps an error of the watch.
func (e *etcdKind) failed(err error) error {
	return etcdError(e.src, e.url.Endpoints, time.Time{}, err)
}

// etcdError describes a failed request to etcd that began at start (zero if
// it is no single request) for what, a source or a registration: "etcd at
// ENDPOINTS does not answer within D" if it timed out.
func etcdError(what string, endpoints []string, start time.Time, err error) error {
	eps := strings.Join(endpoints, ",")
	if errors.Is(err, context.DeadlineExceeded) && !start.IsZero() {
		msg := fmt.Sprintf("membership: %s: etcd at %s does not answer within %v", what, eps, time.Since(start).Round(100*time.Millisecond))
		return &saidError{msg, err}
	}
	return fmt.Errorf("membership: %s: etcd at %s: %w", what, eps, err)
}

// saidError is an error whose message says what its cause says, in words of
// its own ("does not answer within 1.5s", not then "context deadline
// exceeded"); errors.Is and As still find the cause.
type saidError struct {
	msg   string
	cause error
}

func (e *saidError) Error() string { return e.msg }
func (e *saidError) Unwrap() error { return e.cause }

// list reads the whole prefix as get does, and fails with errConnLost if the
// connection it came on was lost before the answer was taken: a watch from
// its revision might then begin on another cluster.
func (e *etcdKind) list(ctx context.Context) (resp *clientv3.GetResponse, epoch uint64, err error) {
	epoch = e.conn.count()
	if resp, err = e.get(ctx); err != nil {
		return nil, 0, err
	}
	if !e.conn.answered(epoch) {
		return nil, 0, e.failed(errConnLost)
	}
	return resp, epoch, nil
}

// errConnLost is why a read or a watch is not trusted: the connection to etcd
// it came on was lost.
var errConnLost = errors.New("connection lost")

// load replaces the keys with those of a list read at epoch.
func (e *etcdKind) load(resp *clientv3.GetResponse, epoch uint64) {
	e.keys = newKeyList()
	for _, kv := range resp.Kvs {
		e.keys.put(string(kv.Key), kv.Value)
	}
	e.rev.Store(resp.Header.Revision)
	e.epoch = epoch
}

func (e *etcdKind) first(ctx context.Context, s *Source) (List, error) {
	b := newBackoff(e.cfg)
	begin := time.Now()
	for {
		resp, epoch, err := e.list(ctx)
		if err == nil {
			s.reachable()
			e.load(resp, epoch)
			servers, err := e.keys.servers(e.src)
			return List{Servers: servers, Revision: e.rev.Load()}, err
		}
		s.unreachable(err)
		if !b.wait(ctx) {
			// The last request was cut short by ctx: say how long etcd
			// was waited for in all, not that request's share of it.
			return List{}, etcdError(e.src, e.url.Endpoints, begin, errors.Unwrap(err))
		}
	}
}

func (e *etcdKind) watch(ctx context.Context, s *Source, apply func(List) error) {
	b := newBackoff(e.cfg)
	for {
		healthy, err := e.follow(ctx, s, apply)
		if ctx.Err() != nil {
			return
		}
		if healthy {
			b.reset()
		}
		if errors.Is(err, errCompacted) {
			s.log.Info("membership: etcd compacted revisions the watch needs; reading the whole prefix again", "after", e.rev.Load())
		} else {
			s.unreachable(err)
			if !b.wait(ctx) {
				return
			}
		}
		// Read the whole prefix again: after a compaction the watch cannot
		// resume, and after an outage etcd may be another (restored or new)
		// cluster whose revisions a resumed watch would misread.
		var resp *clientv3.GetResponse
		var epoch uint64
		for {
			if resp, epoch, err = e.list(ctx); err == nil {
				break
			}
			s.unreachable(err)
			if !b.wait(ctx) {
				return
			}
		}
		s.relisted()
		s.reachable()
		if old := e.rev.Load(); resp.Header.Revision < old {
			s.log.Warn("membership: etcd's revision went back: a new or restored etcd cluster", "from", old, "to", resp.Header.Revision)
		}
		e.load(resp, epoch)
		servers, err := e.keys.servers(e.src)
		s.offer(List{Servers: servers, Revision: e.rev.Load()}, err, apply)
	}
}

// errCompacted is why follow returns when etcd has compacted the revisions
// its watch needs.
var errCompacted = errors.New("membership: etcd compacted the revisions to watch")

// follow watches the prefix from the revision after e.rev and offers each
// revision's list, until ctx is done, the watch fails, or the heartbeat finds
// that etcd does not answer or has gone back in revisions. healthy says
// whether etcd answered at least once.
func (e *etcdKind) follow(ctx context.Context, s *Source, apply func(List) error) (healthy bool, err error) {
	// WithRequireLeader: a member cut off from its cluster's leader ends the
	// watch instead of keeping it open with no events.
	wctx, cancel := context.WithCancelCause(clientv3.WithRequireLeader(ctx))
	var answered atomic.Bool
	beat, conn := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(beat)
		e.heartbeat(wctx, cancel, &answered)
	}()
	go func() {
		defer close(conn)
		// A connection lost since the list was read ends the watch: the
		// client would resume it by itself on its next connection, but
		// that may be to an etcd that lost its data and started again,
		// whose revisions the watch would misread, before the heartbeat
		// notices (or never, if the new revisions pass the old ones).
		select {
		case <-e.conn.lostSince(e.epoch):
			cancel(e.failed(errConnLost))
		case <-wctx.Done():
		}
	}()
	defer func() {
		cancel(nil)
		<-beat
		<-conn
	}()
	// Watch waits for etcd to create the watch: the heartbeat ends the wait
	// if etcd does not answer.
	wch := e.cli.Watch(wctx, e.url.Prefix, clientv3.WithPrefix(), clientv3.WithRev(e.rev.Load()+1))
	werr := errors.New("watch canceled by etcd")
	for resp := range wch {
		if resp.CompactRevision != 0 {
			return true, errCompacted
		}
		if resp.Err() != nil || resp.Canceled {
			if resp.Err() != nil {
				werr = resp.Err()
			}
			break
		}
		if !e.conn.answered(e.epoch) {
			cancel(e.failed(errConnLost))
			break
		}
		answered.Store(true)
		e.offerEvents(resp.Events, s, apply)
	}
	// The watch ended: say why.
	switch err := context.Cause(wctx); {
	case ctx.Err() != nil:
		return answered.Load(), ctx.Err()
	case err != nil:
		return answered.Load(), err // the heartbeat's
	}
	return answered.Load(), e.failed(werr)
}

// heartbeat asks etcd something small every Heartbeat, since a watch on a
// frozen or unreachable etcd stays quiet rather than fail, and cancels the
// watch's context with the reason if etcd does not answer or its revision
// went back (a new or restored cluster, whose revisions a watch misreads).
// It returns when ctx is done.
func (e *etcdKind) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, answered *atomic.Bool) {
	t := time.NewTicker(e.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		resp, err := e.get(ctx, clientv3.WithCountOnly())
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			cancel(err)
			return
		}
		answered.Store(true)
		if rev := e.rev.Load(); resp.Header.Revision < rev {
			cancel(e.failed(fmt.Errorf("revision went back from %d to %d", rev, resp.Header.Revision)))
			return
		}
	}
}

// offerEvents applies a watch response's events to the keys and offers the
// list as of each revision among them.
func (e *etcdKind) offerEvents(events []*clientv3.Event, s *Source, apply func(List) error) {
	for i := 0; i < len(events); {
		rev := events[i].Kv.ModRevision
		for ; i < len(events) && events[i].Kv.ModRevision == rev; i++ {
			ev := events[i]
			switch ev.Type {
			case clientv3.EventTypePut:
				e.keys.put(string(ev.Kv.Key), ev.Kv.Value)
			case clientv3.EventTypeDelete:
				e.keys.del(string(ev.Kv.Key))
			}
		}
		e.rev.Store(rev)
		servers, err := e.keys.servers(e.src)
		s.offer(List{Servers: servers, Revision: rev}, err, apply)
	}
}

// connLosses counts the losses of a gRPC connection to etcd: changes of state
// away from Ready, and of any state to another not Ready after an answer came
// (the monitor may not have seen the Ready state in between).
type connLosses struct {
	conn *grpc.ClientConn
	mu   sync.Mutex
	n    uint64
	lost chan struct{} // closed when n passes, then replaced
	// An answer came since the last loss counted.
	answer bool
}

func newConnLosses(conn *grpc.ClientConn) *connLosses {
	return &connLosses{conn: conn, lost: make(chan struct{})}
}

// run follows the connection's state until ctx is done.
func (c *connLosses) run(ctx context.Context) {
	state := c.conn.GetState()
	for c.conn.WaitForStateChange(ctx, state) {
		c.mu.Lock()
		next := c.conn.GetState()
		if state == connectivity.Ready || c.answer && next != connectivity.Ready {
			c.n++
			c.answer = false
			close(c.lost)
			c.lost = make(chan struct{})
		}
		state = next
		c.mu.Unlock()
	}
}

// count returns the losses so far.
func (c *connLosses) count() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// answered is told of an answer to a request made when count was epoch; it
// reports whether the connection is still the one the request went on: no
// loss counted since, and the state is Ready.
func (c *connLosses) answered(epoch uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n != epoch || c.conn.GetState() != connectivity.Ready {
		return false
	}
	c.answer = true
	return true
}

// lostSince returns a channel closed once count passes epoch.
func (c *connLosses) lostSince(epoch uint64) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n != epoch {
		closed := make(chan struct{})
		close(closed)
		return closed
	}
	return c.lost
}
