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
	if !s.ejected.Load() && o.replayRunning.CompareAndSwap(false, true) && !s.spawn(s.replayLoop) {
		o.replayRunning.Store(false)
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
