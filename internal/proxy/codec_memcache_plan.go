package proxy

import (
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
//	md KEY q ... mn          replay owed deletes, quietly
//
// A key that memcached's text protocol cannot carry as a token (a meta
// command's binary key, sent base64 with b) goes base64 with b.

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
	switch s := rep.resp.Status(); string(s) {
	case "STORED", "DELETED", "TOUCHED", "HD", "VA":
		return true
	default:
		return isNumber(s) // incr and decr
	}
}

// warmFlags are the flags of a client's mg kept in its warm-up read: those
// that only shape the reply. The others (N, T, E, R, I, q) would change the
// previous server's item, or are the proxy's.
const warmFlags = "bkOshlvftc"

func (r *mcRequest) appendWarmRead(dst []byte, i int, rp reply) []byte {
	rep := rp.(*mcReply)
	rep.cmd, rep.maxItems = memcache.CmdMetaGet, 0
	if r.Command != memcache.CmdMetaGet {
		return appendMeta(dst, "mg", r.Keys[i], " v f t c")
	}
	dst = append(append(dst, "mg "...), r.Keys[0]...)
	for _, f := range r.MetaFlags {
		if bytes.IndexByte([]byte(warmFlags), f[0]) >= 0 {
			dst = append(append(dst, ' '), f...)
		}
	}
	for _, f := range []byte("vftc") {
		if !r.HasMetaFlag(f) {
			dst = append(dst, ' ', f)
		}
	}
	return append(dst, "\r\n"...)
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

// appendMeta appends "CMD KEY<rest>\r\n", the key base64 with b if it cannot
// be a token; rest starts with a space.
func appendMeta(dst []byte, cmd string, key []byte, rest string) []byte {
	dst = append(append(dst, cmd...), ' ')
	if len(key) <= memcache.MaxKeyLen && plainToken(key) {
		dst = append(dst, key...)
	} else {
		dst = base64.StdEncoding.AppendEncode(dst, key)
		dst = append(dst, " b"...)
	}
	return append(append(dst, rest...), "\r\n"...)
}

func (c *memcacheCodec) appendItemRead(dst []byte, key []byte, rp reply) []byte {
	rep := rp.(*mcReply)
	rep.cmd, rep.maxItems = memcache.CmdMetaGet, 0
	return appendMeta(dst, "mg", key, " v f t c")
}

func (c *memcacheCodec) readItem(rp reply, it *item) bool {
	rep := rp.(*mcReply)
	if rep.cmd != memcache.CmdMetaGet || string(rep.resp.Status()) != "VA" {
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

func (c *memcacheCodec) appendStore(dst []byte, key []byte, it *item, add bool, rp reply) []byte {
	rep := rp.(*mcReply)
	rep.cmd, rep.maxItems = memcache.CmdMetaSet, 0
	rest := make([]byte, 0, 64)
	rest = append(rest, ' ')
	rest = strconv.AppendInt(rest, int64(len(it.value)), 10)
	rest = append(rest, " F"...)
	rest = strconv.AppendUint(rest, uint64(it.flags), 10)
	rest = append(rest, " T"...)
	rest = strconv.AppendInt(rest, it.exptime, 10)
	rest = append(rest, " c"...)
	if add {
		rest = append(rest, " ME"...)
	}
	dst = appendMeta(dst, "ms", key, string(rest))
	return append(append(dst, it.value...), "\r\n"...)
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

func (c *memcacheCodec) appendDelete(dst []byte, key []byte, cas uint64, rp reply) []byte {
	rep := rp.(*mcReply)
	rep.cmd, rep.maxItems = memcache.CmdMetaDelete, 0
	if cas == 0 {
		return appendMeta(dst, "md", key, "")
	}
	return appendMeta(dst, "md", key, " C"+strconv.FormatUint(cas, 10))
}

func (c *memcacheCodec) deleted(rp reply) bool {
	return string(rp.(*mcReply).resp.Status()) == "HD"
}

// forget deletes keys quietly (md q, which memcached answers only with an
// error) and ends with mn, whose MN says every delete before it was done.
func (c *memcacheCodec) forget(rw io.ReadWriter, keys [][]byte, flush bool) error {
	var out []byte
	if flush {
		out = append(out, "flush_all\r\n"...)
	}
	for _, k := range keys {
		out = appendMeta(out, "md", k, " q")
	}
	out = append(out, "mn\r\n"...)
	if _, err := rw.Write(out); err != nil {
		return err
	}
	r := memcache.NewReaderSize(rw, memcache.Limits{}, 4<<10)
	var resp memcache.Response
	if flush {
		if err := r.ReadResponse(&resp, memcache.CmdMetaNoop, 0); err != nil {
			return err
		}
		if string(resp.Line) != "OK" {
			return fmt.Errorf("flush_all: %q", resp.Line)
		}
	}
	for {
		if err := r.ReadResponse(&resp, memcache.CmdMetaNoop, 0); err != nil {
			return err
		}
		switch s := string(resp.Status()); {
		case s == "MN":
			return nil
		case s == "HD" || s == "NF":
			// Quiet mode leaves these out; a server that sends them is
			// still right.
		default:
			return errors.New("md: " + strconv.Quote(string(resp.Line)))
		}
	}
}
