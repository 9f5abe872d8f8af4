package proxy

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestProcScaler(t *testing.T) {
	var s procScaler
	steps := []struct {
		cur  int
		busy float64
		want int
	}{
		{1, 0.2, 1},
		{1, 0.84, 1},
		{1, 0.9, 4}, // one thread nearly saturated: all of them
		{4, 1.6, 4},
		{4, 0.4, 4}, // one quiet measure is not enough to go down
		{4, 0.4, 4},
		{4, 0.7, 4}, // and a busy one starts the count again
		{4, 0.4, 4},
		{4, 0.4, 4},
		{4, 0.4, 4},
		{4, 0.4, 4},
		{4, 0.4, 1}, // five quiet measures in a row
		{1, 0.6, 1},
	}
	for i, st := range steps {
		if got := s.next(st.cur, 4, st.busy); got != st.want {
			t.Fatalf("step %d: next(%d, 4, %.2f) = %d; want %d", i, st.cur, st.busy, got, st.want)
		}
	}
}

// TestScaleProcs runs ScaleProcs on a stand-in for the process's CPU time:
// idle, then one core busy, then idle again.
func TestScaleProcs(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	if prev < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	max := runtime.GOMAXPROCS(0)
	// The stand-in's CPU time grows as fast as the clock while busy is set.
	var busy atomic.Bool
	var mu sync.Mutex
	var cpu time.Duration
	last := time.Now()
	defer func(f func() (time.Duration, bool)) { processCPU = f }(processCPU)
	processCPU = func() (time.Duration, bool) {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if busy.Load() {
			cpu += now.Sub(last)
		}
		last = now
		return cpu, true
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ScaleProcs(ctx, max, nil)
	}()
	// Stop ScaleProcs before the stand-in goes, also when the test fails.
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
	}()
	waitProcs := func(want int, what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for (runtime.GOMAXPROCS(0) != want || int(threads.Load()) != want) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if got := runtime.GOMAXPROCS(0); got != want || int(threads.Load()) != want {
			t.Fatalf("%s: GOMAXPROCS %d, threads %d; want %d", what, got, threads.Load(), want)
		}
	}
	waitProcs(1, "idle")
	busy.Store(true)
	waitProcs(max, "one core busy")
	busy.Store(false)
	waitProcs(1, "idle again")
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("ScaleProcs did not return after its context was done")
	}
	if got := runtime.GOMAXPROCS(0); got != max {
		t.Errorf("after ScaleProcs: GOMAXPROCS = %d; want %d back", got, max)
	}
}

// TestCPUTime checks that the process's CPU time grows while it computes.
func TestCPUTime(t *testing.T) {
	start, ok := cpuTime()
	if !ok {
		if runtime.GOOS == "linux" {
			t.Fatal("cpuTime cannot read the process's CPU time on Linux")
		}
		t.Skipf("no process CPU time on %s", runtime.GOOS)
	}
	deadline := time.Now().Add(10 * time.Second)
	x := uint64(1)
	for time.Now().Before(deadline) {
		for range 1 << 16 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		if now, _ := cpuTime(); now-start >= 20*time.Millisecond {
			return
		}
	}
	t.Errorf("10s of computing (%d) added less than 20ms of CPU time", x)
}
