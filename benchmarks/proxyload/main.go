// Command proxyload is a memcached load generator for comparing chash proxy,
// nutcracker and memcached itself on loopback. Each of -conns connections sends
// requests one at a time (or -pipeline at a time) for -duration, and proxyload
// prints one line: operations per second, latency percentiles and, given the
// PID of the server under test, its CPU time per request, read from
// /proc/PID/stat.
//
//	proxyload -addr 127.0.0.1:22121 -conns 8 -workload mix -pid 1234
//
// Workloads: "mix" is 90% get and 10% set of one key, drawn uniformly from
// -keys keys of -value bytes; "get10" is gets of 10 such keys; "get" and
// "set" are only gets and only sets of one key. Run load fills the keys
// first. run.sh drives it over a matrix of targets and prints a table;
// replicas.sh compares pools with one and two replicas.
//
// Two workloads measure the memory (resident set) of the process -pid instead:
// "idle" opens -conns connections, each sends a set of -value bytes, and holds
// them open; "burst" makes -conns short connections, -concurrency at a time,
// each a set and a get of -value bytes, then watches the memory come back
// down for -settle. See memory.go.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:22121", "server `ADDR`")
	conns := flag.Int("conns", 1, "client connections")
	pipeline := flag.Int("pipeline", 1, "requests in flight per connection")
	duration := flag.Duration("duration", 3*time.Second, "how long to run")
	workload := flag.String("workload", "mix", "mix (90/10 get/set), get10 (10-key gets), get, set, idle or burst (memory)")
	keys := flag.Int("keys", 10000, "number of keys")
	valueSize := flag.Int("value", 100, "value size in bytes")
	pid := flag.Int("pid", 0, "PID whose CPU time per request to report")
	fill := flag.Bool("fill", false, "store every key first")
	label := flag.String("label", "", "label printed first")
	concurrency := flag.Int("concurrency", 1000, "burst: connections open at once")
	settle := flag.Duration("settle", 30*time.Second, "burst: how long to watch the memory after the burst")
	flag.Parse()

	switch *workload {
	case "idle":
		runIdle(*label, *addr, *conns, *valueSize, *pid)
		return
	case "burst":
		runBurst(*label, *addr, *conns, *concurrency, *valueSize, *pid, *settle)
		return
	case "mix", "get10", "get", "set":
	default:
		fatal(fmt.Errorf("unknown workload %q (mix, get10, get, set, idle, burst)", *workload))
	}

	value := bytes.Repeat([]byte("v"), *valueSize)
	if *fill {
		c, err := dial(*addr)
		if err != nil {
			fatal(err)
		}
		for k := range *keys {
			fmt.Fprintf(c.bw, "set key:%d 0 0 %d noreply\r\n%s\r\n", k, len(value), value)
		}
		// A get after the noreply sets returns once they are all done.
		if err := c.roundTrip([]byte("get key:0\r\n"), 1); err != nil {
			fatal(err)
		}
	}

	cpu0 := cpuTime(*pid)
	start := time.Now()
	stop := start.Add(*duration)
	var mu sync.Mutex
	var lat []time.Duration
	var errs int
	var wg sync.WaitGroup
	for w := range *conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dial(*addr)
			if err != nil {
				fatal(err)
			}
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			var mine []time.Duration
			var req []byte
			bad := 0
			for time.Now().Before(stop) {
				req = req[:0]
				for range *pipeline {
					req = appendRequest(req, rng, *workload, *keys, value)
				}
				t := time.Now()
				if err := c.roundTrip(req, *pipeline); err != nil {
					bad++
					if c, err = dial(*addr); err != nil {
						fatal(err)
					}
					continue
				}
				d := time.Since(t)
				for range *pipeline {
					mine = append(mine, d)
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			errs += bad
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuTime(*pid) - cpu0
	slices.Sort(lat)
	pct := func(p float64) string {
		if len(lat) == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f", float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()))
	}
	cpuPer := "-"
	if *pid > 0 && len(lat) > 0 {
		cpuPer = fmt.Sprintf("%.1f", cpu.Seconds()*1e6/float64(len(lat)))
	}
	fmt.Printf("%s\tops/s=%.0f\tp50=%sµs\tp99=%sµs\tp999=%sµs\tcpu=%sµs/op\terrors=%d\n",
		*label, float64(len(lat))/elapsed.Seconds(), pct(0.50), pct(0.99), pct(0.999), cpuPer, errs)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "proxyload:", err)
	os.Exit(1)
}

func appendRequest(dst []byte, rng *rand.Rand, workload string, keys int, value []byte) []byte {
	switch {
	case workload == "get10":
		dst = append(dst, "get"...)
		for range 10 {
			dst = append(dst, " key:"...)
			dst = strconv.AppendInt(dst, int64(rng.IntN(keys)), 10)
		}
		return append(dst, "\r\n"...)
	case workload == "set" || workload != "get" && rng.IntN(10) == 0:
		dst = append(dst, "set key:"...)
		dst = strconv.AppendInt(dst, int64(rng.IntN(keys)), 10)
		dst = append(dst, " 0 0 "...)
		dst = strconv.AppendInt(dst, int64(len(value)), 10)
		dst = append(dst, "\r\n"...)
		dst = append(dst, value...)
		return append(dst, "\r\n"...)
	}
	dst = append(dst, "get key:"...)
	dst = strconv.AppendInt(dst, int64(rng.IntN(keys)), 10)
	return append(dst, "\r\n"...)
}

type conn struct {
	c  net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

func dial(addr string) (*conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &conn{c: c, br: bufio.NewReaderSize(c, 64<<10), bw: bufio.NewWriterSize(c, 64<<10)}, nil
}

// roundTrip writes req, n requests, and reads n replies: each ends with a line
// "END", "STORED" or an error.
func (c *conn) roundTrip(req []byte, n int) error {
	c.c.SetDeadline(time.Now().Add(5 * time.Second))
	c.bw.Write(req)
	if err := c.bw.Flush(); err != nil {
		return err
	}
	for n > 0 {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			return err
		}
		switch {
		case string(line) == "END\r\n" || string(line) == "STORED\r\n":
			n--
		case bytes.HasPrefix(line, []byte("VALUE ")):
			f := strings.Fields(string(line))
			size, _ := strconv.Atoi(f[3])
			if _, err := c.br.Discard(size + 2); err != nil {
				return err
			}
		default:
			return fmt.Errorf("reply %q", line)
		}
	}
	return nil
}

// cpuTime returns the user and system CPU time of process pid so far.
func cpuTime(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses: utime and stime
	// are fields 14 and 15 of the line, in clock ticks of 1/100 s.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}
