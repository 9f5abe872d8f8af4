package proxy

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/chash-dev/chash/internal/memcache"
)

// What the memcache codec adds for replicas, warm-up and owed deletes
// (replica.go, warmup.go, owed.go): the access of each command, and the meta
// commands the proxy sends on its own to read, store and delete items:
//
//	mg KEY v f t c           read an item with its flags, time to live and cas
//	ms KEY LEN F T c [ME]    store it (ME: as an add), asking for its new cas
//	md KEY [C]               delete it (C: only if its cas is still that one)
//	md KEY q, mn             replay an owed delete, quietly
//
// A key that memcached's text protocol cannot carry as a token (a meta
// command's binary key, sent base64 with b) goes base64 with b. Each is a
// memcache.Request held to memcache.Validate before it is sent, as the
// clients' requests are, and its reply is read with memcache.ReadReply
// against it.

var (
	_ itemCodec   = (*memcacheCodec)(nil)
	_ planRequest = (*mcRequest)(nil)
)

func (r *mcRequest) access() access {
	switch r.Command {
	case memcache.CmdGet, memcache.CmdGets, memcache.CmdGat, memcache.CmdGats, memcache.CmdMetaGet:
		return accessRead
	case memcache.CmdSet, memcache.CmdTouch:
		return accessWrite
	case memcache.CmdDelete:
		return accessDelete
	case memcache.CmdAdd, memcache.CmdReplace, memcache.CmdAppend, memcache.CmdPrepend, memcache.CmdCas,
		memcache.CmdIncr, memcache.CmdDecr, memcache.CmdMetaArithmetic:
		return accessCond
	case memcache.CmdMetaSet:
		// A set, unless a mode other than set or a cas makes it depend on
		// what is stored.
		for _, f := range r.MetaFlags {
			if f[0] == 'C' || f[0] == 'M' && len(f) > 1 && f[1] != 'S' && f[1] != 's' {
				return accessCond
			}
		}
		return accessWrite
	case memcache.CmdMetaDelete:
		if r.HasMetaFlag('C') {
			return accessCond
		}
		return accessDelete
	}
	return accessNone
}

func (r *mcRequest) needsItem() bool {
	return r.Command == memcache.CmdTouch || r.access() == accessCond
}

func (r *mcRequest) keepsCas() bool { return r.Command == memcache.CmdTouch }

func (r *mcRequest) cas() (uint64, bool) {
	if r.Command == memcache.CmdCas {
		return r.Cas, true
	}
	if !r.Command.IsMeta() {
		return 0, false
	}
	t, ok := r.MetaFlag('C')
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(string(t), 10, 64)
	return n, err == nil
}

func (r *mcRequest) setCas(cas uint64) {
	if r.Command == memcache.CmdCas {
		r.Cas = cas
		return
	}
	for i, t := range r.MetaFlags {
		if t[0] == 'C' {
			r.MetaFlags[i] = strconv.AppendUint(append(r.casTok[:0], 'C'), cas, 10)
			return
		}
	}
}

func (r *mcRequest) hits(hit []bool, keyCall []int, part int, rp reply) {
	rep := rp.(*mcReply)
	if memcache.IsError(rep.resp.Line) {
		return
	}
	if r.Command == memcache.CmdMetaGet {
		s := rep.resp.Status()
		hit[0] = string(s) == "VA" || string(s) == "HD"
		return
	}
	if keyCall == nil {
		hit[0] = len(rep.resp.Items) > 0
		return
	}
	items := rep.resp.Items
	j := 0
	for i, k := range r.Keys {
		if keyCall[i] == part && j < len(items) && bytes.Equal(items[j].Key, k) {
			hit[i] = true
			j++
		}
	}
}

// failed reports a SERVER_ERROR: out of memory, an object too large for
// this server, .... ERROR and CLIENT_ERROR refuse the request itself, as
// every replica would, and change nothing.
func (r *mcRequest) failed(rp reply) bool {
	return bytes.HasPrefix(rp.(*mcReply).resp.Line, []byte("SERVER_ERROR "))
}

func (r *mcRequest) refused(rp reply) bool {
	line := rp.(*mcReply).resp.Line
	return memcache.IsError(line) && !bytes.HasPrefix(line, []byte("SERVER_ERROR "))
}

func (r *mcRequest) changed(rp reply) bool {
	rep := rp.(*mcReply)
	if rep.resp.Quiet {
		// q hid the reply: ms and ma hide only a success; md hides NF too,
		// and then the others only lose what the first does not hold.
		return true
	}
	switch s := rep.resp.Status(); string(s) {
	case "STORED", "DELETED", "TOUCHED", "HD", "VA":
		return true
	default:
		return len(s) > 0 && len(bytes.Trim(s, "0123456789")) == 0 // incr and decr
	}
}

// warmFlags are the flags of a client's mg kept in its warm-up read: those
// that only shape the reply. The others (N, T, E, R, I, q) would change the
// previous server's item, or are the proxy's.
const warmFlags = "bkOshlvftc"

func (r *mcRequest) appendWarmRead(dst []byte, i int, rp reply) ([]byte, error) {
	rep := rp.(*mcReply)
	if r.Command != memcache.CmdMetaGet {
		return appendBuilt(dst, rep, memcache.CmdMetaGet, r.RouteKey(i), []byte(" v f t c"), nil)
	}
	// The client's mg, its key as sent (base64 with its b), with the flags
	// that shape the reply and those readItem needs.
	p := rep.reset()
	b := append(rep.built[:0], r.Keys[0]...)
	for _, f := range r.MetaFlags {
		if bytes.IndexByte([]byte(warmFlags), f[0]) >= 0 {
			b = append(append(b, ' '), f...)
		}
	}
	for _, f := range []byte("vftc") {
		if !r.HasMetaFlag(f) {
			b = append(b, ' ', f)
		}
	}
	rep.built = b
	p.Command = memcache.CmdMetaGet
	p.Keys = append(p.Keys, b[:len(r.Keys[0])])
	p.MetaFlags = appendTokens(p.MetaFlags, b[len(r.Keys[0]):])
	return rep.appendPart(dst)
}

// endLine is the last line of a retrieval's reply.
var endLine = []byte("END")

func (r *mcRequest) adopt(rp reply, i int, it *item) {
	rep := rp.(*mcReply)
	switch r.Command {
	case memcache.CmdMetaGet:
		if e, ok := metaInt(r.MetaFlags, 'T'); ok {
			it.exptime = e
		}
		rep.line = adoptMetaLine(rep.line[:0], rep.resp.Line, r.MetaFlags)
		rep.resp.Line = rep.line
		return
	case memcache.CmdGat, memcache.CmdGats:
		it.exptime = r.Exptime
	}
	cas := r.Command == memcache.CmdGets || r.Command == memcache.CmdGats
	rep.resp.Items = append(rep.resp.Items[:0], memcache.Item{Key: r.Keys[i], Flags: it.flags,
		Cas: it.cas, HasCas: cas, Value: rep.resp.Value})
	rep.resp.Line = endLine
}

// adoptMetaLine appends to dst the line of a client's mg with flags, from
// line, the reply to its warm-up read: "VA size" if the client asked for the
// value, else "HD", then the returned flags the client asked for, in order.
func adoptMetaLine(dst, line []byte, flags [][]byte) []byte {
	asked := func(f byte) bool {
		for _, t := range flags {
			if t[0] == f {
				return true
			}
		}
		return false
	}
	toks := bytes.Fields(line)
	if len(toks) == 0 {
		return append(dst, line...)
	}
	rest := toks[1:]
	if string(toks[0]) == "VA" && len(rest) > 0 {
		if asked('v') {
			dst = append(append(dst, "VA "...), rest[0]...)
		} else {
			dst = append(dst, "HD"...)
		}
		rest = rest[1:]
	} else {
		dst = append(dst, toks[0]...)
	}
	for _, t := range rest {
		if len(t) > 0 && asked(t[0]) {
			dst = append(append(dst, ' '), t...)
		}
	}
	return dst
}

// metaInt returns the number of the meta flag f, such as T30's 30.
func metaInt(flags [][]byte, f byte) (int64, bool) {
	for _, t := range flags {
		if t[0] == f {
			n, err := strconv.ParseInt(string(t[1:]), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// reset readies rep for a request the proxy builds in code, rep.part, and
// returns it, reset.
func (rep *mcReply) reset() *memcache.Request {
	p := &rep.part
	p.Reset()
	p.Value = nil // the item's value, which the request does not own
	return p
}

// appendBuilt makes rep.part the meta request cmd of key, base64 with b if it
// cannot be a token, with the flags (tokens, each after a space) and value,
// and appends it: see appendPart.
func appendBuilt(dst []byte, rep *mcReply, cmd memcache.Command, key, flags, value []byte) ([]byte, error) {
	p := rep.reset()
	b := rep.built[:0]
	plain := len(key) <= memcache.MaxKeyLen && isToken(key)
	if plain {
		b = append(b, key...)
	} else {
		b = base64.StdEncoding.AppendEncode(b, key)
	}
	n := len(b)
	if !plain {
		b = append(b, " b"...)
	}
	b = append(b, flags...)
	rep.built = b
	p.Command, p.Value = cmd, value
	p.Keys = append(p.Keys, b[:n])
	p.MetaFlags = appendTokens(p.MetaFlags, b[n:])
	return rep.appendPart(dst)
}

// appendPart appends rep.part, a request the proxy built, and makes it the
// request rep's reply is read against (memcache.ReadReply). The request is
// first held to memcache.Validate, as the clients' requests are (forServer):
// one that fails is not appended, and the error says why.
func (rep *mcReply) appendPart(dst []byte) ([]byte, error) {
	if err := rep.part.Validate(); err != nil {
		return dst, fmt.Errorf("proxy: a %s the proxy built: %w", rep.part.Command, err)
	}
	rep.req = &rep.part
	return memcache.AppendRequest(dst, &rep.part), nil
}

// appendTokens appends the tokens of b, separated by spaces, to dst.
func appendTokens(dst [][]byte, b []byte) [][]byte {
	for len(b) > 0 {
		i := bytes.IndexByte(b, ' ')
		if i < 0 {
			return append(dst, b)
		}
		if i > 0 {
			dst = append(dst, b[:i])
		}
		b = b[i+1:]
	}
	return dst
}

// isToken reports whether key can be sent as a token: bytes that are
// neither spaces nor control characters.
func isToken(key []byte) bool {
	for _, c := range key {
		if c <= ' ' || c == 0x7f {
			return false
		}
	}
	return len(key) > 0
}

func (c *memcacheCodec) appendItemRead(dst []byte, key []byte, rp reply) ([]byte, error) {
	return appendBuilt(dst, rp.(*mcReply), memcache.CmdMetaGet, key, []byte(" v f t c"), nil)
}

func (c *memcacheCodec) readItem(rp reply, it *item) bool {
	rep := rp.(*mcReply)
	if rep.req == nil || rep.req.Command != memcache.CmdMetaGet || string(rep.resp.Status()) != "VA" {
		return false
	}
	it.value = append(it.value[:0], rep.resp.Value...)
	it.flags, it.exptime, it.cas = 0, 0, 0
	toks := bytes.Fields(rep.resp.Line)
	for _, t := range toks[min(2, len(toks)):] {
		n, err := strconv.ParseInt(string(t[1:]), 10, 64)
		if err != nil {
			continue
		}
		switch t[0] {
		case 'f':
			it.flags = uint32(n)
		case 't':
			// -1: no expiry, which an exptime of 0 sets; 0: less than a
			// second left.
			switch {
			case n < 0:
				it.exptime = 0
			case n == 0:
				it.exptime = 1
			default:
				it.exptime = n
			}
		case 'c':
			it.cas = uint64(n)
		}
	}
	return true
}

func (c *memcacheCodec) appendStore(dst []byte, key []byte, it *item, add bool, rp reply) ([]byte, error) {
	var buf [64]byte
	fl := append(buf[:0], " F"...)
	fl = strconv.AppendUint(fl, uint64(it.flags), 10)
	fl = append(fl, " T"...)
	fl = strconv.AppendInt(fl, it.exptime, 10)
	fl = append(fl, " c"...)
	if add {
		fl = append(fl, " ME"...)
	}
	return appendBuilt(dst, rp.(*mcReply), memcache.CmdMetaSet, key, fl, it.value)
}

func (c *memcacheCodec) stored(rp reply) (uint64, bool) {
	rep := rp.(*mcReply)
	if string(rep.resp.Status()) != "HD" {
		return 0, false
	}
	for _, t := range bytes.Fields(rep.resp.Line)[1:] {
		if t[0] == 'c' {
			n, err := strconv.ParseUint(string(t[1:]), 10, 64)
			return n, err == nil
		}
	}
	return 0, true
}

func (c *memcacheCodec) held(rp reply) bool {
	return string(rp.(*mcReply).resp.Status()) == "NS"
}

func (c *memcacheCodec) appendDelete(dst []byte, key []byte, cas uint64, rp reply) ([]byte, error) {
	var buf [24]byte
	fl := buf[:0]
	if cas != 0 {
		fl = strconv.AppendUint(append(fl, " C"...), cas, 10)
	}
	return appendBuilt(dst, rp.(*mcReply), memcache.CmdMetaDelete, key, fl, nil)
}

func (c *memcacheCodec) deleted(rp reply) bool {
	return string(rp.(*mcReply).resp.Status()) == "HD"
}

// forget deletes keys quietly, each with md q followed by mn: memcached
// answers md q only with an error, and the MN after it says the delete was
// done. flush_all, which the memcache package does not know, goes first, on
// its own, and its one line of reply is read here.
func (c *memcacheCodec) forget(rw io.ReadWriter, keys [][]byte, flush bool) error {
	br := bufio.NewReaderSize(rw, 4<<10)
	if flush {
		if _, err := io.WriteString(rw, "flush_all\r\n"); err != nil {
			return err
		}
		line, err := br.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("flush_all: %w", err)
		}
		if string(line) != "OK\r\n" {
			return fmt.Errorf("flush_all: %q", line)
		}
	}
	var rep mcReply
	var out []byte
	for _, k := range keys {
		var err error
		if out, err = appendBuilt(out, &rep, memcache.CmdMetaDelete, k, []byte(" q"), nil); err != nil {
			return err
		}
		out = append(out, "mn\r\n"...)
	}
	if _, err := rw.Write(out); err != nil {
		return err
	}
	r := memcache.NewReaderSize(br, memcache.Limits{}, 4<<10)
	var resp memcache.Response
	for _, k := range keys {
		// The request of k again, to read its reply against.
		if _, err := appendBuilt(out[:0], &rep, memcache.CmdMetaDelete, k, []byte(" q"), nil); err != nil {
			return err
		}
		if err := r.ReadReply(&resp, rep.req); err != nil {
			return err
		}
		if s := string(resp.Status()); !resp.Quiet && s != "HD" && s != "NF" {
			// Quiet mode leaves HD and NF out; a server that sends them is
			// still right.
			return errors.New("md: " + strconv.Quote(string(resp.Line)))
		}
	}
	return nil
}
