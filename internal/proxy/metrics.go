package proxy

import (
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/chash-dev/chash/internal/analyze"
)

// poolStats are a pool's counters, named as in nutcracker's stats.
type poolStats struct {
	clientEOF   atomic.Uint64
	clientErr   atomic.Uint64
	clientTotal atomic.Uint64
	ejects      atomic.Uint64
	forwardErr  atomic.Uint64
	fragments   atomic.Uint64

	windows     atomic.Uint64 // warm-up windows opened
	warmReads   atomic.Uint64 // reads of keys' previous servers
	warmHits    atomic.Uint64 // of which found the key
	warmCopies  atomic.Uint64 // values copied to their new servers
	warmDropped atomic.Uint64 // copies not made: too many waited
	warmUndone  atomic.Uint64 // copies taken back: the previous copy changed meanwhile
	failovers   atomic.Uint64 // reads and decisions that went to another replica
}

// serverStats are a server's counters, named as in nutcracker's stats.
type serverStats struct {
	eof           atomic.Uint64
	errors        atomic.Uint64
	timedout      atomic.Uint64
	connections   atomic.Int64
	requests      atomic.Uint64
	requestBytes  atomic.Uint64
	responses     atomic.Uint64
	responseBytes atomic.Uint64
	badReplies    atomic.Uint64 // replies out of the protocol, each resetting its connection
}

// counter is the counter of one label set of a vector, made at its first
// increment rather than before: a codec may name hundreds of commands
// (Redis's), and /metrics shows the series of those clients send. A nil
// counter counts nothing.
type counter struct {
	vec    *prometheus.CounterVec
	labels []string
	once   sync.Once
	c      prometheus.Counter
}

func (c *counter) inc() {
	if c == nil {
		return
	}
	c.once.Do(func() { c.c = c.vec.WithLabelValues(c.labels...) })
	c.c.Inc()
}

// observer is a histogram of one label set of a vector, made at its first
// observation as a counter is. A nil observer observes nothing.
type observer struct {
	vec    *prometheus.HistogramVec
	labels []string
	once   sync.Once
	o      prometheus.Observer
}

func (o *observer) observe(d time.Duration) {
	if o == nil {
		return
	}
	o.once.Do(func() { o.o = o.vec.WithLabelValues(o.labels...) })
	o.o.Observe(d.Seconds())
}

// latencyBuckets span 50µs to about 1.6s.
var latencyBuckets = prometheus.ExponentialBuckets(50e-6, 2, 16)

// metrics holds the proxy's Prometheus metrics: histograms and counters updated
// on the request path, and a collector that reads the pools' counters and states
// when scraped.
type metrics struct {
	p        *Proxy
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	server   *prometheus.HistogramVec
	start    time.Time

	shareMu sync.Mutex
	shares  map[*state]map[string]float64
}

func newMetrics(p *Proxy) *metrics {
	m := &metrics{
		p:   p,
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chash_proxy_requests_total",
			Help: "Client requests by pool and command.",
		}, []string{"pool", "command"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "chash_proxy_request_duration_seconds",
			Help:    "Time from reading a client request to having its reply, by pool and command.",
			Buckets: latencyBuckets,
		}, []string{"pool", "command"}),
		server: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "chash_proxy_server_request_duration_seconds",
			Help:    "Time from reading a client request to reading the server's reply, by pool, server and command.",
			Buckets: latencyBuckets,
		}, []string{"pool", "server", "command"}),
		start:  time.Now(),
		shares: map[*state]map[string]float64{},
	}
	m.reg.MustRegister(m.requests, m.latency, m.server, (*collector)(m),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// poolMetrics returns the pool's metrics of each of the commands, made at
// their first use; commands with no name have none (nil).
func (m *metrics) poolMetrics(pool string, commands []string) (cmds []*counter, lat []*observer) {
	cmds, lat = make([]*counter, len(commands)), make([]*observer, len(commands))
	for i, c := range commands {
		if c != "" {
			cmds[i] = &counter{vec: m.requests, labels: []string{pool, c}}
			lat[i] = &observer{vec: m.latency, labels: []string{pool, c}}
		}
	}
	return cmds, lat
}

// serverObservers returns a server's latency histogram of each command, made
// at its first use. A server's reader goroutines, the only ones to observe,
// end before forgetServer drops its series, which so stay dropped.
func (m *metrics) serverObservers(pool, server string, commands []string) []*observer {
	obs := make([]*observer, len(commands))
	for i, c := range commands {
		if c != "" {
			obs[i] = &observer{vec: m.server, labels: []string{pool, server, c}}
		}
	}
	return obs
}

// forgetServer drops the metrics of a server that left.
func (m *metrics) forgetServer(pool, server string) {
	m.server.DeletePartialMatch(prometheus.Labels{"pool": pool, "server": server})
}

// observeRequest records a finished client request.
func (pl *pool) observeRequest(r *clientReq) {
	if cmd := r.req.command(); cmd > 0 {
		pl.lat[cmd].observe(time.Since(r.start))
	}
}

// ringShares returns each live server's share of the key space in st, computed
// once per state.
func (m *metrics) ringShares(st *state) map[string]float64 {
	m.shareMu.Lock()
	defer m.shareMu.Unlock()
	if s, ok := m.shares[st]; ok {
		return s
	}
	s := map[string]float64{}
	if st.router != nil && !st.dist.Random {
		if b, err := analyze.Measure(st.router, nodesOf(st.live), analyze.SampleKeys(20000, 1)); err == nil {
			for _, n := range b.Nodes {
				s[n.Name] = n.Share
			}
		}
	}
	// Keep only current states' figures.
	if len(m.shares) > 64 {
		clear(m.shares)
	}
	m.shares[st] = s
	return s
}

// collector exports the counters of pools and servers at scrape time.
type collector metrics

var (
	descClientConns = prometheus.NewDesc("chash_proxy_client_connections", "Open client connections.", []string{"pool"}, nil)
	descClientTotal = prometheus.NewDesc("chash_proxy_client_connections_total", "Client connections accepted.", []string{"pool"}, nil)
	descClientErr   = prometheus.NewDesc("chash_proxy_client_errors_total", "Client connections refused or ended by an error.", []string{"pool"}, nil)
	descForwardErr  = prometheus.NewDesc("chash_proxy_forward_errors_total", "Requests answered with an error because no server could serve them.", []string{"pool"}, nil)
	descFragments   = prometheus.NewDesc("chash_proxy_fragments_total", "Per-server requests of gets split over servers.", []string{"pool"}, nil)
	descEjects      = prometheus.NewDesc("chash_proxy_ejections_total", "Server ejections.", []string{"pool"}, nil)
	descSrvReqs     = prometheus.NewDesc("chash_proxy_server_requests_total", "Requests sent to the server.", []string{"pool", "server"}, nil)
	descSrvErrs     = prometheus.NewDesc("chash_proxy_server_errors_total", "Failed connections and exchanges with the server.", []string{"pool", "server"}, nil)
	descSrvBadReply = prometheus.NewDesc("chash_proxy_server_protocol_errors_total", "Replies of the server out of the protocol's grammar; each reset its connection and failed the requests waiting on it.", []string{"pool", "server"}, nil)
	descSrvTimeouts = prometheus.NewDesc("chash_proxy_server_timeouts_total", "Requests to the server that timed out.", []string{"pool", "server"}, nil)
	descSrvConns    = prometheus.NewDesc("chash_proxy_server_connections", "Open connections to the server.", []string{"pool", "server"}, nil)
	descSrvEjected  = prometheus.NewDesc("chash_proxy_server_ejected", "1 if the server is ejected.", []string{"pool", "server"}, nil)
	descMemHeld     = prometheus.NewDesc("chash_proxy_memory_held_bytes", "Bytes of requests and replies in flight (see --max-memory).", nil, nil)
	descMemWaits    = prometheus.NewDesc("chash_proxy_memory_waits_total", "Times a client stopped reading because the proxy held --max-memory or more.", nil, nil)
	descSrvShare    = prometheus.NewDesc("chash_proxy_server_ring_share", "The server's fraction of the key space.", []string{"pool", "server"}, nil)

	descWindows     = prometheus.NewDesc("chash_proxy_warmup_windows_total", "Warm-up windows opened by ring changes.", []string{"pool"}, nil)
	descWarmOpen    = prometheus.NewDesc("chash_proxy_warmup_window_open", "1 while a warm-up window is open.", []string{"pool"}, nil)
	descWarmReads   = prometheus.NewDesc("chash_proxy_warmup_reads_total", "Reads of keys' previous servers after misses at their new servers.", []string{"pool"}, nil)
	descWarmHits    = prometheus.NewDesc("chash_proxy_warmup_hits_total", "Warm-up reads that found the key.", []string{"pool"}, nil)
	descWarmCopies  = prometheus.NewDesc("chash_proxy_warmup_copies_total", "Values copied to their keys' new servers.", []string{"pool"}, nil)
	descWarmDropped = prometheus.NewDesc("chash_proxy_warmup_copies_dropped_total", "Copies not made because too many waited.", []string{"pool"}, nil)
	descWarmUndone  = prometheus.NewDesc("chash_proxy_warmup_copies_undone_total", "Copies taken back because the previous server's copy changed meanwhile.", []string{"pool"}, nil)
	descFailovers   = prometheus.NewDesc("chash_proxy_replica_failovers_total", "Reads and conditional writes sent to the next replica after one failed (or missed, with read_miss_failover).", []string{"pool"}, nil)
	descOwed        = prometheus.NewDesc("chash_proxy_owed_deletes", "Deletes the server owes: writes it missed, replayed before it serves reads again.", []string{"pool", "server"}, nil)
	descOwedTotal   = prometheus.NewDesc("chash_proxy_owed_deletes_total", "Writes the server missed, each owed as a delete.", []string{"pool", "server"}, nil)
	descReplayed    = prometheus.NewDesc("chash_proxy_owed_deletes_replayed_total", "Owed deletes replayed to the server.", []string{"pool", "server"}, nil)
	descFlushes     = prometheus.NewDesc("chash_proxy_owed_flushes_total", "Times the server owed too many deletes and was emptied instead.", []string{"pool", "server"}, nil)
	descDrained     = prometheus.NewDesc("chash_proxy_server_drained", "1 if the server is drained: it owns no keys.", []string{"pool", "server"}, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descClientConns, descClientTotal, descClientErr, descForwardErr, descFragments,
		descEjects, descSrvReqs, descSrvErrs, descSrvBadReply, descSrvTimeouts, descSrvConns, descSrvEjected, descSrvShare, descMemHeld, descMemWaits,
		descWindows, descWarmOpen, descWarmReads, descWarmHits, descWarmCopies, descWarmDropped, descWarmUndone, descFailovers,
		descOwed, descOwedTotal, descReplayed, descFlushes, descDrained} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	m := (*metrics)(c)
	ch <- prometheus.MustNewConstMetric(descMemHeld, prometheus.GaugeValue, float64(m.p.mem.held.Load()))
	ch <- prometheus.MustNewConstMetric(descMemWaits, prometheus.CounterValue, float64(m.p.mem.waits.Load()))
	for _, pl := range m.p.poolList() {
		st := pl.state.Load()
		gauge := func(d *prometheus.Desc, v float64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
		}
		count := func(d *prometheus.Desc, v uint64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
		}
		gauge(descClientConns, float64(pl.nconns.Load()), pl.name)
		count(descClientTotal, pl.stats.clientTotal.Load(), pl.name)
		count(descClientErr, pl.stats.clientErr.Load(), pl.name)
		count(descForwardErr, pl.stats.forwardErr.Load(), pl.name)
		count(descFragments, pl.stats.fragments.Load(), pl.name)
		count(descEjects, pl.stats.ejects.Load(), pl.name)
		count(descWindows, pl.stats.windows.Load(), pl.name)
		open := 0.0
		if st.warm != nil {
			open = 1
		}
		gauge(descWarmOpen, open, pl.name)
		count(descWarmReads, pl.stats.warmReads.Load(), pl.name)
		count(descWarmHits, pl.stats.warmHits.Load(), pl.name)
		count(descWarmCopies, pl.stats.warmCopies.Load(), pl.name)
		count(descWarmDropped, pl.stats.warmDropped.Load(), pl.name)
		count(descWarmUndone, pl.stats.warmUndone.Load(), pl.name)
		count(descFailovers, pl.stats.failovers.Load(), pl.name)
		shares := m.ringShares(st)
		for _, s := range st.list {
			gauge(descOwed, float64(s.owed.n.Load()), pl.name, s.name)
			count(descOwedTotal, s.owed.total.Load(), pl.name, s.name)
			count(descReplayed, s.owed.replayed.Load(), pl.name, s.name)
			count(descFlushes, s.owed.flushes.Load(), pl.name, s.name)
			dr := 0.0
			if st.drained[s.name] {
				dr = 1
			}
			gauge(descDrained, dr, pl.name, s.name)
			count(descSrvReqs, s.stats.requests.Load(), pl.name, s.name)
			count(descSrvErrs, s.stats.errors.Load(), pl.name, s.name)
			count(descSrvTimeouts, s.stats.timedout.Load(), pl.name, s.name)
			count(descSrvBadReply, s.stats.badReplies.Load(), pl.name, s.name)
			gauge(descSrvConns, float64(s.stats.connections.Load()), pl.name, s.name)
			ej := 0.0
			if s.ejected.Load() {
				ej = 1
			}
			gauge(descSrvEjected, ej, pl.name, s.name)
			gauge(descSrvShare, shares[s.name], pl.name, s.name)
		}
	}
}

// poolList returns the running pools.
func (p *Proxy) poolList() []*pool {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*pool, 0, len(p.pools))
	for _, pl := range p.pools {
		out = append(out, pl)
	}
	return out
}

// Stats returns the proxy's counters in the shape of nutcracker's stats port, so
// that dashboards made for twemproxy read them.
func (p *Proxy) Stats() map[string]any {
	host, _ := os.Hostname()
	now := time.Now()
	out := map[string]any{
		"service":   "nutcracker",
		"source":    host,
		"version":   "0.5.0-chash",
		"uptime":    int64(now.Sub(p.metrics.start).Seconds()),
		"timestamp": now.Unix(),
	}
	var total uint64
	var curr int64
	for _, pl := range p.poolList() {
		st := pl.state.Load()
		ps := map[string]any{
			"client_eof":         pl.stats.clientEOF.Load(),
			"client_err":         pl.stats.clientErr.Load(),
			"client_connections": pl.nconns.Load(),
			"server_ejects":      pl.stats.ejects.Load(),
			"forward_error":      pl.stats.forwardErr.Load(),
			"fragments":          pl.stats.fragments.Load(),
			"warmup_reads":       pl.stats.warmReads.Load(),
			"warmup_hits":        pl.stats.warmHits.Load(),
			"warmup_copies":      pl.stats.warmCopies.Load(),
			"replica_failovers":  pl.stats.failovers.Load(),
		}
		total += pl.stats.clientTotal.Load()
		curr += pl.nconns.Load()
		for _, s := range st.list {
			var ejectedAt int64
			if s.ejected.Load() {
				ejectedAt = s.ejectedAt.Load() * 1e6 // nutcracker reports microseconds
			}
			var in, inBytes, out, outBytes int
			for _, c := range s.conns {
				i, ib, o, ob := c.queues()
				in, inBytes, out, outBytes = in+i, inBytes+ib, out+o, outBytes+ob
			}
			ps[s.name] = map[string]any{
				"server_eof":             s.stats.eof.Load(),
				"server_err":             s.stats.errors.Load(),
				"server_timedout":        s.stats.timedout.Load(),
				"server_protocol_errors": s.stats.badReplies.Load(),
				"server_connections":     s.stats.connections.Load(),
				"server_ejected_at":      ejectedAt,
				"requests":               s.stats.requests.Load(),
				"request_bytes":          s.stats.requestBytes.Load(),
				"responses":              s.stats.responses.Load(),
				"response_bytes":         s.stats.responseBytes.Load(),
				"in_queue":               in,
				"in_queue_bytes":         inBytes,
				"out_queue":              out,
				"out_queue_bytes":        outBytes,
				"owed_deletes":           s.owed.n.Load(),
				"drained":                st.drained[s.name],
			}
		}
		out[pl.name] = ps
	}
	out["total_connections"] = total
	out["curr_connections"] = curr
	return out
}
