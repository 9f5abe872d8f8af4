package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Deletes that survive a server that cannot be reached.
//
// A write that does not reach a server that should have it — the server is
// ejected, frozen, down, or answered SERVER_ERROR — leaves there the value the
// write meant to replace or delete: read later from that server (a replica a
// read fails over to, a server readmitted after an ejection, a server that
// comes back after a freeze), it would be a stale value, or a deleted key
// coming back (twemproxy #604). So the server owes a delete of the key: the
// proxy remembers it, and replays every delete owed, on a connection of its
// own, before the server serves reads again:
//
//   - before an ejected server is readmitted: the probe replays them once the
//     server answers it, and a replay that fails keeps it out;
//   - on every new connection to the server, before the connection's first
//     request, and a write that failed on a connection makes the server's
//     other connections reconnect before their next request, so none serves
//     a read first;
//   - in the background, while the server owes any (replayLoop), and until
//     then reads of a pool with replicas skip it.
//
// A replayed delete of a key written since only costs a miss. The set is
// bounded (Proxy.maxOwed): a server that owes more keys is emptied whole
// (memcached's flush_all) before it serves again; chash_proxy_owed_* metrics
// count both.

// defaultMaxOwed is how many deletes a server may owe before it is emptied
// instead: 64 Ki keys of at most 250 bytes hold at most 16 MiB.
const defaultMaxOwed = 1 << 16

// forgetter is a codec that can replay owed deletes.
type forgetter interface {
	// forget deletes keys from the server on rw (a connection of its own,
	// with a deadline set), having first emptied it if flush is set, and
	// returns nil once the server has done it all.
	forget(rw io.ReadWriter, keys [][]byte, flush bool) error
}

// owedSet is the deletes a server owes.
type owedSet struct {
	mu   sync.Mutex
	keys map[string]uint64 // key -> the sequence number of its last owe
	seq  uint64
	// flushSeq is the sequence number of the owe that overflowed the set,
	// zero if none did: the server must then be emptied.
	flushSeq uint64
	// n is len(keys), plus 1 when flushSeq is set, for lock-free tests.
	n atomic.Int64
	// gen counts writes that failed on a connection: a connection made
	// before the last one reconnects, replaying the deletes, before it
	// serves (serverConn.queue).
	gen atomic.Uint64

	replayMu      sync.Mutex // one replay at a time
	replayRunning atomic.Bool

	total    atomic.Uint64 // deletes owed, ever
	replayed atomic.Uint64 // deletes replayed
	flushes  atomic.Uint64 // times the server was emptied
}

// owes reports whether the server owes deletes.
func (s *server) owes() bool { return s.owed.n.Load() > 0 }

// owe records that the server missed a write of key: lost says the write
// failed on a connection (a timeout, a reset), after which the server's other
// connections reconnect before they serve.
func (s *server) owe(key []byte, lost bool) {
	o := &s.owed
	o.mu.Lock()
	o.seq++
	switch {
	case o.flushSeq != 0:
		o.flushSeq = o.seq // the flush covers it
	case len(o.keys) >= s.pool.proxy.maxOwedKeys():
		o.flushSeq = o.seq
		clear(o.keys)
		s.pool.proxy.log.Warn("server owes too many deletes: it will be emptied (flush_all) before it serves again",
			"pool", s.pool.name, "server", s.name, "max", s.pool.proxy.maxOwedKeys())
	default:
		if o.keys == nil {
			o.keys = make(map[string]uint64)
		}
		o.keys[string(key)] = o.seq
	}
	n := int64(len(o.keys))
	if o.flushSeq != 0 {
		n++
	}
	o.n.Store(n)
	o.mu.Unlock()
	o.total.Add(1)
	if lost {
		o.gen.Add(1)
	}
	if !s.ejected.Load() {
		s.startReplay()
	}
}

// oweFlush records that the server must be emptied before it serves again,
// its connections reconnecting first, as for a failed write.
func (s *server) oweFlush() {
	o := &s.owed
	o.mu.Lock()
	o.seq++
	o.flushSeq = o.seq
	clear(o.keys)
	o.n.Store(1)
	o.mu.Unlock()
	o.gen.Add(1)
	if !s.ejected.Load() {
		s.startReplay()
	}
}

// startReplay starts the server's replayLoop unless it runs.
func (s *server) startReplay() {
	o := &s.owed
	if o.replayRunning.CompareAndSwap(false, true) && !s.spawn(s.replayLoop) {
		o.replayRunning.Store(false)
	}
}

// Deletes owed by a server that leaves its pool (a reload, a membership list
// without it) outlive the server: the memcached at its address still holds
// what they were to remove, and serves it again if a server of that address
// joins a pool of the proxy later (the same list back, a lease renewed). The
// proxy keeps them by address (Proxy.left) and hands them to that server
// before it serves. A server that left is read by warm-up and answers the
// requests routed to it for a grace after it leaves, and replays what it
// owes meanwhile: what it owes when it leaves is kept, and what it owes still
// when it is closed, or, if a server of its address is back by then, owed by
// that one. A replayed delete of a key written since only costs a miss.

// snapshot returns the keys owed, and whether the server must be emptied.
func (o *owedSet) snapshot() (keys []string, flush bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	keys = make([]string, 0, len(o.keys))
	for k := range o.keys {
		keys = append(keys, k)
	}
	return keys, o.flushSeq != 0
}

// leftOwed is the deletes owed by servers that left, by address.
type leftOwed struct {
	mu   sync.Mutex
	sets map[string]*leftSet
	keys int // in sets
}

// leftSet is the deletes owed at one address: keys, or, past the bound, the
// whole server (flush).
type leftSet struct {
	keys  map[string]struct{}
	flush bool
}

// maxLeftAddrs bounds the addresses leftOwed keeps; past it, the deletes of
// another address are dropped, and logged.
const maxLeftAddrs = 4096

// keep adds the deletes s owes to those kept for its address. Past max keys
// in all, the largest sets are kept as flushes. A memcached server that left
// the pool's list (left) owes a flush: writes of its keys go to other
// servers while it is out, and none is owed, so a server of its address
// that joins again is emptied before it serves (twemproxy #604 for servers
// removed and added again).
func (l *leftOwed) keep(s *server, max int, left bool) {
	keys, flush := s.owed.snapshot()
	if _, ok := s.pool.codec.(forgetter); !ok {
		left = false // a Redis server keeps what it holds (README)
	}
	flush = flush || left
	if !flush && len(keys) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	set := l.sets[s.addr]
	if set == nil {
		if len(l.sets) >= maxLeftAddrs {
			s.pool.proxy.log.Warn("deletes owed by a server that left are dropped: too many addresses kept",
				"pool", s.pool.name, "server", s.name, "keys", len(keys), "max_addresses", maxLeftAddrs)
			return
		}
		if l.sets == nil {
			l.sets = make(map[string]*leftSet)
		}
		set = &leftSet{keys: make(map[string]struct{})}
		l.sets[s.addr] = set
	}
	if flush {
		set.flush = true
	}
	if !set.flush {
		for _, k := range keys {
			if _, ok := set.keys[k]; !ok {
				set.keys[k] = struct{}{}
				l.keys++
			}
		}
	}
	for l.keys > max || set.flush && len(set.keys) > 0 {
		big := set
		if !set.flush {
			for _, x := range l.sets {
				if len(x.keys) > len(big.keys) {
					big = x
				}
			}
		}
		l.keys -= len(big.keys)
		big.keys, big.flush = nil, true
	}
}

// take hands s, a server just made that serves nothing yet, the deletes kept
// for its address: its first connection replays them.
func (l *leftOwed) take(s *server) {
	if _, ok := s.pool.codec.(forgetter); !ok {
		return // a Redis pool's server: the deletes wait for a memcached one
	}
	l.mu.Lock()
	set := l.sets[s.addr]
	if set != nil {
		delete(l.sets, s.addr)
		l.keys -= len(set.keys)
	}
	l.mu.Unlock()
	if set == nil {
		return
	}
	o := &s.owed
	o.mu.Lock()
	if o.keys == nil {
		o.keys = make(map[string]uint64)
	}
	for k := range set.keys {
		o.seq++
		o.keys[k] = o.seq
	}
	if set.flush {
		o.seq++
		o.flushSeq = o.seq
		clear(o.keys)
	}
	n := int64(len(o.keys))
	if o.flushSeq != 0 {
		n++
	}
	o.n.Store(n)
	o.mu.Unlock()
	o.total.Add(uint64(len(set.keys)))
	if set.flush {
		s.pool.proxy.log.Info("server joins again after it left; emptied (flush_all) before it serves, as values written elsewhere meanwhile would come back",
			"pool", s.pool.name, "server", s.name)
	} else {
		s.pool.proxy.log.Info("server joins owing the deletes it owed when it left", "pool", s.pool.name, "server", s.name,
			"keys", len(set.keys))
	}
	if !s.ejected.Load() {
		s.startReplay()
	}
}

// replayBatch is the most deletes replayed in one exchange, within one
// timeout.
const replayBatch = 1024

// replay replays the deletes the server owes on conn, a connection of its
// own, each batch of them within timeout, and forgets those it replayed. It
// returns nil if the server owes nothing more than what was owed since it
// began.
func (s *server) replay(conn net.Conn, timeout time.Duration) error {
	o := &s.owed
	o.replayMu.Lock()
	defer o.replayMu.Unlock()
	o.mu.Lock()
	flushSeq := o.flushSeq
	keys := make([][]byte, 0, len(o.keys))
	seqs := make([]uint64, 0, len(o.keys))
	for k, q := range o.keys {
		keys = append(keys, []byte(k))
		seqs = append(seqs, q)
	}
	o.mu.Unlock()
	if flushSeq == 0 && len(keys) == 0 {
		return nil
	}
	f, ok := s.pool.codec.(forgetter)
	if !ok {
		return errors.New("the pool's protocol cannot replay deletes")
	}
	if timeout <= 0 {
		timeout = time.Second
	}
	flush := flushSeq != 0
	for done := 0; done < len(keys) || flush; {
		n := min(len(keys)-done, replayBatch)
		conn.SetDeadline(time.Now().Add(timeout))
		if err := f.forget(conn, keys[done:done+n], flush); err != nil {
			return fmt.Errorf("replaying %d owed deletes: %w", len(keys), err)
		}
		done += n
		flush = false
	}
	o.mu.Lock()
	for i, k := range keys {
		if o.keys[string(k)] == seqs[i] {
			delete(o.keys, string(k))
		}
	}
	if flushSeq != 0 && o.flushSeq == flushSeq {
		o.flushSeq = 0
	}
	n := int64(len(o.keys))
	if o.flushSeq != 0 {
		n++
	}
	o.n.Store(n)
	o.mu.Unlock()
	o.replayed.Add(uint64(len(keys)))
	if flushSeq != 0 {
		o.flushes.Add(1)
	}
	s.pool.proxy.log.Info("owed deletes replayed", "pool", s.pool.name, "server", s.name, "keys", len(keys), "flush", flushSeq != 0)
	return nil
}

// replayLoop replays the deletes the server owes, on connections of its own,
// until it owes none, the server is ejected (the probe then replays them
// before readmitting it) or closed: first at once, then every second, or
// server_retry_timeout if shorter.
func (s *server) replayLoop() {
	defer s.owed.replayRunning.Store(false)
	wait := 10 * time.Millisecond
	for {
		if !sleep(s.ctx, wait) {
			return
		}
		st := s.pool.state.Load()
		if !s.owes() || s.ejected.Load() {
			return
		}
		err := s.withConn(st.timeout(), s.replay)
		if err == nil && !s.owes() {
			return
		}
		if err != nil {
			s.pool.proxy.log.Debug("owed deletes not replayed", "pool", s.pool.name, "server", s.name, "err", err)
		}
		wait = min(max(st.cfg.ServerRetryTimeout, 10*time.Millisecond), time.Second)
	}
}

// maxOwedKeys returns how many deletes a server may owe before it is emptied
// instead.
func (p *Proxy) maxOwedKeys() int {
	if p.maxOwed > 0 {
		return p.maxOwed
	}
	return defaultMaxOwed
}
