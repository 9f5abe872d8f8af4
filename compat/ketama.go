package compat

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"math"
	"strconv"

	"github.com/chash-dev/chash/hashfn"
)

// Ketama is twemproxy's (nutcracker's) "distribution: ketama", its default: the
// ring of src/hashkit/nc_ketama.c (ketama_update, ketama_dispatch) with the key
// handling of src/nc_server.c (server_pool_idx, server_pool_hash).
//
// Node names are the strings twemproxy hashes for a server: its alias when the
// server line has one, else the host alone when the port is 11211, else host:port as
// written; TwemproxyName computes them. Set each Node's Order to len(Name):
// twemproxy sorts a pool's servers by name, shorter names first, then bytewise
// (nc_conf.c, conf_validate_server), and sorts the points with glibc's qsort, a
// stable merge sort, so on a tie between two servers' points the server first in
// that order wins; the ring orders nodes by Order, then Name, which is the same
// order. The order of the server lines in the config does not matter.
//
// A server of weight w in a ring of n servers of total weight t owns
// floor(w/t·40·n)·4 points, computed in float32 as twemproxy does (see
// KetamaPoints), four per label "NAME-i" (i = 0, 1, ...): bytes 4a..4a+3 of the
// label's MD5, read little-endian, for a = 0..3. The points are MD5 whatever
// KeyHash is; only keys are hashed with KeyHash. A key belongs to the first point at
// or after its hash, wrapping to the first point; a ring of one server routes every
// key to it.
//
// Quirks kept on purpose:
//   - Weights are normalised: the ring has about 160·n points in all whatever the
//     weights, and float32 rounding can cost a server 4 points: with 25, 47 or 50
//     servers of equal weight each owns 156 (see KetamaPoints).
//   - The empty key (or an empty hash tag) hashes to 0, whatever KeyHash says.
//   - Labels are cut to their first 272 bytes (KetamaMaxLabel), as nutcracker
//     0.5.0 formats them into a fixed buffer: a name of 270 bytes gets labels that
//     coincide once cut ("NAME-1" for i = 10..19), and from 271 bytes all its
//     labels are alike, leaving 4 distinct points, not 160. (Measured against the
//     Debian package; upstream master's 86-byte KETAMA_MAX_HOSTLEN does not match
//     it.)
//
// The zero value is twemproxy's default pool (hash: fnv1a_64, no hash_tag). With
// KeyHash hashfn.MD5 it is also libmemcached's KETAMA_WEIGHTED ring.
type Ketama struct {
	// KeyHash hashes keys (twemproxy's "hash:"). If nil, it defaults to
	// hashfn.FNV1a_64, twemproxy's default.
	KeyHash hashfn.Func
	// HashTag is twemproxy's "hash_tag": two bytes, such as "{}". When a key holds
	// HashTag[0] and, after it, HashTag[1] with at least one byte between them, only
	// the bytes between the first such pair are hashed ("{user1}:a" hashes "user1",
	// "{}x" hashes "{}x"). If empty, the whole key is hashed; twemproxy accepts no
	// other length, and Ketama treats any other length as empty.
	HashTag string
}

// KetamaMaxLabel is the length to which Ketama cuts a label "NAME-i" before
// hashing it, as nutcracker 0.5.0 does.
const KetamaMaxLabel = 272

// KetamaPointsPerServer is the points a server of average weight owns in
// twemproxy's and libmemcached's weighted ketama rings: 40 labels of 4 points.
const KetamaPointsPerServer = 160

// NumPoints returns KetamaPoints(weight, total, n).
func (k Ketama) NumPoints(weight, total, n int) int { return KetamaPoints(weight, total, n) }

// AppendPoints appends points from..to-1 of name: point j is word j%4 of the MD5 of
// label "name-(j/4)".
func (k Ketama) AppendPoints(dst []uint32, name string, from, to int) []uint32 {
	return appendKetamaPoints(dst, name, "-", from, to, KetamaMaxLabel)
}

// Hash returns the ring position of key: its hash tag (if any) hashed with KeyHash,
// or 0 for an empty key.
func (k Ketama) Hash(key []byte) uint32 {
	return twemproxyHash(k.KeyHash, k.HashTag, key)
}

// twemproxyHash is server_pool_idx's key hashing (src/nc_server.c): the hash tag,
// then 0 for an empty key, else the pool's key hash (default fnv1a_64).
func twemproxyHash(h hashfn.Func, tag string, key []byte) uint32 {
	key = HashTagged(key, tag)
	if len(key) == 0 {
		return 0
	}
	if h == nil {
		return hashfn.FNV1a_64(key)
	}
	return h(key)
}

// HashTagged returns the part of key that twemproxy hashes under hash_tag tag: the
// bytes after the first tag[0] and before the first tag[1] that follows it, if both
// exist with at least one byte between them; otherwise the whole key. A tag whose
// length is not 2 returns the whole key.
func HashTagged(key []byte, tag string) []byte {
	if len(tag) != 2 {
		return key
	}
	i := bytes.IndexByte(key, tag[0])
	if i < 0 {
		return key
	}
	j := bytes.IndexByte(key[i+1:], tag[1])
	if j <= 0 {
		return key
	}
	return key[i+1 : i+1+j]
}

// KetamaPoints returns the points a server of weight w owns in a weighted ketama
// ring of n servers whose weights sum to total, as twemproxy (nc_ketama.c),
// libmemcached's weighted continuum (hosts.cc) and spymemcached's weighted
// KetamaNodeLocator compute it:
//
//	pct = (float)w / (float)total
//	floorf((float)(pct * 160 / 4 * (float)n + 0.0000000001)) * 4
//
// Each step is rounded to float32 (as C and Java evaluate it on x86-64), so the
// result can fall 4 short of the exact floor(w/total·40·n)·4; the tiny addend is
// lost in the rounding and kept here only to mirror the programs.
func KetamaPoints(w, total, n int) int {
	if w <= 0 || total <= 0 || n <= 0 {
		return 0
	}
	// Explicit float32 conversions forbid fusing and extra precision: every
	// intermediate is rounded as the C and Java programs round it.
	pct := float32(w) / float32(total)
	v := float32(pct * 160)
	v = float32(v / 4)
	v = float32(v * float32(n))
	v = float32(float64(v) + 0.0000000001)
	return int(math.Floor(float64(v))) * 4
}

// appendKetamaPoints appends points from..to-1 of a libketama-style sequence:
// point j is word j%4 of MD5(name + sep + itoa(j/4)), read little-endian, the label
// cut to maxLabel bytes if maxLabel > 0.
func appendKetamaPoints(dst []uint32, name, sep string, from, to, maxLabel int) []uint32 {
	if from >= to {
		return dst
	}
	label := make([]byte, 0, len(name)+len(sep)+8)
	var words [4]uint32
	for j := from; j < to; {
		i := j / 4
		label = append(append(label[:0], name...), sep...)
		label = strconv.AppendInt(label, int64(i), 10)
		if maxLabel > 0 && len(label) > maxLabel {
			label = label[:maxLabel]
		}
		ketamaWords(words[:0], label)
		for a := j % 4; a < 4 && j < to; a++ {
			dst = append(dst, words[a])
			j++
		}
	}
	return dst
}

// TwemproxyName returns the name twemproxy hashes for the server line
// "host:port:weight [alias]" (src/nc_conf.c, conf_add_server): alias if it is not
// empty; else host alone when port is 11211 ("to maintain backward compatibility
// with libmemcached"); else host + ":" + port, both as written in the config. port
// is compared as a number, so "011211" counts as 11211. libmemcached's continuum
// names servers the same way (without aliases).
func TwemproxyName(host, port, alias string) string {
	if alias != "" {
		return alias
	}
	if p, err := strconv.Atoi(port); err == nil && p == 11211 {
		return host
	}
	return host + ":" + port
}

// ketamaWords appends to dst the four ring points that ketama derives from one
// label (twemproxy's nc_ketama.c, ketama_hash with alignment 0..3; libmemcached's
// weighted continuum does the same): for a = 0..3, bytes 4a..4a+3 of MD5(label)
// read little-endian. The first of them is hashfn.MD5(label). It allocates
// nothing when dst has room for four more points.
func ketamaWords(dst []uint32, label []byte) []uint32 {
	d := md5.Sum(label)
	return append(dst,
		binary.LittleEndian.Uint32(d[0:4]),
		binary.LittleEndian.Uint32(d[4:8]),
		binary.LittleEndian.Uint32(d[8:12]),
		binary.LittleEndian.Uint32(d[12:16]),
	)
}
