package proxy

import (
	"sync"
	"sync/atomic"
)

// DefaultMaxMemory is the proxy's memory budget when Proxy.MaxMemory is zero.
const DefaultMaxMemory = 1 << 30

// memory accounts the bytes the proxy holds for requests in flight, over all
// its clients: the requests read and not yet answered, and their replies read
// from servers and not yet written. While it holds more than max, clients
// read no new request: each writes the replies it has, which frees their
// bytes, then waits until the proxy holds max or less. Servers are always
// read, so the bytes held come down. So the proxy holds at most max, plus the
// replies to requests already sent when it went over, plus one request being
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
