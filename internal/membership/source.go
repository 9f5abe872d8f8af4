package membership

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/chash-dev/chash/internal/config"
)

// ReadTimeout bounds Read when its context has no deadline.
const ReadTimeout = 10 * time.Second

// Config tunes a Source. The zero Config is ready to use; each field's doc
// gives its zero-value default.
type Config struct {
	// Logger receives the source's logs: state changes and changes refused
	// (warnings), and changes applied (at debug level: the apply function's
	// owner says what a change did). If nil, slog.Default() is used.
	Logger *slog.Logger
	// Timeout bounds each request to etcd: a list, or a heartbeat. If zero, it
	// is 2s, which rides out an etcd leader election (about a second with
	// etcd's defaults).
	Timeout time.Duration
	// Heartbeat is how often a watching etcd source checks that etcd still
	// answers, since a watch on a frozen or unreachable etcd just stays quiet.
	// A lost connection is noticed at once, an etcd that stops answering
	// within Heartbeat + Timeout. If zero, it is 1s.
	Heartbeat time.Duration
	// MinBackoff and MaxBackoff bound the wait between attempts to reach an
	// etcd that does not answer: it starts at MinBackoff and doubles up to
	// MaxBackoff, with up to a fifth added at random so that many proxies do
	// not retry in step. If zero, they are 100ms and 5s.
	MinBackoff, MaxBackoff time.Duration
	// PollInterval is how often a file source reads its file besides when the
	// file's directory reports a change, for file systems that report none
	// (NFS, some container mounts) and for a directory that was removed. If
	// zero, it is 5s.
	PollInterval time.Duration
	// Settle is how long a file source waits after a change before it reads
	// the file, and between the two reads that must agree before a change is
	// taken, so that a file written in place is not read half-written. If
	// zero, it is 50ms.
	Settle time.Duration
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	def(&c.Timeout, 2*time.Second)
	def(&c.Heartbeat, time.Second)
	def(&c.MinBackoff, 100*time.Millisecond)
	def(&c.MaxBackoff, 5*time.Second)
	def(&c.PollInterval, 5*time.Second)
	def(&c.Settle, 50*time.Millisecond)
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = c.MinBackoff
	}
	return c
}

// A List is a source's server list as of one revision.
type List struct {
	// Servers are the servers: in key order for etcd (keys compared as
	// bytes), in line order for a file. Line is the line in the file, zero
	// for etcd. The slice is new for each List and never changed afterwards.
	Servers []config.Server
	// Revision says which version of the source the list is. For etcd it is
	// etcd's revision at which the list was read or last changed, the same in
	// every proxy. For a file it counts the file's changes seen since Open,
	// which read revision 1: it is local to the process.
	Revision int64
}

// Status is a source's state, for metrics and the admin listener.
type Status struct {
	// Source is the source's URL.
	Source string
	// Connected says whether the source is reachable: etcd answers, or the
	// file can be read.
	Connected bool
	// Since is when Connected last changed, or when the source was opened.
	Since time.Time
	// Revision is the revision of the list last applied.
	Revision int64
	// Servers is the number of servers in the list last applied.
	Servers int
	// Applied counts the lists applied, Open's included.
	Applied uint64
	// Refused counts the changes refused: a list with a bad server line or a
	// name twice, or one that the apply function refused.
	Refused uint64
	// Refusing says that the latest list was refused: the source serves an
	// older list until a valid one comes.
	Refusing bool
	// Errors counts the failed attempts to reach the source, each retry
	// included.
	Errors uint64
	// Relists counts the times an etcd source read its whole prefix again,
	// after a compaction or after etcd came back.
	Relists uint64
	// LastError is the latest refusal or failure, or empty if none.
	LastError string
}

// A Source is a server list that changes: the keys under an etcd prefix or
// the lines of a file. Open reads the first list; Run watches for changes and
// passes each new list to a function, as the proxy's per-pool update. The
// methods of a Source are safe for concurrent use.
type Source struct {
	url  *URL
	cfg  Config
	log  *slog.Logger
	kind kind

	stop    context.CancelFunc // ends Run
	stopped context.Context
	running sync.Mutex // held by Run
	closed  sync.Once

	mu     sync.Mutex
	list   List
	status Status
}

// kind is what differs between etcd and files.
type kind interface {
	// first reads the first list, retrying until ctx is done if the source
	// does not answer; it fails at once on a list that is not valid.
	first(ctx context.Context, s *Source) (List, error)
	// watch passes changes to s.offer until ctx is done.
	watch(ctx context.Context, s *Source, apply func(List) error)
	// close releases what first acquired.
	close() error
}

// Open parses the servers_from URL rawURL (see ParseURL) and reads its first
// list, which List then returns.
//
// If etcd does not answer, Open retries (logging that it waits, once) until
// ctx is done and then fails with an error naming the endpoints: give ctx a
// deadline for a clear error at start, or none to wait for etcd. A missing or
// unreadable file, and a first list that is not valid (a bad server line, a
// name twice), fail at once: there is no last good list to keep serving. An
// empty prefix or a file of no servers is a valid, empty list.
func Open(ctx context.Context, rawURL string, cfg Config) (*Source, error) {
	u, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Source{url: u, cfg: cfg, log: cfg.Logger.With("source", u.String())}
	s.stopped, s.stop = context.WithCancel(context.Background())
	s.status = Status{Source: u.String(), Connected: true, Since: time.Now()}
	switch u.Scheme {
	case "etcd":
		s.kind, err = newEtcdKind(u, cfg)
	default:
		s.kind = newFileKind(u, cfg)
	}
	if err != nil {
		return nil, err
	}
	l, err := s.kind.first(ctx, s)
	if err != nil {
		s.kind.close()
		return nil, err
	}
	s.mu.Lock()
	s.list = l
	s.status.Revision, s.status.Servers, s.status.Applied = l.Revision, len(l.Servers), 1
	s.mu.Unlock()
	return s, nil
}

// URL returns the source's parsed URL.
func (s *Source) URL() *URL { return s.url }

// List returns the list last applied: Open's, or the latest that Run's apply
// function accepted.
func (s *Source) List() List {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.list
}

// Status returns the source's state.
func (s *Source) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Run watches the source and calls apply with each valid list that differs
// from the last one applied (servers, their order and weights; for a file,
// not the lines they are on), in the order of the source's revisions, from
// one goroutine. A list that is not valid, or that apply refuses by
// returning an error, is logged and counted, and the last list applied stays
// the one to compare with: the caller keeps serving it.
//
// Run returns when ctx is done or the source is closed, and at once if
// another Run is under way. Between Open and Run no change is lost: an etcd
// source watches from the revision after Open's list, and a file source
// reads the file when Run starts.
func (s *Source) Run(ctx context.Context, apply func(List) error) error {
	if !s.running.TryLock() {
		return errors.New("membership: Run called twice on one Source")
	}
	defer s.running.Unlock()
	if s.stopped.Err() != nil {
		return fmt.Errorf("membership: %s: Run after Close", s.url)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.stopped, cancel)
	defer stop()
	s.kind.watch(ctx, s, apply)
	return nil
}

// Close stops Run, waits for it to return and releases the source's
// connection. Close may be called more than once.
func (s *Source) Close() error {
	var err error
	s.closed.Do(func() {
		s.stop()
		s.running.Lock() // Run has returned
		defer s.running.Unlock()
		err = s.kind.close()
	})
	return err
}

// offer validates a new list (err is why it is not valid) and, if it differs
// from the last applied, passes it to apply. It runs on Run's goroutine.
func (s *Source) offer(l List, err error, apply func(List) error) {
	s.mu.Lock()
	last := s.list
	s.mu.Unlock()
	if err == nil && sameServers(l.Servers, last.Servers) {
		s.mu.Lock()
		s.list.Revision, s.status.Revision = l.Revision, l.Revision
		s.validLocked(l)
		s.mu.Unlock()
		return
	}
	if err == nil {
		err = apply(l)
		if err != nil {
			err = fmt.Errorf("membership: %s: revision %d refused: %w", s.url, l.Revision, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.status.Refused++
		s.status.Refusing = true
		s.status.LastError = err.Error()
		s.log.Warn("membership: server list refused; the last good list keeps serving",
			"revision", l.Revision, "serving", s.list.Revision, "err", err)
		return
	}
	s.list = l
	s.status.Revision, s.status.Servers = l.Revision, len(l.Servers)
	s.status.Applied++
	// Debug: the apply function's owner says what the change did (the
	// proxy logs the ring it made), and one line a change is enough.
	s.log.Debug("membership: server list changed", "revision", l.Revision, "servers", len(l.Servers))
	s.validLocked(l)
}

// validLocked records that l, a list taken or the same as the one serving,
// is valid, logging it if lists were refused before it: the last refusal's
// warning is not the state any more. s.mu is held.
func (s *Source) validLocked(l List) {
	if !s.status.Refusing {
		return
	}
	s.status.Refusing = false
	s.log.Info("membership: server list valid again", "revision", l.Revision, "servers", len(l.Servers))
}

// reachable records that the source answered, logging the change of state if
// it had not.
func (s *Source) reachable() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status.Connected {
		return
	}
	down := time.Since(s.status.Since)
	s.status.Connected, s.status.Since = true, time.Now()
	s.log.Info("membership: source reachable again", "down", down.Round(time.Millisecond), "serving", s.list.Revision)
}

// unreachable records a failed attempt to reach the source, logging the
// change of state if it was reachable: once per outage, not once per retry.
func (s *Source) unreachable(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status.Errors++
	s.status.LastError = err.Error()
	if !s.status.Connected {
		return
	}
	s.status.Connected, s.status.Since = false, time.Now()
	if s.status.Applied == 0 {
		// Open is still waiting for the first list: none serves yet.
		s.log.Warn("membership: source unreachable; retrying for the first list", "err", err)
		return
	}
	s.log.Warn("membership: source unreachable; the last list keeps serving while retrying", "serving", s.list.Revision, "err", err)
}

func (s *Source) relisted() {
	s.mu.Lock()
	s.status.Relists++
	s.mu.Unlock()
}

// backoff is the wait between attempts to reach a source.
type backoff struct {
	min, max, next time.Duration
}

func newBackoff(cfg Config) *backoff { return &backoff{min: cfg.MinBackoff, max: cfg.MaxBackoff} }

// wait sleeps for the next delay, or until ctx is done; it reports whether
// ctx is still live.
func (b *backoff) wait(ctx context.Context) bool {
	if b.next == 0 {
		b.next = b.min
	}
	d := b.next + rand.N(b.next/5+1)
	b.next = min(2*b.next, b.max)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (b *backoff) reset() { b.next = 0 }

// Read returns the servers of the servers_from URL rawURL once, for commands
// that route or analyse a pool without watching it. If ctx has no deadline,
// Read gives up after ReadTimeout. An invalid list is an error.
func Read(ctx context.Context, rawURL string) ([]config.Server, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ReadTimeout)
		defer cancel()
	}
	s, err := Open(ctx, rawURL, Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.List().Servers, nil
}
