package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// rss returns the resident set of process pid in KiB, from /proc/PID/status.
func rss(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return n
		}
	}
	fatal(fmt.Errorf("no VmRSS in /proc/%d/status", pid))
	return 0
}

// setGet sends a set of value to key and, if get, a get of it, and reads the
// replies.
func (c *conn) setGet(key string, value []byte, get bool) error {
	req := fmt.Appendf(nil, "set %s 0 0 %d\r\n%s\r\n", key, len(value), value)
	n := 1
	if get {
		req = fmt.Appendf(req, "get %s\r\n", key)
		n++
	}
	return c.roundTrip(req, n)
}

// runIdle opens conns connections that each store a value and then stay open
// and idle, and prints the resident set of pid before, with them open, and
// 30 s later.
func runIdle(label, addr string, conns, size, pid int) {
	value := bytes.Repeat([]byte("v"), size)
	before := rss(pid)
	open := make([]*conn, conns)
	for i := range open {
		c, err := dial(addr)
		if err != nil {
			fatal(err)
		}
		if err := c.setGet("idle:"+strconv.Itoa(i), value, false); err != nil {
			fatal(err)
		}
		open[i] = c
	}
	time.Sleep(2 * time.Second) // let the proxy's collector run
	with := rss(pid)
	// Later, once a client idle for a while has shed what serving grew
	// (chash: a new goroutine's stack) and the proxy, quiet, has collected.
	time.Sleep(28 * time.Second)
	later := rss(pid)
	fmt.Printf("%s\tidle=%d\trss_before=%dKiB\trss_idle=%dKiB\tper_conn=%.1fKiB\trss_idle_30s=%dKiB\tper_conn_30s=%.1fKiB\n",
		label, conns, before, with, float64(with-before)/float64(conns), later, float64(later-before)/float64(conns))
	for _, c := range open {
		c.c.Close()
	}
}

// runBurst makes conns short connections, concurrency at a time, each a set
// and a get, then prints the resident set of pid before, at its peak during
// the burst, and at times after it until settle.
func runBurst(label, addr string, conns, concurrency, size, pid int, settle time.Duration) {
	value := bytes.Repeat([]byte("v"), size)
	before := rss(pid)
	var peak int
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, rss(pid))
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	next := make(chan int)
	var mu sync.Mutex
	errs := 0
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c, err := dial(addr)
				if err == nil {
					err = c.setGet("burst:"+strconv.Itoa(i), value, true)
					c.c.Close()
				}
				if err != nil {
					mu.Lock()
					errs++
					mu.Unlock()
				}
			}
		}()
	}
	for i := range conns {
		next <- i
	}
	close(next)
	wg.Wait()
	took := time.Since(start)
	close(stop)
	<-sampled
	fmt.Printf("%s\tburst=%d\tconcurrency=%d\ttook=%v\terrors=%d\trss_before=%dKiB\trss_peak=%dKiB",
		label, conns, concurrency, took.Round(time.Millisecond), errs, before, peak)
	for _, at := range []time.Duration{time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, 60 * time.Second, 120 * time.Second, 300 * time.Second} {
		if at > settle {
			break
		}
		time.Sleep(time.Until(start.Add(took + at)))
		fmt.Printf("\trss_after_%v=%dKiB", at, rss(pid))
	}
	fmt.Println()
}
