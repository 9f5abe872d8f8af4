package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/chash-dev/chash/internal/config"
)

// Planned removal of a server: a drain.
//
// A drained server owns no keys but stays connected: its keys move to the
// servers that own them without it, and a warm-up window opens with it as
// their previous server, so that the keys read while the window is open are
// copied from it to their new servers (warmup.go). A server is drained by the
// pool's drain: list, or by the admin endpoint POST /drain?pool=P&server=S,
// whose drain lasts while S is in the pool's list, across reloads, until
// DELETE /drain?pool=P&server=S takes it back.
//
// The drain ends when its window closes (after the pool's warmup, or the
// endpoint's ms, or a minute for a pool without warmup): the proxy logs
// "drain complete", /stats and /metrics (chash_proxy_server_drained) say so,
// and the server may be removed from the pool, which moves no key.

// defaultDrainWindow is the warm-up window of a drain in a pool without
// warmup: a drain without one would only move keys.
const defaultDrainWindow = time.Minute

// drainState is a drain made through the admin endpoint.
type drainState struct {
	since time.Time
	until time.Time // when its window closes
}

// drainedLocked returns the names of the pool's drained servers under cfg:
// its drain: list and the admin's drains; pl.mu is held.
func (pl *pool) drainedLocked(cfg *config.Pool) map[string]bool {
	if len(cfg.Drain) == 0 && len(pl.drains) == 0 {
		return nil
	}
	m := make(map[string]bool, len(cfg.Drain)+len(pl.drains))
	for _, n := range cfg.Drain {
		m[n] = true
	}
	for n := range pl.drains {
		m[n] = true
	}
	return m
}

// forgetDrains drops the admin's drains of servers cfg no longer has; pl.mu
// is held.
func (pl *pool) forgetDrains(cfg *config.Pool) {
	for n := range pl.drains {
		if !slices.ContainsFunc(cfg.Servers, func(s config.Server) bool { return s.Name() == n }) {
			delete(pl.drains, n)
		}
	}
}

// drainsDone logs the drains whose window closed, closed, leaving st: a
// drain of Drain whose own window ended, and a drain of the pool's drain:
// list whose keys closed read (it owned keys before) and no window of st
// still reads. pl.mu is held.
func (pl *pool) drainsDone(closed *window, st *state) {
	now := time.Now()
	for n, d := range pl.drains {
		if !d.until.IsZero() && !now.Before(d.until) {
			pl.proxy.log.Info("drain complete: the server may leave the pool", "pool", pl.name, "server", n,
				"since", d.since.Format(time.RFC3339))
			d.until = time.Time{}
		}
	}
	for _, n := range st.cfg.Drain {
		if s := st.servers[n]; s != nil && closed.readsFrom(s, time.Time{}) && !st.warm.readsFrom(s, now) {
			pl.proxy.log.Info("drain complete: the server may leave the pool", "pool", pl.name, "server", n)
		}
	}
}

// Drain takes the named server of the pool out of its ring, keeping it
// connected, and opens a warm-up window of window (the pool's warmup if zero,
// or a minute if the pool has none) with it as its keys' previous server. It
// returns when the window closes. The drain lasts while the server is in the
// pool's list, until Undrain. It is an error if the pool or the server is
// unknown, the server is drained already, or it is the last one undrained.
func (p *Proxy) Drain(pool, server string, window time.Duration) (time.Time, error) {
	pl, err := p.poolNamed(pool)
	if err != nil {
		return time.Time{}, err
	}
	pl.mu.Lock()
	locked := true
	defer func() {
		if locked {
			pl.mu.Unlock()
		}
	}()
	cur := pl.state.Load()
	if cur.servers[server] == nil {
		return time.Time{}, fmt.Errorf("proxy: pool %q has no server %q (servers: %s)", pool, server, joinSorted(serverNames(cur.list)))
	}
	drained := pl.drainedLocked(cur.cfg)
	if drained[server] {
		return time.Time{}, fmt.Errorf("proxy: pool %q: server %q is drained already", pool, server)
	}
	if len(drained)+1 >= len(cur.list) {
		return time.Time{}, fmt.Errorf("proxy: pool %q: server %q is the last one not drained", pool, server)
	}
	window = drainWindow(cur.cfg, window)
	if pl.drains == nil {
		pl.drains = map[string]*drainState{}
	}
	now := time.Now()
	until := now.Add(window) // d.until is pl.mu's: drainsDone clears it
	d := &drainState{since: now, until: until}
	pl.drains[server] = d
	st, err := newState(cur.cfg, cur.list, cur.eject, pl.drainedLocked(cur.cfg), cur)
	if err != nil {
		delete(pl.drains, server)
		return time.Time{}, err
	}
	pl.storeLocked(cur, st, "drain of "+server, nil, window)
	locked = false
	pl.mu.Unlock()
	pl.noteMove(cur, st, "drain of "+server)
	return until, nil
}

// Undrain gives back its keys to a server drained by Drain, opening a
// warm-up window of window (the pool's warmup if zero, or a minute if the
// pool has none) from the servers that held them.
func (p *Proxy) Undrain(pool, server string, window time.Duration) error {
	pl, err := p.poolNamed(pool)
	if err != nil {
		return err
	}
	pl.mu.Lock()
	if pl.drains[server] == nil {
		pl.mu.Unlock()
		return fmt.Errorf("proxy: pool %q: server %q is not drained by the admin endpoint", pool, server)
	}
	delete(pl.drains, server)
	cur := pl.state.Load()
	st, err := newState(cur.cfg, cur.list, cur.eject, pl.drainedLocked(cur.cfg), cur)
	if err != nil {
		pl.mu.Unlock()
		return err
	}
	pl.storeLocked(cur, st, "undrain of "+server, nil, drainWindow(cur.cfg, window))
	pl.mu.Unlock()
	pl.noteMove(cur, st, "undrain of "+server)
	return nil
}

// drainWindow returns the length of a drain's warm-up window: window, or the
// pool's warmup, or defaultDrainWindow.
func drainWindow(cfg *config.Pool, window time.Duration) time.Duration {
	switch {
	case window > 0:
		return window
	case cfg.Warmup > 0:
		return cfg.Warmup
	}
	return defaultDrainWindow
}

// poolNamed returns the running pool called name.
func (p *Proxy) poolNamed(name string) (*pool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.pools == nil {
		return nil, errors.New("proxy: not running")
	}
	pl := p.pools[name]
	if pl == nil {
		return nil, fmt.Errorf("proxy: no pool %q (pools: %s)", name, joinSorted(slices.Collect(maps.Keys(p.pools))))
	}
	return pl, nil
}

func joinSorted(names []string) string {
	slices.Sort(names)
	b, _ := json.Marshal(names)
	return string(b)
}

// handleDrain serves POST and DELETE /drain?pool=P&server=S[&ms=N].
func (p *Proxy) handleDrain(w http.ResponseWriter, r *http.Request) {
	if err := p.adminRequest(r); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	q := r.URL.Query()
	pool, server := q.Get("pool"), q.Get("server")
	if pool == "" || server == "" {
		http.Error(w, "proxy: "+r.Method+" /drain needs pool and server, as in /drain?pool=alpha&server=10.0.0.2:11211", http.StatusBadRequest)
		return
	}
	var window time.Duration
	if ms := q.Get("ms"); ms != "" {
		// As the warmup key: a window past it, which time.Duration could
		// not hold past 292 years, was read as none.
		n, err := strconv.Atoi(ms)
		if err != nil || n <= 0 || n > math.MaxInt32 {
			http.Error(w, fmt.Sprintf("proxy: /drain: ms %q is not a number in 1..%d (milliseconds)", ms, math.MaxInt32), http.StatusBadRequest)
			return
		}
		window = time.Duration(n) * time.Millisecond
	}
	if r.Method == http.MethodDelete {
		if err := p.Undrain(pool, server, window); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "server %s of pool %s owns keys again\n", server, pool)
		return
	}
	until, err := p.Drain(pool, server, window)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, "draining server %s of pool %s: its keys moved; they warm up until %s, then it may leave the pool\n",
		server, pool, until.UTC().Format(time.RFC3339))
}
