package proxy

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/chash-dev/chash/internal/config"
)

// ReloadFile reads ConfigPath and reloads the proxy with it; see Reload.
func (p *Proxy) ReloadFile() error {
	if p.ConfigPath == "" {
		return errors.New("proxy: no configuration file to reload")
	}
	f, err := config.Load(p.ConfigPath)
	if err != nil {
		p.log.Error("reload refused: the old configuration keeps serving", "err", err)
		return err
	}
	if err := p.Reload(f); err != nil {
		p.log.Error("reload refused: the old configuration keeps serving", "err", err)
		return err
	}
	return nil
}

// AdminHeader is the header a request to a state-changing admin endpoint (POST
// /reload) must carry, with any value: a web page can make a browser send a
// simple cross-site POST to the admin listener, but not one with this header,
// which needs a CORS preflight that the proxy never grants.
const AdminHeader = "Chash-Admin"

// reloadEvery is the least time between two reloads through the admin
// listener: a reload reads and checks files and measures the moved key space,
// and a flood of them must not take the proxy's CPU from requests.
const reloadEvery = time.Second

// Handler returns the admin HTTP handler, on its own ServeMux; call it after
// Start:
//
//	GET    /         the status page: each pool's ring, servers, health, rates
//	GET    /route    ?pool=P&key=K: {"pool":P,"key":K,"server":NAME}, the
//	                 server of the key now (with replicas > 1, the replica
//	                 reads go to, and "replicas", its replica set); 400 or
//	                 404 with {"error":...}
//	GET    /metrics  Prometheus metrics
//	GET    /stats    counters as JSON, nutcracker's stats document
//	POST   /reload   reload ConfigPath; 200 on success, 400 with the error if refused
//	POST   /drain    ?pool=P&server=S[&ms=N]: drain S (see Drain); 400 with the error if refused
//	DELETE /drain    ?pool=P&server=S[&ms=N]: undrain S (see Undrain)
//	GET    /ring     each pool's ring fingerprint, servers and source as JSON (Rings)
//	GET    /healthz  200 "ok"
//
// POST /reload and /drain, and DELETE /drain, must carry the header
// AdminHeader (Chash-Admin: 1) and name in their Host header the admin
// listener's host, localhost or an IP address, so that neither a cross-site
// request nor a DNS name rebound to the listener's address reaches them (403
// otherwise); and /reload answers 429 within a second of the last reload.
func (p *Proxy) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", p.serveStatus)
	mux.HandleFunc("GET /route", p.serveRoute)
	mux.Handle("GET /metrics", promhttp.HandlerFor(p.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(p.StatsJSON())
	})
	mux.HandleFunc("POST /reload", func(w http.ResponseWriter, r *http.Request) {
		if err := p.adminRequest(r); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		if !p.reloadAllowed(time.Now()) {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "proxy: a reload ran less than a second ago", http.StatusTooManyRequests)
			return
		}
		if err := p.ReloadFile(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintln(w, "reloaded")
	})
	mux.HandleFunc("POST /drain", p.handleDrain)
	mux.HandleFunc("DELETE /drain", p.handleDrain)
	mux.HandleFunc("GET /ring", p.serveRing)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// adminRequest checks that r, a request to a state-changing endpoint, comes
// from a client that is not a browser tricked by another site: it carries
// AdminHeader, and its Host is the admin listener's host, localhost or an IP
// address.
func (p *Proxy) adminRequest(r *http.Request) error {
	if r.Header.Get(AdminHeader) == "" {
		return fmt.Errorf("proxy: %s %s needs the header %q (curl -X POST -H '%s: 1' ...)", r.Method, r.URL.Path, AdminHeader, AdminHeader)
	}
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	listen, _, _ := net.SplitHostPort(p.Admin)
	if host == "localhost" || host == listen || net.ParseIP(host) != nil {
		return nil
	}
	return fmt.Errorf("proxy: %s %s for host %q: only the admin listener's host, localhost or an IP address", r.Method, r.URL.Path, r.Host)
}

// reloadAllowed reports whether a reload may start at now, reloadEvery after
// the last one allowed, and if so counts it as the last.
func (p *Proxy) reloadAllowed(now time.Time) bool {
	p.reloadMu.Lock()
	defer p.reloadMu.Unlock()
	if now.Before(p.nextReload) {
		return false
	}
	p.nextReload = now.Add(reloadEvery)
	return true
}

// startAdmin opens the admin listener; Close closes it.
func (p *Proxy) startAdmin() error {
	ln, err := listenApart(p.ctx, p.Admin, p.listeners(nil)) // shared with a new process (listen.go)
	if err != nil {
		return fmt.Errorf("proxy: admin listener: %w", err)
	}
	p.adminL = ln
	p.admin = &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 10 * time.Second}
	p.wg.Add(1)
	go p.serveAdmin()
	p.log.Info("admin listening", "addr", ln.Addr().String(), "paths", "/ /route /metrics /stats /ring /reload /drain /healthz")
	p.logShared("admin listener", ln)
	return nil
}

func (p *Proxy) serveAdmin() {
	defer p.wg.Done()
	p.admin.Serve(p.adminL)
}

// AdminAddr returns the admin listener's address, or nil.
func (p *Proxy) AdminAddr() net.Addr {
	if p.adminL == nil {
		return nil
	}
	return p.adminL.Addr()
}
