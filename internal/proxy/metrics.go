package proxy

import (
	"runtime"
	"runtime/debug"
	"strings"
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
	warmFills   atomic.Uint64 // keys hit at a replica, copied to the replicas a change added
	warmDropped atomic.Uint64 // copies not made: too many waited
	warmUndone  atomic.Uint64 // copies deleted again: the previous copy changed meanwhile
	warmRecast  atomic.Uint64 // conditional writes given the cas of a copy (recast)
	failovers   atomic.Uint64 // reads and decisions that went to another replica
	bytesIn     atomic.Uint64 // read from clients
	bytesOut    atomic.Uint64 // written to clients
}

// serverStats are a server's counters, named as in nutcracker's stats.
type serverStats struct {
	eof           atomic.Uint64
	eofFailed     atomic.Uint64 // ends of stream that failed requests
	errors        atomic.Uint64
	timedout      atomic.Uint64
	connections   atomic.Int64
	requests      atomic.Uint64
	requestBytes  atomic.Uint64
	responses     atomic.Uint64
	responseBytes atomic.Uint64
	badReplies    atomic.Uint64 // replies out of the protocol, each resetting its connection
	ejects        atomic.Uint64 // times the server was ejected
	hits          atomic.Uint64 // keys a read found (reply.lookups)
	misses        atomic.Uint64 // keys a read did not find
	gatHits       atomic.Uint64 // of hits, those of reads that touch (gat, gats)
	gatMisses     atomic.Uint64 // of misses, those of reads that touch
	touchHits     atomic.Uint64 // items a touch found
	touchMisses   atomic.Uint64 // ... and did not
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

// latencyBuckets, of the pools' histograms by command, span 100µs to about
// 0.8s, doubling: 14 buckets, 17 lines a series.
var latencyBuckets = prometheus.ExponentialBuckets(100e-6, 2, 14)

// serverBuckets, of the servers' histograms of all commands, are coarse: a
// server's latency is one series of 9 lines, enough to see it go slow, where
// by command it was 22 series of 19 lines for each server.
var serverBuckets = []float64{250e-6, 1e-3, 5e-3, 25e-3, 100e-3, 500e-3}

// metrics holds the proxy's Prometheus metrics: histograms and counters updated
// on the request path, and a collector that reads the pools' counters and states
// when scraped. Series are made at their first use, so that a scrape shows
// the commands clients send, not every command of every protocol at zero.
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
			Help:    "Time from reading a client request to reading the server's reply, by pool and server, all commands together.",
			Buckets: serverBuckets,
		}, []string{"pool", "server"}),
		start:  time.Now(),
		shares: map[*state]map[string]float64{},
	}
	m.reg.MustRegister(m.requests, m.latency, m.server, (*collector)(m), buildInfo(),
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

// serverObserver returns a server's latency histogram, made at its first
// use. A server's reader goroutines, the only ones to observe, end before
// forgetServer drops its series, which so stays dropped.
func (m *metrics) serverObserver(pool, server string) *observer {
	return &observer{vec: m.server, labels: []string{pool, server}}
}

// forgetServer drops the metrics of a server that left.
func (m *metrics) forgetServer(pool, server string) {
	m.server.DeletePartialMatch(prometheus.Labels{"pool": pool, "server": server})
}

// forgetPool drops the per-command series of a pool that went. Its clients,
// the only ones to count and observe in them, have ended.
func (m *metrics) forgetPool(pool string) {
	m.requests.DeletePartialMatch(prometheus.Labels{"pool": pool})
	m.latency.DeletePartialMatch(prometheus.Labels{"pool": pool})
}

// observeRequest records a finished client request: the latency of those
// sent to a server (quit, mn and bad input are answered at once).
func (pl *pool) observeRequest(r *clientReq) {
	if cmd := r.req.command(); cmd > 0 && r.ncalls > 0 {
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
		if b, err := analyze.Measure(st.router, st.nodes(st.live), analyze.SampleKeys(20000, 1)); err == nil {
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
	descClientIdle  = prometheus.NewDesc("chash_proxy_client_connections_idle", "Open client connections idle for 5 s or more, waiting without a goroutine of their own (Linux; 0 elsewhere).", []string{"pool"}, nil)
	descClientTotal = prometheus.NewDesc("chash_proxy_client_connections_total", "Client connections accepted.", []string{"pool"}, nil)
	descClientErr   = prometheus.NewDesc("chash_proxy_client_errors_total", "Client connections refused or ended by an error.", []string{"pool"}, nil)
	descForwardErr  = prometheus.NewDesc("chash_proxy_forward_errors_total", "Requests answered with an error because no server could serve them.", []string{"pool"}, nil)
	descFragments   = prometheus.NewDesc("chash_proxy_fragments_total", "Per-server requests of gets split over servers.", []string{"pool"}, nil)
	descEjects      = prometheus.NewDesc("chash_proxy_ejections_total", "Server ejections.", []string{"pool"}, nil)
	descSrvReqs     = prometheus.NewDesc("chash_proxy_server_requests_total", "Requests sent to the server.", []string{"pool", "server"}, nil)
	descSrvErrs     = prometheus.NewDesc("chash_proxy_server_errors_total", "Failed connections and exchanges with the server, other than timeouts (chash_proxy_server_timeouts_total) and the server closing the connection (chash_proxy_server_eof_total).", []string{"pool", "server"}, nil)
	descSrvBadReply = prometheus.NewDesc("chash_proxy_server_protocol_errors_total", "Replies of the server out of the protocol's grammar; each reset its connection and failed the requests waiting on it.", []string{"pool", "server"}, nil)
	descSrvTimeouts = prometheus.NewDesc("chash_proxy_server_timeouts_total", "Requests to the server that timed out.", []string{"pool", "server"}, nil)
	descSrvEOF      = prometheus.NewDesc("chash_proxy_server_eof_total", "Connections the server closed, idle ones included (nutcracker's server_eof).", []string{"pool", "server"}, nil)
	descSrvConns    = prometheus.NewDesc("chash_proxy_server_connections", "Open connections to the server.", []string{"pool", "server"}, nil)
	descSrvEjected  = prometheus.NewDesc("chash_proxy_server_ejected", "1 if the server is ejected.", []string{"pool", "server"}, nil)
	descMemHeld     = prometheus.NewDesc("chash_proxy_memory_held_bytes", "Bytes of requests and replies in flight (see --max-memory).", nil, nil)
	descMemWaits    = prometheus.NewDesc("chash_proxy_memory_waits_total", "Times a client stopped reading because the proxy held --max-memory or more.", nil, nil)
	descSrvShare    = prometheus.NewDesc("chash_proxy_server_ring_share", "The server's fraction of the key space.", []string{"pool", "server"}, nil)
	descSrvEjects   = prometheus.NewDesc("chash_proxy_server_ejections_total", "Times the server was ejected.", []string{"pool", "server"}, nil)
	descSrvHits     = prometheus.NewDesc("chash_proxy_get_hits_total", "Keys of reads (get, gets, gat, gats, mg; Redis GET, MGET, GETEX, GETDEL, GETSET) the server found.", []string{"pool", "server"}, nil)
	descSrvMisses   = prometheus.NewDesc("chash_proxy_get_misses_total", "Keys of reads the server did not find.", []string{"pool", "server"}, nil)
	descSrvSent     = prometheus.NewDesc("chash_proxy_server_sent_bytes_total", "Bytes of requests written to the server (nutcracker's request_bytes).", []string{"pool", "server"}, nil)
	descSrvRecv     = prometheus.NewDesc("chash_proxy_server_received_bytes_total", "Bytes of replies read from the server, values included (nutcracker's response_bytes).", []string{"pool", "server"}, nil)
	descClientIn    = prometheus.NewDesc("chash_proxy_client_received_bytes_total", "Bytes read from clients.", []string{"pool"}, nil)
	descClientOut   = prometheus.NewDesc("chash_proxy_client_sent_bytes_total", "Bytes written to clients.", []string{"pool"}, nil)

	descWindows     = prometheus.NewDesc("chash_proxy_warmup_windows_total", "Warm-up windows opened by ring changes.", []string{"pool"}, nil)
	descWarmOpen    = prometheus.NewDesc("chash_proxy_warmup_window_open", "1 while a warm-up window is open.", []string{"pool"}, nil)
	descWarmReads   = prometheus.NewDesc("chash_proxy_warmup_reads_total", "Reads of keys' previous servers after misses at their new servers.", []string{"pool"}, nil)
	descWarmHits    = prometheus.NewDesc("chash_proxy_warmup_hits_total", "Warm-up reads that found the key.", []string{"pool"}, nil)
	descWarmCopies  = prometheus.NewDesc("chash_proxy_warmup_copies_total", "Values copied to their keys' new servers.", []string{"pool"}, nil)
	descWarmFills   = prometheus.NewDesc("chash_proxy_warmup_fills_total", "Keys a read found at one of their replicas, in a warm-up window, copied to the replicas a ring change made theirs (replicas > 1).", []string{"pool"}, nil)
	descWarmDropped = prometheus.NewDesc("chash_proxy_warmup_copies_dropped_total", "Copies not made because too many waited.", []string{"pool"}, nil)
	descWarmUndone  = prometheus.NewDesc("chash_proxy_warmup_copies_undone_total", "Copies deleted from their new servers again because the previous server's copy changed while they were made; a copy written over since is left, and not counted.", []string{"pool"}, nil)
	descWarmRecast  = prometheus.NewDesc("chash_proxy_warmup_recast_total", "Conditional writes (cas, a meta command's C) whose cas, read from the key's previous server, was that of an item copied in a warm-up window, sent with the copy's cas.", []string{"pool"}, nil)
	descFailovers   = prometheus.NewDesc("chash_proxy_replica_failovers_total", "Reads and conditional writes sent to the next replica after one failed (or missed, with read_miss_failover).", []string{"pool"}, nil)
	descOwed        = prometheus.NewDesc("chash_proxy_owed_deletes", "Deletes the server owes: writes it missed, replayed before it serves reads again.", []string{"pool", "server"}, nil)
	descOwedTotal   = prometheus.NewDesc("chash_proxy_owed_deletes_total", "Writes the server missed, each owed as a delete.", []string{"pool", "server"}, nil)
	descReplayed    = prometheus.NewDesc("chash_proxy_owed_deletes_replayed_total", "Owed deletes replayed to the server.", []string{"pool", "server"}, nil)
	descFlushes     = prometheus.NewDesc("chash_proxy_owed_flushes_total", "Times the server owed too many deletes and was emptied instead.", []string{"pool", "server"}, nil)
	descRefused     = prometheus.NewDesc("chash_proxy_refused_requests_total", "Requests the proxy refused, by class: for memcached, the words of its error reply (as the refused_ lines of the data port's stats); for Redis, a fixed class (unknown_command, noauth, ...).", []string{"pool", "class"}, nil)
	descDrained     = prometheus.NewDesc("chash_proxy_server_drained", "1 if the server is drained: it owns no keys.", []string{"pool", "server"}, nil)
)

// buildInfo returns chash_build_info, 1 with the version of the binary's main
// module and of Go as labels, for dashboards that show what runs where.
func buildInfo() prometheus.Collector {
	version, goVersion := "(devel)", runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		version = bi.Main.Version
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "chash_build_info",
		Help:        "1, with the version of chash and of Go it was built with as labels.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": goVersion},
	})
	g.Set(1)
	return g
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descClientConns, descClientIdle, descClientTotal, descClientErr, descForwardErr, descFragments,
		descEjects, descSrvReqs, descSrvErrs, descSrvBadReply, descSrvTimeouts, descSrvEOF, descSrvConns, descSrvEjected, descSrvShare, descMemHeld, descMemWaits,
		descWindows, descWarmOpen, descWarmReads, descWarmHits, descWarmCopies, descWarmFills, descWarmDropped, descWarmUndone, descWarmRecast, descFailovers,
		descOwed, descOwedTotal, descReplayed, descFlushes, descDrained, descRefused,
		descSrvEjects, descSrvHits, descSrvMisses, descSrvSent, descSrvRecv, descClientIn, descClientOut} {
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
		gauge(descClientIdle, float64(pl.parked.Load()), pl.name)
		count(descClientTotal, pl.stats.clientTotal.Load(), pl.name)
		count(descClientErr, pl.stats.clientErr.Load(), pl.name)
		count(descForwardErr, pl.stats.forwardErr.Load(), pl.name)
		count(descFragments, pl.stats.fragments.Load(), pl.name)
		count(descEjects, pl.stats.ejects.Load(), pl.name)
		// A Redis pool has no warm-up, replicas or owed deletes (README):
		// series that could only read 0 are left out.
		mc := !st.cfg.Redis
		if mc {
			count(descWindows, pl.stats.windows.Load(), pl.name)
			open := 0.0
			if st.warm != nil {
				open = 1
			}
			gauge(descWarmOpen, open, pl.name)
			count(descWarmReads, pl.stats.warmReads.Load(), pl.name)
			count(descWarmHits, pl.stats.warmHits.Load(), pl.name)
			count(descWarmCopies, pl.stats.warmCopies.Load(), pl.name)
			count(descWarmFills, pl.stats.warmFills.Load(), pl.name)
			count(descWarmDropped, pl.stats.warmDropped.Load(), pl.name)
			count(descWarmUndone, pl.stats.warmUndone.Load(), pl.name)
			count(descWarmRecast, pl.stats.warmRecast.Load(), pl.name)
			count(descFailovers, pl.stats.failovers.Load(), pl.name)
		}
		count(descClientIn, pl.stats.bytesIn.Load(), pl.name)
		count(descClientOut, pl.stats.bytesOut.Load(), pl.name)
		classes, totals := pl.refused.counts()
		for i, class := range classes {
			count(descRefused, totals[i], pl.name, strings.TrimPrefix(refusalStat(class), "refused_"))
		}
		shares := m.ringShares(st)
		for _, s := range st.list {
			if mc {
				gauge(descOwed, float64(s.owed.n.Load()), pl.name, s.name)
				count(descOwedTotal, s.owed.total.Load(), pl.name, s.name)
				count(descReplayed, s.owed.replayed.Load(), pl.name, s.name)
				count(descFlushes, s.owed.flushes.Load(), pl.name, s.name)
			}
			dr := 0.0
			if st.drained[s.name] {
				dr = 1
			}
			gauge(descDrained, dr, pl.name, s.name)
			count(descSrvReqs, s.stats.requests.Load(), pl.name, s.name)
			count(descSrvErrs, s.stats.errors.Load(), pl.name, s.name)
			count(descSrvTimeouts, s.stats.timedout.Load(), pl.name, s.name)
			count(descSrvEOF, s.stats.eof.Load(), pl.name, s.name)
			count(descSrvBadReply, s.stats.badReplies.Load(), pl.name, s.name)
			count(descSrvEjects, s.stats.ejects.Load(), pl.name, s.name)
			count(descSrvHits, s.stats.hits.Load(), pl.name, s.name)
			count(descSrvMisses, s.stats.misses.Load(), pl.name, s.name)
			count(descSrvSent, s.stats.requestBytes.Load(), pl.name, s.name)
			count(descSrvRecv, s.stats.responseBytes.Load(), pl.name, s.name)
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
