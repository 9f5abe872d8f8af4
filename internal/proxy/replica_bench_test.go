package proxy

import (
	"testing"

	"github.com/chash-dev/chash/internal/memcachedtest"
)

// BenchmarkReplicas times request round trips through chash proxy in front
// of two memcached servers, over chash's ring: one replica, two replicas,
// one replica with warmup set but no window open, which must cost nothing,
// and two replicas over three servers, without a window and with one open
// after the third joined, where each hit also asks whether another replica
// of the key joined (client.fill).
// Sub-benchmarks: target / operation / client connections.
//
//	go test ./internal/proxy -run XXX -bench Replicas -count 5
func BenchmarkReplicas(b *testing.B) {
	servers := []*memcachedtest.Server{memcachedtest.Start(b), memcachedtest.Start(b), memcachedtest.Start(b)}
	two := servers[:2]
	const base = "timeout: 1000\ndistribution: chash"
	const window = base + "\nreplicas: 2\nwarmup: 3600000"
	joined := startProxy(b, poolYAML(window, two...))
	if err := joined.Reload(parseConfig(b, poolYAML(window, servers...))); err != nil {
		b.Fatal(err)
	}
	targets := []benchTarget{
		{"replicas=1", startProxy(b, poolYAML(base, two...)).Addr("alpha").String()},
		{"replicas=2", startProxy(b, poolYAML(base+"\nreplicas: 2", two...)).Addr("alpha").String()},
		{"warmup-idle", startProxy(b, poolYAML(base+"\nwarmup: 60000", two...)).Addr("alpha").String()},
		{"replicas=2-three", startProxy(b, poolYAML(window, servers...)).Addr("alpha").String()},
		{"replicas=2-window", joined.Addr("alpha").String()},
	}
	benchMemcache(b, targets, targets, benchOp{"incr", "incr bench:n 1\r\n", "NOT_FOUND\r\n"})
}

// TestPlanAllocs counts allocations per request through pools with
// replicas, and with warmup but no window open: none, as without them.
func TestPlanAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	servers := []*memcachedtest.Server{memcachedtest.Start(t), memcachedtest.Start(t), memcachedtest.Start(t)}
	const base = "timeout: 1000\ndistribution: chash"
	for _, opts := range []string{"replicas: 2", "replicas: 3\nread_miss_failover: true", "warmup: 60000"} {
		p := startProxy(t, poolYAML(base+"\n"+opts, servers...))
		c := dial(t, p.Addr("alpha").String())
		c.mustDo("set k 0 0 5\r\nhello\r\nset n 0 0 1\r\n0\r\nset other 0 0 1\r\no\r\n")
		for _, tt := range []struct {
			req, reply string
		}{
			{"get k\r\n", "VALUE k 0 5\r\nhello\r\nEND\r\n"},
			{"set k 0 0 5\r\nhello\r\n", "STORED\r\n"},
			{"mg k v\r\n", "VA 5\r\nhello\r\n"},
			{"get k other\r\n", "VALUE k 0 5\r\nhello\r\nVALUE other 0 1\r\no\r\nEND\r\n"},
			{"ms k 5 T0\r\nhello\r\n", "HD\r\n"},
			{"delete gone\r\n", "NOT_FOUND\r\n"},
			{"touch k 0\r\n", "TOUCHED\r\n"},
		} {
			if n := allocsPerRequest(t, c, tt.req, tt.reply); n > 0 {
				t.Errorf("%q: %q allocates %v times per request; want none", opts, tt.req, n)
			}
		}
	}
}
