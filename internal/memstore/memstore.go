// Package memstore is a small in-process store that speaks memcached's text
// protocol: the embedded default of chash proxy, so that a newcomer can try the
// proxy with nc on a machine without memcached. It is not a product: real
// deployments point chash proxy at real memcached servers.
//
// A Store holds at most MaxBytes of items, evicting the least recently used;
// it honours expiration times and cas, and answers the classic commands and the
// meta commands mg, ms, md, ma and mn with their common flags (b, c, C, D, f, F,
// J, k, M, N, O, q, s, t, T, u, v, and P and L, which memcached ignores), as
// memcached 1.6 answers them. It reads requests with package memcache, as
// strictly as chash proxy does: what memcached could read otherwise is refused
// with memcached's error, silently where memcached is silent, and a connection
// that cannot be read further is closed. The meta flags h, l, I and R, which
// need the access history memcached keeps, are refused with "CLIENT_ERROR
// invalid flag", and me is not supported.
package memstore

import (
	"bufio"
	"container/list"
	"encoding/base64"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/chash-dev/chash/internal/memcache"
)

// DefaultMaxBytes is the memory limit of a Store whose MaxBytes is zero.
const DefaultMaxBytes = 64 << 20

// itemOverhead is what each item counts for besides its key and value, about
// memcached's item header.
const itemOverhead = 56

// relativeLimit is memcached's boundary between relative and absolute
// expiration times: 30 days, in seconds.
const relativeLimit = 60 * 60 * 24 * 30

// Store is an in-memory memcached-compatible store. It is safe for concurrent
// use. The zero value is ready to use.
type Store struct {
	// MaxBytes bounds the memory the items take. If zero, it defaults to
	// DefaultMaxBytes (64 MiB).
	MaxBytes int
	// Now returns the current time. If nil, time.Now is used.
	Now func() time.Time

	mu    sync.Mutex
	items map[string]*list.Element
	lru   list.List // front: most recently used
	used  int
	cas   uint64
	// flushAt is when a flush_all with a delay empties the store (unix
	// seconds), 0 if none is pending.
	flushAt int64

	connMu sync.Mutex
	conns  map[net.Conn]struct{}
	lns    []net.Listener
	wg     sync.WaitGroup
	closed bool
}

type item struct {
	key   string
	value []byte
	flags uint32
	exp   int64 // unix seconds; 0 never
	cas   uint64
}

func (s *Store) now() int64 {
	if s.Now != nil {
		return s.Now().Unix()
	}
	return time.Now().Unix()
}

func (s *Store) maxBytes() int {
	if s.MaxBytes > 0 {
		return s.MaxBytes
	}
	return DefaultMaxBytes
}

// expiry turns a protocol exptime into unix seconds: 0 never expires, a negative
// time has expired, up to 30 days is relative, more is absolute.
func (s *Store) expiry(t int64) int64 {
	switch {
	case t == 0:
		return 0
	case t < 0:
		return s.now() - 1
	case t <= relativeLimit:
		return s.now() + t
	}
	return t
}

// get returns the live item of key, marking it used; s.mu is held.
func (s *Store) get(key []byte) *item { return s.lookup(key, true) }

// lookup returns the live item of key, marking it used if bump is set; s.mu is
// held.
func (s *Store) lookup(key []byte, bump bool) *item {
	e, ok := s.items[string(key)]
	if !ok {
		return nil
	}
	it := e.Value.(*item)
	if it.exp != 0 && it.exp <= s.now() {
		s.remove(e)
		return nil
	}
	if bump {
		s.lru.MoveToFront(e)
	}
	return it
}

// flush removes every item; s.mu is held.
func (s *Store) flush() {
	clear(s.items)
	s.lru.Init()
	s.used, s.flushAt = 0, 0
}

func (s *Store) remove(e *list.Element) {
	it := s.lru.Remove(e).(*item)
	delete(s.items, it.key)
	s.used -= itemOverhead + len(it.key) + len(it.value)
}

var errTooLarge = errors.New("SERVER_ERROR object too large for cache")

// put stores it, replacing any item of its key and evicting the least recently
// used items to stay within MaxBytes; s.mu is held.
func (s *Store) put(it *item) error {
	size := itemOverhead + len(it.key) + len(it.value)
	if size > s.maxBytes()/2 {
		return errTooLarge
	}
	if s.items == nil {
		s.items = make(map[string]*list.Element)
	}
	if e, ok := s.items[it.key]; ok {
		s.remove(e)
	}
	for s.used+size > s.maxBytes() {
		s.remove(s.lru.Back())
	}
	s.cas++
	it.cas = s.cas
	s.items[it.key] = s.lru.PushFront(it)
	s.used += size
	return nil
}

// Serve answers the clients that ln accepts until ln is closed or Close is
// called. Each client has a goroutine that ends when its connection closes.
func (s *Store) Serve(ln net.Listener) error {
	s.connMu.Lock()
	if s.closed {
		s.connMu.Unlock()
		return net.ErrClosed
	}
	s.lns = append(s.lns, ln)
	s.connMu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		s.connMu.Lock()
		if s.closed {
			s.connMu.Unlock()
			c.Close()
			return net.ErrClosed
		}
		if s.conns == nil {
			s.conns = map[net.Conn]struct{}{}
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.connMu.Unlock()
		go s.serveConn(c)
	}
}

// Close closes the listeners given to Serve and every client connection, and
// waits for the clients' goroutines.
func (s *Store) Close() error {
	s.connMu.Lock()
	s.closed = true
	for _, ln := range s.lns {
		ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.connMu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *Store) serveConn(c net.Conn) {
	defer func() {
		c.Close()
		s.connMu.Lock()
		delete(s.conns, c)
		s.connMu.Unlock()
		s.wg.Done()
	}()
	rd := memcache.NewReader(c, memcache.Limits{MaxValue: s.maxBytes() / 2})
	bw := bufio.NewWriter(c)
	var req memcache.Request
	var out []byte
	for {
		err := rd.ReadRequest(&req)
		out = out[:0]
		var me *memcache.Error
		switch {
		case errors.As(err, &me):
			if me.Reply == memcache.ReplyTooLarge && len(req.Keys) == 1 {
				s.mu.Lock()
				s.dropStale(req.Command, req.RouteKey(0))
				s.mu.Unlock()
			}
			if !me.Noreply {
				out = append(append(out, me.Reply...), "\r\n"...)
			}
		case err != nil:
			bw.Flush()
			return
		case req.Command == memcache.CmdQuit:
			bw.Flush()
			return
		default:
			out = s.Do(out, &req)
		}
		if _, err := bw.Write(out); err != nil {
			return
		}
		if me != nil && me.Fatal {
			bw.Flush()
			return
		}
		if rd.Buffered() == 0 && bw.Flush() != nil {
			return
		}
	}
}

// dropStale deletes key's item after a set or ms of it failed for a value
// too large, as memcached does, so that a failed set leaves no stale value to
// read; s.mu is held.
func (s *Store) dropStale(cmd memcache.Command, key []byte) {
	if cmd != memcache.CmdSet && cmd != memcache.CmdMetaSet {
		return
	}
	if e, ok := s.items[string(key)]; ok {
		s.remove(e)
	}
}

// Do executes req and appends its reply.
func (s *Store) Do(dst []byte, req *memcache.Request) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(dst)
	if s.flushAt != 0 && s.now() >= s.flushAt {
		s.flush() // every item was stored before a pending flush_all's time
	}
	switch c := req.Command; {
	case c == memcache.CmdFlushAll:
		// As memcached: now, or at the delay's time (relative, or absolute
		// past 30 days), the items stored before it go.
		if at := s.expiry(req.Exptime); at == 0 || at <= s.now() {
			s.flush()
		} else {
			s.flushAt = at
		}
		dst = append(dst, "OK\r\n"...)
	case c.IsRetrieval():
		dst = s.retrieve(dst, req)
	case c == memcache.CmdMetaGet:
		return s.metaGet(dst, req)
	case c == memcache.CmdMetaSet:
		return s.metaSet(dst, req)
	case c == memcache.CmdMetaDelete:
		return s.metaDelete(dst, req)
	case c == memcache.CmdMetaArithmetic:
		return s.metaArithmetic(dst, req)
	case c == memcache.CmdMetaNoop:
		return append(dst, "MN\r\n"...)
	case c == memcache.CmdMetaDebug:
		return append(dst, "CLIENT_ERROR me is not supported by the embedded store\r\n"...)
	case c.IsStorage():
		dst = s.store(dst, req)
	case c == memcache.CmdDelete:
		if e, ok := s.items[string(req.Key())]; ok && s.get(req.Key()) != nil {
			s.remove(e)
			dst = append(dst, "DELETED\r\n"...)
		} else {
			dst = append(dst, "NOT_FOUND\r\n"...)
		}
	case c == memcache.CmdIncr || c == memcache.CmdDecr:
		it := s.get(req.Key())
		if it == nil {
			dst = append(dst, "NOT_FOUND\r\n"...)
			break
		}
		v, err := s.arith(it, c == memcache.CmdIncr, req.Delta)
		if err != nil {
			dst = append(append(dst, err.Error()...), "\r\n"...)
			break
		}
		dst = append(strconv.AppendUint(dst, v, 10), "\r\n"...)
	case c == memcache.CmdTouch:
		if it := s.get(req.Key()); it != nil {
			it.exp = s.expiry(req.Exptime)
			dst = append(dst, "TOUCHED\r\n"...)
		} else {
			dst = append(dst, "NOT_FOUND\r\n"...)
		}
	case c == memcache.CmdVersion:
		dst = append(dst, "VERSION 1.6.0-chash-embedded\r\n"...)
	default:
		dst = append(dst, "ERROR\r\n"...)
	}
	if req.Noreply {
		return dst[:n]
	}
	return dst
}

func (s *Store) retrieve(dst []byte, req *memcache.Request) []byte {
	touch := req.Command == memcache.CmdGat || req.Command == memcache.CmdGats
	withCas := req.Command == memcache.CmdGets || req.Command == memcache.CmdGats
	for _, k := range req.Keys {
		it := s.get(k)
		if it == nil {
			continue
		}
		if touch {
			it.exp = s.expiry(req.Exptime)
		}
		dst = memcache.AppendItem(dst, &memcache.Item{Key: k, Flags: it.flags, Cas: it.cas, HasCas: withCas, Value: it.value})
	}
	return append(dst, "END\r\n"...)
}

func (s *Store) store(dst []byte, req *memcache.Request) []byte {
	key := req.Key()
	old := s.get(key)
	it := &item{key: string(key), value: append([]byte(nil), req.Value...), flags: req.Flags, exp: s.expiry(req.Exptime)}
	switch req.Command {
	case memcache.CmdAdd:
		if old != nil {
			return append(dst, "NOT_STORED\r\n"...)
		}
	case memcache.CmdReplace:
		if old == nil {
			return append(dst, "NOT_STORED\r\n"...)
		}
	case memcache.CmdAppend, memcache.CmdPrepend:
		if old == nil {
			return append(dst, "NOT_STORED\r\n"...)
		}
		it.flags, it.exp = old.flags, old.exp
		if req.Command == memcache.CmdAppend {
			it.value = append(append([]byte(nil), old.value...), req.Value...)
		} else {
			it.value = append(it.value, old.value...)
		}
	case memcache.CmdCas:
		if old == nil {
			return append(dst, "NOT_FOUND\r\n"...)
		}
		if old.cas != req.Cas {
			return append(dst, "EXISTS\r\n"...)
		}
	}
	if err := s.put(it); err != nil {
		s.dropStale(req.Command, key)
		return append(append(dst, err.Error()...), "\r\n"...)
	}
	return append(dst, "STORED\r\n"...)
}

// arith adds or subtracts delta from it's decimal value, as memcached does:
// incr wraps at 2^64, decr stops at 0, and a shorter result is padded with
// spaces to the old length.
func (s *Store) arith(it *item, incr bool, delta uint64) (uint64, error) {
	v, err := strconv.ParseUint(string(trimSpaces(it.value)), 10, 64)
	if err != nil || len(it.value) == 0 {
		return 0, errors.New("CLIENT_ERROR cannot increment or decrement non-numeric value")
	}
	switch {
	case incr:
		v += delta
	case delta > v:
		v = 0
	default:
		v -= delta
	}
	b := strconv.AppendUint(nil, v, 10)
	for len(b) < len(it.value) {
		b = append(b, ' ')
	}
	s.cas++
	it.cas = s.cas
	s.used += len(b) - len(it.value)
	it.value = b
	return v, nil
}

func trimSpaces(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == ' ' {
		b = b[:len(b)-1]
	}
	return b
}

// metaFlags are a meta request's flags, parsed.
type metaFlags struct {
	tokens [][]byte
	has    [128]bool
	arg    [128][]byte
}

// parseMetaFlags indexes the flags of req, which the Reader checked: each is
// one the command takes, given once, with a valid token. It refuses those of
// them that the store does not implement, not in allowed.
func parseMetaFlags(req *memcache.Request, allowed string) (*metaFlags, error) {
	m := &metaFlags{tokens: req.MetaFlags}
	for _, t := range req.MetaFlags {
		f := t[0]
		if !containsByte(allowed, f) {
			return nil, errors.New("CLIENT_ERROR invalid flag")
		}
		m.has[f] = true
		m.arg[f] = t[1:]
	}
	return m, nil
}

func containsByte(s string, b byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return true
		}
	}
	return false
}

func (m *metaFlags) num(f byte) (int64, bool) {
	n, err := strconv.ParseInt(string(m.arg[f]), 10, 64)
	return n, err == nil
}

// appendReturn appends the return flags of m (k, c, f, t, s, O, b), in the order
// requested, for item it of key; with it nil, only k and O.
func (s *Store) appendReturn(dst []byte, m *metaFlags, key []byte, it *item) []byte {
	for _, t := range m.tokens {
		switch t[0] {
		case 'O':
			dst = append(append(dst, ' '), t...)
		case 'k':
			dst = append(dst, " k"...)
			if m.has['b'] {
				// memcached says b right after the key, wherever b was asked.
				dst = base64.StdEncoding.AppendEncode(dst, key)
				dst = append(dst, " b"...)
			} else {
				dst = append(dst, key...)
			}
		}
		if it == nil {
			continue
		}
		switch t[0] {
		case 'c':
			dst = strconv.AppendUint(append(dst, " c"...), it.cas, 10)
		case 'f':
			dst = strconv.AppendUint(append(dst, " f"...), uint64(it.flags), 10)
		case 's':
			dst = strconv.AppendInt(append(dst, " s"...), int64(len(it.value)), 10)
		case 't':
			ttl := int64(-1)
			if it.exp != 0 {
				ttl = max(it.exp-s.now(), 0)
			}
			dst = strconv.AppendInt(append(dst, " t"...), ttl, 10)
		}
	}
	return dst
}

func errLine(dst []byte, err error) []byte {
	return append(append(dst, err.Error()...), "\r\n"...)
}

func (s *Store) metaGet(dst []byte, req *memcache.Request) []byte {
	m, err := parseMetaFlags(req, "bcfkOqstTuvNPL")
	if err != nil {
		return errLine(dst, err)
	}
	key := req.RouteKey(0)
	it := s.lookup(key, !m.has['u'])
	if it == nil && m.has['N'] {
		ttl, _ := m.num('N')
		it = &item{key: string(key), exp: s.expiry(ttl)}
		s.put(it)
	}
	if it == nil {
		if m.has['q'] {
			return dst
		}
		return append(append(dst, "EN"...), s.appendReturnLine(m, key)...)
	}
	if m.has['T'] {
		ttl, _ := m.num('T')
		it.exp = s.expiry(ttl)
	}
	if m.has['v'] {
		dst = strconv.AppendInt(append(dst, "VA "...), int64(len(it.value)), 10)
		dst = s.appendReturn(dst, m, key, it)
		dst = append(dst, "\r\n"...)
		dst = append(append(dst, it.value...), "\r\n"...)
		return dst
	}
	dst = append(dst, "HD"...)
	return append(s.appendReturn(dst, m, key, it), "\r\n"...)
}

func (s *Store) metaSet(dst []byte, req *memcache.Request) []byte {
	m, err := parseMetaFlags(req, "bcCFkMOqTPL")
	if err != nil {
		return errLine(dst, err)
	}
	key := req.RouteKey(0)
	old := s.get(key)
	it := &item{key: string(key), value: append([]byte(nil), req.Value...)}
	if m.has['F'] {
		f, _ := strconv.ParseUint(string(m.arg['F']), 10, 32) // the Reader checked it
		it.flags = uint32(f)
	}
	if m.has['T'] {
		ttl, _ := m.num('T')
		it.exp = s.expiry(ttl)
	}
	status := "HD"
	mode := byte('S') // the Reader took only E, A, P, R and S
	if m.has['M'] {
		mode = m.arg['M'][0]
	}
	switch {
	case m.has['C'] && old == nil:
		status = "NF"
	case m.has['C'] && strconv.FormatUint(old.cas, 10) != string(m.arg['C']):
		status = "EX"
	case mode == 'E' && old != nil:
		status = "NS"
	case (mode == 'R' || mode == 'A' || mode == 'P') && old == nil:
		status = "NS"
	case mode == 'A':
		it.value = append(append([]byte(nil), old.value...), req.Value...)
		it.flags, it.exp = old.flags, old.exp
	case mode == 'P':
		it.value = append(it.value, old.value...)
		it.flags, it.exp = old.flags, old.exp
	}
	if status == "HD" {
		if err := s.put(it); err != nil {
			s.dropStale(req.Command, key)
			return errLine(dst, err)
		}
		if m.has['q'] {
			return dst
		}
	} else {
		it = old
	}
	dst = append(dst, status...)
	return append(s.appendReturn(dst, m, key, it), "\r\n"...)
}

func (s *Store) metaDelete(dst []byte, req *memcache.Request) []byte {
	m, err := parseMetaFlags(req, "bCkOqTPL")
	if err != nil {
		return append(dst, "CLIENT_ERROR invalid or duplicate flag\r\n"...)
	}
	key := req.RouteKey(0)
	it := s.get(key)
	status := "HD"
	switch {
	case it == nil:
		status = "NF"
	case m.has['C'] && strconv.FormatUint(it.cas, 10) != string(m.arg['C']):
		status = "EX"
	default:
		s.remove(s.items[string(key)])
		if m.has['q'] {
			return dst
		}
	}
	dst = append(dst, status...)
	return append(s.appendReturn(dst, m, key, nil), "\r\n"...)
}

func (s *Store) metaArithmetic(dst []byte, req *memcache.Request) []byte {
	m, err := parseMetaFlags(req, "bCDJkMNOqtTcvPL")
	if err != nil {
		return append(dst, "CLIENT_ERROR invalid or duplicate flag\r\n"...)
	}
	key := req.RouteKey(0)
	delta := uint64(1)
	if m.has['D'] {
		delta, _ = strconv.ParseUint(string(m.arg['D']), 10, 64) // the Reader checked it
	}
	// The Reader took only the modes I, +, D and -.
	incr := !m.has['M'] || m.arg['M'][0] == 'I' || m.arg['M'][0] == '+'

	it := s.get(key)
	if it == nil {
		if !m.has['N'] {
			return append(append(dst, "NF"...), s.appendReturnLine(m, key)...)
		}
		ttl, _ := m.num('N')
		init := "0"
		if m.has['J'] {
			init = string(m.arg['J'])
		}
		it = &item{key: string(key), value: []byte(init), exp: s.expiry(ttl)}
		if err := s.put(it); err != nil {
			return errLine(dst, err)
		}
	} else {
		if m.has['C'] && strconv.FormatUint(it.cas, 10) != string(m.arg['C']) {
			return append(append(dst, "EX"...), s.appendReturnLine(m, key)...)
		}
		if _, err := s.arith(it, incr, delta); err != nil {
			return errLine(dst, err)
		}
	}
	if m.has['T'] {
		ttl, _ := m.num('T')
		it.exp = s.expiry(ttl)
	}
	if m.has['v'] {
		v := trimSpaces(it.value)
		dst = strconv.AppendInt(append(dst, "VA "...), int64(len(v)), 10)
		dst = s.appendReturn(dst, m, key, it)
		return append(append(append(dst, "\r\n"...), v...), "\r\n"...)
	}
	if m.has['q'] {
		return dst
	}
	dst = append(dst, "HD"...)
	return append(s.appendReturn(dst, m, key, it), "\r\n"...)
}

func (s *Store) appendReturnLine(m *metaFlags, key []byte) []byte {
	return append(s.appendReturn(nil, m, key, nil), "\r\n"...)
}
