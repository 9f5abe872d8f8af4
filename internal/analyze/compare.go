package analyze

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/dist"
)

// CompareConfig says what CompareDistributions measures.
type CompareConfig struct {
	// Nodes is the number of servers, at least 2. Server i is
	// 10.0.x.y:11211, x.y spelling i in base 256, with the alias "node<i>":
	// distributions that hash a server's name (chash's ring, the algorithms,
	// twemproxy's) hash "node<i>", the others its address.
	Nodes int
	// Weights are the servers' weights, repeated over them. If empty, every
	// weight is 1.
	Weights []int
	// Points is the "points:" of the pools of the distributions that take it.
	// If zero, each takes its default.
	Points int
	// Keys are counted (or placed) where a distribution's figures are not
	// exact, and its lookups are timed on them. There must be at least one.
	Keys [][]byte
	// Entries are the distributions compared, in order. If nil, the whole
	// catalogue (dist.All).
	Entries []dist.Entry
	// Progress, if not nil, is called after each distribution with the number
	// done and the number in all.
	Progress func(done, total int)
}

// Comparison is one distribution's figures, over the servers of a
// CompareConfig.
type Comparison struct {
	// Entry is the distribution.
	Entry dist.Entry
	// Err, if not nil, says why the distribution has no figures: it cannot be
	// built over the servers (as a distribution without weights when a weight
	// is not 1), or it routes each request at random.
	Err error
	// Method is how the figures were computed (see Balance.Method).
	Method string
	// Lookup is the mean time of a lookup over the keys, a wall-clock
	// indication on this machine, not a benchmark.
	Lookup time.Duration
	// Memory is the growth of the live heap while the router was built.
	Memory uint64
	// MaxOverMean, MinOverMean and StdOverMean are the balance's (see
	// Balance).
	MaxOverMean, MinOverMean, StdOverMean float64
	// Add is what moves when a server of weight 1, "joining", is added at the
	// end of the list; Remove, when server Nodes/2 leaves, or the last one for
	// a distribution that can remove only the last (dist.RemoveLast).
	Add, Remove Movement
}

// errAtRandom is the Err of a distribution that routes at random.
var errAtRandom = errors.New("each request goes to a server chosen at random, whatever its key: no figures by key")

// CompareDistributions builds each distribution over the same servers and
// measures its lookup time, memory, balance, and the keys that move when a
// server joins and when one leaves. Figures are exact where the distribution
// allows (dist.Entry.Method); otherwise c.Keys are counted, or placed in turn
// for a load-aware one. A distribution that fails has its Comparison's Err
// set; only a bad c is an error.
func CompareDistributions(c CompareConfig) ([]Comparison, error) {
	if c.Nodes < 2 {
		return nil, fmt.Errorf("analyze: compare over %d nodes; want at least 2", c.Nodes)
	}
	if len(c.Keys) == 0 {
		return nil, errors.New("analyze: compare without keys")
	}
	weights := c.Weights
	if len(weights) == 0 {
		weights = []int{1}
	}
	servers := make([]config.Server, c.Nodes+1)
	for i := range servers {
		servers[i] = config.Server{Host: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), Port: 11211,
			Weight: weights[i%len(weights)], Alias: fmt.Sprint("node", i)}
	}
	all, joined := servers[:c.Nodes], servers
	joined[c.Nodes].Alias, joined[c.Nodes].Weight = "joining", 1
	entries := c.Entries
	if entries == nil {
		entries = dist.All()
	}
	out := make([]Comparison, len(entries))
	for i, e := range entries {
		out[i] = c.compare(e, all, joined)
		if c.Progress != nil {
			c.Progress(i+1, len(entries))
		}
	}
	return out, nil
}

// compare measures one distribution over all, and all grown to joined.
func (c *CompareConfig) compare(e dist.Entry, all, joined []config.Server) Comparison {
	res := Comparison{Entry: e, Method: string(e.Method)}
	if e.Random {
		res.Err = errAtRandom
		return res
	}
	pool := func(servers []config.Server) *config.Pool {
		p := &config.Pool{Name: "compare", Distribution: e.Name, Servers: servers}
		if e.Points {
			p.Points = c.Points
		}
		return p
	}
	fail := func(err error) Comparison {
		var ce *config.Error
		if errors.As(err, &ce) {
			err = ce.Err // the pool is the comparison's: say only what is wrong
		}
		res.Err = err
		return res
	}
	var before, after runtime.MemStats
	// Twice: a collection keeps what sync.Pools held until the next, which
	// would free it while the router is measured and count against it (the
	// first distribution compared read 0 bytes).
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	base, err := NewPool(pool(all), all)
	if err != nil {
		return fail(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if after.HeapAlloc > before.HeapAlloc {
		res.Memory = after.HeapAlloc - before.HeapAlloc
	}
	grown, err := NewPool(pool(joined), joined)
	if err != nil {
		return fail(err)
	}
	leaving := len(all) / 2
	if e.Removal == dist.RemoveLast {
		leaving = len(all) - 1
	}
	// The pool's servers are all of them and the router's all but one, as when
	// a server is ejected: distributions that remember removals (memento,
	// balanced) remove it rather than build anew.
	shrunk, err := NewPool(pool(all), slices.Delete(slices.Clone(all), leaving, leaving+1))
	if err != nil {
		return fail(err)
	}
	keys := slices.Values(c.Keys)
	b, err := base.Balance(keys)
	if err != nil {
		return fail(err)
	}
	res.Method = b.Method
	res.MaxOverMean, res.MinOverMean, res.StdOverMean = b.MaxOverMean, b.MinOverMean, b.StdOverMean
	add, err := DiffPools(base, grown, keys)
	if err != nil {
		return fail(err)
	}
	rem, err := DiffPools(base, shrunk, keys)
	if err != nil {
		return fail(err)
	}
	res.Add, res.Remove = add.Movement, rem.Movement
	res.Lookup = timeLookups(base.Router, c.Keys)
	return res
}

// timeLookups returns the mean time of a lookup, over the keys, repeated
// until some 50ms have passed.
func timeLookups(r dist.Router, keys [][]byte) time.Duration {
	n := 0
	start := time.Now()
	for time.Since(start) < 50*time.Millisecond {
		for _, k := range keys {
			r.Lookup(k)
		}
		n += len(keys)
	}
	return time.Since(start) / time.Duration(n)
}
