package proxy

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// PoolRing is what GET /ring shows of a pool: the fingerprint of the ring it
// routes by, its servers and where they come from. Proxies whose pools show
// the same fingerprint route every key alike.
type PoolRing struct {
	// Fingerprint is dist.Fingerprint of the ring: 16 hex digits that are a
	// pure function of the pool's routing settings and of Servers.
	Fingerprint string `json:"fingerprint"`
	// Distribution is the pool's distribution.
	Distribution string `json:"distribution"`
	// Servers are the servers of the ring in the pool's order, named as chash
	// route names them: the alias, else host:port. An ejected server whose
	// keys move to the others (auto_eject_hosts without eject_errors) is not
	// among them while it is out.
	Servers []string `json:"servers"`
	// Ejected are the pool's servers that are ejected, in or out of the ring.
	Ejected []string `json:"ejected"`
	// Drained are the pool's drained servers (its drain: list and the
	// drains of POST /drain), in the pool's order: connected, owning no
	// keys, so neither among Servers nor in the fingerprint.
	Drained []DrainedServer `json:"drained"`
	// Source is the pool's servers_from URL, or "" for servers listed in the
	// configuration.
	Source string `json:"source"`
	// Revision is the source's revision of the list the pool serves: etcd's
	// revision, the same in every proxy, or a file's count of changes since
	// the proxy read it first, its own; 0 for servers listed in the
	// configuration.
	Revision int64 `json:"revision"`
	// Connected says whether the source answers (etcd) or can be read (a
	// file); true for servers listed in the configuration.
	Connected bool `json:"connected"`
}

// A DrainedServer is a drained server as GET /ring shows it.
type DrainedServer struct {
	// Server is the server's name, as Servers names them.
	Server string `json:"server"`
	// State is "draining" while a warm-up window reads the keys the server
	// held from it, then "drained": it may leave the pool, which moves no
	// key.
	State string `json:"state"`
}

// drainState returns the state of s, as DrainedServer.State says it, if s
// is drained, else "".
func (st *state) drainState(s *server, now time.Time) string {
	switch {
	case !st.drained[s.name]:
		return ""
	case st.warm.readsFrom(s, now):
		return "draining"
	}
	return "drained"
}

// Rings returns the ring of every pool, by pool name, as GET /ring shows it.
func (p *Proxy) Rings() map[string]PoolRing {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	out := make(map[string]PoolRing, len(p.pools))
	for name, pl := range p.pools {
		st := pl.state.Load()
		r := PoolRing{Fingerprint: st.fingerprint, Distribution: st.cfg.Distribution, Servers: []string{}, Ejected: []string{},
			Drained: []DrainedServer{}, Connected: true}
		for _, s := range st.live {
			r.Servers = append(r.Servers, s.name)
		}
		for _, s := range st.list {
			if s.ejected.Load() {
				r.Ejected = append(r.Ejected, s.name)
			}
			if state := st.drainState(s, now); state != "" {
				r.Drained = append(r.Drained, DrainedServer{Server: s.name, State: state})
			}
		}
		if ps := p.sources[name]; ps != nil {
			r.Source, r.Revision, r.Connected = ps.url, ps.revision(), ps.src.Status().Connected
		}
		out[name] = r
	}
	return out
}

// serveRing answers GET /ring: {"pools": {NAME: PoolRing, ...}}.
func (p *Proxy) serveRing(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(struct {
		Pools map[string]PoolRing `json:"pools"`
	}{p.Rings()})
}

// ringCollector exports each pool's ring and the state of its servers_from
// source at scrape time.
type ringCollector Proxy

var (
	descRingInfo = prometheus.NewDesc("chash_proxy_ring_info",
		"1 for the fingerprint of the ring the pool routes by: proxies that show different fingerprints for a pool route some keys differently.",
		[]string{"pool", "fingerprint"}, nil)
	descRingServers   = prometheus.NewDesc("chash_proxy_ring_servers", "Servers in the pool's ring.", []string{"pool"}, nil)
	descSrcConnected  = prometheus.NewDesc("chash_proxy_source_connected", "1 if the pool's servers_from source answers (etcd) or can be read (a file), else 0: the last list keeps serving.", []string{"pool", "source"}, nil)
	descSrcRevision   = prometheus.NewDesc("chash_proxy_source_revision", "The source's revision of the server list the pool serves (etcd's revision).", []string{"pool"}, nil)
	descSrcApplied    = prometheus.NewDesc("chash_proxy_source_updates_total", "Server lists of the source that the pool took, the first included.", []string{"pool"}, nil)
	descSrcRefused    = prometheus.NewDesc("chash_proxy_source_refused_total", "Server lists of the source that were refused (a bad server line, a name twice, a ring that does not build); the last good list kept serving.", []string{"pool"}, nil)
	descSrcRefusing   = prometheus.NewDesc("chash_proxy_source_refusing", "1 while the source's latest server list is refused: an older list serves until a valid one comes.", []string{"pool"}, nil)
	descSrcErrors     = prometheus.NewDesc("chash_proxy_source_errors_total", "Failed attempts to reach the source, each retry included.", []string{"pool"}, nil)
	descSrcRelists    = prometheus.NewDesc("chash_proxy_source_relists_total", "Times the source read its whole prefix again, after a compaction or once etcd was back.", []string{"pool"}, nil)
	descSrcStateSince = prometheus.NewDesc("chash_proxy_source_state_since_seconds", "Unix time at which the source last became reachable or unreachable.", []string{"pool"}, nil)
)

func (c *ringCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRingInfo, descRingServers, descSrcConnected, descSrcRevision,
		descSrcApplied, descSrcRefused, descSrcRefusing, descSrcErrors, descSrcRelists, descSrcStateSince} {
		ch <- d
	}
}

func (c *ringCollector) Collect(ch chan<- prometheus.Metric) {
	p := (*Proxy)(c)
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	count := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	p.mu.Lock()
	sources := make(map[string]*poolSource, len(p.sources))
	for name, ps := range p.sources {
		sources[name] = ps
	}
	p.mu.Unlock()
	for _, pl := range p.poolList() {
		st := pl.state.Load()
		gauge(descRingInfo, 1, pl.name, st.fingerprint)
		gauge(descRingServers, float64(len(st.live)), pl.name)
		ps := sources[pl.name]
		if ps == nil {
			continue
		}
		s := ps.src.Status()
		connected := 0.0
		if s.Connected {
			connected = 1
		}
		gauge(descSrcConnected, connected, pl.name, ps.url)
		gauge(descSrcRevision, float64(ps.revision()), pl.name)
		count(descSrcApplied, s.Applied, pl.name)
		count(descSrcRefused, s.Refused, pl.name)
		refusing := 0.0
		if s.Refusing {
			refusing = 1
		}
		gauge(descSrcRefusing, refusing, pl.name)
		count(descSrcErrors, s.Errors, pl.name)
		count(descSrcRelists, s.Relists, pl.name)
		gauge(descSrcStateSince, float64(s.Since.UnixNano())/1e9, pl.name)
	}
}
