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
		if got, _ := s.next(st.cur, 4, st.busy, -1); got != st.want {
			t.Fatalf("step %d: next(%d, 4, %.2f) = %d; want %d", i, st.cur, st.busy, got, st.want)
		}
	}
}

// TestProcScalerSpare: one busy thread tries more only while the machine has
// half a core idle, or where it cannot tell.
func TestProcScalerSpare(t *testing.T) {
	for _, tt := range []struct {
		spare float64
		known bool
		want  int
	}{
		{0.2, true, 1}, // the servers and clients use the other cores
		{0.49, true, 1},
		{0.5, true, 4},
		{1.7, true, 4},
		{0, false, 4}, // not known: as before
	} {
		s := procScaler{spare: tt.spare, spareKnown: tt.known}
		for i, rate := range []float64{-1, 1000} { // a move, a trial
			if got, _ := s.next(1, 4, 0.95, rate); got != tt.want {
				t.Errorf("spare %.2f (known %v), measure %d: next(1, 4, 0.95, %.0f) = %d; want %d", tt.spare, tt.known, i, rate, got, tt.want)
			}
		}
	}
}

// TestIdleMeter: the machine's idle cores are not known at the first
// measure, then between none and all of its cores.
func TestIdleMeter(t *testing.T) {
	var m idleMeter
	if _, ok := m.measure(); ok {
		t.Errorf("first measure known; want unknown")
	}
	time.Sleep(50 * time.Millisecond)
	idle, ok := m.measure()
	if runtime.GOOS != "linux" {
		if ok {
			t.Errorf("measure known on %s, without /proc/stat", runtime.GOOS)
		}
		return
	}
	if !ok || idle < 0 || idle > float64(runtime.NumCPU())+0.01 {
		t.Errorf("second measure = %.3f, %v; want 0 to %d cores", idle, ok, runtime.NumCPU())
	}
}

// TestProcScalerTrial: with the rate of requests known, a move to more
// threads is a trial. One that serves no more goes back to one thread and
// holds it for 10 s (50 measures), 20 s after a second failure in a row; one
// that serves more keeps the threads until the load falls, and the next
// failure holds 10 s again.
func TestProcScalerTrial(t *testing.T) {
	var s procScaler
	cur := 1
	step := func(what string, busy, rate float64, want int) {
		t.Helper()
		got, _ := s.next(cur, 4, busy, rate)
		if got != want {
			t.Fatalf("%s: next(%d, 4, %.2f, %.0f) = %d; want %d", what, cur, busy, rate, got, want)
		}
		cur = got
	}
	// A trial from one thread serving base requests a second, at rate.
	trial := func(what string, base, rate float64, want int) {
		t.Helper()
		step(what+": one thread", 0.6, base, 1)
		step(what+": one thread busy", 0.9, base, 4)
		step(what+": threads starting", 1.2, base/2, 4) // not counted
		for range trialMeasures - 1 {
			step(what+": trial", 1.2, rate, 4)
		}
		step(what+": trial's end", 1.2, rate, want)
	}
	hold := func(what string, measures int) {
		t.Helper()
		for range measures {
			step(what+": held", 0.95, 40000, 1)
		}
	}
	trial("first", 40000, 41000, 1) // under 5% more
	hold("after the first failure", firstHold)
	trial("second", 40000, 39000, 1)
	hold("after the second failure", 2*firstHold)
	trial("third", 40000, 60000, 4)
	step("busy on four threads", 1.5, 60000, 4)
	for range downAfter - 1 {
		step("load falling", 0.3, 10000, 4)
	}
	step("load fell", 0.3, 10000, 1)
	trial("fourth", 40000, 40000, 1)
	hold("after a failure that follows a success", firstHold)
	step("free again", 0.9, 40000, 4)
	// Holds are capped at a minute however many trials fail.
	for range 20 {
		for range trialMeasures {
			step("failing", 1.2, 1000, 4)
		}
		step("failed", 1.2, 1000, 1)
		n := 0
		for cur == 1 {
			want := 1
			if s.hold == 0 {
				want = 4
			}
			step("holding", 0.95, 40000, want)
			n++
		}
		if n > maxHold+1 {
			t.Fatalf("held one thread %d measures; want at most %d", n, maxHold+1)
		}
	}
}

// TestProcScalerTrialOfOne: max threads using less than a core try one
// thread, which stays if it serves as much (one client pipelining: 70,000
// requests a second on two threads at half a core, 125,000 on one) and
// otherwise gives max threads back for 10 s, then 20 s. A trial of max
// threads that passed holds them 10 s before such a trial.
func TestProcScalerTrialOfOne(t *testing.T) {
	var s procScaler
	cur := 1
	step := func(what string, busy, rate float64, want int) {
		t.Helper()
		got, _ := s.next(cur, 4, busy, rate)
		if got != want {
			t.Fatalf("%s: next(%d, 4, %.2f, %.0f) = %d; want %d", what, cur, busy, rate, got, want)
		}
		cur = got
	}
	// A trial of four threads that passes (fifty clients: they serve more),
	// at busy cores, then its hold.
	passFour := func(busy float64) {
		t.Helper()
		step("one thread busy", 0.9, 40000, 4)
		for range trialMeasures {
			step("trial of four", busy, 60000, 4)
		}
		step("trial of four passed", busy, 60000, 4)
		for range firstHold {
			step("held after the trial of four", busy, 60000, 4)
		}
	}
	// A second under a core on four threads serving rate, then the trial
	// of one thread serving oneRate, at oneBusy (busy, but the trial runs
	// on), which ends, at endBusy, on want threads.
	tryOne := func(busy, rate, oneBusy, endBusy, oneRate float64, want int) {
		t.Helper()
		for range downAfter - 1 {
			step("under a core", busy, rate, 4)
		}
		step("under a core for a second", busy, rate, 1)
		step("one thread starting", oneBusy, oneRate/2, 1) // not counted
		for range trialMeasures - 1 {
			step("trial of one", oneBusy, oneRate, 1)
		}
		step("trial of one's end", endBusy, oneRate, want)
	}
	// One client pipelining: four threads use half a core, and stay while
	// the hold after the trial lasts; one thread serves more.
	passFour(0.55)
	tryOne(0.55, 70000, 0.9, 0.45, 125000, 1)
	step("one thread", 0.45, 125000, 1)

	// One thread that serves less gives the threads back, and holds them
	// 10 s, then 20 s.
	passFour(0.8)
	for _, hold := range []int{firstHold, 2 * firstHold} {
		tryOne(0.8, 60000, 0.95, 0.95, 50000, 4)
		for range hold {
			step("held", 0.8, 60000, 4)
		}
	}
	// Without a rate, no trial: under half a core for a second, as before.
	for range 3 * downAfter {
		step("no rate", 0.8, -1, 4)
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
	defer func(f func(*idleMeter) (float64, bool)) { machineIdle = f }(machineIdle)
	machineIdle = func(*idleMeter) (float64, bool) { return 8, true } // the other cores idle
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
		ScaleProcs(ctx, max, nil, nil)
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
