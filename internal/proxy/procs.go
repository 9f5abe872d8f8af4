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
// write, unless none can join it (clientReq.alone); with several, its sender
// writes it, saving a wake-up of another thread.
var threads atomic.Int32

// SetProcs sets GOMAXPROCS to n and returns the previous setting.
func SetProcs(n int) int {
	prev := runtime.GOMAXPROCS(n)
	threads.Store(int32(n))
	return prev
}

// ScaleProcs adapts GOMAXPROCS to the load until ctx is done: one thread runs
// Go code while the process uses less than most of a core, and up to max when
// it needs more and more threads serve more. A proxy spends its time handing
// requests between goroutines; on one thread a hand-off is a queue operation,
// while on several the runtime wakes an idle thread for each, which costs more
// CPU than the request itself at low load (measured in benchmarks/proxyload).
// It checks the process's CPU time every 200ms and moves to max when one
// thread is 85% busy, back to one when the process has used under half a core
// for a second. It does nothing where the process's CPU time cannot be read.
//
// If served is not nil (it counts the requests served), a move to max is a
// trial: after a second on max threads, the proxy must serve at least 5% more
// requests a second than on one thread just before, or it goes back to one
// thread for 10 seconds, twice as long after each trial that fails in a row,
// up to a minute. More threads serve no more where the machine's other cores
// are busy (with the servers, say, or the clients), and then cost CPU:
// with redis-server and redis-benchmark on a two-core machine, 50
// connections, one thread served 38,000 to 42,000 GETs a second at 20 µs of
// CPU each, two threads 34,000 to 35,000 at 24 µs.
//
// A trial begins only while the machine has half a core idle or more (on
// Linux, where /proc/stat tells): on a machine whose other cores are busy,
// with its servers or its clients, more threads would wait for them and add
// the wake-ups' CPU, and the trial would fail anyway after costing a second
// of slower service (on a two-core machine with redis-server and
// redis-benchmark, 50 connections, a second at two threads served a fifth
// less than one thread).
//
// The load may change while max threads run: a second on max threads using
// less than a core is a trial of one thread the other way, which keeps one
// thread unless it serves less than max threads did (by 5%); after one that
// fails, max threads stay 10 seconds, doubled after each failure in a row up
// to a minute (and 10 seconds after a trial of max threads that passed). One
// client pipelining to one redis-server on a two-core machine used half a
// core on two threads for 70,000 INCRs a second, and 0.43 of a core on one
// thread for 125,000: above the half core that moves back to one thread
// without a trial.
func ScaleProcs(ctx context.Context, max int, served func() uint64, log *slog.Logger) {
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
	var im idleMeter
	machineIdle(&im)
	last, _ := processCPU()
	lastAt := time.Now()
	var lastServed uint64
	if served != nil {
		lastServed = served()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			c, _ := processCPU()
			d := now.Sub(lastAt).Seconds()
			busy := (c - last).Seconds() / d
			rate := -1.0 // unknown
			if served != nil {
				n := served()
				if n >= lastServed { // a reload that removed servers lowers the count
					rate = float64(n-lastServed) / d
				}
				lastServed = n
			}
			last, lastAt = c, now
			s.spare, s.spareKnown = machineIdle(&im)
			n, why := s.next(cur, max, busy, rate)
			if n != cur {
				SetProcs(n)
				if log != nil {
					log.Debug("threads running Go code changed", "from", cur, "to", n, "busy_cores", busy, "why", why)
				}
				cur = n
			}
		}
	}
}

// processCPU is cpuTime, or a test's stand-in.
var processCPU = cpuTime

// machineIdle is idleMeter.measure, or a test's stand-in.
var machineIdle = (*idleMeter).measure

// procScaler decides GOMAXPROCS from successive measures of how many cores the
// process kept busy and how many requests a second it served.
type procScaler struct {
	low int // successive measures under half a core

	// The machine's idle cores at the last measure, if known: a trial of
	// max threads needs minSpare.
	spare      float64
	spareKnown bool

	trial  int     // measures left in a trial of max threads; 0 if none
	base   float64 // the rate on one thread before the trial
	sum    float64 // of the rates measured in the trial
	n      int
	hold   int // measures left on one thread after a trial that failed
	failed int // trials failed in a row

	// The same the other way: a trial of one thread after measures on max
	// threads under a core (under, with the sum of their rates in usum).
	down       int
	under      int
	usum       float64
	downHold   int // measures left on max threads before such a trial
	downFailed int
}

// Thresholds of procScaler: up at once above upBusy cores on one thread, down
// after downAfter successive measures under downBusy cores; a trial lasts
// trialMeasures measures after one that lets the threads start, and must
// reach trialGain times the rate on one thread; after one that fails, the
// scaler holds one thread for firstHold measures, doubled after each failure
// in a row up to maxHold.
const (
	upBusy        = 0.85
	downBusy      = 0.5
	oneBusy       = 1.0 // under which max threads try one
	downAfter     = 5
	trialMeasures = 5
	trialGain     = 1.05
	firstHold     = 50  // 10 s
	maxHold       = 300 // a minute
	minSpare      = 0.5
)

// next returns the threads for the next measure and why they change, from
// the threads of the last one, the cores it kept busy and its rate of
// requests served a second (negative if unknown).
func (s *procScaler) next(cur, max int, busy, rate float64) (int, string) {
	if cur == 1 {
		s.low = 0
		if s.down > 0 {
			if n, done := s.measure(&s.down, rate); !done {
				return 1, ""
			} else if n*trialGain < s.base {
				s.downFailed = min(s.downFailed+1, 8)
				s.downHold = min(firstHold<<(s.downFailed-1), maxHold)
				return max, "one thread served less"
			}
			s.downFailed = 0
		}
		if s.hold > 0 {
			s.hold--
			return 1, ""
		}
		if busy < upBusy || s.spareKnown && s.spare < minSpare {
			return 1, ""
		}
		if rate >= 0 {
			// The rate of this busy measure: those before may have
			// seen the load begin.
			s.base = rate
			s.trial, s.sum, s.n = trialMeasures+1, 0, 0
		}
		return max, "one thread busy"
	}
	if s.trial > 0 {
		n, done := s.measure(&s.trial, rate)
		if !done {
			return cur, ""
		}
		if n < s.base*trialGain {
			s.failed = min(s.failed+1, 8)
			s.hold = min(firstHold<<(s.failed-1), maxHold)
			return 1, "more threads served no more"
		}
		s.failed = 0
		s.downHold = firstHold
		return cur, ""
	}
	if busy < downBusy {
		s.low++
	} else {
		s.low = 0
	}
	if s.low >= downAfter {
		s.low, s.under, s.usum = 0, 0, 0
		return 1, "load fell"
	}
	if s.downHold > 0 || busy >= oneBusy || rate < 0 {
		if s.downHold > 0 {
			s.downHold--
		}
		s.under, s.usum = 0, 0
		return cur, ""
	}
	s.under++
	s.usum += rate
	if s.under < downAfter {
		return cur, ""
	}
	s.base = s.usum / float64(s.under)
	s.under, s.usum = 0, 0
	s.down, s.sum, s.n = trialMeasures+1, 0, 0
	return 1, "less than a core busy"
}

// measure counts one measure of a trial (left counts them down), adding its
// rate but for the first measure, in which the threads change. When the
// trial is over it returns the mean rate and true.
func (s *procScaler) measure(left *int, rate float64) (float64, bool) {
	*left--
	if *left < trialMeasures && rate >= 0 {
		s.sum += rate
		s.n++
	}
	if *left > 0 || s.n == 0 {
		return 0, false
	}
	return s.sum / float64(s.n), true
}
