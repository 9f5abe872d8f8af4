package benchmarks

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buraksezer/consistent"
	"github.com/cespare/xxhash/v2"
	"github.com/dgryski/go-maglev"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/hashfn"
)

// Sinks keep the compiler from discarding the benchmarked calls.
var (
	sinkString  string
	sinkStrings []string
	sinkU32     uint32
	sinkU64     uint64
	sinkAny     any
	sinkErr     error
	sinkN       atomic.Int64
)

const keyMask = numKeys - 1

// A clock times a benchmark twice: with the testing package's wall clock
// (ns/op), and in the process's CPU time, user and system, all threads
// (cpu-ns/op). On a shared machine a benchmark's wall time includes the time the
// scheduler gave its core to other processes, and its CPU time does not, so the
// ratios between libraries are steadier in CPU time. The CPU time includes the
// garbage collector's work, wherever it runs.
type clock struct {
	b       *testing.B
	cpu     time.Duration
	started time.Duration
}

// startClock resets b's timer, turns on allocation reporting and starts the
// CPU clock.
func startClock(b *testing.B) *clock {
	b.ReportAllocs()
	b.ResetTimer()
	return &clock{b: b, started: cpuTime()}
}

// stop stops both clocks, like b.StopTimer.
func (c *clock) stop() {
	c.cpu += cpuTime() - c.started
	c.b.StopTimer()
}

// start restarts both clocks, like b.StartTimer.
func (c *clock) start() {
	c.b.StartTimer()
	c.started = cpuTime()
}

// report stops both clocks and reports the CPU time per operation.
func (c *clock) report() {
	c.stop()
	c.b.ReportMetric(float64(c.cpu.Nanoseconds())/float64(c.b.N), "cpu-ns/op")
}

func sized(b *testing.B, f func(b *testing.B, n int)) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { f(b, n) })
	}
}

// BenchmarkHash is the floor for a lookup: hashing a 20-byte key with xxh64, the
// key hash of chash's Standard scheme, and nothing else.
func BenchmarkHash(b *testing.B) {
	b.Run("fn=hashfn.XXH64", func(b *testing.B) {
		clk := startClock(b)
		var s uint32
		for i := 0; i < b.N; i++ {
			s += hashfn.XXH64(byteKeys[i&keyMask])
		}
		sinkU32 = s
		clk.report()
	})
	b.Run("fn=xxhash.Sum64String", func(b *testing.B) {
		clk := startClock(b)
		var s uint64
		for i := 0; i < b.N; i++ {
			s += xxhash.Sum64String(keys[i&keyMask])
		}
		sinkU64 = s
		clk.report()
	})
}

// BenchmarkLookup looks up one 20-byte key per iteration, hashing included, on
// rings of 10, 100 and 1000 nodes. String keys are given to libraries that take
// strings, byte-slice keys to those that take []byte.
func BenchmarkLookup(b *testing.B) {
	sized(b, func(b *testing.B, n int) {
		ns := names(n)
		b.Run("lib=chash", func(b *testing.B) {
			r := shared("chash", n, newChash)
			clk := startClock(b)
			for i := 0; i < b.N; i++ {
				sinkString, sinkErr = r.LookupString(keys[i&keyMask])
			}
			clk.report()
		})
		b.Run("lib=chash-bytes", func(b *testing.B) {
			r := shared("chash", n, newChash)
			clk := startClock(b)
			for i := 0; i < b.N; i++ {
				sinkString, sinkErr = r.Lookup(byteKeys[i&keyMask])
			}
			clk.report()
		})
		b.Run("lib=stathat", func(b *testing.B) {
			c := shared("stathat", n, newStathat)
			clk := startClock(b)
			for i := 0; i < b.N; i++ {
				sinkString, sinkErr = c.Get(keys[i&keyMask])
			}
			clk.report()
		})
		b.Run("lib=buraksezer", func(b *testing.B) {
			c := shared("buraksezer", n, newBuraksezer)
			clk := startClock(b)
			for i := 0; i < b.N; i++ {
				sinkAny = c.LocateKey(byteKeys[i&keyMask])
			}
			clk.report()
		})
		b.Run("lib=serialx", func(b *testing.B) {
			r := shared("serialx", n, newSerialx)
			clk := startClock(b)
			for i := 0; i < b.N; i++ {
				sinkString, _ = r.GetNode(keys[i&keyMask])
			}
			clk.report()
		})
		b.Run("lib=groupcache", func(b *testing.B) {
			m := newGroupcache(ns)
			clk := startClock(b)
			for i := 0; i < b.N; i++ {
				sinkString = m.Get(keys[i&keyMask])
			}
			clk.report()
		})
		b.Run("lib=lafikl", func(b *testing.B) {
			c := shared("lafikl", n, newLafikl)
			clk := startClock(b)
			for i := 0; i < b.N; i++ {
				sinkString, sinkErr = c.Get(keys[i&keyMask])
			}
			clk.report()
		})
		b.Run("lib=maglev", func(b *testing.B) {
			t := shared("maglev", n, newMaglev)
			clk := startClock(b)
			for i := 0; i < b.N; i++ {
				sinkString = ns[t.Lookup(xxhash.Sum64String(keys[i&keyMask]))]
			}
			clk.report()
		})
		b.Run("lib=jump", func(b *testing.B) {
			clk := startClock(b)
			for i := 0; i < b.N; i++ {
				sinkString = jumpLookup(ns, keys[i&keyMask])
			}
			clk.report()
		})
	})
}

// BenchmarkReplicas asks for the first 3 distinct nodes of a key, in the libraries
// that offer it: chash's AppendNString (into a reused slice), stathat's GetN,
// serialx's GetNodes and buraksezer's GetClosestN (which hashes and sorts every
// member's name on each call).
func BenchmarkReplicas(b *testing.B) {
	const replicas = 3
	sized(b, func(b *testing.B, n int) {
		b.Run("lib=chash", func(b *testing.B) {
			r := shared("chash", n, newChash)
			dst := make([]string, 0, replicas)
			clk := startClock(b)
			for i := 0; i < b.N; i++ {
				dst, sinkErr = r.AppendNString(dst[:0], keys[i&keyMask], replicas)
			}
			sinkStrings = dst
			clk.report()
		})
		b.Run("lib=stathat", func(b *testing.B) {
			c := shared("stathat", n, newStathat)
			clk := startClock(b)
			for i := 0; i < b.N; i++ {
				sinkStrings, sinkErr = c.GetN(keys[i&keyMask], replicas)
			}
			clk.report()
		})
		b.Run("lib=serialx", func(b *testing.B) {
			r := shared("serialx", n, newSerialx)
			clk := startClock(b)
			for i := 0; i < b.N; i++ {
				sinkStrings, _ = r.GetNodes(keys[i&keyMask], replicas)
			}
			clk.report()
		})
		b.Run("lib=buraksezer", func(b *testing.B) {
			c := shared("buraksezer", n, newBuraksezer)
			clk := startClock(b)
			var ms []consistent.Member
			for i := 0; i < b.N; i++ {
				ms, sinkErr = c.GetClosestN(byteKeys[i&keyMask], replicas)
			}
			sinkAny = ms
			clk.report()
		})
	})
}

// BenchmarkLookupParallel runs lookups on every P (run it with -cpu 1,2 to see the
// scaling) on a 1000-node ring: chash directly and through a Holder, and for
// contrast groupcache (no lock, but an allocation per lookup) and maglev (a
// plain table read).
func BenchmarkLookupParallel(b *testing.B) {
	n := bigRing
	ns := names(n)
	run := func(b *testing.B, lookup func(string) string) {
		clk := startClock(b)
		b.RunParallel(func(pb *testing.PB) {
			i, total := rand.IntN(numKeys), 0
			for pb.Next() {
				total += len(lookup(keys[i&keyMask]))
				i++
			}
			sinkN.Add(int64(total))
		})
		clk.report()
	}
	b.Run(fmt.Sprintf("nodes=%d/lib=chash", n), func(b *testing.B) {
		r := shared("chash", n, newChash)
		run(b, func(k string) string { s, _ := r.LookupString(k); return s })
	})
	b.Run(fmt.Sprintf("nodes=%d/lib=chash-holder", n), func(b *testing.B) {
		var h chash.Holder
		h.Store(shared("chash", n, newChash))
		run(b, func(k string) string { s, _ := h.LookupString(k); return s })
	})
	b.Run(fmt.Sprintf("nodes=%d/lib=groupcache", n), func(b *testing.B) {
		m := shared("groupcache", n, newGroupcache)
		run(b, m.Get)
	})
	b.Run(fmt.Sprintf("nodes=%d/lib=maglev", n), func(b *testing.B) {
		t := shared("maglev", n, newMaglev)
		run(b, func(k string) string { return ns[t.Lookup(xxhash.Sum64String(k))] })
	})
}

// BenchmarkBuild builds a ring of N nodes × 160 points (lafikl: × 10; maglev: a
// table of 655373 entries) from a list of names, the way each library's docs show.
// stathat, buraksezer and lafikl have no bulk constructor that avoids re-sorting
// after every node, so they take seconds at 1000 nodes: run.sh runs those with
// -benchtime 1x.
func BenchmarkBuild(b *testing.B) {
	sized(b, func(b *testing.B, n int) {
		ns := names(n)
		bench := func(lib string, build func() any) {
			b.Run("lib="+lib, func(b *testing.B) {
				clk := startClock(b)
				for i := 0; i < b.N; i++ {
					sinkAny = build()
				}
				clk.report()
			})
		}
		bench("chash", func() any { return newChash(ns) })
		bench("stathat", func() any { return newStathat(ns) })
		bench("buraksezer", func() any { return newBuraksezer(ns) })
		bench("serialx", func() any { return newSerialx(ns) })
		bench("groupcache", func() any { return newGroupcache(ns) })
		bench("lafikl", func() any { return newLafikl(ns) })
		bench("maglev", func() any { return newMaglev(ns) })
	})
}

// BenchmarkAdd adds one node to a ring of 1000 nodes × 160 points; only the
// update is timed.
//
// chash and serialx return a new ring and leave the old one as it was, so every
// iteration adds the same node to the same ring. stathat, buraksezer and lafikl
// change the ring in place: each iteration adds the node (timed), then removes it
// with the timer stopped, so every timed Add starts from the same 1000-node ring.
// groupcache cannot remove a node, so each iteration builds a fresh 1000-node map
// with the timer stopped and times the Add. maglev has no incremental add: adding
// a backend is building the table for 1001 names.
func BenchmarkAdd(b *testing.B) {
	n := bigRing
	ns := names(n)
	nsPlus := append(slices.Clone(ns), extraNode)
	pre := fmt.Sprintf("nodes=%d/", n)
	b.Run(pre+"lib=chash", func(b *testing.B) {
		r := shared("chash", n, newChash)
		node := chash.Node{Name: extraNode, Weight: 1}
		timeUpdates(b, func(int) { sinkAny, sinkErr = r.Add(node) }, nil)
	})
	b.Run(pre+"lib=stathat", func(b *testing.B) {
		c := shared("stathat", n, newStathat)
		timeUpdates(b, func(int) { c.Add(extraNode) }, func(int) { c.Remove(extraNode) })
	})
	b.Run(pre+"lib=buraksezer", func(b *testing.B) {
		c := shared("buraksezer", n, newBuraksezer)
		timeUpdates(b, func(int) { c.Add(member(extraNode)) }, func(int) { c.Remove(extraNode) })
	})
	b.Run(pre+"lib=serialx", func(b *testing.B) {
		r := shared("serialx", n, newSerialx)
		timeUpdates(b, func(int) { sinkAny = r.AddWeightedNode(extraNode, points) }, nil)
	})
	b.Run(pre+"lib=groupcache", func(b *testing.B) {
		m := newGroupcache(ns)
		timeUpdates(b, func(int) { m.Add(extraNode) }, func(int) { m = newGroupcache(ns) })
	})
	b.Run(pre+"lib=lafikl", func(b *testing.B) {
		c := shared("lafikl", n, newLafikl)
		timeUpdates(b, func(int) { c.Add(extraNode) }, func(int) { c.Remove(extraNode) })
	})
	b.Run(pre+"lib=maglev", func(b *testing.B) {
		timeUpdates(b, func(int) { sinkAny = maglev.New(nsPlus, maglev.BigM) }, nil)
	})
}

// timeUpdates runs b.N iterations of do, timed, each followed by undo, if not
// nil, with the clocks stopped, so that every timed update starts from the
// same state; and reports both clocks.
func timeUpdates(b *testing.B, do, undo func(i int)) {
	clk := startClock(b)
	for i := 0; i < b.N; i++ {
		do(i)
		if undo != nil {
			clk.stop()
			undo(i)
			clk.start()
		}
	}
	clk.report()
}

// BenchmarkRemove removes one node from a ring of 1000 nodes × 160 points; only
// the update is timed. Iteration i removes node i mod 1000.
//
// chash and serialx return a new ring, so every iteration removes a node from the
// same ring. stathat, buraksezer and lafikl change the ring in place: each
// iteration removes the node (timed), then adds it back with the timer stopped.
// maglev removes a backend by rebuilding the table without it (Rebuild with the
// node in the dead list, timed), then back with it, untimed. groupcache cannot
// remove a node.
func BenchmarkRemove(b *testing.B) {
	n := bigRing
	ns := names(n)
	pre := fmt.Sprintf("nodes=%d/", n)
	victim := func(i int) string { return ns[i%len(ns)] }
	b.Run(pre+"lib=chash", func(b *testing.B) {
		r := shared("chash", n, newChash)
		timeUpdates(b, func(i int) { sinkAny, sinkErr = r.Remove(victim(i)) }, nil)
	})
	b.Run(pre+"lib=stathat", func(b *testing.B) {
		c := shared("stathat", n, newStathat)
		timeUpdates(b, func(i int) { c.Remove(victim(i)) }, func(i int) { c.Add(victim(i)) })
	})
	b.Run(pre+"lib=buraksezer", func(b *testing.B) {
		c := shared("buraksezer", n, newBuraksezer)
		timeUpdates(b, func(i int) { c.Remove(victim(i)) }, func(i int) { c.Add(member(victim(i))) })
	})
	b.Run(pre+"lib=serialx", func(b *testing.B) {
		r := shared("serialx", n, newSerialx)
		timeUpdates(b, func(i int) { sinkAny = r.RemoveNode(victim(i)) }, nil)
	})
	b.Run(pre+"lib=lafikl", func(b *testing.B) {
		c := shared("lafikl", n, newLafikl)
		timeUpdates(b, func(i int) { c.Remove(victim(i)) }, func(i int) { c.Add(victim(i)) })
	})
	b.Run(pre+"lib=maglev", func(b *testing.B) {
		t := shared("maglev", n, newMaglev)
		timeUpdates(b, func(i int) { t.Rebuild([]int{i % len(ns)}) }, func(int) { t.Rebuild(nil) })
	})
}

// BenchmarkMemory reports the heap a ring of 1000 nodes × 160 points retains
// (retained-B), and that divided by its points (retained-B/point), measured with
// runtime.MemStats (see retained) when the ring was first built in this process:
// every -count repeats that one measurement. The time it reports is not a result.
//
// chash is also measured at 1500 nodes: 160000 and 240000 points get the same size
// of lookup index, so the difference between the two sizes divided by the 80000
// extra points is the marginal cost of a point, and what remains at 1000 nodes is
// the fixed part (the index, plus per-node data). cmd/benchtable does that
// arithmetic.
func BenchmarkMemory(b *testing.B) {
	bench := func(n int, lib string, pts int, m func() built) {
		b.Run(fmt.Sprintf("nodes=%d/lib=%s", n, lib), func(b *testing.B) {
			var bytes int64
			for i := 0; i < b.N; i++ {
				bytes = m().retained
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(bytes), "retained-B")
			b.ReportMetric(float64(bytes)/float64(pts), "retained-B/point")
		})
	}
	n := bigRing
	bench(n, "chash", n*points, func() built { return sharedBuild("chash", n, newChash) })
	bench(1500, "chash", 1500*points, func() built { return sharedBuild("chash", 1500, newChash) })
	bench(n, "stathat", n*points, func() built { return sharedBuild("stathat", n, newStathat) })
	bench(n, "buraksezer", n*points, func() built { return sharedBuild("buraksezer", n, newBuraksezer) })
	bench(n, "serialx", n*points, func() built { return sharedBuild("serialx", n, newSerialx) })
	bench(n, "groupcache", n*points, func() built { return sharedBuild("groupcache", n, newGroupcache) })
	bench(n, "lafikl", n*lafiklPoints, func() built { return sharedBuild("lafikl", n, newLafikl) })
	// maglev's "points" are its table entries.
	bench(n, "maglev", maglev.BigM, func() built { return sharedBuild("maglev", n, newMaglev) })
}
