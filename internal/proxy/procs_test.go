package proxy

import (
	"context"
	"runtime"
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

func TestScaleProcs(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	if prev < 2 {
		prev = runtime.GOMAXPROCS(2)
		defer runtime.GOMAXPROCS(prev)
	}
	max := runtime.GOMAXPROCS(0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ScaleProcs(ctx, max, nil)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.GOMAXPROCS(0) != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("an idle process runs Go code on %d threads; want 1", got)
	}
	// A goroutine that keeps the one thread busy brings the others in.
	stop := make(chan struct{})
	spun := make(chan struct{})
	go func() {
		defer close(spun)
		for {
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	for runtime.GOMAXPROCS(0) != max && time.Now().Before(deadline.Add(5*time.Second)) {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	<-spun
	if got := runtime.GOMAXPROCS(0); got != max {
		t.Errorf("a busy process runs Go code on %d threads; want %d", got, max)
	}
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
