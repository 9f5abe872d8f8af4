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
// requests naming maxPendingKeys keys per client; where values are large,
// about max/largeShare, or one request), plus one request being read by
// each client (bounded by the codec's limits).
type memory struct {
	max  int64
	held atomic.Int64
	peak atomic.Int64 // the most held at once, for tests
	// waits counts the times a client waited for memory.
	waits atomic.Uint64
	// expect is what the replies of the requests in flight of pools with
	// large values are expected to bring, at the pool's large value size a
	// key: past max, clients answer theirs before reading more
	// (client.largeInFlight), so that many clients, each within its
	// share, do not bring together more than max.
	expect atomic.Int64

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

// Where a pool has lately seen large values, a client's requests in flight
// are bounded by the bytes their replies may bring: the pool remembers the
// largest value of largeValue bytes or more that its replies or writes
// carried in the last largeKeep seconds (largeValues), and a client whose
// keys in flight would bring a largeShare of the memory budget at that size
// each has its replies written before more of its requests are read (one
// request is always let through, whatever its keys). Without it, a client
// pipelining gets of 1 MB values brought up to 4 GB (maxPendingKeys of
// them), whatever the budget. Smaller values are not remembered: 4,096 of
// them bring less than 256 MiB.
const (
	largeValue = 64 << 10
	largeKeep  = 10
	largeShare = 16
)

// largeValues is what a pool remembers of its large values: the size of the
// largest and the second it was seen (Unix time, its low 32 bits), in one
// word, so that a request's look costs one load, and nothing while the pool
// has seen none lately.
type largeValues struct{ v atomic.Uint64 }

// record notes a value of n bytes: it becomes the one remembered if it is
// at least as large, or if the one remembered is largeKeep seconds old.
func (b *largeValues) record(n int) {
	if n >= largeValue {
		b.recordAt(n, uint32(time.Now().Unix()))
	}
}

func (b *largeValues) recordAt(n int, now uint32) {
	size := uint64(min(n, 1<<32-1))
	for {
		old := b.v.Load()
		was, at := old>>32, uint32(old)
		if (size < was && now-at < largeKeep) || (size == was && now == at) {
			return
		}
		if b.v.CompareAndSwap(old, size<<32|uint64(now)) {
			return
		}
	}
}

// size returns the size of the value remembered, or 0 if there is none
// younger than largeKeep seconds.
func (b *largeValues) size() int64 {
	v := b.v.Load()
	if v == 0 {
		return 0
	}
	return b.sizeOf(v, uint32(time.Now().Unix()))
}

func (b *largeValues) sizeAt(now uint32) int64 { return b.sizeOf(b.v.Load(), now) }

// sizeOf returns the size v records, or 0 if it is largeKeep seconds old at
// now.
func (b *largeValues) sizeOf(v uint64, now uint32) int64 {
	if v != 0 && now-uint32(v) >= largeKeep {
		b.v.CompareAndSwap(v, 0) // forgotten: the next looks cost nothing
		return 0
	}
	return int64(v >> 32)
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
