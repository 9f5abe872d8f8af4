package proxy

import (
	"strings"
	"sync"
	"time"
)

// moveEvery is the least time between two measurements of a pool's moved key
// space. Measuring costs about as much CPU as building the ring (a pass over
// both rings' points, or routing 100,000 sampled keys through both routers
// for a distribution without an exact method), so a membership source that
// changes servers ten times a second is measured once a second, over all
// the changes of that second, rather than ten times.
const moveEvery = time.Second

// moveLog measures and logs the key space that changes of a pool's routing
// state moved, off the path that applies them: a change is measured at once
// if none was measured within moveEvery, else with the changes that follow it
// until moveEvery has passed. Each measurement compares the state before the
// first change with the state after the last, exactly where the distribution
// allows, and the log line says how many changes it covers. It then checks
// whether the pool's hash now sends similar keys to one server
// (warnClusters).
type moveLog struct {
	mu      sync.Mutex
	from    *state // the state before the changes not yet measured; nil if none
	to      *state // the state after them
	why     []string
	changes int
	running bool      // a goroutine measures
	last    time.Time // when the last measurement began
}

// noteMove records a change from old to cur, made for why ("reload", ...),
// and has it measured.
func (pl *pool) noteMove(old, cur *state, why string) {
	m := &pl.moves
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.from == nil {
		m.from = old
	}
	m.to = cur
	m.changes++
	if len(m.why) == 0 || m.why[len(m.why)-1] != why {
		m.why = append(m.why, why)
	}
	if !m.running {
		m.running = true
		pl.proxy.wg.Add(1)
		go pl.measureMoves()
	}
}

// measureMoves logs the moves noted until none is left, at most one
// measurement per moveEvery. It returns when none is left or the proxy
// closes.
func (pl *pool) measureMoves() {
	defer pl.proxy.wg.Done()
	m := &pl.moves
	for {
		m.mu.Lock()
		if m.from == nil {
			m.running = false
			m.mu.Unlock()
			return
		}
		wait := time.Until(m.last.Add(moveEvery))
		m.mu.Unlock()
		if !sleep(pl.proxy.ctx, wait) {
			m.mu.Lock()
			m.running = false
			m.mu.Unlock()
			return
		}
		m.mu.Lock()
		from, to, why, changes := m.from, m.to, strings.Join(m.why, ", "), m.changes
		m.from, m.to, m.why, m.changes = nil, nil, nil, 0
		m.last = time.Now()
		m.mu.Unlock()
		pl.logMoves(from, to, why, changes)
		// A new server list can make a hash cluster similar keys where
		// it did not (modula's fnv1a_64 over three servers, not four):
		// measured here, off the path of changes, as the moves are; a
		// list already replaced waits for its successor's measurement
		// (an ejection or a warm-up window's end keeps the list).
		if pl.state.Load().cfg == to.cfg {
			pl.proxy.warnClusters(pl, to.cfg)
		}
	}
}
