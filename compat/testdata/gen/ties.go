package main

import (
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"net"
	"strconv"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/compat"
	"github.com/chash-dev/chash/compat/internal/live"
)

// The tie cases: two servers, found by search, whose rings share a point, and keys
// chosen to land on that point's arc, so that the program's rule for shared points
// decides them. Each program has its own rule (twemproxy: the server whose name is
// shorter, then sorts first; nginx and hashring: the server listed first;
// spymemcached: the server listed last), and the golden test requires ours to agree.

// collision returns a name from as and one from bs whose first n points (by pts)
// share a position, and that position.
func collision(as, bs []string, n int, pts func(name string, n int) []uint32) (a, b string, p uint32, ok bool) {
	owner := map[uint32]string{}
	for _, a := range as {
		for _, p := range pts(a, n) {
			owner[p] = a
		}
	}
	for _, b := range bs {
		for _, p := range pts(b, n) {
			if a, hit := owner[p]; hit {
				return a, b, p, true
			}
		}
	}
	return "", "", 0, false
}

// arc returns the position of the point before p on the ring of servers.
func arc(s chash.Scheme, names []string, p uint32) uint32 {
	nodes := make([]chash.Node, len(names))
	for i, n := range names {
		nodes[i] = chash.Node{Name: n, Weight: 1}
	}
	r, err := chash.New(s, nodes)
	if err != nil {
		panic(err)
	}
	for i := range r.NumPoints() {
		if q, _ := r.Point(i); q == p {
			if i == 0 {
				last, _ := r.Point(r.NumPoints() - 1)
				return last
			}
			prev, _ := r.Point(i - 1)
			return prev
		}
	}
	panic("point not on ring")
}

// forgeCRC returns a key, valid for memcached and HTTP headers, whose CRC-32/IEEE
// is target: a random prefix and four bytes that steer the CRC (CRC-32 is linear).
func forgeCRC(r *rand.Rand, target uint32) []byte {
	tab := crc32.IEEETable
	var inv [256]byte
	for i := range 256 {
		inv[tab[i]>>24] = byte(i)
	}
	for {
		prefix := fmt.Appendf(nil, "tie-%d-", r.IntN(1e9))
		var idx [4]byte
		x := ^target
		for k := 3; k >= 0; k-- {
			idx[k] = inv[x>>24]
			x = (x ^ tab[idx[k]]) << 8
		}
		reg := ^crc32.ChecksumIEEE(prefix)
		key := prefix
		valid := true
		for k := range 4 {
			b := byte(reg) ^ idx[k]
			key = append(key, b)
			reg = tab[byte(reg)^b] ^ reg>>8
			if b <= ' ' || b == 0x7f {
				valid = false
			}
		}
		if valid && crc32.ChecksumIEEE(key) == target {
			return key
		}
	}
}

// arcKeys returns n keys whose hash h (by hash) falls in (prev, p]; it draws random
// keys until enough do.
func arcKeys(r *rand.Rand, hash func([]byte) uint32, prev, p uint32, n int) [][]byte {
	in := func(h uint32) bool {
		if prev < p {
			return prev < h && h <= p
		}
		return h > prev || h <= p
	}
	var keys [][]byte
	for len(keys) < n {
		k := fmt.Appendf(nil, "arc-%d", r.Uint64())
		if in(hash(k)) {
			keys = append(keys, k)
		}
	}
	return keys
}

// tieAddrs returns n "ip:port" names on distinct loopback addresses
// 127.<block>.x.y, all with port free.
func tieAddrs(block, n, port int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		ip := fmt.Sprintf("127.%d.%d.%d", block, i/250, 1+i%250)
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			continue
		}
		l.Close()
		out = append(out, net.JoinHostPort(ip, strconv.Itoa(port)))
	}
	return out
}

func serverOf(addr string) live.Server {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return live.Server{Host: host, Port: p, Weight: 1}
}

func ketamaPts(name string, n int) []uint32 { return compat.Ketama{}.AppendPoints(nil, name, 0, n) }
func nginxPts(name string, n int) []uint32  { return compat.Nginx{}.AppendPoints(nil, name, 0, n) }
func libketamaPts(name string, n int) []uint32 {
	return compat.Libketama{}.AppendPoints(nil, name, 0, n)
}

// tieCases returns the tie cases with their keys fixed (fixedKeys set).
func tieCases(r *rand.Rand, port int, nutcracker, ngx, hr, spy runFunc) []*goldenCase {
	var cs []*goldenCase

	// twemproxy: aliases of different lengths, the longer listed first; keys
	// hashed with crc32a so that they can be forged onto the shared point.
	var longs, shorts []string
	for i := range 3000 {
		longs = append(longs, fmt.Sprintf("long-alias-%d", i))
		shorts = append(shorts, fmt.Sprintf("s%d", i))
	}
	if a, b, p, ok := collision(longs, shorts, compat.KetamaPointsPerServer, ketamaPts); ok {
		srv := []live.Server{serverOf(tieAddrs(31, 1, port)[0]), serverOf(tieAddrs(32, 1, port)[0])}
		srv[0].Alias, srv[1].Alias = a, b
		prev := arc(compat.Ketama{}, []string{a, b}, p)
		keys := [][]byte{forgeCRC(r, p), forgeCRC(r, p-1), forgeCRC(r, prev+1)}
		keys = append(keys, arcKeys(r, crc32.ChecksumIEEE, prev, p, 20)...)
		cs = append(cs, &goldenCase{file: "twemproxy-ketama-tie", distribution: "ketama", hash: "crc32a",
			title:   fmt.Sprintf("twemproxy ketama, hash crc32a: aliases %q (listed first) and %q share point %#x; keys on its arc go to the shorter name", a, b, p),
			servers: srv, run: nutcracker, fixedKeys: keys})
	}

	// nginx, hashring, spymemcached: addresses whose points coincide.
	as, bs := tieAddrs(41, 600, port), tieAddrs(42, 600, port)
	if a, b, p, ok := collision(as, bs, compat.NginxPoints, nginxPts); ok {
		prev := arc(compat.Nginx{}, []string{a, b}, p)
		keys := [][]byte{forgeCRC(r, p), forgeCRC(r, p-1), forgeCRC(r, prev+1)}
		keys = append(keys, arcKeys(r, crc32.ChecksumIEEE, prev, p, 20)...)
		for i, order := range [][2]string{{a, b}, {b, a}} {
			cs = append(cs, &goldenCase{file: "nginx-tie-" + []string{"ab", "ba"}[i], distribution: "nginx",
				title:   fmt.Sprintf("nginx hash consistent: %s (listed first) and %s share point %#x", order[0], order[1], p),
				servers: []live.Server{serverOf(order[0]), serverOf(order[1])}, run: ngx, fixedKeys: keys})
		}
	}
	as, bs = tieAddrs(51, 600, port), tieAddrs(52, 600, port)
	if a, b, p, ok := collision(as, bs, compat.KetamaPointsPerServer, libketamaPts); ok {
		prev := arc(compat.Libketama{}, []string{a, b}, p)
		keys := arcKeys(r, compat.Libketama{}.Hash, prev, p, 20)
		srv := []live.Server{serverOf(a), serverOf(b)}
		cs = append(cs,
			&goldenCase{file: "hashring-tie", distribution: "libketama", utf8Only: true,
				title:   fmt.Sprintf("npm hashring: %s (listed first) and %s share point %#x", a, b, p),
				servers: srv, run: hr, fixedKeys: keys},
			&goldenCase{file: "spymemcached-tie", distribution: "spymemcached", utf8Only: true,
				title:   fmt.Sprintf("spymemcached: %s (listed first) and %s share point %#x; the server listed last wins", a, b, p),
				servers: srv, run: spy, fixedKeys: keys})
	}
	return cs
}
