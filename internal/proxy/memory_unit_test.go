package proxy

import (
	"runtime"
	"testing"
	"time"
)

// TestMemoryWait checks the accounting under the budget: a wait ends when
// releases bring the bytes held down to the budget, not before, or when done
// is closed.
func TestMemoryWait(t *testing.T) {
	m := newMemory(100)
	m.add(150)
	woke := make(chan bool, 1)
	go func() { woke <- m.wait(nil) }()
	m.release(30) // 120: still over
	select {
	case <-woke:
		t.Fatal("wait ended while over the budget")
	case <-time.After(20 * time.Millisecond):
	}
	m.release(20) // 100: at the budget
	if ok := <-woke; !ok {
		t.Error("wait = false; want true")
	}
	m.add(1)
	done := make(chan struct{})
	close(done)
	if m.wait(done) {
		t.Error("wait over the budget with done closed = true; want false")
	}
	if got := m.peak.Load(); got != 150 {
		t.Errorf("peak = %d; want 150", got)
	}
}

// TestTrim makes 256 MiB of garbage, as a burst of connections leaves: the
// trimmer leaves it while collections run, returns it to the system at its
// first quiet tick, and then finds nothing more to return.
func TestTrim(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's memory would count")
	}
	var tr trimmer
	tr.tick()
	garbage := make([][]byte, 256)
	for i := range garbage {
		garbage[i] = make([]byte, 1<<20)
		garbage[i][0] = 1
	}
	runtime.KeepAlive(garbage)
	garbage = nil
	runtime.GC() // the burst's last collection, while it ends
	if before, _ := tr.tick(); before != 0 {
		t.Errorf("the trimmer trimmed after a collection (%d kept)", before)
	}
	before, after := tr.tick()
	t.Logf("kept %d bytes before the trim, %d after", before, after)
	if before < after+200<<20 {
		t.Errorf("a quiet tick after 256 MiB of garbage: kept %d bytes before, %d after; want the garbage returned", before, after)
	}
	if before, _ := tr.tick(); before != 0 {
		t.Errorf("a third tick trimmed again (%d kept)", before)
	}
}

// TestWideHead: a client whose wake brought more than headSize bytes, read or
// left in the socket, reads its next wake into a buffer of wideHeadSize; one
// whose wake brought less, into one of headSize again.
func TestWideHead(t *testing.T) {
	var s clientSource
	for i, tt := range []struct {
		n, left int // the wake before
		want    int // the buffer of the next
	}{
		{0, 0, headSize},
		{headSize, 64, wideHeadSize}, // 16 pipelined GETs of redis-benchmark: 576 bytes
		{576, 0, wideHeadSize},
		{40, 0, headSize},
		{headSize, -1, wideHeadSize}, // a full buffer from a socket that cannot tell
		{300, -1, headSize},
		{300, 300, wideHeadSize},
	} {
		s.take()
		s.woke(tt.n, tt.left)
		s.drop()
		if s.buf != nil {
			t.Fatalf("wake %d: the buffer was not given back", i)
		}
		s.take()
		if len(s.buf) != tt.want {
			t.Fatalf("after a wake of %d bytes and %d left: a buffer of %d bytes; want %d", tt.n, tt.left, len(s.buf), tt.want)
		}
		s.drop()
	}
}

// TestLargeValues: a pool remembers the largest value of largeValue bytes or
// more for largeKeep seconds, a smaller one only once that is older, and
// nothing under largeValue.
func TestLargeValues(t *testing.T) {
	var b largeValues
	const t0 = 1000
	steps := []struct {
		record int    // 0: none
		at     uint32 // seconds after t0
		want   int64
	}{
		{0, 0, 0},
		{largeValue - 1, 0, 0}, // too small to remember
		{100 << 10, 1, 100 << 10},
		{1 << 20, 2, 1 << 20},
		{200 << 10, 5, 1 << 20},         // smaller, while the larger is young
		{0, 2 + largeKeep - 1, 1 << 20}, // still young
		{200 << 10, 2 + largeKeep, 200 << 10},
		{0, 2 + 2*largeKeep, 0}, // forgotten
		{0, 2 + 2*largeKeep, 0},
		{5 << 30, 3 * largeKeep, 1<<32 - 1}, // more than a word's half holds
	}
	for i, s := range steps {
		if s.record >= largeValue {
			b.recordAt(s.record, t0+s.at)
		}
		if got := b.sizeAt(t0 + s.at); got != s.want {
			t.Errorf("step %d (record %d at +%ds): size %d; want %d", i, s.record, s.at, got, s.want)
		}
	}
	// Recorded at second 1030 of 1970: long forgotten now.
	if got := b.size(); got != 0 {
		t.Errorf("size now = %d; want 0, the value long forgotten", got)
	}
}
