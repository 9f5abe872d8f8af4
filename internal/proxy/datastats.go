package proxy

import (
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// requestCounts are the counters of a pool's requests that count each
// request as it is read: the requests of each command, and the refusals of
// each class. stats reads them when it is read, so that they count the
// requests its client sent before it and none after, which the proxy may
// have read in the same batch.
type requestCounts struct {
	commands map[string]uint64
	classes  []string // of refusals, sorted
	refused  []uint64 // of each class
}

// requestCounts returns the pool's request counters now.
func (pl *pool) requestCounts() *requestCounts {
	rc := &requestCounts{commands: pl.proxy.metrics.poolRequests(pl.name)}
	rc.classes, rc.refused = pl.refused.counts()
	return rc
}

// appendStats appends the STAT lines a pool answers to memcached's "stats" on
// its data port, so that tools that read memcached's (memccapable, memcached
// exporters, libmemcached's memcached_stat) read the proxy's own: names as
// memcached's where the meaning is the same, for the pool's clients rather
// than a server's items.
//
//	pid, uptime, time, version   the process, as memcached's
//	curr_connections             the pool's client connections now open
//	total_connections            ... accepted since the pool started
//	cmd_get, get_hits,           keys looked up by the pool's get, gets and
//	get_misses                   mg, found, and not found (cmd_get = hits +
//	                             misses)
//	cmd_touch, touch_hits,       keys touched by touch, gat and gats, found,
//	touch_misses                 and not found (cmd_touch = hits + misses);
//	                             as memcached, an mg with T is a touch if it
//	                             finds its item, a get's miss if not
//	cmd_set, cmd_flush           requests of storage commands and flush_all
//	bytes_read, bytes_written    bytes read from and written to clients
//	requests_<command>           the pool's requests of each command received
//	refused_<class>              requests refused, by class (see refusals)
//	pool_servers, ejected_servers  the pool's servers, and those ejected
//
// The counters of requests are rc, read when stats was read; the others are
// read now, when stats is answered, after the replies of every request its
// client sent before it: hits and misses are counted as replies are read,
// and a client that pipelines gets and stats in one write gets counters that
// count the gets' hits, as memcached's do; and the proxy reads no request
// sent after stats before it has answered it (the codec's localAlone), so
// none of its client's later requests count.
func (pl *pool) appendStats(dst []byte, rc *requestCounts) []byte {
	p := pl.proxy
	st := pl.state.Load()
	var hits, misses, touchHits, touchMisses, ejected uint64
	for _, s := range st.list {
		// gat's keys count as touches, not gets, as memcached counts them.
		gh, gm := s.stats.gatHits.Load(), s.stats.gatMisses.Load()
		hits += s.stats.hits.Load() - gh
		misses += s.stats.misses.Load() - gm
		touchHits += s.stats.touchHits.Load() + gh
		touchMisses += s.stats.touchMisses.Load() + gm
		if s.ejected.Load() {
			ejected++
		}
	}
	now := time.Now()
	dst = appendStatLine(dst, "pid", uint64(os.Getpid()))
	dst = appendStatLine(dst, "uptime", uint64(now.Sub(p.metrics.start).Seconds()))
	dst = appendStatLine(dst, "time", uint64(now.Unix()))
	dst = append(dst, "STAT version "+statsVersion+"\r\n"...)
	dst = appendStatLine(dst, "curr_connections", uint64(pl.nconns.Load()))
	dst = appendStatLine(dst, "total_connections", pl.stats.clientTotal.Load())
	names := pl.codec.commands()
	var set, flush uint64
	for name, n := range rc.commands {
		switch name {
		case "set", "add", "replace", "append", "prepend", "cas", "ms":
			set += n
		case "flush_all":
			flush += n
		}
	}
	dst = appendStatLine(dst, "cmd_get", hits+misses)
	dst = appendStatLine(dst, "cmd_set", set)
	dst = appendStatLine(dst, "cmd_flush", flush)
	dst = appendStatLine(dst, "cmd_touch", touchHits+touchMisses)
	dst = appendStatLine(dst, "get_hits", hits)
	dst = appendStatLine(dst, "get_misses", misses)
	dst = appendStatLine(dst, "touch_hits", touchHits)
	dst = appendStatLine(dst, "touch_misses", touchMisses)
	dst = appendStatLine(dst, "bytes_read", pl.stats.bytesIn.Load())
	dst = appendStatLine(dst, "bytes_written", pl.stats.bytesOut.Load())
	for _, name := range names {
		if name != "" {
			dst = appendStatLine(dst, "requests_"+name, rc.commands[name])
		}
	}
	for i, class := range rc.classes {
		dst = appendStatLine(dst, refusalStat(class), rc.refused[i])
	}
	dst = appendStatLine(dst, "pool_servers", uint64(len(st.list)))
	dst = appendStatLine(dst, "ejected_servers", ejected)
	return dst
}

func appendStatLine(dst []byte, name string, n uint64) []byte {
	dst = append(append(append(dst, "STAT "...), name...), ' ')
	return append(strconv.AppendUint(dst, n, 10), "\r\n"...)
}

// poolRequests returns the pool's requests of each command received, from
// the series of chash_proxy_requests_total made so far: a command no client
// sent has none, and counts zero.
func (m *metrics) poolRequests(pool string) map[string]uint64 {
	ch := make(chan prometheus.Metric)
	go func() {
		m.requests.Collect(ch)
		close(ch)
	}()
	counts := map[string]uint64{}
	for metric := range ch {
		var d dto.Metric
		if metric.Write(&d) != nil {
			continue
		}
		var ofPool bool
		var cmd string
		for _, l := range d.GetLabel() {
			switch l.GetName() {
			case "pool":
				ofPool = l.GetValue() == pool
			case "command":
				cmd = l.GetValue()
			}
		}
		if ofPool {
			counts[cmd] = uint64(d.GetCounter().GetValue())
		}
	}
	return counts
}
