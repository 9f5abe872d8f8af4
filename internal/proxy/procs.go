package proxy

import (
	"context"
	"log/slog"
	"runtime"
	"sync/atomic"
	"time"
)

// threads is GOMAXPROCS as the proxy last set or read it. With one thread, a
// request for an idle server connection goes through the connection's writer
// goroutine like any other, so that requests that arrive together leave in one
// write; with several, its sender writes it, saving a wake-up of another thread.
var threads atomic.Int32

// SetProcs sets GOMAXPROCS to n and returns the previous setting.
func SetProcs(n int) int {
	prev := runtime.GOMAXPROCS(n)
	threads.Store(int32(n))
	return prev
}

// ScaleProcs adapts GOMAXPROCS to the load until ctx is done: one thread runs
// Go code while the process uses less than most of a core, and up to max when
// it needs more. A proxy spends its time handing requests between goroutines;
// on one thread a hand-off is a queue operation, while on several the runtime
// wakes an idle thread for each, which costs more CPU than the request itself
// at low load (measured in benchmarks/proxyload). It checks the process's CPU
// time every 200ms and moves to max when one thread is 85% busy, back to one
// when the process has used under half a core for a second. It does nothing
// where the process's CPU time cannot be read.
func ScaleProcs(ctx context.Context, max int, log *slog.Logger) {
	if max <= 1 {
		return
	}
	if _, ok := processCPU(); !ok {
		return
	}
	const every = 200 * time.Millisecond
	t := time.NewTicker(every)
	defer t.Stop()
	cur := 1
	SetProcs(cur)
	defer SetProcs(max)
	var s procScaler
	last, _ := processCPU()
	lastAt := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			c, _ := processCPU()
			busy := float64(c-last) / float64(now.Sub(lastAt))
			last, lastAt = c, now
			if n := s.next(cur, max, busy); n != cur {
				SetProcs(n)
				if log != nil {
					log.Debug("threads running Go code changed", "from", cur, "to", n, "busy_cores", busy)
				}
				cur = n
			}
		}
	}
}

// processCPU is cpuTime, or a test's stand-in.
var processCPU = cpuTime

// procScaler decides GOMAXPROCS from successive measures of how many cores the
// process kept busy.
type procScaler struct {
	low int // successive measures under half a core
}

// Thresholds of procScaler: up at once above upBusy cores on one thread, down
// after downAfter successive measures under downBusy cores.
const (
	upBusy    = 0.85
	downBusy  = 0.5
	downAfter = 5
)

func (s *procScaler) next(cur, max int, busy float64) int {
	if cur == 1 {
		s.low = 0
		if busy >= upBusy {
			return max
		}
		return 1
	}
	if busy >= downBusy {
		s.low = 0
		return cur
	}
	if s.low++; s.low >= downAfter {
		s.low = 0
		return 1
	}
	return cur
}
