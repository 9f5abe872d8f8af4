package proxy

import (
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
//     again. So a value copied is never older than what the previous server
//     holds, and the previous server keeps no copy that could come back.
//   - a write (set, add, ..., the meta commands) goes to the new server and
//     deletes the previous server's copy: at the same time for writes that
//     store a value, first for deletes (md at the previous server, then the
//     client's delete at the new one), so that a copy racing with the delete
//     sees it and takes itself back.
//
// Keys whose server did not change never pay a second read, and when no
// window is open a request pays one test of a bool (state.planned). Keys that
// moved twice within a window are warmed from the ring just before the last
// change. Warm-up reads, hits and copies are counted (chash_proxy_warmup_*).

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
}

// prevOwner returns the server that served key (already through the hash
// tag) before the window opened, or nil if none can be read.
func (w *window) prevOwner(key []byte) *server {
	if w.replicas > 1 {
		var buf [8]int
		idx, err := w.rrouter.AppendN(buf[:0], key, w.replicas)
		if err != nil {
			return nil
		}
		for _, i := range idx {
			if s := w.live[i]; s != w.skip && !s.ejected.Load() {
				return s
			}
		}
		return nil
	}
	i, err := w.router.Lookup(key)
	if err != nil {
		return nil
	}
	if s := w.live[i]; !s.ejected.Load() {
		return s
	}
	return nil
}

// storeLocked makes st the pool's state, replacing cur; pl.mu is held. If the
// pool has warmup (or length is set, for a drain) and the change moved keys
// (the servers that own keys changed, or readmitted is a server a pool with
// replicas readmitted), it opens a warm-up window over cur's routing, closed
// by a timer. why names the change, for the log.
func (pl *pool) storeLocked(cur, st *state, why string, readmitted *server, length time.Duration) {
	if length <= 0 {
		length = st.cfg.Warmup
	}
	if length > 0 && cur.router != nil && st.router != nil && !cur.dist.Random && pl.codecOf() != nil {
		if !slices.Equal(cur.live, st.live) || readmitted != nil && st.replicas > 1 {
			w := &window{router: cur.router, rrouter: cur.rrouter, live: cur.live, replicas: cur.replicas,
				until: time.Now().Add(length)}
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
	pl.state.Store(st)
}

// closeWindow closes the warm-up window w if it is still open, swapping in a
// copy of the state without it.
func (pl *pool) closeWindow(w *window) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	cur := pl.state.Load()
	if cur.warm != w {
		return // a later change replaced it
	}
	st := *cur
	st.warm = nil
	st.planned = st.replicas > 1 || st.full != nil
	pl.state.Store(&st)
	pl.proxy.log.Info("warm-up window closed", "pool", pl.name,
		"reads", pl.stats.warmReads.Load(), "hits", pl.stats.warmHits.Load(), "copies", pl.stats.warmCopies.Load())
	pl.drainsDone(&st)
}

// copyJob is a value read from a key's previous server, to copy to its new
// servers and then delete from the previous one.
type copyJob struct {
	key  []byte // as the servers store it
	it   item   // what the previous server held
	from *server
	to   []*server
	// del deletes the previous server's copy, if its cas is still it.cas:
	// not when that server is one of the key's replicas still.
	del bool
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
			w.bytes.Add(-int64(len(j.it.value)))
		}
	}
}

// copy copies a batch of jobs: adds at the new servers, then deletes at the
// previous ones, then takes back the copies of keys whose previous copy
// changed meanwhile; each step pipelined over the batch.
func (w *warmCopier) copy(batch []*copyJob) {
	pl := w.pl
	ic := pl.codecOf()
	st := pl.state.Load()
	type stored struct {
		j   *copyJob
		srv *server
		cas uint64
	}
	// Adds.
	var adds []stored
	var calls []*call
	for _, j := range batch {
		for _, s := range j.to {
			cl := w.call(len(calls), st)
			cl.out = ic.appendStore(cl.out[:0], j.key, &j.it, true, cl.reply)
			calls = append(calls, cl)
			adds = append(adds, stored{j: j, srv: s})
			s.send(cl)
		}
	}
	for i, cl := range calls {
		<-cl.done
		pl.proxy.mem.release(cl.held)
		if cl.err == nil {
			if cas, ok := ic.stored(cl.reply); ok {
				adds[i].cas = cas
				pl.stats.warmCopies.Add(1)
				continue
			}
		}
		adds[i].srv = nil // not stored: another value is there, or it failed
	}
	// Deletes of the previous copies, if unchanged.
	calls = calls[:0]
	var dels []*copyJob
	for _, j := range batch {
		if !j.del {
			continue
		}
		cl := w.call(len(calls), st)
		cl.out = ic.appendDelete(cl.out[:0], j.key, j.it.cas, cl.reply)
		calls = append(calls, cl)
		dels = append(dels, j)
		j.from.send(cl)
	}
	changed := map[*copyJob]bool{}
	for i, cl := range calls {
		<-cl.done
		pl.proxy.mem.release(cl.held)
		switch {
		case cl.err != nil:
			// The previous server may still hold it: it owes the delete.
			dels[i].from.owe(dels[i].key, true)
		case !ic.deleted(cl.reply):
			changed[dels[i]] = true
		}
	}
	if len(changed) == 0 {
		return
	}
	// The previous copy was deleted or written while it was copied: the copy
	// may be stale, unless written over since (its cas changed).
	calls = calls[:0]
	var undo []stored
	for _, a := range adds {
		if a.srv == nil || !changed[a.j] {
			continue
		}
		cl := w.call(len(calls), st)
		cl.out = ic.appendDelete(cl.out[:0], a.j.key, a.cas, cl.reply)
		calls = append(calls, cl)
		undo = append(undo, a)
		a.srv.send(cl)
	}
	for i, cl := range calls {
		<-cl.done
		pl.proxy.mem.release(cl.held)
		if cl.err != nil {
			undo[i].srv.owe(undo[i].j.key, true)
		}
		pl.stats.warmUndone.Add(1)
	}
}

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
