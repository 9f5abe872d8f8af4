package proxy

import (
	"context"
	"log/slog"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxMemory is the proxy's memory budget when Proxy.MaxMemory is zero.
const DefaultMaxMemory = 1 << 30

// memory accounts the bytes the proxy holds for requests in flight, over all
// its clients: the requests read and not yet answered, and their replies read
// from servers and not yet written. While it holds more than max, clients
// read no new request: each writes the replies it has, which frees their
// bytes, then waits until the proxy holds max or less. Servers are always
// read, so the bytes held come down. So the proxy holds at most max, plus the
// replies to requests already sent when it went over (at most maxPipeline
// requests naming maxPendingKeys keys per client), plus one request being
// read by each client (bounded by the codec's limits).
type memory struct {
	max  int64
	held atomic.Int64
	peak atomic.Int64 // the most held at once, for tests
	// waits counts the times a client waited for memory.
	waits atomic.Uint64

	mu   sync.Mutex
	free chan struct{} // closed when held falls to max or below; nil if none waits
}

func newMemory(max int64) *memory {
	if max <= 0 {
		max = DefaultMaxMemory
	}
	return &memory{max: max}
}

// add accounts n more bytes held.
func (m *memory) add(n int64) {
	h := m.held.Add(n)
	for p := m.peak.Load(); h > p && !m.peak.CompareAndSwap(p, h); p = m.peak.Load() {
	}
}

// release accounts n fewer bytes held, waking the clients that wait if that
// brings the bytes held down to max.
func (m *memory) release(n int64) {
	if h := m.held.Add(-n); h <= m.max && h+n > m.max {
		m.mu.Lock()
		if m.free != nil {
			close(m.free)
			m.free = nil
		}
		m.mu.Unlock()
	}
}

// over reports whether the bytes held exceed max.
func (m *memory) over() bool { return m.held.Load() > m.max }

// wait waits until the bytes held are max or less, and reports true; or
// until done is closed, and reports false.
func (m *memory) wait(done <-chan struct{}) bool {
	if !m.over() {
		return true
	}
	m.waits.Add(1)
	for {
		// release closes free after it lowers held, under mu: checked under
		// mu, a fall to max is either seen here or wakes the wait below.
		m.mu.Lock()
		if !m.over() {
			m.mu.Unlock()
			return true
		}
		if m.free == nil {
			m.free = make(chan struct{})
		}
		free := m.free
		m.mu.Unlock()
		select {
		case <-free:
		case <-done:
			return false
		}
	}
}

// How the proxy gives memory back to the system after a burst: Go returns
// free memory by itself only slowly, and a proxy idle after a burst of
// connections collects no garbage for minutes, so it does not know that the
// memory is free. Every trimEvery, if no collection ran since the last look
// (the proxy is quiet: under load the runtime collects, and returns memory, on
// its own) and the memory kept from the system grew by over trimSlack (16 MiB) since
// the last trim, the proxy collects twice and returns the free memory at once
// (debug.FreeOSMemory). So an idle proxy trims once after each burst, and a
// busy one never.
const (
	trimEvery = 10 * time.Second
	trimSlack = 16 << 20
)

// trimMemory trims every trimEvery until ctx is done.
func trimMemory(ctx context.Context, log *slog.Logger) {
	t := time.NewTicker(trimEvery)
	defer t.Stop()
	var tr trimmer
	tr.tick()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if before, after := tr.tick(); before > 0 {
				log.Debug("memory returned to the system", "kept_before", before, "kept_after", after)
			}
		}
	}
}

// trimmer decides when to trim, from what it saw at its last tick.
type trimmer struct {
	cycles uint64 // collections so far, at the last tick
	kept   uint64 // memory kept from the system after the last trim
}

// tick trims if the process is quiet and keeps much more memory than after
// the last trim, and returns the memory kept before and after; zeros if it did
// not trim.
func (tr *trimmer) tick() (before, after uint64) {
	s := []rtmetrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/gc/cycles/total:gc-cycles"},
	}
	read := func() (kept, cycles uint64) {
		rtmetrics.Read(s)
		return s[0].Value.Uint64() - s[1].Value.Uint64(), s[2].Value.Uint64()
	}
	kept, cycles := read()
	quiet := cycles == tr.cycles
	tr.cycles = cycles
	if !quiet || kept <= tr.kept+trimSlack {
		return 0, 0
	}
	// Two collections: the pools of buffers (sync.Pool) keep what they hold
	// through one.
	runtime.GC()
	debug.FreeOSMemory()
	tr.kept, tr.cycles = read()
	return kept, tr.kept
}
