package compat

import (
	"encoding/binary"
	"hash/crc32"
	"strings"

	"github.com/chash-dev/chash"
)

// NginxPoints is the points per unit of weight of nginx's consistent hash.
const NginxPoints = 160

// Nginx is nginx's "hash KEY consistent" upstream balancer
// (src/http/modules/ngx_http_upstream_hash_module.c, ngx_http_upstream_init_chash,
// ngx_http_upstream_find_chash_point), byte-compatible with Perl's
// Cache::Memcached::Fast.
//
// Node names are the text of each upstream "server" directive, such as
// "10.0.0.1:8080" or "backend.example.com:80" (never the resolved address). Set
// each Node's Order to the server's index in the upstream block: nginx sorts points
// with a stable sort and removes duplicate positions keeping the first, so the
// server listed first owns a shared position, which is what the ring's lower-bound
// search over equal positions ordered by Order gives.
//
// The name is split into host and port: a "unix:" prefix (any case) leaves the rest as host
// and an empty port; otherwise, when only digits follow the last ':', they are the
// port and what precedes is the host, else the whole name is the host. A server of
// weight w owns 160·w points (not normalised by the total, unlike ketama): point 0
// is the CRC-32 of host, a zero byte, port and four zero bytes; point j is the
// CRC-32 of host, a zero byte, port and point j-1 as 4 little-endian bytes. Keys
// are hashed with CRC-32/IEEE and belong to the first point at or after their hash,
// wrapping to the first point.
//
// Differences from nginx, none of which offline routing can copy: an empty key and
// an upstream of one server are balanced round robin; a server that is down, failed
// or at max_conns passes the key to the next point's server (up to 20 tries, then
// round robin); backup servers own no points; a host name that resolves to several
// addresses makes several peers sharing one name's points.
//
// The zero value is ready to use.
type Nginx struct{}

// NumPoints returns 160·weight.
func (Nginx) NumPoints(weight, total, n int) int { return chash.MulPoints(NginxPoints, weight) }

// AppendPoints appends points from..to-1 of the server called name. Each point
// depends on the previous one, so the chain is walked from point 0.
func (Nginx) AppendPoints(dst []uint32, name string, from, to int) []uint32 {
	host, port := nginxSplit(name)
	base := crc32.Update(0, crc32.IEEETable, []byte(host))
	base = crc32.Update(base, crc32.IEEETable, []byte{0})
	base = crc32.Update(base, crc32.IEEETable, []byte(port))
	var prev [4]byte
	for j := 0; j < to; j++ {
		h := crc32.Update(base, crc32.IEEETable, prev[:])
		binary.LittleEndian.PutUint32(prev[:], h)
		if j >= from {
			dst = append(dst, h)
		}
	}
	return dst
}

// Hash returns the CRC-32/IEEE of key, nginx's ngx_crc32_long.
func (Nginx) Hash(key []byte) uint32 { return crc32.ChecksumIEEE(key) }

// nginxSplit splits a server's text into the host and port that nginx hashes.
func nginxSplit(name string) (host, port string) {
	if len(name) >= 5 && strings.EqualFold(name[:5], "unix:") {
		return name[5:], ""
	}
	i := strings.LastIndexByte(name, ':')
	if i < 0 {
		return name, ""
	}
	for _, c := range name[i+1:] {
		if c < '0' || c > '9' {
			return name, ""
		}
	}
	return name[:i], name[i+1:]
}
