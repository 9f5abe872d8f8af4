package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
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

// Handler returns the admin HTTP handler, on its own ServeMux; call it after
// Start:
//
//	GET  /metrics  Prometheus metrics
//	GET  /stats    counters as JSON, shaped like nutcracker's stats port
//	POST /reload   reload ConfigPath; 200 on success, 400 with the error if refused
//	GET  /healthz  200 "ok"
func (p *Proxy) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(p.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(p.Stats())
	})
	mux.HandleFunc("POST /reload", func(w http.ResponseWriter, r *http.Request) {
		if err := p.ReloadFile(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintln(w, "reloaded")
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// startAdmin opens the admin listener; Close closes it.
func (p *Proxy) startAdmin() error {
	ln, err := net.Listen("tcp", p.Admin)
	if err != nil {
		return fmt.Errorf("proxy: admin listener: %w", err)
	}
	p.adminL = ln
	p.admin = &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 10 * time.Second}
	p.wg.Add(1)
	go p.serveAdmin()
	p.log.Info("admin listening", "addr", ln.Addr().String(), "paths", "/metrics /stats /reload /healthz")
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
