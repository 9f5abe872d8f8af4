package proxy

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// refusalLogEvery is how often a pool logs a class of refused requests: a
// client that sends nothing but bad requests leaves one line a class in each
// interval, with the number refused since the last line, not one a request.
const refusalLogEvery = time.Minute

// refusedSlowReader is the class of a client closed for not reading its
// replies while the proxy held more than its memory budget (client.write),
// in both protocols: slow_reader.
const refusedSlowReader = "slow reader"

// refusedClientConnections is the class of a connection closed at once
// because the pool has client_connections clients: client_connections.
const refusedClientConnections = "client connections"

// refusedOpenFiles is the class of a connection closed at once because the
// proxy has as many clients as its open files limit leaves room for
// (clientLimit): open_files.
const refusedOpenFiles = "open files"

// refusedHTTP is the class of a connection closed, unanswered, at a request
// named POST or Host: (any case), in both protocols: the start of an HTTP
// request, which a web page can make a browser send to any port, its body
// then read as commands (cross-protocol scripting). Redis closes such a
// connection; memcached reads on, and the proxy closes it for both.
const refusedHTTP = "http request"

// isHTTP reports whether a request's name, its first word, is one of an
// HTTP request's (refusedHTTP).
func isHTTP(name []byte) bool {
	return len(name) == 4 && strings.EqualFold(string(name), "post") ||
		len(name) == 5 && strings.EqualFold(string(name), "host:")
}

// refuser is a request that can say why the proxy refused it (a codec's
// request answered locally with an error): the class of the refusal, and
// what the log quotes of the offending request. A class is a few words of
// bounded variety, which refusalStat makes a counter's name and a label:
// memcached's error reply ("CLIENT_ERROR line too long"), or one of the
// Redis codec's fixed classes ("unsupported command"; its replies name
// commands and quote arguments). A request that was not refused returns "".
type refuser interface {
	refusal() (class string, line []byte)
}

// refusals counts a pool's refused requests by class and logs them, rate
// limited. It is safe for concurrent use; refusals are rare, so a mutex does.
type refusals struct {
	// every is how often a class is logged at most; if zero, refusalLogEvery.
	every   time.Duration
	mu      sync.Mutex
	classes map[string]*refusalClass
	closed  bool
}

type refusalClass struct {
	total    uint64    // refused since the pool started
	unlogged uint64    // refused since the last line logged
	logged   time.Time // when the last line was logged
	// The last refusal not logged, quoted by the line that counts it, and
	// the timer that logs that line once the interval ends: a burst is
	// logged within an interval, not at the class's next refusal, which may
	// never come.
	client string
	line   []byte
	timer  *time.Timer
}

// add counts one refusal of class by the client at addr, and logs it if the
// class was not logged in the last interval; otherwise the line that counts
// it is logged when the interval ends.
func (rs *refusals) add(log *slog.Logger, pool, class string, line []byte, addr string) {
	now := time.Now()
	every := rs.interval()
	rs.mu.Lock()
	if rs.classes == nil {
		rs.classes = map[string]*refusalClass{}
	}
	c := rs.classes[class]
	if c == nil {
		c = &refusalClass{}
		rs.classes[class] = c
	}
	c.total++
	c.unlogged++
	n := c.unlogged
	due := c.timer == nil && (c.logged.IsZero() || now.Sub(c.logged) >= every)
	switch {
	case due:
		c.unlogged, c.logged = 0, now
	case !rs.closed:
		c.client, c.line = addr, append(c.line[:0], line...)
		if c.timer == nil {
			c.timer = time.AfterFunc(c.logged.Add(every).Sub(now), func() { rs.flush(log, pool, class) })
		}
	}
	rs.mu.Unlock()
	if due {
		logRefusals(log, pool, class, n, every, addr, line)
	}
}

// interval returns how often a class is logged at most.
func (rs *refusals) interval() time.Duration {
	if rs.every > 0 {
		return rs.every
	}
	return refusalLogEvery
}

// flush logs the refusals of class held back since its last line, if any.
func (rs *refusals) flush(log *slog.Logger, pool, class string) {
	rs.mu.Lock()
	c := rs.classes[class]
	c.timer = nil
	n, addr, line := c.unlogged, c.client, c.line
	c.unlogged, c.logged, c.line = 0, time.Now(), nil
	every := rs.interval()
	rs.mu.Unlock()
	if n > 0 {
		logRefusals(log, pool, class, n, every, addr, line)
	}
}

// close logs at once the refusals held back for the end of their interval,
// for a pool that stops; those counted after are not logged.
func (rs *refusals) close(log *slog.Logger, pool string) {
	rs.mu.Lock()
	rs.closed = true
	var held []string
	for name, c := range rs.classes {
		if c.timer != nil && c.timer.Stop() {
			held = append(held, name)
		}
	}
	rs.mu.Unlock()
	slices.Sort(held)
	for _, class := range held {
		rs.flush(log, pool, class)
	}
}

// logRefusals logs n refusals of class, quoting the last one's client and line.
func logRefusals(log *slog.Logger, pool, class string, n uint64, every time.Duration, addr string, line []byte) {
	level := slog.LevelWarn
	if class == refusedProto {
		// A client offering RESP3 and going on in RESP2 when refused,
		// as go-redis does on each new connection: nothing went wrong.
		level = slog.LevelInfo
	}
	// The class as the metric's label and the data port's stats name
	// it (unknown_command, line_too_long), which the docs list.
	attrs := []any{"pool", pool, "class", strings.TrimPrefix(refusalStat(class), "refused_"), "count", n, "every", every, "client", addr}
	if len(line) > 0 { // a class refused before a line is read has none
		attrs = append(attrs, "line", string(line))
	}
	log.Log(context.Background(), level, "requests refused", attrs...)
}

// counts returns the number of refusals of each class, sorted by class.
func (rs *refusals) counts() (classes []string, totals []uint64) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for name := range rs.classes {
		classes = append(classes, name)
	}
	slices.Sort(classes)
	for _, name := range classes {
		totals = append(totals, rs.classes[name].total)
	}
	return classes, totals
}

// refusalStat returns the name of the counter of a class of refusals among a
// pool's stats: "refused_" and the words of the class's reply but for the
// error's kind, lower case, joined by underscores ("CLIENT_ERROR line too
// long" is refused_line_too_long, "ERROR" refused_error).
func refusalStat(class string) string {
	words := strings.Fields(class)
	if len(words) > 1 && strings.HasSuffix(words[0], "ERROR") {
		words = words[1:]
	}
	var b strings.Builder
	b.WriteString("refused")
	for _, w := range words {
		b.WriteByte('_')
		for _, c := range strings.ToLower(w) {
			if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
				b.WriteRune(c)
			}
		}
	}
	return b.String()
}

// noteRefusal counts and logs r's refusal, if it was refused.
func (c *client) noteRefusal(r *clientReq) {
	var class string
	var line []byte
	switch {
	case r.act == forward && r.ncalls == 0 && (r.err == errKeysSpread || r.err == errPattern):
		class = r.err.Error()
		if q, ok := r.req.(interface{ quote() []byte }); ok {
			line = q.quote()
		}
	default:
		if rf, ok := r.req.(refuser); ok {
			class, line = rf.refusal()
		}
	}
	if class != "" {
		c.pool.refused.add(c.pool.proxy.log, c.pool.name, class, line, c.conn.RemoteAddr().String())
	}
}
