package proxy

import (
	"bytes"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chash-dev/chash/internal/dist"
)

// Warm-up after a ring change.
//
// When a pool with warmup changes its ring (a reload, UpdateServers, an
// ejection, a readmission, a drain), the keys of the ranges that moved are
// cold on their new servers while their previous servers still hold them. For
// the pool's warmup after the change, a window stays open (state.warm), and:
//
//   - a retrieval (get, gets, gat, gats, mg) that misses at a key's new
//     server, for a key whose previous server is another one (decided by
//     routing the key over the previous ring as well: two lookups, only on a
//     miss), reads the key from its previous server, with its flags, time to
//     live and cas; a hit answers the client as the new server would have,
//     and is copied to the new server in the background (warmCopier). The copy
//     is an add, so that it never replaces a value written since; then the
//     previous server's copy is deleted if its cas is still the one read, and
//     if it is not (it was deleted or written meanwhile) the copy is deleted
//     again. An add not stored (the key is there already: a write since, or
//     another proxy's copy) leaves the previous copy to whoever put it there.
//     So a value copied is never older than what the previous server
//     holds, and the previous server keeps no copy that could come back.
//   - a write (set, add, ..., the meta commands) goes to the new server and
//     deletes the previous server's copy: at the same time for writes that
//     store a value, first for deletes (md at the previous server, then the
//     client's delete at the new one), so that a copy racing with the delete
//     sees it and takes itself back. A write that works on the item (incr,
//     append, add, cas, touch, ...: planRequest.needsItem) first reads it
//     from the previous server and adds it at the new one, so that it finds
//     the item a read would have found; a touch that finds a copy there
//     already leaves the previous copy to the copy's conditional delete
//     (the touch keeps the cas, so the copy would take itself back).
//
// A cas the client read at a key's previous server is that server's: each
// copy's cas at its new server is recorded in the window (noteCopy), and a
// conditional write whose cas is the item's the copy was made from is sent
// with the copy's (client.recast).
//
// Keys whose server did not change never pay a second read, and when no
// window is open a request pays one test of a bool (state.planned). A change
// while a window is open opens a window chained to it (or, if it opens none,
// keeps it): a key that misses at its previous server of the last change is
// read from its server before the change before, and so on, for the windows
// still open (at most maxWindows). Warm-up reads, hits and copies are counted
// (chash_proxy_warmup_*).

// window is a warm-up window: the routing before the last ring change.
type window struct {
	// router and live are the previous ring and its servers; with
	// replicas > 1, router is a dist.ReplicaRouter and a key's previous
	// server is the first of its replica set that is not ejected or skip.
	router   dist.Router
	rrouter  dist.ReplicaRouter
	live     []*server
	replicas int
	// skip is a server the previous routing did not read: one readmitted in
	// a pool with replicas, whose ring did not change.
	skip  *server
	until time.Time
	// older are the windows that were open when this one opened, the
	// newest first; at most maxWindows-1.
	older []*window
	// reads, hits and copies are the pool's counts when it opened, so that
	// its close logs its own.
	reads, hits, copies uint64

	// copied maps each copy made in the window to the cas of the item it
	// was made from, for a client that read the item there (recast).
	mu     sync.Mutex
	copied map[copyAt]casPair
	// filled are the keys copied to their new replicas after a hit at
	// another (client.fill), at most maxCopied.
	filled map[string]struct{}
}

// copyAt is a key's copy at a server.
type copyAt struct {
	srv *server
	key string
}

// casPair is the cas of a previous copy and of the copy made from it.
type casPair struct{ from, to uint64 }

// maxCopied bounds a window's record of copies: past it, the record starts
// again (a client's cas of a key copied before then fails, EXISTS, as it
// would without the record).
const maxCopied = 1 << 14

// noteCopy records that key's copy at s, made from an item whose cas was
// from, has cas to. A nil w records nothing.
func (w *window) noteCopy(s *server, key []byte, from, to uint64) {
	if w == nil || from == 0 || to == 0 {
		return
	}
	w.mu.Lock()
	if w.copied == nil || len(w.copied) >= maxCopied {
		w.copied = make(map[copyAt]casPair)
	}
	w.copied[copyAt{s, string(key)}] = casPair{from, to}
	w.mu.Unlock()
}

// copyCas returns the cas of key's copy at s made, in a window of the chain
// that starts at w open at now, from an item whose cas was from.
func (w *window) copyCas(s *server, key []byte, from uint64, now time.Time) (uint64, bool) {
	for o := range w.opened(now) {
		o.mu.Lock()
		c, ok := o.copied[copyAt{s, string(key)}]
		o.mu.Unlock()
		if ok && c.from == from {
			return c.to, true
		}
	}
	return 0, false
}

// firstFill reports whether key was not filled in w yet, and records it.
func (w *window) firstFill(key []byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.filled[string(key)]; ok {
		return false
	}
	if w.filled == nil || len(w.filled) >= maxCopied {
		w.filled = make(map[string]struct{})
	}
	w.filled[string(key)] = struct{}{}
	return true
}

// forgetFill forgets that key was filled in w, so that its next hit fills it
// again.
func (w *window) forgetFill(key []byte) {
	w.mu.Lock()
	delete(w.filled, string(key))
	w.mu.Unlock()
}

// appendJoined appends to dst the servers of set (key's servers now, key
// through the hash tag) that became key's in a change of the chain that
// starts at w, open at now: those not in the key's set before one of them.
// Those in dst already are left out.
func (w *window) appendJoined(dst, set []*server, key []byte, now time.Time) []*server {
	var buf [8]*server
	for o := range w.opened(now) {
		prev := o.prevSet(buf[:0], key)
		for _, s := range set {
			if !containsServer(prev, s) && !containsServer(dst, s) {
				dst = append(dst, s)
			}
		}
	}
	return dst
}

// maxWindows bounds a chain of windows, so that a miss of a key no server
// has looks it up in at most that many previous rings (and reads it from at
// most that many previous servers, when each change moved it): a change past
// it closes the oldest window still open early, and says so in the log.
const maxWindows = 32

// open returns w if it is open at now, else the newest older one that is,
// or nil.
func (w *window) open(now time.Time) *window {
	if w == nil || now.Before(w.until) {
		return w
	}
	for _, o := range w.older {
		if now.Before(o.until) {
			return o
		}
	}
	return nil
}

// chain returns the i-th window of the chain that starts at w (w itself for
// 0), or nil past its end.
func (w *window) chain(i int) *window {
	if i == 0 {
		return w
	}
	if i-1 < len(w.older) {
		return w.older[i-1]
	}
	return nil
}

// opened yields the windows of the chain that starts at w that are open at
// now, the newest first.
func (w *window) opened(now time.Time) iter.Seq[*window] {
	return func(yield func(*window) bool) {
		for i := 0; w.chain(i) != nil; i++ {
			if o := w.chain(i); now.Before(o.until) && !yield(o) {
				return
			}
		}
	}
}

// chained returns the windows a window opening at now chains to: w and its
// older ones that are open, at most maxWindows-1, and how many open ones it
// leaves out (the oldest).
func (w *window) chained(now time.Time) (older []*window, dropped int) {
	if w == nil {
		return nil, 0
	}
	for _, o := range append([]*window{w}, w.older...) {
		switch {
		case !now.Before(o.until):
		case len(older) < maxWindows-1:
			older = append(older, o)
		default:
			dropped++
		}
	}
	return older, dropped
}

// readsFrom reports whether a window of the chain that starts at w, open at
// now, reads keys from s: s owned keys in the ring before it opened. A nil
// w reads from none; at the zero time every window of the chain counts, open
// or not.
func (w *window) readsFrom(s *server, now time.Time) bool {
	for o := range w.opened(now) {
		if slices.Contains(o.live, s) {
			return true
		}
	}
	return false
}

// prevTimeout bounds a call to a key's previous server in a pool without a
// timeout: the call is the proxy's extra, and a previous server that hangs
// (one removed from the list as it hung) must not hold the key's requests
// until the window closes.
const prevTimeout = time.Second

// prevDeadline returns the deadline of a call to a key's previous server, for
// a request whose deadline is deadline (zero for none).
func prevDeadline(deadline time.Time) time.Time {
	if deadline.IsZero() {
		return time.Now().Add(prevTimeout)
	}
	return deadline
}

// unread reports whether warm-up leaves s alone as a key's previous server:
// s is ejected, or it failed within the pool's server_retry_timeout (at
// least prevTimeout) and has not answered since. Its copies are not read, and
// their deletes are owed, not sent, so that a previous server that hangs
// costs one timeout, not one a request.
func (s *server) unread(now time.Time) bool {
	if s.ejected.Load() {
		return true
	}
	if s.failures.Load() == 0 {
		return false
	}
	retry := prevTimeout
	if st := s.pool.state.Load(); st != nil {
		retry = max(retry, st.cfg.ServerRetryTimeout)
	}
	return now.UnixNano()-s.failedAt.Load() < int64(retry)
}

// prevOwner returns the server that served key (already through the hash
// tag) before the window opened, or nil if none can be read.
func (w *window) prevOwner(key []byte, now time.Time) *server {
	var buf [8]*server
	for _, s := range w.prevSet(buf[:0], key) {
		if !s.same(w.skip) && !s.unread(now) {
			return s
		}
	}
	return nil
}

// prevSet appends to dst the servers that held key before the window
// opened: its replica set in the previous ring, the ejected included.
func (w *window) prevSet(dst []*server, key []byte) []*server {
	if w.replicas > 1 {
		var buf [8]int
		idx, err := w.rrouter.AppendN(buf[:0], key, w.replicas)
		if err != nil {
			return dst
		}
		for _, i := range idx {
			dst = append(dst, w.live[i])
		}
		return dst
	}
	i, err := w.router.Lookup(key)
	if err != nil {
		return dst
	}
	return append(dst, w.live[i])
}

// appendStale appends to dst the servers that held key (through the hash
// tag) before the open windows of the chain that starts at w, but for those
// in keep and those dst has.
func (w *window) appendStale(dst []*server, key []byte, keep []*server) []*server {
	now := time.Now()
	var buf [8]*server
	for o := range w.opened(now) {
		for _, s := range o.prevSet(buf[:0], key) {
			if !containsServer(keep, s) && !containsServer(dst, s) {
				dst = append(dst, s)
			}
		}
	}
	return dst
}

// storeLocked makes st the pool's state, replacing cur; pl.mu is held. If the
// pool has warmup (or length is set, for a drain) and the change moved keys
// (the servers that own keys changed, their weights or the hash, or readmitted
// is a server a pool with replicas readmitted), it opens a warm-up window over cur's routing, closed
// by a timer. why names the change, for the log.
func (pl *pool) storeLocked(cur, st *state, why string, readmitted *server, length time.Duration) {
	if length <= 0 {
		length = st.cfg.Warmup
	}
	now := time.Now()
	st.warm = cur.warm.open(now) // kept, unless a new window chains to it
	if length > 0 && cur.router != nil && st.router != nil && !cur.dist.Random && pl.codecOf() != nil {
		// The ring changed: other servers, or the same with other weights,
		// another hash or other replicas (servers kept across a reload, so
		// the lists alone look the same), which the fingerprint tells.
		if !slices.Equal(cur.live, st.live) || cur.fingerprint != st.fingerprint || readmitted != nil && st.replicas > 1 {
			older, dropped := cur.warm.chained(now)
			w := &window{router: cur.router, rrouter: cur.rrouter, live: cur.live, replicas: cur.replicas,
				until: now.Add(length), older: older,
				reads: pl.stats.warmReads.Load(), hits: pl.stats.warmHits.Load(), copies: pl.stats.warmCopies.Load()}
			if dropped > 0 {
				pl.proxy.log.Warn(why+": too many ring changes in the warm-up windows: the oldest closes early, "+
					"the keys it moved that were not read since are cold", "pool", pl.name, "windows", maxWindows)
			}
			if slices.Equal(cur.live, st.live) {
				w.skip = readmitted
			}
			st.warm = w
			pl.stats.windows.Add(1)
			pl.proxy.log.Info(why+": warm-up window open", "pool", pl.name, "for", length.String())
			time.AfterFunc(length, func() { pl.closeWindow(w) })
		}
	}
	st.planned = st.planned || st.warm != nil
	pl.undrained(cur, st)
	pl.state.Store(st)
}

// undrained makes each server drained under cur but not under st, that owns
// keys again, reconnect before it serves if it owes deletes of the keys
// written while it was drained (oweOut), so that they are done first.
// pl.mu is held.
func (pl *pool) undrained(cur, st *state) {
	for n := range cur.drained {
		if s := st.servers[n]; s != nil && !st.drained[n] && cur.servers[n] == s && s.owes() {
			s.owed.gen.Add(1)
		}
	}
}

// closeWindow closes the warm-up window w if it is still open, swapping in a
// copy of the state without it.
func (pl *pool) closeWindow(w *window) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	cur := pl.state.Load()
	if cur.warm != w {
		return // a later change replaced it, or chained to it
	}
	st := *cur
	st.warm = w.open(time.Now()) // an older window still open, if any
	st.planned = st.replicas > 1 || st.full != nil || st.drainFull != nil || st.warm != nil
	pl.state.Store(&st)
	// Its own counts: those while it was open, with any window open with it.
	pl.proxy.log.Info("warm-up window closed", "pool", pl.name, "reads", pl.stats.warmReads.Load()-w.reads,
		"hits", pl.stats.warmHits.Load()-w.hits, "copies", pl.stats.warmCopies.Load()-w.copies)
	pl.drainsDone(w, &st)
}

// copyJob is a value read from a key's previous server, to copy to its new
// servers and then delete from the previous ones.
type copyJob struct {
	key  []byte // as the servers store it
	it   item   // what the previous server held
	from *server
	to   []*server
	// fill, if set, is the window that recorded the job (firstFill): it
	// reads the item from from first, a replica of the key that a client's
	// read hit, whose copy goes to the replicas a change made the key's.
	fill   *window
	queued int64 // the bytes enqueue counted
	// del deletes from's copy, if its cas is still it.cas: not when from is
	// one of the key's replicas still.
	del bool
	// drop are the key's other previous servers that are not its servers
	// any more: their copies are deleted.
	drop []*server
}

// dropStale makes j delete the copies of its key (hashed: through the hash
// tag) at the servers that held it before the open windows of the chain that
// starts at w, but for those in keep; those warm-up leaves alone owe the
// delete instead (server.unread).
func (j *copyJob) dropStale(w *window, hashed []byte, keep []*server, now time.Time) {
	for _, s := range w.appendStale(nil, hashed, keep) {
		if s.unread(now) {
			s.owe(j.key, false)
		} else {
			j.drop = append(j.drop, s)
		}
	}
}

// maxCopyBytes bounds the values of the copies waiting for the copier; past
// it, copies are dropped (chash_proxy_warmup_copies_dropped_total) and the
// keys stay cold.
const maxCopyBytes = 64 << 20

// copyBatch is the most copies the copier pipelines at once.
const copyBatch = 64

// warmCopier copies warmed values to their new servers, in the background,
// for a pool: a goroutine started at the first copy, which ends when the pool
// stops or the proxy closes.
type warmCopier struct {
	pl    *pool
	once  sync.Once
	jobs  chan *copyJob
	bytes atomic.Int64 // of the values queued
	calls []*call
}

// enqueue hands j to the copier, unless it holds maxCopyBytes already.
func (w *warmCopier) enqueue(j *copyJob) {
	w.once.Do(func() {
		w.jobs = make(chan *copyJob, 4096)
		w.pl.proxy.wg.Add(1)
		go w.run()
	})
	n := int64(len(j.it.value))
	j.queued = n
	if w.bytes.Add(n) > maxCopyBytes {
		w.bytes.Add(-n)
		w.pl.stats.warmDropped.Add(1)
		return
	}
	select {
	case w.jobs <- j:
	default:
		w.bytes.Add(-n)
		w.pl.stats.warmDropped.Add(1)
	}
}

// run copies the jobs queued, a batch at a time, until the pool stops.
func (w *warmCopier) run() {
	defer w.pl.proxy.wg.Done()
	batch := make([]*copyJob, 0, copyBatch)
	for {
		select {
		case j := <-w.jobs:
			batch = append(batch[:0], j)
		case <-w.pl.stopped:
			return
		case <-w.pl.proxy.ctx.Done():
			return
		}
	more:
		for len(batch) < copyBatch {
			select {
			case j := <-w.jobs:
				batch = append(batch, j)
			default:
				break more
			}
		}
		w.copy(batch)
		for _, j := range batch {
			w.bytes.Add(-j.queued)
		}
	}
}

// copy copies a batch of jobs: adds at the new servers, then deletes at the
// previous ones, then takes back the copies of keys whose previous copy
// changed meanwhile; each step pipelined over the batch. A delete that
// fails is owed.
func (w *warmCopier) copy(batch []*copyJob) {
	pl := w.pl
	ic := pl.codecOf()
	st := pl.state.Load()
	// sent is a call of a step, and the job and server it is for.
	type sent struct {
		cl     *call
		j      *copyJob
		srv    *server
		cas    bool // a delete conditioned on the previous copy's cas
		verify bool // a fill's read of the item it copied
		found  bool // a fill's read of the item its add found
	}
	var step []sent
	send := func(j *copyJob, s *server, build func(cl *call) ([]byte, error)) {
		cl := w.call(len(step), st)
		cl.srv = s
		step = append(step, sent{cl: cl, j: j, srv: s})
		sendBuilt(cl)(build(cl))
	}
	wait := func(f func(x sent)) {
		for _, x := range step {
			<-x.cl.done
			pl.proxy.mem.release(x.cl.held)
			f(x)
		}
		step = step[:0]
	}

	// Adds.
	type copied struct {
		j   *copyJob
		srv *server
		cas uint64
	}
	var adds []copied
	// The items of fills: read where a client's read found them.
	for _, j := range batch {
		if j.fill != nil {
			send(j, j.from, func(cl *call) ([]byte, error) { return ic.appendItemRead(cl.out[:0], j.key, cl.reply) })
		}
	}
	wait(func(x sent) {
		if x.cl.err != nil || !ic.readItem(x.cl.reply, &x.j.it) {
			x.j.to = nil // gone meanwhile, or its server failed: nothing to copy
		}
	})
	if hook := testHookFilled.Load(); hook != nil {
		(*hook)(batch)
	}
	// held are the jobs whose adds all found the key at its new servers: a
	// client's write in the window, or another proxy's copy of the same
	// read, put it there. Whoever did deletes the previous copies (the
	// client's write, or the other proxy's copy if they are unchanged).
	// This copy leaves them: were it to delete them, the other proxy's
	// conditional delete would fail and take back its copy as stale, and
	// the key would be on no server.
	held := map[*copyJob]bool{}
	for _, j := range batch {
		for _, s := range j.to {
			send(j, s, func(cl *call) ([]byte, error) { return ic.appendStore(cl.out[:0], j.key, &j.it, true, cl.reply) })
		}
		held[j] = len(j.to) > 0
	}
	// found are the fills' adds that found the key at a replica that
	// joined its set: a client's write, another proxy's fill, or a copy
	// left there when the server left the key's set before, which writes
	// since did not reach (read below).
	var found []copied
	wait(func(x sent) {
		if x.cl.err != nil || !ic.held(x.cl.reply) {
			held[x.j] = false
		} else if x.j.fill != nil {
			found = append(found, copied{x.j, x.srv, 0})
		}
		if x.cl.err == nil {
			if cas, ok := ic.stored(x.cl.reply); ok {
				adds = append(adds, copied{x.j, x.srv, cas})
				pl.stats.warmCopies.Add(1)
				st.warm.noteCopy(x.srv, x.j.key, x.j.it.cas, cas)
			}
		}
	})

	// Deletes of the previous copies: from's if unchanged, the others'
	// whatever they hold. A fill's item is read again where it was read:
	// deleted or written there since its read (a client's delete reaches
	// every replica, and may have come before the copy), the copy goes.
	filled := map[*copyJob]bool{}
	for _, a := range adds {
		if a.j.fill != nil && !filled[a.j] {
			filled[a.j] = true
			send(a.j, a.j.from, func(cl *call) ([]byte, error) { return ic.appendItemRead(cl.out[:0], a.j.key, cl.reply) })
			step[len(step)-1].verify = true
		}
	}
	for _, f := range found {
		send(f.j, f.srv, func(cl *call) ([]byte, error) { return ic.appendItemRead(cl.out[:0], f.j.key, cl.reply) })
		step[len(step)-1].found = true
	}
	for _, j := range batch {
		if held[j] {
			continue
		}
		if j.del {
			send(j, j.from, func(cl *call) ([]byte, error) { return ic.appendDelete(cl.out[:0], j.key, j.it.cas, cl.reply) })
			step[len(step)-1].cas = true
		}
		for _, s := range j.drop {
			send(j, s, func(cl *call) ([]byte, error) { return ic.appendDelete(cl.out[:0], j.key, 0, cl.reply) })
		}
	}
	changed := map[*copyJob]bool{}
	var now item
	var other []copied // found holding another value than the fill's
	wait(func(x sent) {
		switch {
		case x.found:
			if x.cl.err == nil && ic.readItem(x.cl.reply, &now) && (now.flags != x.j.it.flags || !bytes.Equal(now.value, x.j.it.value)) {
				other = append(other, copied{x.j, x.srv, now.cas})
			}
		case x.verify:
			if x.cl.err != nil || !ic.readItem(x.cl.reply, &now) || now.cas != x.j.it.cas {
				changed[x.j] = true
			}
		case x.cl.err != nil:
			x.srv.owe(x.j.key, true) // it may still hold the key
		case x.cas && !ic.deleted(x.cl.reply):
			changed[x.j] = true
		}
	})

	// A value other than the one the replica that answered holds: a write
	// since (which reached that replica too, and the next fill copies) or a
	// copy the writes since it left the key's set did not reach, which a
	// read failing over would return. Either way it goes, if unchanged: the
	// key is cold there, never stale, until its next hit fills it again.
	for _, o := range other {
		send(o.j, o.srv, func(cl *call) ([]byte, error) { return ic.appendDelete(cl.out[:0], o.j.key, o.cas, cl.reply) })
	}
	wait(func(x sent) {
		if x.cl.err == nil && ic.deleted(x.cl.reply) {
			x.j.fill.forgetFill(x.j.key)
		}
	})
	if len(changed) == 0 {
		return
	}

	// The previous copy was deleted or written while it was copied: the copy
	// may be stale; delete it unless written over since (its cas changed).
	for _, a := range adds {
		if changed[a.j] {
			send(a.j, a.srv, func(cl *call) ([]byte, error) { return ic.appendDelete(cl.out[:0], a.j.key, a.cas, cl.reply) })
		}
	}
	wait(func(x sent) {
		switch {
		case x.cl.err != nil:
			x.srv.owe(x.j.key, true)
		case ic.deleted(x.cl.reply):
			// Not counted otherwise: a copy written over since is a
			// client's value now, and nothing was undone.
			pl.stats.warmUndone.Add(1)
		}
	})
}

// testHookFilled, if set, is called with each batch once its fills have read
// their items, before the copies are made.
var testHookFilled atomic.Pointer[func(batch []*copyJob)]

// call returns the copier's i-th call, ready to send with the pool's timeout.
func (w *warmCopier) call(i int, st *state) *call {
	for len(w.calls) <= i {
		w.calls = append(w.calls, &call{done: make(chan struct{}, 1), reply: w.pl.codec.newReply()})
	}
	cl := w.calls[i]
	cl.err, cl.held, cl.out = nil, 0, cl.out[:0]
	cl.start = time.Now()
	cl.deadline = time.Time{}
	if t := st.timeout(); t > 0 {
		cl.deadline = cl.start.Add(t)
	}
	return cl
}
