package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"time"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/internal/analyze"
	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/dist"
)

// state is an immutable snapshot of a pool's routing: its configuration, its
// servers and the router over those that are not ejected.
type state struct {
	cfg     *config.Pool
	dist    dist.Entry // the pool's distribution, for its capabilities
	servers map[string]*server
	list    []*server // in configuration order
	// confs are the servers' lines in cfg, by name: a server kept across a
	// reload that changed only its weight (swap) was made with the old one.
	confs map[string]config.Server
	// router routes keys over the live servers (all servers when ejected ones
	// answer errors rather than move) to their index in live; nil when none is
	// live.
	router dist.Router
	live   []*server
	eject  bool // ejected servers answer errors instead of moving their keys

	// replicas is the number of servers each key is stored on, at least 1.
	// Above 1, router is a dist.ReplicaRouter (rrouter) over every server
	// that is not drained, the ejected included, and requests skip the
	// ejected ones (replica.go).
	replicas int
	rrouter  dist.ReplicaRouter
	// full routes over every server that is not drained, to its index in
	// fullList, when some are ejected and their keys moved: a write of a key
	// whose server is ejected is owed by that server (owed.go). nil when no
	// server is ejected, or ejected servers keep their keys.
	full     dist.Router
	fullList []*server
	// drainFull routes over every server, the drained included, to its
	// index in drainList, when some are drained in a pool whose servers
	// can forget (memcached's): a write of a key that a drained server
	// owns there is owed by it, so that it holds no old value of it when it
	// owns keys again (Undrain, a reload without it in drain:).
	drainFull dist.Router
	drainList []*server
	// warm is the warm-up window open since the last ring change, or nil
	// (warmup.go).
	warm *window
	// planned sends requests through dispatchPlan (replica.go): the pool has
	// replicas, a window is open, or ejected servers owe writes. Otherwise a
	// request goes where route says, at no cost beyond this test.
	planned bool
	// drained names the servers that own no keys (drain.go).
	drained map[string]bool
	// fingerprint is dist.Fingerprint of the ring: the pool's routing
	// settings and the servers of live. Proxies that agree on it route every
	// key alike.
	fingerprint string
}

func (st *state) timeout() time.Duration { return st.cfg.Timeout }

// route returns the server that owns key.
func (st *state) route(key []byte) (*server, error) {
	if st.router == nil {
		return nil, errNoServers
	}
	i, err := st.router.Lookup(st.cfg.HashKey(key))
	if err != nil {
		return nil, err
	}
	srv := st.live[i]
	if st.eject && srv.ejected.Load() {
		return nil, errEjected
	}
	return srv, nil
}

// newState builds the routing state of cfg over servers; those named in
// drained own no keys. prev, if not nil, is the state it replaces, whose
// router the new one is merged from where the distribution allows
// (dist.Update): a change of a few servers of a large pool then costs a
// fraction of a build.
func newState(cfg *config.Pool, servers []*server, ejectErrors bool, drained map[string]bool, prev *state) (*state, error) {
	e, err := dist.EntryOf(cfg)
	if err != nil {
		return nil, err
	}
	st := &state{cfg: cfg, dist: e, list: servers, servers: make(map[string]*server, len(servers)),
		confs: make(map[string]config.Server, len(cfg.Servers)),
		eject: ejectErrors, replicas: max(cfg.Replicas, 1), drained: drained}
	for _, c := range cfg.Servers {
		st.confs[c.Name()] = c
	}
	// With replicas, ejected servers keep their place in the replica sets:
	// their keys do not move, reads fail over past them and the writes they
	// miss are owed.
	keep := ejectErrors || st.replicas > 1
	var live, all []config.Server
	ejected := false
	for _, s := range servers {
		st.servers[s.name] = s
		if drained[s.name] {
			continue
		}
		all = append(all, st.conf(s))
		st.fullList = append(st.fullList, s)
		if keep || !s.ejected.Load() {
			live = append(live, st.conf(s))
			st.live = append(st.live, s)
		} else {
			ejected = true
		}
	}
	if st.fingerprint, err = dist.Fingerprint(cfg, live); err != nil {
		return nil, err
	}
	if len(live) == 0 {
		return st, nil
	}
	var from *config.Pool
	var router dist.Router
	if prev != nil && prev.router != nil {
		from, router = prev.cfg, prev.router
	}
	r, err := dist.Update(from, router, cfg, live)
	if err != nil {
		return nil, err
	}
	st.router = r
	if st.replicas > 1 {
		rr, ok := r.(dist.ReplicaRouter)
		if !ok { // dist.Build refuses replicas for distributions without replica sets
			return nil, cfg.ErrorAt("replicas", fmt.Errorf("distribution %s has no replica sets", cfg.Distribution))
		}
		st.rrouter = rr
	}
	if ejected && !e.Random {
		if st.full, err = dist.Build(cfg, all); err != nil {
			return nil, err
		}
	} else {
		st.fullList = nil
	}
	if len(all) < len(servers) && !cfg.Redis && !e.Random { // some are drained
		confs := make([]config.Server, len(servers))
		for i, s := range servers {
			confs[i] = st.conf(s)
		}
		if st.drainFull, err = dist.Build(cfg, confs); err != nil {
			return nil, err
		}
		st.drainList = servers
	}
	st.planned = st.replicas > 1 || st.full != nil || st.drainFull != nil
	return st, nil
}

// reroute rebuilds the router after a server was ejected or readmitted
// (readmitted is nil for an ejection). Keys of an ejected server go where the
// distribution puts them without it, as in twemproxy: for the chash
// distribution, and ketama with equal weights, that is the next server
// clockwise, and no other key moves. In a pool with replicas the ring does not
// change: requests skip the ejected server.
func (pl *pool) reroute(why string, readmitted *server) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	cur := pl.state.Load()
	st, err := newState(cur.cfg, cur.list, cur.eject, pl.drainedLocked(cur.cfg), cur)
	if err != nil {
		pl.proxy.log.Error("cannot rebuild the ring", "pool", pl.name, "err", err)
		return
	}
	pl.storeLocked(cur, st, why, readmitted, 0)
}

// update swaps in the routing state of cfg, the pool of the file at path,
// reusing unchanged servers, and reads the pool's TLS files again. A pool
// whose settings and servers are those it has keeps its state.
func (pl *pool) update(path string, cfg *config.Pool) error {
	if cfg.TLSCertFile != "" {
		// Validate has just read the files; if they broke since, the
		// certificate in use stays, and the routing is updated all the same.
		if cert, err := loadCert(path, cfg); err != nil {
			pl.proxy.log.Error("reload: TLS certificate not replaced", "pool", pl.name, "err", err)
		} else if old := pl.cert.Swap(cert); old == nil || !bytes.Equal(old.Certificate[0], cert.Certificate[0]) {
			// One line for a new certificate; a reload that finds the same
			// files logs none.
			pl.proxy.log.Info("reload: TLS certificate replaced", "pool", pl.name, "file", cfg.TLSCertFile,
				"subject", certSubject(cert), "not_after", certNotAfter(cert))
		}
	}
	if samePool(pl.state.Load().cfg, cfg) {
		return nil
	}
	return pl.swap(cfg, "reload")
}

// samePool reports whether a and b have the same settings and servers: the
// same exported fields, but for the lines where a file has them.
func samePool(a, b *config.Pool) bool {
	if len(a.Servers) != len(b.Servers) {
		return false
	}
	for i, s := range a.Servers {
		t := b.Servers[i]
		s.Line, t.Line = 0, 0
		if s != t {
			return false
		}
	}
	av, bv := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for i := range av.NumField() {
		f := av.Type().Field(i)
		if f.IsExported() && f.Name != "Line" && f.Name != "Servers" &&
			!reflect.DeepEqual(av.Field(i).Interface(), bv.Field(i).Interface()) {
			return false
		}
	}
	return true
}

// swap makes cfg the pool's configuration, reusing the servers that keep their
// name, address and number of connections, with their connections, health
// and counters (a new weight is the new state's: see state.conf; a server
// given another number of connections keeps its counters), and has the fraction of the key space that moved logged, saying why
// (in the background: see moveLog).
// Servers that left are closed once the requests already routed to them are
// done. It changes nothing if the router of cfg does not build.
func (pl *pool) swap(cfg *config.Pool, why string) error {
	pl.mu.Lock()
	cur := pl.state.Load()
	var servers, added []*server
	reused := map[*server]bool{}
	for _, s := range cfg.Servers {
		old := cur.servers[s.Name()]
		if old != nil && old.addr == serverAddr(s) && len(old.conns) == max(cfg.ServerConnections, 1) {
			servers = append(servers, old)
			reused[old] = true
			continue
		}
		ns := newServer(pl, s, cfg.ServerConnections)
		ns.carryCounters(old)
		servers = append(servers, ns)
		added = append(added, ns)
	}
	pl.forgetDrains(cfg)
	if !cfg.AutoEjectHosts {
		// Ejection turned off: an ejected server is back in the ring, as
		// it would be had it never been ejected (its keys did not move).
		for _, s := range servers {
			if reused[s] && s.ejected.Load() {
				s.readmit("auto_eject_hosts is off")
			}
		}
	}
	st, err := newState(cfg, servers, pl.proxy.ejectErrors(cfg), pl.drainedLocked(cfg), cur)
	if err != nil {
		pl.mu.Unlock()
		for _, s := range added {
			s.close()
		}
		return err
	}
	// What the servers that leave owe is kept for a server of their
	// address that joins again (leftOwed), this one's new servers included.
	// One whose address a reload of the file takes out of the list owes a
	// flush. A list from a source (etcd) is many proxies' at once: each
	// would empty the server at its own moment, erasing what the others
	// wrote since; chash register --check empties it before it registers
	// it again.
	addrs := make(map[string]bool, len(servers))
	for _, s := range servers {
		addrs[s.addr] = true
	}
	for _, s := range cur.list {
		if !reused[s] {
			pl.proxy.left.keep(s, pl.proxy.maxOwedKeys(), why == "reload" && !addrs[s.addr])
		}
	}
	for _, s := range added {
		pl.proxy.left.take(s)
	}
	pl.storeLocked(cur, st, why, nil, 0)
	pl.mu.Unlock()

	var gone []*server
	for _, s := range cur.list {
		if !reused[s] {
			gone = append(gone, s)
		}
	}
	pl.noteMove(cur, st, why)
	if len(gone) > 0 {
		// Let requests already routed to the leaving servers finish, and
		// the warm-up window read them.
		grace := max(2*cfg.Timeout, time.Second, cfg.Warmup+cfg.Timeout)
		pl.proxy.wg.Add(1)
		go pl.retire(gone, grace)
	}
	return nil
}

// retire closes servers that left the configuration after grace, and drops
// the metrics of those whose name has not come back meanwhile: a server
// removed and added again keeps its latency series.
func (pl *pool) retire(gone []*server, grace time.Duration) {
	defer pl.proxy.wg.Done()
	sleep(pl.proxy.ctx, grace)
	for _, s := range gone {
		s.close()
	}
	// pl.mu orders this with swap, which makes the series of a server added
	// and takes the deletes kept for its address.
	pl.mu.Lock()
	defer pl.mu.Unlock()
	st := pl.state.Load()
	for _, s := range gone {
		if st.servers[s.name] == nil {
			pl.proxy.metrics.forgetServer(pl.name, s.name)
		}
		pl.handOwed(s, st.list)
	}
}

// handOwed passes on the deletes that s, a server that left and is closed,
// owes still: to the server of its address in list if one is back, else to
// those kept for its address (leftOwed).
func (pl *pool) handOwed(s *server, list []*server) {
	if !s.owes() {
		return
	}
	for _, o := range list {
		if o.addr == s.addr {
			keys, flush := s.owed.snapshot()
			if flush {
				o.oweFlush()
			}
			for _, k := range keys {
				o.owe([]byte(k), true) // before its next read
			}
			return
		}
	}
	pl.proxy.left.keep(s, pl.proxy.maxOwedKeys(), false)
}

// logMoves logs the fraction of the key space each server gained or lost from
// old to cur, why it moved ("reload", ...) and over how many changes.
func (pl *pool) logMoves(old, cur *state, why string, changes int) {
	// Fixed keys, so that log readers find the same fields in every line:
	// changes is 1 but for changes measured together, and the flows between
	// servers are one list, each "from->to:share".
	changes = max(changes, 1)
	routing := dist.RoutingChanges(old.cfg, cur.cfg)
	switch {
	case old.router == nil && cur.router == nil:
		return // nothing to measure
	case old.router == nil || cur.router == nil, old.dist.Random || cur.dist.Random:
		// To or from no live server, every key moves. Keys routed at
		// random have no server of their own: a change to or from that,
		// or of the servers they go to, moves every key too.
		method := "no live server"
		if old.router != nil && cur.router != nil {
			method = "random distribution"
		}
		added, removed := liveChanges(old, cur)
		if method == "random distribution" && len(routing)+len(added)+len(removed) == 0 {
			return
		}
		pl.proxy.log.Info(why+": key space moved", "pool", pl.name, "moved", "1.000000", "method", method,
			"added", added, "removed", removed, "reweighted", []string{}, "readdressed", []string{},
			"routing", routing, "flows", []string{}, "changes", changes)
		return
	}
	d, err := analyze.Compare(old.router, cur.router, old.nodes(old.live), cur.nodes(cur.live), analyze.SampleKeys(100000, 1))
	if err != nil {
		pl.proxy.log.Warn(why+": cannot measure movement", "pool", pl.name, "err", err)
		return
	}
	flows := make([]string, len(d.Flows))
	for i, fl := range d.Flows {
		flows[i] = fl.From + "->" + fl.To + ":" + strconv.FormatFloat(fl.Share, 'f', 6, 64)
	}
	// A server that kept its name and moved to another address keeps its
	// keys in the ring, and goes cold: say so.
	readdressed := []string{}
	for _, s := range cur.list {
		if o := old.servers[s.name]; o != nil && o.addr != s.addr {
			readdressed = append(readdressed, s.name+":"+o.addr+"->"+s.addr)
		}
	}
	// A server whose weight changed, with its old and new weights.
	reweighted := []string{}
	for _, s := range cur.list {
		if o := old.servers[s.name]; o != nil && old.conf(o).Weight != cur.conf(s).Weight {
			reweighted = append(reweighted, s.name+":"+strconv.Itoa(old.conf(o).Weight)+"->"+strconv.Itoa(cur.conf(s).Weight))
		}
	}
	// Routing settings that changed move keys between servers that stay
	// (routing, above).
	level := slog.LevelInfo
	if d.Moved == 0 && len(d.Added)+len(d.Removed)+len(reweighted)+len(readdressed)+len(routing) == 0 {
		level = slog.LevelDebug // a reload that changed no server
	}
	pl.proxy.log.Log(context.Background(), level, why+": key space moved", "pool", pl.name, "moved", strconv.FormatFloat(d.Moved, 'f', 6, 64),
		"method", d.Method, "added", d.Added, "removed", d.Removed, "reweighted", reweighted, "readdressed", readdressed,
		"routing", routing, "flows", flows, "changes", changes)
}

// liveChanges returns the names of the live servers of cur that old has
// not, and those of old that cur has not.
func liveChanges(old, cur *state) (added, removed []string) {
	was, is := map[string]bool{}, map[string]bool{}
	for _, s := range old.live {
		was[s.name] = true
	}
	added, removed = []string{}, []string{}
	for _, s := range cur.live {
		is[s.name] = true
		if !was[s.name] {
			added = append(added, s.name)
		}
	}
	for _, s := range old.live {
		if !is[s.name] {
			removed = append(removed, s.name)
		}
	}
	return added, removed
}

func serverNames(servers []*server) []string {
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.name
	}
	return names
}

// conf returns s's line in the state's configuration.
func (st *state) conf(s *server) config.Server {
	if c, ok := st.confs[s.name]; ok {
		return c
	}
	return s.cfg
}

// nodes returns servers as nodes of the state's configuration.
func (st *state) nodes(servers []*server) []chash.Node {
	ns := make([]chash.Node, len(servers))
	for i, s := range servers {
		ns[i] = chash.Node{Name: s.name, Weight: st.conf(s).Weight}
	}
	return ns
}

// certSubject and certNotAfter describe a certificate for the log.
func certSubject(c *tls.Certificate) string {
	if c.Leaf == nil {
		return ""
	}
	return c.Leaf.Subject.String()
}

func certNotAfter(c *tls.Certificate) string {
	if c.Leaf == nil {
		return ""
	}
	return c.Leaf.NotAfter.UTC().Format(time.RFC3339)
}

// patterner is a request some of whose routed keys are patterns that name
// keys by the request's data (SORT's BY and GET): pattern(i) says whether
// key i is one. The keys it names are on the pattern's server only if a
// hash tag without a '*' pins them (tagPinned).
type patterner interface {
	pattern(i int) bool
}

// tagPinned reports whether every key the pattern p names hashes as p does,
// by cfg's hash tag: the part of p before its first '*', which every key
// begins with, holds the whole tag. A '*' before the tag closes lets an
// element of the list bring a tag of its own ("*{t}" with an element "{b}"
// names "{b}{t}", whose tag is b), or change it.
func tagPinned(cfg *config.Pool, p []byte) bool {
	if star := bytes.IndexByte(p, '*'); star >= 0 {
		p = p[:star]
	}
	return len(cfg.HashKey(p)) < len(p)
}
