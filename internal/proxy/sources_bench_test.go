package proxy

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/membership"
	"github.com/chash-dev/chash/internal/membership/etcdtest"
	"github.com/chash-dev/chash/internal/memcachedtest"
)

// cpuOf returns the CPU time the process has used (cpuTime).
func cpuOf(tb testing.TB) time.Duration {
	d, ok := cpuTime()
	if !ok {
		tb.Skip("no CPU time on this system")
	}
	return d
}

// BenchmarkApplyChange measures what the proxy does with one membership
// change of a pool of n servers, as a servers_from source hands it over:
// the list checked, the ring merged from the last one (dist.Update), the
// fingerprint, the state swapped and the moved key space measured and
// logged. Each change adds a server or takes it away again. It reports the
// process's CPU time per change, cpu-ms/op, whatever else runs on the
// machine; issue 13 wants at most 10ms for 1000 servers (with the
// membership source's own share, which membership's BenchmarkChange
// measures: a few microseconds).
//
//	go test ./internal/proxy -run XXX -bench ApplyChange -benchtime 200x -count 5
func BenchmarkApplyChange(b *testing.B) {
	for _, d := range []string{"ketama", "chash", "libketama", "modula", "jump"} {
		for _, n := range []int{100, 1000} {
			b.Run(fmt.Sprintf("%s/servers=%d", d, n), func(b *testing.B) {
				p, list := startListed(b, d, n)
				cpu := cpuOf(b)
				b.ResetTimer()
				for i := range b.N {
					next := list[:n+(i+1)%2]
					if err := p.UpdateServers("alpha", next); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(cpuOf(b)-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// BenchmarkChurn measures request throughput through a proxy whose pool
// follows an etcd prefix, with no membership change and with 10 changes a
// second (a server of the 100 leaves, or comes back), so that the two
// figures, ops/s, compare; issue 13 wants the second within 5% of the
// first. The 100 servers are names for 3 real memcached servers, so that
// every request is served whatever the list. Clients send one request at a
// time, a get or a set, over 8 connections, in this process.
//
//	go test ./internal/proxy -run XXX -bench Churn -benchtime 10s -count 5
//
// It needs etcd and memcached.
func BenchmarkChurn(b *testing.B) {
	etcd := etcdtest.Start(b)
	mc := []*memcachedtest.Server{memcachedtest.Start(b), memcachedtest.Start(b), memcachedtest.Start(b)}
	const n = 100
	prefix := "/chash/churn/"
	line := func(i int) string { return fmt.Sprintf("%s:1 cache-%03d", mc[i%len(mc)].Addr, i) }
	for i := range n {
		etcd.Put(fmt.Sprintf("%s%03d", prefix, i), line(i))
	}
	pool := sourcePool("alpha", "etcd://"+etcd.Endpoint+prefix)
	p := &Proxy{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Sources: membership.Config{}}
	if err := p.Start(&config.File{Path: "(bench)", Pools: []*config.Pool{pool}}); err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	addr := p.Addr("alpha").String()
	for _, rate := range []int{0, 10} {
		b.Run(fmt.Sprintf("changes=%d/s", rate), func(b *testing.B) {
			stop := make(chan struct{})
			var changes atomic.Int64
			var churn sync.WaitGroup
			if rate > 0 {
				churn.Add(1)
				go func() {
					defer churn.Done()
					t := time.NewTicker(time.Second / time.Duration(rate))
					defer t.Stop()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						case <-t.C:
						}
						// A server leaves, and comes back at the next tick.
						s := i / 2 % n
						if key := fmt.Sprintf("%s%03d", prefix, s); i%2 == 0 {
							etcd.Delete(key)
						} else {
							etcd.Put(key, line(s))
						}
						changes.Add(1)
					}
				}()
			}
			const conns = 8
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for c := range conns {
				cn := dial(b, addr)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						key := fmt.Sprintf("churn:%d:%d", c, i%1000)
						req, want := "get "+key+"\r\n", ""
						if i%10 == 0 {
							req, want = "set "+key+" 0 0 1\r\nv\r\n", "STORED\r\n"
						}
						got, err := cn.do(req)
						if err != nil || want != "" && got != want || len(got) > 0 && got[0] == 'S' && got != want {
							b.Errorf("%q: %q, %v", req, got, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			close(stop)
			churn.Wait()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
			b.ReportMetric(float64(changes.Load())/elapsed.Seconds(), "changes/s")
		})
	}
}

// BenchmarkMeasureMoves measures one measurement of the key space a change
// moved (logMoves: both rings' arcs compared where the distribution has an
// exact method, else 100,000 sampled keys routed through both), which the
// proxy does off the path that applies changes, at most once a second per
// pool (moveLog): BenchmarkApplyChange's cpu-ms/op holds a share of it
// only. A pool changed once every second or less often pays this on top of
// each change, in the background.
//
//	go test ./internal/proxy -run XXX -bench MeasureMoves -benchtime 20x
func BenchmarkMeasureMoves(b *testing.B) {
	for _, d := range []string{"ketama", "modula", "jump"} {
		b.Run(fmt.Sprintf("%s/servers=1000", d), func(b *testing.B) {
			p, list := startListed(b, d, 1000)
			pl := p.pools["alpha"]
			old := pl.state.Load()
			if err := p.UpdateServers("alpha", list); err != nil {
				b.Fatal(err)
			}
			cur := pl.state.Load()
			cpu := cpuOf(b)
			b.ResetTimer()
			for range b.N {
				pl.logMoves(old, cur, "bench", 1)
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuOf(b)-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		})
	}
}

// startListed starts a proxy with pool alpha of distribution d over the first
// n of the n+1 servers it returns. No server listens: connections are made
// when a request needs one, and none is sent. The proxy closes when the
// benchmark ends.
func startListed(b *testing.B, d string, n int) (*Proxy, []config.Server) {
	b.Helper()
	pool := config.NewPool("alpha")
	pool.Listen, pool.Distribution = "127.0.0.1:0", d
	list := make([]config.Server, n+1)
	for i := range list {
		list[i] = config.Server{Host: "127.0.0.1", Port: 20000 + i, Weight: 1, Alias: fmt.Sprintf("cache-%d", i)}
	}
	pool.Servers = list[:n]
	p := &Proxy{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := p.Start(&config.File{Path: "(bench)", Pools: []*config.Pool{pool}}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p, list
}
