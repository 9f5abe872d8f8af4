package proxy

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/internal/analyze"
	"github.com/chash-dev/chash/internal/membership"
	"github.com/chash-dev/chash/internal/memcache"
	"github.com/chash-dev/chash/internal/plot"
)

// statusRefresh is how often the status page reloads itself.
const statusRefresh = 5 * time.Second

//go:embed status.html
var statusHTML string

var statusTemplate = template.Must(template.New("status").Funcs(template.FuncMap{
	"pct": func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
	"mib": func(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) },
	"rate": func(f float64) string {
		if f < 0 {
			return "–" // no earlier sample yet
		}
		return fmt.Sprintf("%.1f/s", f)
	},
}).Parse(statusHTML))

// statusPage is what the status page shows.
type statusPage struct {
	Refresh  int // seconds
	Host     string
	Version  string
	Uptime   time.Duration
	Now      string
	Curr     int64 // connections open now, as the stats document counts them
	MemHeld  int64
	MemLimit int64
	Pools    []statusPool
}

type statusPool struct {
	Name, Protocol, Distribution, Listen string
	// Fingerprint is the ring's fingerprint (dist.Fingerprint): proxies that
	// show the same one route every key alike. Source is the pool's
	// servers_from URL, if any.
	Fingerprint, Source string
	// SourceState says how the source fares: the revision serving, or
	// that it cannot be reached or its latest list is refused (SourceBad).
	SourceState string
	SourceBad   bool
	// Warmup says that a warm-up window is open, until when, and what it
	// did so far; empty if none is.
	Warmup string
	// Clusters warns that the pool's hash sends similar keys to one server
	// (warnClusters), or is empty.
	Clusters string
	// Ring is the picture of the pool's ring, inline SVG; Shares says it is a
	// pie of sampled shares, for a distribution that is no ring.
	Ring    template.HTML
	Shares  bool
	Clients int64
	Servers []statusServer
}

type statusServer struct {
	Name, Addr, Color string
	Ejected           bool
	Down              bool   // the last connection or probe failed (see markDown)
	EjectedAt         string // the last ejection (RFC 3339), or empty
	EjectedClock      string // its time of day, "15:04:05 UTC"
	Drained           string // "draining" or "drained" (see DrainedServer), or empty
	Share             float64
	Requests, Errors  uint64
	ReqRate, ErrRate  float64 // per second over the last sample; -1 if none
	Hits, Misses      uint64
	Connections       int64
}

// statusRates keeps the counters of each server as last sampled by the
// status page, to show rates between two views of it.
type statusRates struct {
	mu   sync.Mutex
	last map[*server]rateSample
	// rings holds the drawing of each state's ring, made once per state.
	rings map[*state]template.HTML
}

type rateSample struct {
	at             time.Time
	requests, errs uint64
	reqRate        float64
	errRate        float64
}

// rates returns the request and error rates of s over the time since the last
// sample at least a second old, and samples it; -1, -1 on the first sample
// and after one older than rateWindow, whose average would not be a rate of
// now (the first view after a quiet hour).
func (r *statusRates) rates(s *server, now time.Time) (req, errs float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[*server]rateSample{}
	}
	cur := rateSample{at: now, requests: s.stats.requests.Load(), errs: s.stats.errors.Load() + s.stats.timedout.Load() + s.stats.eofFailed.Load(), reqRate: -1, errRate: -1}
	prev, ok := r.last[s]
	if ok && now.Sub(prev.at) < time.Second {
		return prev.reqRate, prev.errRate // viewed again at once: keep the last figures
	}
	if ok && now.Sub(prev.at) <= rateWindow {
		dt := now.Sub(prev.at).Seconds()
		cur.reqRate, cur.errRate = float64(cur.requests-prev.requests)/dt, float64(cur.errs-prev.errs)/dt
	}
	if len(r.last) > 4096 {
		clear(r.last) // servers gone over many reloads
	}
	r.last[s] = cur
	return cur.reqRate, cur.errRate
}

// rateWindow is the longest time over which the status page shows a rate:
// twelve of its refreshes.
const rateWindow = time.Minute

// ring returns the picture of st's ring as inline SVG, each server's arcs in
// its colour (plot.Color of its place in the pool), drawn once per state.
// A distribution that is no ring is drawn as a pie of the servers' shares.
func (r *statusRates) ring(p *Proxy, pl *pool, st *state) (template.HTML, bool) {
	r.mu.Lock()
	svg, ok := r.rings[st]
	r.mu.Unlock()
	_, isRing := st.router.(interface{ Ring() (*chash.Ring, []int) })
	if ok {
		return svg, !isRing
	}
	svg = drawRing(p, pl, st)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rings == nil || len(r.rings) > 64 {
		r.rings = map[*state]template.HTML{}
	}
	r.rings[st] = svg
	return svg, !isRing
}

// drawRing draws st's ring with package plot, as chash demo draws rings.
func drawRing(p *Proxy, pl *pool, st *state) template.HTML {
	names := make([]string, len(st.list))
	for i, s := range st.list {
		names[i] = s.name
	}
	var arcs []analyze.Arc
	if rr, ok := st.router.(interface{ Ring() (*chash.Ring, []int) }); ok {
		ring, index := rr.Ring()
		nodes := ring.Nodes()
		byNode := make(map[string]string, len(nodes))
		for i, n := range nodes {
			byNode[n.Name] = st.live[index[i]].name
		}
		arcs = analyze.Arcs(ring)
		for i := range arcs {
			arcs[i].Node = byNode[arcs[i].Node]
		}
	} else {
		// Not a ring: a pie of each server's share of sampled keys.
		shares := p.metrics.ringShares(st)
		var at float64
		for _, s := range st.list {
			if f := shares[s.name]; f > 0 {
				end := min(at+f*(1<<32), 1<<32)
				arcs = append(arcs, analyze.Arc{Start: uint32(at), End: uint32(end - 1), Node: s.name})
				at = end
			}
		}
	}
	if len(arcs) == 0 {
		return ""
	}
	chart, err := plot.Ring(plot.RingPicture{
		Title:  "pool " + pl.name,
		Nodes:  names,
		Layers: []plot.Layer{{Arcs: arcs}},
	})
	if err != nil {
		p.log.Warn("status page: ring not drawn", "pool", pl.name, "err", err)
		return ""
	}
	var b bytes.Buffer
	if err := chart.Write(&b, "svg"); err != nil {
		p.log.Warn("status page: ring not drawn", "pool", pl.name, "err", err)
		return ""
	}
	// The SVG element only: the XML declaration has no place in HTML.
	out := b.String()
	if i := strings.Index(out, "<svg"); i >= 0 {
		out = out[i:]
	}
	// plot's SVG is made by gonum from names it escapes as XML text, which
	// HTML reads alike.
	return template.HTML(out)
}

// status returns what the status page shows now.
func (p *Proxy) status(now time.Time) *statusPage {
	page := &statusPage{
		Refresh:  int(statusRefresh / time.Second),
		Version:  p.version(),
		Uptime:   now.Sub(p.metrics.start).Truncate(time.Second),
		Now:      now.UTC().Format(time.RFC3339),
		MemHeld:  p.mem.held.Load(),
		MemLimit: p.mem.max,
	}
	page.Host, _ = os.Hostname()
	page.Curr, _ = p.connections()
	rings := p.Rings()
	sources := p.sourceStatus()
	pools := p.poolList()
	sortPools(pools)
	for _, pl := range pools {
		st := pl.state.Load()
		sp := statusPool{
			Name: pl.name, Protocol: "memcached", Distribution: st.cfg.Distribution, Listen: pl.ln.Addr().String(),
			Clients: pl.nconns.Load(), Fingerprint: st.fingerprint, Source: rings[pl.name].Source,
		}
		if st.cfg.Redis {
			sp.Protocol = "redis"
		}
		if note := pl.clusters.Load(); note != nil {
			sp.Clusters = *note
		}
		if src, ok := sources[pl.name]; ok {
			sp.SourceState, sp.SourceBad = sourceState(src, rings[pl.name].Revision)
		}
		sp.Warmup = pl.warmupState(st, now)
		sp.Ring, sp.Shares = p.statusRates.ring(p, pl, st)
		shares := p.metrics.ringShares(st)
		for i, s := range st.list {
			ss := statusServer{
				Name: s.name, Addr: s.addr, Color: cssColor(i),
				Ejected: s.ejected.Load(), Down: s.down.Load(), Share: shares[s.name],
				Requests: s.stats.requests.Load(), Errors: s.stats.errors.Load() + s.stats.timedout.Load() + s.stats.eofFailed.Load(),
				Hits: s.stats.hits.Load(), Misses: s.stats.misses.Load(), Connections: s.stats.connections.Load(),
			}
			if at := s.ejectedAt.Load(); at != 0 {
				ss.EjectedAt = time.UnixMicro(at).UTC().Format(time.RFC3339)
				ss.EjectedClock = time.UnixMicro(at).UTC().Format("15:04:05 UTC")
			}
			ss.Drained = st.drainState(s, now)
			ss.ReqRate, ss.ErrRate = p.statusRates.rates(s, now)
			sp.Servers = append(sp.Servers, ss)
		}
		page.Pools = append(page.Pools, sp)
	}
	return page
}

// sourceStatus returns the status of each pool's servers_from source, by
// pool name.
func (p *Proxy) sourceStatus() map[string]membership.Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]membership.Status, len(p.sources))
	for name, ps := range p.sources {
		out[name] = ps.src.Status()
	}
	return out
}

// sourceState says how a pool's source fares, for the status page, and
// whether that is bad news: the pool serves revision all the same.
func sourceState(s membership.Status, revision int64) (string, bool) {
	since := s.Since.UTC().Format("15:04:05 UTC")
	switch {
	case !s.Connected:
		return fmt.Sprintf("unreachable since %s (%s): revision %d keeps serving", since, s.LastError, revision), true
	case s.Refusing:
		return fmt.Sprintf("its latest list is refused (%s): revision %d keeps serving", s.LastError, revision), true
	}
	n := "servers"
	if s.Servers == 1 {
		n = "server"
	}
	return fmt.Sprintf("revision %d, %d %s", revision, s.Servers, n), false
}

// warmupState says, for the status page, until when warm-up windows are open
// in st and what they did since the oldest opened, or "" if none is.
func (pl *pool) warmupState(st *state, now time.Time) string {
	w := st.warm.open(now)
	if w == nil {
		return ""
	}
	until, oldest, n := w.until, w, 0
	for o := range w.opened(now) {
		oldest, n = o, n+1
		if o.until.After(until) {
			until = o.until
		}
	}
	what := "a warm-up window is open"
	if n > 1 {
		what = fmt.Sprintf("%d warm-up windows are open", n)
	}
	return fmt.Sprintf("%s until %s: %d reads of previous servers, %d hits, %d copies", what, until.UTC().Format("15:04:05 UTC"),
		pl.stats.warmReads.Load()-oldest.reads, pl.stats.warmHits.Load()-oldest.hits, pl.stats.warmCopies.Load()-oldest.copies)
}

// cssColor returns plot.Color(i) as CSS, the colour of server i's arcs.
func cssColor(i int) string {
	r, g, b, _ := plot.Color(i).RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}

// version returns Proxy.Version, or the main module's version.
func (p *Proxy) version() string {
	if p.Version != "" {
		return p.Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// serveStatus serves the status page.
func (p *Proxy) serveStatus(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	var b bytes.Buffer
	if err := statusTemplate.Execute(&b, p.status(time.Now())); err != nil {
		http.Error(w, "proxy: status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// Nothing of the page may load from elsewhere, nor run a script.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
	w.Write(b.Bytes())
}

// routeReply is GET /route's answer.
type routeReply struct {
	Pool    string `json:"pool"`
	Key     string `json:"key"`
	Server  string `json:"server"`
	Ejected bool   `json:"ejected,omitempty"` // the server is ejected and answers its keys with errors
	// Replicas are the key's replica set, with replicas > 1, in the order
	// reads try them; Server is the first of them that is not ejected.
	Replicas []routeReplica `json:"replicas,omitempty"`
}

type routeReplica struct {
	Server  string `json:"server"`
	Ejected bool   `json:"ejected,omitempty"`
}

// serveRoute answers GET /route?pool=P&key=K with the server that gets K in
// pool P now, ejections included.
func (p *Proxy) serveRoute(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	fail := func(code int, format string, args ...any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]string{"error": "proxy: " + fmt.Sprintf(format, args...)})
	}
	name, key := q.Get("pool"), q.Get("key")
	switch {
	case !q.Has("pool"):
		fail(http.StatusBadRequest, "/route needs ?pool=P&key=K: no pool")
		return
	case !q.Has("key"):
		fail(http.StatusBadRequest, "/route needs ?pool=P&key=K: no key")
		return
	}
	p.mu.Lock()
	pl := p.pools[name]
	p.mu.Unlock()
	if pl == nil {
		fail(http.StatusNotFound, "no pool %q", name)
		return
	}
	st := pl.state.Load()
	if !st.cfg.Redis {
		// Redis takes any key; memcached none empty and none past 250
		// bytes. Other bytes a text key cannot hold (a space, a control
		// character) come base64 in a meta command: they are keys.
		switch {
		case key == "":
			fail(http.StatusBadRequest, "pool %q: an empty key, which memcached does not take", name)
			return
		case len(key) > memcache.MaxKeyLen:
			fail(http.StatusBadRequest, "pool %q: a key of %d bytes, which memcached does not take (at most %d)", name, len(key), memcache.MaxKeyLen)
			return
		}
	}
	if st.dist.Random {
		fail(http.StatusBadRequest, "pool %q: distribution %s sends each request to a server at random; a key has no server", name, st.dist.Name)
		return
	}
	srv, err := st.route([]byte(key))
	ejected := false
	if errors.Is(err, errEjected) {
		// The key's server is ejected and answers errors: it is still the
		// key's server.
		i, _ := st.router.Lookup(st.cfg.HashKey([]byte(key)))
		srv, err, ejected = st.live[i], nil, true
	}
	if err != nil {
		fail(http.StatusServiceUnavailable, "pool %q: %v", name, err)
		return
	}
	reply := routeReply{Pool: name, Key: key, Server: srv.name, Ejected: ejected}
	if st.replicas > 1 && st.rrouter != nil {
		var p plan
		set, _ := p.replicasOf(nil, st, st.cfg.HashKey([]byte(key)))
		for _, s := range set {
			reply.Replicas = append(reply.Replicas, routeReplica{Server: s.name, Ejected: s.ejected.Load()})
		}
		// The server is where a read goes (planRead): the first replica
		// that is live and owes nothing, else the first live one; all
		// ejected, the first, which is the answer's.
		if i := slices.IndexFunc(set, func(s *server) bool { return !s.ejected.Load() && !s.owes() }); i >= 0 {
			reply.Server = set[i].name
		} else if i := slices.IndexFunc(set, func(s *server) bool { return !s.ejected.Load() }); i >= 0 {
			reply.Server = set[i].name
		} else if len(set) > 0 {
			reply.Server, reply.Ejected = set[0].name, true
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(reply)
}
