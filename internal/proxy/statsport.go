package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// statsVersion is the version the stats document reports: the nutcracker
// release whose stats it reproduces, marked as chash's, so that dashboards
// that check the version see one they know.
const statsVersion = "0.5.0-chash"

// Limits of the stats port, which any host may reach (nutcracker's listens on
// 0.0.0.0): clients are served at most statsConns at a time, the others
// waiting in the listen backlog; each has statsWriteTimeout to read the
// document, and statsLinger to close its side, before its connection is
// closed.
const (
	statsConns        = 16
	statsWriteTimeout = 5 * time.Second
	statsLinger       = time.Second
)

// statsPort is the state of the stats port.
type statsPort struct {
	// opened counts the connections opened since the start, as nutcracker's
	// total_connections does: pools' listeners, clients (those refused for
	// client_connections too) and server connections.
	opened atomic.Uint64
	ln     net.Listener
}

// A poolField is a pool's counter in the stats document: its name and what
// it counts, as nutcracker's --describe-stats says, and its value.
type poolField struct {
	name, desc string
	value      func(pl *pool) int64
}

// A serverField is a server's counter in the stats document.
type serverField struct {
	name, desc string
	value      func(s *serverCounts) int64
}

// serverCounts is a server as its counters are read: the server, and the
// sums of its connections' queues, which several fields read.
type serverCounts struct {
	*server
	in, inBytes, out, outBytes int
}

// poolFields are the counters of a pool in the stats document: nutcracker
// 0.5.0's, in its order. chash's own would follow, each with "(chash)" in
// its description.
var poolFields = []poolField{
	{"client_eof", "# eof on client connections", func(pl *pool) int64 { return int64(pl.stats.clientEOF.Load()) }},
	{"client_err", "# errors on client connections", func(pl *pool) int64 { return int64(pl.stats.clientErr.Load()) }},
	{"client_connections", "# active client connections", func(pl *pool) int64 { return pl.nconns.Load() }},
	{"server_ejects", "# times backend server was ejected", func(pl *pool) int64 { return int64(pl.stats.ejects.Load()) }},
	{"forward_error", "# times we encountered a forwarding error", func(pl *pool) int64 { return int64(pl.stats.forwardErr.Load()) }},
	// nutcracker 0.5.0 declares fragments but never counts them: it reports 0.
	{"fragments", "# fragments created from a multi-vector request", func(pl *pool) int64 { return int64(pl.stats.fragments.Load()) }},
}

// serverFields are the counters of a server in the stats document:
// nutcracker 0.5.0's, in its order, then chash's own.
var serverFields = []serverField{
	{"server_eof", "# eof on server connections", func(s *serverCounts) int64 { return int64(s.stats.eof.Load()) }},
	{"server_err", "# errors on server connections", func(s *serverCounts) int64 { return int64(s.stats.errors.Load()) }},
	{"server_timedout", "# timeouts on server connections", func(s *serverCounts) int64 { return int64(s.stats.timedout.Load()) }},
	{"server_connections", "# active server connections", func(s *serverCounts) int64 { return s.stats.connections.Load() }},
	// As nutcracker's, the time of the last ejection stays after the server
	// is back; 0 if it never was ejected.
	{"server_ejected_at", "timestamp when server was ejected in usec since epoch", func(s *serverCounts) int64 { return s.ejectedAt.Load() }},
	{"requests", "# requests", func(s *serverCounts) int64 { return int64(s.stats.requests.Load()) }},
	{"request_bytes", "total request bytes", func(s *serverCounts) int64 { return int64(s.stats.requestBytes.Load()) }},
	{"responses", "# responses", func(s *serverCounts) int64 { return int64(s.stats.responses.Load()) }},
	{"response_bytes", "total response bytes", func(s *serverCounts) int64 { return int64(s.stats.responseBytes.Load()) }},
	{"in_queue", "# requests in incoming queue", func(s *serverCounts) int64 { return int64(s.in) }},
	{"in_queue_bytes", "current request bytes in incoming queue", func(s *serverCounts) int64 { return int64(s.inBytes) }},
	{"out_queue", "# requests in outgoing queue", func(s *serverCounts) int64 { return int64(s.out) }},
	{"out_queue_bytes", "current request bytes in outgoing queue", func(s *serverCounts) int64 { return int64(s.outBytes) }},
	{"server_protocol_errors", "# replies out of the protocol, each resetting its connection (chash)", func(s *serverCounts) int64 { return int64(s.stats.badReplies.Load()) }},
	{"get_hits", "# keys of reads the server found (chash)", func(s *serverCounts) int64 { return int64(s.stats.hits.Load()) }},
	{"get_misses", "# keys of reads the server did not find (chash)", func(s *serverCounts) int64 { return int64(s.stats.misses.Load()) }},
}

// DescribeStats writes what each counter of the stats document counts, as
// nutcracker --describe-stats does.
func DescribeStats(w io.Writer) error {
	var b strings.Builder
	b.WriteString("pool stats:\n")
	for _, f := range poolFields {
		fmt.Fprintf(&b, "  %-24s%q\n", f.name, f.desc)
	}
	b.WriteString("\nserver stats:\n")
	for _, f := range serverFields {
		fmt.Fprintf(&b, "  %-24s%q\n", f.name, f.desc)
	}
	b.WriteString("\nA description that ends in (chash) is chash proxy's own counter; the others\n" +
		"are nutcracker 0.5.0's, in its order (its fragments are always 0). chash\n" +
		"writes servers the requests it encodes, so request_bytes counts those; it\n" +
		"sends a memcached request with noreply without it and answers the client\n" +
		"nothing, so the server's reply is in responses and response_bytes, where\n" +
		"nutcracker forwards noreply and the server sends nothing.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// statsSample is the counters of the pools at one time, in the order of the
// stats document.
type statsSample struct {
	pools []poolSample
}

type poolSample struct {
	name    string
	values  []int64 // as poolFields
	servers []serverSample
}

type serverSample struct {
	name   string
	values []int64 // as serverFields
}

// sampleStats reads the counters of the pools, sorted by name, their servers
// in the order of their pool.
func sampleStats(pools []*pool) *statsSample {
	sortPools(pools)
	s := &statsSample{pools: make([]poolSample, len(pools))}
	for i, pl := range pools {
		ps := poolSample{name: pl.name, values: make([]int64, len(poolFields))}
		for j, f := range poolFields {
			ps.values[j] = f.value(pl)
		}
		for _, srv := range pl.state.Load().list {
			sc := serverCounts{server: srv}
			for _, c := range srv.conns {
				in, inBytes, out, outBytes := c.queues()
				sc.in, sc.inBytes, sc.out, sc.outBytes = sc.in+in, sc.inBytes+inBytes, sc.out+out, sc.outBytes+outBytes
			}
			ss := serverSample{name: srv.name, values: make([]int64, len(serverFields))}
			for j, f := range serverFields {
				ss.values[j] = f.value(&sc)
			}
			ps.servers = append(ps.servers, ss)
		}
		s.pools[i] = ps
	}
	return s
}

// sortPools sorts pools by name, as the stats document and the status page
// list them.
func sortPools(pools []*pool) {
	slices.SortFunc(pools, func(a, b *pool) int { return strings.Compare(a.name, b.name) })
}

// connections returns the connections open now and opened since the start,
// as nutcracker counts them: pools' listeners, clients and server
// connections.
func (p *Proxy) connections() (curr, total int64) {
	for _, pl := range p.poolList() {
		curr += 1 + pl.nconns.Load()
		for _, s := range pl.state.Load().list {
			curr += s.stats.connections.Load()
		}
	}
	return curr, int64(p.stats.opened.Load())
}

// StatsJSON returns the stats document with the counters of now, as GET
// /stats and the stats port serve it.
//
// The document is nutcracker 0.5.0's, byte for byte in its layout: service
// ("nutcracker"), source (the host's name), version ("0.5.0-chash"),
// uptime (seconds), timestamp (Unix seconds), total_connections and
// curr_connections (pools' listeners, clients and server connections, opened
// since the start and open now), then an object for each pool, by name, with
// the pool's counters and an object for each of its servers, named as the
// configuration names them, with its counters (see DescribeStats).
func (p *Proxy) StatsJSON() []byte {
	return p.appendStats(nil, sampleStats(p.poolList()), time.Now())
}

// appendStats appends the stats document of s, its header read at now, as
// nutcracker writes it: each member followed by ", ", objects closed by
// overwriting the last ", ".
func (p *Proxy) appendStats(b []byte, s *statsSample, now time.Time) []byte {
	host, _ := os.Hostname()
	curr, total := p.connections()
	b = append(b, '{')
	b = appendStatString(b, "service", "nutcracker")
	b = appendStatString(b, "source", host)
	b = appendStatString(b, "version", statsVersion)
	b = appendStatNum(b, "uptime", int64(now.Sub(p.metrics.start).Seconds()))
	b = appendStatNum(b, "timestamp", now.Unix())
	b = appendStatNum(b, "total_connections", total)
	b = appendStatNum(b, "curr_connections", curr)
	for _, ps := range s.pools {
		b = appendStatNesting(b, ps.name)
		for i, f := range poolFields {
			b = appendStatNum(b, f.name, ps.values[i])
		}
		for _, ss := range ps.servers {
			b = appendStatNesting(b, ss.name)
			for i, f := range serverFields {
				b = appendStatNum(b, f.name, ss.values[i])
			}
			b = endStatNesting(b)
		}
		b = endStatNesting(b)
	}
	// The last member ends in ", " or "},": its last byte becomes the
	// document's end.
	b[len(b)-1] = '}'
	if b[len(b)-2] == ',' {
		b[len(b)-2] = ' ' // the header's ", ", with no pool after it
	}
	return append(b, '\n')
}

func appendStatString(b []byte, key, value string) []byte {
	b = appendJSONString(b, key)
	b = append(b, ':')
	b = appendJSONString(b, value)
	return append(b, ", "...)
}

func appendStatNum(b []byte, key string, value int64) []byte {
	b = appendJSONString(b, key)
	b = append(b, ':')
	b = strconv.AppendInt(b, value, 10)
	return append(b, ", "...)
}

func appendStatNesting(b []byte, key string) []byte {
	b = appendJSONString(b, key)
	return append(b, ": {"...)
}

// endStatNesting closes the object whose members b ends with: the last
// member's ", " becomes "},", or an object's "}," becomes "}},"; an empty
// object is closed after its "{".
func endStatNesting(b []byte) []byte {
	switch {
	case strings.HasSuffix(string(b[len(b)-2:]), ", "):
		b[len(b)-2], b[len(b)-1] = '}', ','
		return b
	case b[len(b)-1] == ',':
		b[len(b)-1] = '}'
		return append(b, ',')
	}
	return append(b, "},"...)
}

// appendJSONString appends s as a JSON string: nutcracker writes names as
// they are, which a name with a quote would break.
func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

// startStats opens the stats port, with p.mu held; Close closes it.
func (p *Proxy) startStats() error {
	ln, err := listenApart(p.ctx, p.StatsAddr, p.listeners(nil)) // shared with a new process (listen.go)
	if err != nil {
		return fmt.Errorf("proxy: stats port: %w", err)
	}
	p.stats.ln = ln
	p.wg.Add(1)
	go p.serveStats(ln)
	p.log.Info("stats port listening", "addr", ln.Addr().String())
	p.logShared("stats port", ln)
	return nil
}

// serveStats writes the stats document to each client of ln until the proxy
// closes, at most statsConns at a time.
func (p *Proxy) serveStats(ln net.Listener) {
	defer p.wg.Done()
	stop := context.AfterFunc(p.ctx, func() { ln.Close() })
	defer stop()
	slots := make(chan struct{}, statsConns)
	for {
		select {
		case slots <- struct{}{}:
		case <-p.ctx.Done():
			return
		}
		conn, err := ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil {
				return
			}
			// Out of file descriptors, or a connection reset before it was
			// accepted: wait a little and go on.
			<-slots
			time.Sleep(10 * time.Millisecond)
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer func() { <-slots }()
			p.writeStats(conn)
		}()
	}
}

// writeStats writes the stats document to conn and closes it: first its
// writing side, then, once the client has closed its own (or after
// statsLinger), the whole, so that what a client sent (such as an HTTP
// request) does not make the close reset the connection before it has read
// the document.
func (p *Proxy) writeStats(conn net.Conn) {
	stop := context.AfterFunc(p.ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()
	doc := p.appendStats(make([]byte, 0, 4096), sampleStats(p.poolList()), time.Now())
	conn.SetDeadline(time.Now().Add(statsWriteTimeout))
	if _, err := conn.Write(doc); err != nil {
		return
	}
	if cw, ok := conn.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		conn.SetReadDeadline(time.Now().Add(statsLinger))
		io.Copy(io.Discard, io.LimitReader(conn, 1<<20))
	}
}

// Served returns the replies the servers of the proxy's pools have sent it
// since they joined: a measure of the requests it serves, for ScaleProcs.
func (p *Proxy) Served() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n uint64
	for _, pl := range p.pools {
		for _, s := range pl.state.Load().list {
			n += s.stats.responses.Load()
		}
	}
	return n
}

// StatsPortAddr returns the stats port's address, or nil.
func (p *Proxy) StatsPortAddr() net.Addr {
	if p.stats.ln == nil {
		return nil
	}
	return p.stats.ln.Addr()
}
