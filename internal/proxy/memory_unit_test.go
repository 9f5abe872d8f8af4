package proxy

import (
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
