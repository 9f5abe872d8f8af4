package proxy

import (
	"bytes"
	"slices"
	"time"

	"github.com/chash-dev/chash/internal/dist"
)

// Replicas, and requests planned over several servers.
//
// A pool with replicas: N stores each key on the first N distinct servers of
// its replica set (dist.ReplicaRouter.AppendN over every server that is not
// drained, the ejected included, so that an ejection moves no key):
//
//   - reads (get, gets, gat, gats, mg) go to the first replica that is not
//     ejected and owes no deletes (owed.go), and fail over to the next one
//     not tried when a replica fails (a connection error, a timeout, an
//     ejection, a server's own error: memcached's SERVER_ERROR) and, with
//     read_miss_failover, when it misses. An error about the request
//     (ERROR, CLIENT_ERROR), which every replica would give, is the answer. gat, gats and mg's T touch the
//     replica that answers only. A get of many keys is split by the server of
//     each key, and only the keys of a failed call fail over.
//   - writes that set or remove a key whatever it holds (set, delete, touch,
//     ms in set mode without a cas, md without a cas) go to every replica at
//     once; the client gets the first replica's reply, or the next one's if
//     it failed.
//   - writes whose outcome depends on the stored item (add, replace, append,
//     prepend, cas, incr, decr, ma, ms with another mode or a cas, md with a
//     cas) go to the first replica that is up, which decides: its reply is
//     the client's. If it changed the item, the proxy then reads the item
//     from it (mg) and sets it on the other replicas (ms, with its flags and
//     remaining time to live), or deletes it from them if it is gone. So the
//     replicas hold what the first holds; a cas token is the first replica's
//     own, as reads go there.
//   - a replica that is ejected, or fails a write (a connection error, a
//     timeout, a SERVER_ERROR; not an error about the request), owes the
//     key's delete, replayed before it serves reads again (owed.go). When
//     the deciding replica fails, the next live one not tried decides,
//     whatever its place in the replica set.
//
// Concurrent writes of one key through different connections may leave the
// replicas apart until the key's next write; reads go to the first replica, so
// clients see that one's value unless it fails.
//
// The same planner serves warm-up windows (warmup.go) and the writes of keys
// whose server is ejected in pools without replicas. Each request's plan is
// sent in stages: the first when the request is read (dispatchPlan), like any
// request; the others (failovers, warm-up reads, the deletes after a previous
// server's, the copies after a decision) when its client waits for its replies
// (settle). A plan that must write after its first stage is a barrier: the
// client's next requests are read only once it is done, so that they cannot
// overtake it.

// access is how a request uses its keys.
type access uint8

const (
	// accessNone: the request stores nothing and reads no item (version, me):
	// it goes to the first replica.
	accessNone access = iota
	// accessRead: a retrieval.
	accessRead
	// accessWrite: it sets or changes the item whatever it holds.
	accessWrite
	// accessDelete: it removes the item.
	accessDelete
	// accessCond: its outcome depends on the stored item.
	accessCond
)

// item is a key's value as a server holds it.
type item struct {
	value []byte
	flags uint32
	// exptime is when it expires, as a store's expiration time gives it
	// (memcached: 0 never, seconds from now, or a Unix time).
	exptime int64
	cas     uint64
}

// itemCodec is a codec whose requests can be planned over several servers:
// it reads, stores and deletes items by key (the key as servers store it, a
// meta key base64-decoded) for warm-up copies and replicas. Its append
// methods return an error, and append nothing, if the request they build
// would not reach the server as built (the codec's guard on every request);
// the call is then failed with it, not sent (sendBuilt).
type itemCodec interface {
	forgetter
	// appendItemRead appends a read of key's item with its flags, time to
	// live and cas, and readies rep for its reply.
	appendItemRead(dst []byte, key []byte, rep reply) ([]byte, error)
	// readItem fills it from rep, a reply to appendItemRead or to a
	// request's appendWarmRead, copying the value, and reports whether the
	// key was found.
	readItem(rep reply, it *item) bool
	// appendStore appends a store of it under key, an add if add is set,
	// else a set, asking for the new item's cas.
	appendStore(dst []byte, key []byte, it *item, add bool, rep reply) ([]byte, error)
	// stored reports whether rep, the reply to appendStore, says the item
	// was stored, and its cas.
	stored(rep reply) (cas uint64, ok bool)
	// held reports whether rep, the reply to appendStore's add, says it
	// was not stored because the server holds the key already.
	held(rep reply) bool
	// appendDelete appends a delete of key, only if its cas is cas (any if
	// zero).
	appendDelete(dst []byte, key []byte, cas uint64, rep reply) ([]byte, error)
	// deleted reports whether rep, the reply to appendDelete, says the key
	// was deleted.
	deleted(rep reply) bool
}

// planRequest is a request of an itemCodec.
type planRequest interface {
	access() access
	// hits marks hit[i] for each key i of the call of part (keyCall nil: of
	// the whole request, whose "key" 0 stands for it) that rep holds.
	hits(hit []bool, keyCall []int, part int, rep reply)
	// failed reports whether rep is an error of the server's own (memcached's
	// SERVER_ERROR): it could not do what another server may do. An error
	// about the request itself, which every server would give, is not one.
	failed(rep reply) bool
	// refused reports whether rep is an error about the request itself
	// (memcached's ERROR and CLIENT_ERROR): every server would give it, so
	// it is the client's answer, and no reason to fail over, warm up or owe.
	refused(rep reply) bool
	// changed reports whether rep, the reply to a conditional write, says
	// the item changed.
	changed(rep reply) bool
	// needsItem reports whether a write works on the item stored (its
	// outcome depends on it, or it changes it without replacing it, as
	// touch): in a warm-up window, the item is copied from its previous
	// server first.
	needsItem() bool
	// keepsCas reports whether a write that needsItem leaves the item's
	// cas as it was (touch).
	keepsCas() bool
	// cas returns the cas a conditional write is conditioned on, if it is
	// (cas, a meta command's C), and setCas conditions it on cas instead.
	cas() (uint64, bool)
	setCas(cas uint64)
	// appendWarmRead appends the read of key i from its previous server:
	// what readItem needs for a copy, and what adopt needs to answer the
	// client.
	appendWarmRead(dst []byte, i int, rep reply) ([]byte, error)
	// adopt makes rep, a reply to appendWarmRead of key i that found it,
	// what a server holding the key would have answered the request for key
	// i, and sets it.exptime to the expiration time the request gives, if
	// any (gat, mg's T).
	adopt(rep reply, i int, it *item)
}

// codecOf returns the pool's codec as an itemCodec, or nil if its protocol
// has no plans.
func (pl *pool) codecOf() itemCodec {
	ic, _ := pl.codec.(itemCodec)
	return ic
}

// plan is the state of a request planned over several servers; a clientReq
// keeps its plan for reuse.
type plan struct {
	active  bool
	acc     access
	whole   bool // sent whole (one unit), not split by key
	units   int  // keys, or 1 for a whole request
	barrier bool // later requests wait for this one's stages
	err     error
	answer  int // the call whose reply answers a write, -1 if none
	first   int // the first call of the last stage sent

	// Reads, per unit i: candidate servers cands[off[i]:off[i+1]] in the
	// order to try, the number tried, the call in flight (cur) and the call
	// holding the answer (src), -1 for none; kc[i] is unit i's call of the
	// last stage's split calls, -1 if none.
	cands   []*server
	off     []int
	next    []int
	cur     []int
	src     []int
	kc      []int
	hit     []bool
	warming []bool    // cur is a warm-up read
	depth   []int     // the windows of the chain consulted for a warm-up
	warmSrv []*server // the server of the last warm-up read
	idx     []int     // AppendN's scratch

	// Writes: the key's replicas in order (its server, without replicas);
	// in a warm-up window, its previous servers that are not among them
	// (stale), whose copies the write deletes with the calls
	// staleCalls[0]:staleCalls[1], and for a delete the call of one that
	// had the key (staleFound, -1 for none); the replica deciding a
	// conditional write (-1 for none).
	targets    []*server
	stale      []*server
	staleCalls [2]int
	staleFound int
	primary    int
	tried      uint64 // the targets that were asked to decide, by index
	stage      int
	it         item
	// A conditional write in a warm-up window: the cas the client gave
	// (recast says it gave one), which may be its previous server's.
	clientCas uint64
	recast    bool
	held      bool // a copy of the item was at a target already
}

// planOf returns r's plan, made on first use, reset for a request of units
// units.
func (r *clientReq) planOf(units int) *plan {
	if r.plan == nil {
		r.plan = new(plan)
	}
	p := r.plan
	p.active, p.barrier, p.err, p.answer, p.first = true, false, nil, -1, r.ncalls
	p.units, p.primary, p.tried, p.stage, p.staleCalls, p.staleFound = units, -1, 0, 0, [2]int{}, -1
	p.recast = false
	p.cands, p.off, p.targets, p.stale = p.cands[:0], append(p.off[:0], 0), p.targets[:0], p.stale[:0]
	p.next = resize(p.next, units)
	p.cur = resize(p.cur, units)
	p.src = resize(p.src, units)
	p.kc = resize(p.kc, units)
	p.hit = resize(p.hit, units)
	p.warming = resize(p.warming, units)
	p.depth = resize(p.depth, units)
	p.warmSrv = resize(p.warmSrv, units)
	for i := range units {
		p.next[i], p.cur[i], p.src[i], p.kc[i] = 0, -1, -1, -1
		p.hit[i], p.warming[i], p.depth[i], p.warmSrv[i] = false, false, 0, nil
	}
	return p
}

// resize returns s with length n, reusing its memory.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// unitKey returns the route key of key i of the request (nil for a request
// without keys) and the key as its pool hashes it.
func unitKey(st *state, req request, i int) (key, hashed []byte) {
	if req.nkeys() > 0 {
		key = req.routeKey(i)
	}
	return key, st.cfg.HashKey(key)
}

// replicasOf appends to dst the servers of the replica set of hashed, in
// order, the ejected included (the key's server without replicas).
func (p *plan) replicasOf(dst []*server, st *state, hashed []byte) ([]*server, error) {
	if st.router == nil {
		return dst, errNoServers
	}
	if st.replicas == 1 {
		i, err := st.router.Lookup(hashed)
		if err != nil {
			return dst, err
		}
		return append(dst, st.live[i]), nil
	}
	var err error
	p.idx, err = st.rrouter.AppendN(p.idx[:0], hashed, st.replicas)
	if err != nil {
		return dst, err
	}
	for _, i := range p.idx {
		dst = append(dst, st.live[i])
	}
	return dst, nil
}

// dispatchPlan sends the first stage of r's plan, if r needs one, and reports
// whether it did; if not, r goes where route says.
func (c *client) dispatchPlan(r *clientReq, st *state, deadline time.Time) bool {
	preq, ok := r.req.(planRequest)
	if !ok {
		return false
	}
	acc := preq.access()
	n := r.req.nkeys()
	if acc >= accessWrite && n != 1 {
		acc = accessNone // no write names several keys; none is planned
	}
	if acc >= accessWrite && st.drainFull != nil {
		c.oweOut(r, st, st.drainFull, st.drainList, isDrained)
	}
	if st.replicas == 1 {
		if acc >= accessWrite && st.full != nil {
			c.oweOut(r, st, st.full, st.fullList, isEjected)
		}
		if st.warm == nil || acc == accessNone {
			return false
		}
	}
	whole := !(n > 1 && r.req.splits())
	units := 1
	if !whole {
		units = n
	}
	p := r.planOf(units)
	p.acc, p.whole = acc, whole
	r.split = !whole
	if acc >= accessWrite {
		c.planWrite(r, p, st, deadline)
	} else {
		c.planRead(r, p, st)
		c.sendUnits(r, p, deadline)
	}
	if p.barrier {
		c.barrier = true
	}
	return true
}

// oweOut records a write of r's key as owed by the servers out of the ring
// (out) that would hold it in router, a ring over list with them: their keys
// go to others meanwhile, and they must forget this one before they own it
// again. So for the ejected servers of a pool without replicas (st.full:
// they come back with readmission) and the drained servers of any pool
// (st.drainFull: they come back with Undrain); the deletes owed by a drained
// server are replayed in the background while it is drained, which costs a
// drain's warm-up a copy at most.
func (c *client) oweOut(r *clientReq, st *state, router dist.Router, list []*server, out func(*state, *server) bool) {
	if r.req.nkeys() != 1 {
		return
	}
	key, hashed := unitKey(st, r.req, 0)
	var buf [8]int
	idx := buf[:0]
	if rr, ok := router.(dist.ReplicaRouter); ok && st.replicas > 1 {
		var err error
		if idx, err = rr.AppendN(idx, hashed, st.replicas); err != nil {
			return
		}
	} else {
		i, err := router.Lookup(hashed)
		if err != nil {
			return
		}
		idx = append(idx, i)
	}
	for _, i := range idx {
		if s := list[i]; out(st, s) {
			s.owe(key, false)
		}
	}
}

// isEjected and isDrained are oweOut's tests.
func isEjected(_ *state, s *server) bool { return s.ejected.Load() }

func isDrained(st *state, s *server) bool { return st.drained[s.name] }

// planRead lists the candidates of each unit of a read: its replicas that
// are live and owe nothing, in order, then the live ones that owe deletes;
// never the ejected.
func (c *client) planRead(r *clientReq, p *plan, st *state) {
	for i := range p.units {
		_, hashed := unitKey(st, r.req, unitIndex(p, i))
		start := len(p.cands)
		var err error
		if p.cands, err = p.replicasOf(p.cands, st, hashed); err != nil {
			p.err = err
		}
		var buf [8]*server
		set := append(buf[:0], p.cands[start:]...)
		k := start
		for _, s := range set {
			if !s.ejected.Load() && !s.owes() {
				p.cands[k], k = s, k+1
			}
		}
		for _, s := range set {
			if !s.ejected.Load() && s.owes() {
				p.cands[k], k = s, k+1
			}
		}
		p.cands = p.cands[:k]
		if k == start && p.err == nil {
			p.err = errEjected
		}
		p.off = append(p.off, k)
	}
}

// left returns the number of unit i's candidates not yet tried.
func (p *plan) left(i int) int { return p.off[i+1] - p.off[i] - p.next[i] }

// sendUnits sends each unit of a read that is neither in flight nor done
// (done: no candidate left) to its next candidate, one call per server.
func (c *client) sendUnits(r *clientReq, p *plan, deadline time.Time) {
	first := r.ncalls
	p.first = first
	for i := range p.units {
		p.kc[i] = -1
		if p.cur[i] >= 0 {
			continue
		}
		// A candidate ejected since the plan was made has failed already.
		for p.left(i) > 0 && p.cands[p.off[i]+p.next[i]].ejected.Load() {
			p.next[i]++
		}
		if p.left(i) == 0 {
			continue
		}
		srv := p.cands[p.off[i]+p.next[i]]
		p.next[i]++
		j := first
		for j < r.ncalls && r.calls[j].srv != srv {
			j++
		}
		if j == r.ncalls {
			c.planCall(r, deadline, srv)
		}
		p.kc[i], p.cur[i] = j, j
	}
	if !p.whole && r.ncalls > first {
		c.pool.stats.fragments.Add(uint64(r.ncalls - first))
	}
	began := time.Now()
	for j := first; j < r.ncalls; j++ {
		cl := r.calls[j]
		cl.deadline = later(deadline, began)
		if p.whole {
			cl.out = r.req.appendRequest(cl.out, nil, 0, cl.reply)
		} else {
			cl.out = r.req.appendRequest(cl.out, p.kc, j, cl.reply)
		}
		cl.srv.send(cl)
	}
}

// unitIndex returns the request's key index of unit i (0 for a whole
// request).
func unitIndex(p *plan, i int) int {
	if p.whole {
		return 0
	}
	return i
}

// planCall returns a new call of r to srv with the request's deadline.
func (c *client) planCall(r *clientReq, deadline time.Time, srv *server) *call {
	cl := r.newCall(c.pool.codec)
	cl.srv = srv
	cl.cmd, cl.deadline, cl.start = r.req.command(), deadline, r.start
	return cl
}

// settle waits for the calls of r's plan, sending its later stages, until the
// plan is done, and returns the bytes their replies hold.
func (c *client) settle(r *clientReq) int64 {
	var held int64
	p := r.plan
	st := c.pool.state.Load()
	for {
		for _, cl := range r.calls[r.waited:r.ncalls] {
			<-cl.done
			held += cl.held
		}
		r.waited = r.ncalls
		// Each stage has the pool's timeout: a failover after a replica
		// timed out must not be late from the start.
		var deadline time.Time
		if t := st.timeout(); t > 0 {
			deadline = time.Now().Add(t)
		}
		var more bool
		if p.acc >= accessWrite {
			more = c.stepWrite(r, p, st, deadline)
		} else {
			more = c.stepRead(r, p, st, deadline)
		}
		if !more {
			return held
		}
	}
}

// stepRead looks at the replies of a read's last stage and sends the next:
// failovers and warm-up reads. It reports whether it sent any.
func (c *client) stepRead(r *clientReq, p *plan, st *state, deadline time.Time) bool {
	pl := c.pool
	preq := r.req.(planRequest)
	// Which units the split calls of the stage found.
	for i := range p.units {
		if p.kc[i] >= 0 {
			p.hit[i] = false
		}
	}
	if p.whole {
		if j := p.cur[0]; j >= 0 && !p.warming[0] && r.calls[j].err == nil {
			p.hit[0] = false
			preq.hits(p.hit[:1], nil, 0, r.calls[j].reply)
		}
	} else {
		for j := p.first; j < r.ncalls; j++ {
			if cl := r.calls[j]; cl.err == nil && slices.Contains(p.kc, j) {
				preq.hits(p.hit, p.kc, j, cl.reply)
			}
		}
	}
	first := r.ncalls
	retry := false
	for i := range p.units {
		j := p.cur[i]
		if j < 0 {
			continue
		}
		p.cur[i] = -1
		cl := r.calls[j]
		switch {
		case p.warming[i]:
			p.warming[i] = false
			if c.warmed(r, p, st, i, cl) {
				continue
			}
		case cl.err != nil || preq.failed(cl.reply):
			if p.src[i] < 0 {
				p.src[i] = j // the failure answers, unless a replica does
			}
			if p.left(i) > 0 {
				retry = true
				pl.stats.failovers.Add(1)
			}
			continue
		default:
			p.src[i] = j
			if p.hit[i] && st.warm != nil && st.replicas > 1 {
				c.fill(r, p, st, unitIndex(p, i), cl.srv)
			}
			if p.hit[i] || p.acc != accessRead || cl.err == nil && preq.refused(cl.reply) {
				p.next[i] = p.off[i+1] - p.off[i] // done
				continue
			}
		}
		// A miss: warm up from the server before the last change (or the
		// one before), or fail over, or a miss it is.
		switch {
		case c.warmUp(r, p, st, i, deadline):
		case st.cfg.ReadMissFailover && p.left(i) > 0:
			retry = true
			pl.stats.failovers.Add(1)
		default:
			p.next[i] = p.off[i+1] - p.off[i] // done
		}
	}
	began := time.Now()
	for _, w := range r.calls[first:r.ncalls] {
		if w.err == nil {
			w.deadline = later(w.deadline, began)
			w.srv.send(w)
		}
	}
	if retry {
		c.sendUnits(r, p, deadline)
	} else {
		for i := range p.units {
			p.kc[i] = -1
		}
	}
	p.first = first
	return r.ncalls > first
}

// warmUp makes the call (not sent yet) of a warm-up read of unit i from its
// server before the next window of the chain, if that is a server not read
// yet, and reports whether it did.
func (c *client) warmUp(r *clientReq, p *plan, st *state, i int, deadline time.Time) bool {
	if st.warm == nil {
		return false
	}
	_, hashed := unitKey(st, r.req, unitIndex(p, i))
	now := time.Now()
	for w := st.warm.chain(p.depth[i]); w != nil; w = st.warm.chain(p.depth[i]) {
		p.depth[i]++
		if !now.Before(w.until) {
			continue
		}
		prev := w.prevOwner(hashed, now)
		if prev == nil || prev.same(p.warmSrv[i]) || containsServer(p.cands[p.off[i]:p.off[i]+p.next[i]], prev) {
			continue
		}
		p.warming[i], p.warmSrv[i] = true, prev
		cl := c.planCall(r, prevDeadline(deadline), prev)
		var err error
		if cl.out, err = r.req.(planRequest).appendWarmRead(cl.out, unitIndex(p, i), cl.reply); err != nil {
			cl.complete(err) // not sent: the read finds nothing
		}
		p.cur[i] = r.ncalls - 1
		c.pool.stats.warmReads.Add(1)
		return true
	}
	return false
}

// fill copies key k of r, which a read found at from, in the background to
// its replicas that a ring change of the open windows made its and that may
// not have it: a server that became a key's second replica is not read while
// the first has the key, so a miss never warms it up. The copies at servers
// the key's set lost are deleted. Once a window per key.
func (c *client) fill(r *clientReq, p *plan, st *state, k int, from *server) {
	key, hashed := unitKey(st, r.req, k)
	targets, err := p.replicasOf(p.targets[:0], st, hashed) // a read has no targets: scratch
	p.targets = targets
	if err != nil {
		return
	}
	var buf [8]*server
	now := time.Now()
	to := st.warm.appendJoined(buf[:0], targets, hashed, now)
	to = slices.DeleteFunc(to, func(s *server) bool { return s.same(from) || s.ejected.Load() })
	if len(to) == 0 || !st.warm.firstFill(key) {
		return
	}
	job := &copyJob{key: slices.Clone(key), from: from, to: slices.Clone(to), fill: st.warm}
	// The servers the key's set lost keep a copy that writes no longer
	// reach, and that would be read again were they its replicas again.
	job.dropStale(st.warm, hashed, targets, now)
	c.pool.stats.warmFills.Add(1)
	c.pool.copier.enqueue(job)
}

// warmed handles the reply of a warm-up read of unit i, and reports whether
// it found the key: then the reply becomes the client's for the unit, and the
// value is copied to the unit's servers in the background.
func (c *client) warmed(r *clientReq, p *plan, st *state, i int, cl *call) bool {
	pl := c.pool
	ic := pl.codecOf()
	if cl.err != nil {
		return false
	}
	job := &copyJob{}
	if !ic.readItem(cl.reply, &job.it) {
		return false
	}
	pl.stats.warmHits.Add(1)
	k := unitIndex(p, i)
	r.req.(planRequest).adopt(cl.reply, k, &job.it)
	p.src[i] = slices.Index(r.calls[:r.ncalls], cl)
	p.next[i] = p.off[i+1] - p.off[i] // done
	key, hashed := unitKey(st, r.req, k)
	targets, err := p.replicasOf(nil, st, hashed)
	if err != nil {
		return true
	}
	for _, s := range targets {
		if !s.ejected.Load() && !s.same(cl.srv) {
			job.to = append(job.to, s)
		}
	}
	job.key = slices.Clone(key)
	job.from = cl.srv
	job.del = !containsServer(targets, cl.srv)
	job.dropStale(st.warm, hashed, append(targets, cl.srv), time.Now())
	pl.copier.enqueue(job)
	return true
}

// planWrite sends the first stage of a write of one key.
func (c *client) planWrite(r *clientReq, p *plan, st *state, deadline time.Time) {
	key, hashed := unitKey(st, r.req, 0)
	var err error
	if p.targets, err = p.replicasOf(p.targets, st, hashed); err != nil {
		p.err = err
		return
	}
	if st.warm != nil {
		p.stale = st.warm.appendStale(p.stale, hashed, p.targets)
		if len(p.stale) > 0 {
			p.clientCas, p.recast = r.req.(planRequest).cas()
		}
	}
	if p.acc == accessCond && st.replicas > 1 {
		if p.primary = p.decider(); p.primary < 0 {
			p.err = errEjected
			for _, s := range p.targets {
				s.owe(key, false)
			}
			return
		}
		p.barrier = true // the others get the decision after it is made
	}
	if len(p.stale) > 0 && r.req.(planRequest).needsItem() {
		// The item may be at a previous server still (incr of a counter
		// not read since the change): copy it to the key's servers first,
		// as a warm-up read would, then write (stepWrite).
		now := time.Now()
		for _, s := range p.stale {
			if !s.unread(now) {
				p.stage, p.barrier = stageWarmRead, true
				c.pool.stats.warmReads.Add(1)
				cl := c.planCall(r, prevDeadline(deadline), s)
				sendBuilt(cl)(c.pool.codecOf().appendItemRead(cl.out, key, cl.reply))
				return
			}
		}
	}
	c.sendStaleWrite(r, p, deadline, key)
}

// Stages of a write that works on the item (needsItem) in a warm-up window,
// before the stale copies are deleted and the write is sent: the read of the
// item from its previous server, and its copy to the key's servers.
const (
	stageWarmRead = iota + 10
	stageWarmCopy
	stageWarmCas // the read of the copy's cas for recast
)

// sendStaleWrite deletes the previous servers' copies of key, if the write
// has any (a warm-up window is open), and sends the write: at once, but for
// a delete, which waits for them (stepWrite's stage 0).
func (c *client) sendStaleWrite(r *clientReq, p *plan, deadline time.Time, key []byte) {
	if len(p.stale) == 0 {
		c.sendWrite(r, p, deadline, key)
		return
	}
	// The previous servers' copies go: first, for a delete, so that a
	// warm-up copy racing with it sees it and takes itself back. Any other
	// write is sent before them: a previous server that hangs, or that is
	// dialled again and first replays the deletes it owes, must not make
	// the write late (it failed, its time gone, and was owed by the key's
	// new server).
	p.staleCalls[0] = r.ncalls
	began := time.Now()
	del := p.acc == accessDelete
	var built [4]*call
	stale := built[:0]
	for _, s := range p.stale {
		if s.unread(began) {
			s.owe(key, false)
			continue
		}
		cl := c.planCall(r, prevDeadline(later(deadline, began)), s)
		if del {
			// The client's own delete: if the key's new server has
			// not got it, this one's reply, in the client's form, is
			// the answer (stepWrite).
			cl.out = r.req.appendRequest(cl.out, nil, 0, cl.reply)
		} else {
			out, err := c.pool.codecOf().appendDelete(cl.out, key, 0, cl.reply)
			if cl.out = out; err != nil {
				cl.complete(err)
				continue
			}
		}
		stale = append(stale, cl)
	}
	p.staleCalls[1] = r.ncalls
	if !del {
		c.sendWrite(r, p, deadline, key)
	}
	for _, cl := range stale {
		cl.srv.send(cl)
	}
	if del {
		p.barrier = true
	}
}

// deciding returns the target whose reply decides a write: the deciding
// replica, or the first target where none decides.
func (p *plan) deciding() *server { return p.targets[max(p.primary, 0)] }

// decider returns the target that decides a conditional write, and counts
// it as tried: the first live one that owes nothing and was not tried, else
// the first live one not tried; -1 if none is left.
func (p *plan) decider() int {
	best := -1
	for i, s := range p.targets {
		if s.ejected.Load() || i < 64 && p.tried&(1<<i) != 0 {
			continue
		}
		if best < 0 || !s.owes() && p.targets[best].owes() {
			best = i
		}
	}
	if best >= 0 && best < 64 {
		p.tried |= 1 << best
	}
	return best
}

// sendWrite sends a write to its targets: to the deciding replica only, or to
// every one that is not ejected; the ejected owe the key.
func (c *client) sendWrite(r *clientReq, p *plan, deadline time.Time, key []byte) {
	if p.recast {
		c.recast(r, p, key)
	}
	p.stage, p.first = 1, r.ncalls
	began := time.Now()
	for i, s := range p.targets {
		if s.ejected.Load() {
			s.owe(key, false)
			continue
		}
		if p.primary >= 0 && i != p.primary {
			continue
		}
		cl := c.planCall(r, later(deadline, began), s)
		cl.out = r.req.appendRequest(cl.out, nil, 0, cl.reply)
		cl.srv.send(cl)
	}
	if r.ncalls == p.first && p.err == nil {
		p.err = errEjected
	}
}

// sendWarmedWrite sends a write whose item was copied from its previous
// server (stageWarmCopy).
func (c *client) sendWarmedWrite(r *clientReq, p *plan, deadline time.Time, key []byte) {
	if p.held && r.req.(planRequest).keepsCas() {
		// A copy is there already: a warm-up copy's, whose delete of the
		// previous copy, conditioned on its cas, is under way. A write that
		// keeps the cas (touch) leaves the previous copy to it: deleted
		// here, the copy's delete would fail and take back the copy,
		// touched but with the cas it had, as stale.
		c.sendWrite(r, p, deadline, key)
		return
	}
	c.sendStaleWrite(r, p, deadline, key)
}

// recast conditions a write in a warm-up window on the cas of the copy at
// the server that decides it, if the cas the client gave is that of the
// previous copy the copy was made from: the client read the item at its
// previous server (a gets answered there), and the copy is that item. Any
// other cas is the client's own.
func (c *client) recast(r *clientReq, p *plan, key []byte) {
	cas := p.clientCas
	if to, ok := c.pool.state.Load().warm.copyCas(p.deciding(), key, cas, time.Now()); ok {
		cas = to
		c.pool.stats.warmRecast.Add(1)
	}
	r.req.(planRequest).setCas(cas)
}

// stepWrite looks at the replies of a write's last stage and sends the next.
// It reports whether it sent any.
func (c *client) stepWrite(r *clientReq, p *plan, st *state, deadline time.Time) bool {
	preq := r.req.(planRequest)
	ic := c.pool.codecOf()
	key, _ := unitKey(st, r.req, 0)
	// The deletes of the previous servers' copies: owed if they failed.
	for j := p.staleCalls[0]; j < p.staleCalls[1]; j++ {
		cl := r.calls[j]
		switch {
		case cl.err != nil:
			cl.srv.owe(key, true)
		case p.acc == accessDelete && p.staleFound < 0 && preq.changed(cl.reply):
			p.staleFound = j
		}
	}
	p.staleCalls = [2]int{}
	first := r.ncalls
	switch p.stage {
	case stageWarmRead:
		// The item read from its previous server goes to the key's
		// servers, as an add: a value written since stays.
		p.stage = stageWarmCopy
		rd := r.calls[r.ncalls-1]
		if rd.err == nil && ic.readItem(rd.reply, &p.it) {
			c.pool.stats.warmHits.Add(1)
			began := time.Now()
			for _, s := range p.targets {
				if !s.ejected.Load() {
					w := c.planCall(r, later(deadline, began), s)
					sendBuilt(w)(ic.appendStore(w.out, key, &p.it, true, w.reply))
				}
			}
			if r.ncalls > first {
				p.first = first
				return true
			}
		}
		p.stage = 0
		c.sendStaleWrite(r, p, deadline, key)
		return r.ncalls > first
	case stageWarmCopy:
		decider := p.deciding()
		p.held = false
		heldAtDecider := false
		for _, cl := range r.calls[p.first:r.ncalls] {
			if cl.err == nil {
				if cas, ok := ic.stored(cl.reply); ok {
					c.pool.stats.warmCopies.Add(1)
					st.warm.noteCopy(cl.srv, key, p.it.cas, cas)
				}
				if ic.held(cl.reply) {
					p.held = true
					heldAtDecider = heldAtDecider || cl.srv == decider
				}
			}
		}
		p.stage = 0
		if p.recast && heldAtDecider && p.clientCas == p.it.cas {
			if _, ok := st.warm.copyCas(decider, key, p.clientCas, time.Now()); !ok {
				// The client's cas is the previous copy's, and a copy is
				// at the deciding server already, most likely a warm-up
				// copy of the same item whose cas is not recorded yet:
				// read it.
				p.stage = stageWarmCas
				cl := c.planCall(r, deadline, decider)
				sendBuilt(cl)(ic.appendItemRead(cl.out, key, cl.reply))
				return true
			}
		}
		c.sendWarmedWrite(r, p, deadline, key)
		return r.ncalls > first
	case stageWarmCas:
		// The copy is the item the client read if it has its value and
		// flags (or the same written again since, which the client could
		// not tell from it).
		rd := r.calls[r.ncalls-1]
		var cur item
		if rd.err == nil && ic.readItem(rd.reply, &cur) && cur.flags == p.it.flags && bytes.Equal(cur.value, p.it.value) {
			st.warm.noteCopy(rd.srv, key, p.it.cas, cur.cas)
		}
		p.stage = 0
		c.sendWarmedWrite(r, p, deadline, key)
		return r.ncalls > first
	case 0:
		// The previous server forgot the key: now the delete.
		c.sendWrite(r, p, deadline, key)
		return r.ncalls > first
	case 1:
		// The targets' replies: the first replica's answers, unless it failed.
		answer, failure := -1, -1
		for j := p.first; j < r.ncalls; j++ {
			cl := r.calls[j]
			if cl.err != nil || preq.failed(cl.reply) {
				cl.srv.owe(key, cl.err != nil)
				if failure < 0 {
					failure = j
				}
				continue
			}
			if answer < 0 {
				answer = j
			}
		}
		if answer < 0 && p.primary >= 0 {
			// The deciding replica failed: the next one decides.
			if next := p.decider(); next >= 0 {
				p.primary = next
				c.pool.stats.failovers.Add(1)
				c.sendWrite(r, p, deadline, key)
				return r.ncalls > first
			}
		}
		if answer < 0 {
			answer = failure
		}
		if answer >= 0 && p.staleFound >= 0 && !preq.changed(r.calls[answer].reply) {
			// A delete the key's new server answered not found, of a key
			// its previous server had (moved, not yet read): deleted.
			answer = p.staleFound
		}
		p.answer = answer
		if answer < 0 || p.primary < 0 || !preq.changed(r.calls[answer].reply) {
			return false
		}
		// The decision changed the item: read it from the deciding replica.
		p.stage = 2
		cl := c.planCall(r, deadline, p.targets[p.primary])
		sendBuilt(cl)(ic.appendItemRead(cl.out, key, cl.reply))
		return true
	case 2:
		// Set the decided item on the other replicas, or delete it there.
		p.stage = 3
		rd := r.calls[r.ncalls-1]
		found := rd.err == nil && ic.readItem(rd.reply, &p.it)
		began := time.Now()
		for i, s := range p.targets {
			switch {
			case i == p.primary:
			case s.ejected.Load():
				// It owes the key already.
			case rd.err != nil:
				s.owe(key, false)
			default:
				w := c.planCall(r, later(deadline, began), s)
				if found {
					sendBuilt(w)(ic.appendStore(w.out, key, &p.it, false, w.reply))
				} else {
					sendBuilt(w)(ic.appendDelete(w.out, key, 0, w.reply))
				}
			}
		}
		p.first = first
		return r.ncalls > first
	case 3:
		// A replica that did not take the copy owes the key.
		for _, cl := range r.calls[p.first:r.ncalls] {
			if cl.err != nil || preq.failed(cl.reply) {
				cl.srv.owe(key, cl.err != nil)
			}
		}
	}
	return false
}

// sendBuilt returns a func that sends cl with out, the request the proxy
// built for it, or fails cl with err, the reason it could not be built; it
// takes an itemCodec append's results as they are.
func sendBuilt(cl *call) func(out []byte, err error) {
	return func(out []byte, err error) {
		cl.out = out
		if err != nil {
			cl.complete(err)
			return
		}
		cl.srv.send(cl)
	}
}

// respondPlan appends the reply to a planned request.
func (c *client) respondPlan(dst []byte, r *clientReq) []byte {
	p := r.plan
	req := r.req
	if !p.whole {
		failed := 0
		for _, j := range p.src {
			if j >= 0 && r.calls[j].err != nil {
				failed++
			}
		}
		if failed > 0 {
			c.pool.stats.forwardErr.Add(1)
		}
		return req.merge(dst, p.src, r.calls[:r.ncalls], p.err)
	}
	j := p.answer
	if p.acc < accessWrite {
		j = p.src[0]
	}
	if j < 0 {
		c.pool.stats.forwardErr.Add(1)
		err := p.err
		if err == nil {
			err = errNoServers
		}
		return req.appendError(dst, err)
	}
	cl := r.calls[j]
	if cl.err != nil {
		c.pool.stats.forwardErr.Add(1)
		return req.appendError(dst, cl.err)
	}
	return req.appendReply(dst, cl.reply)
}
