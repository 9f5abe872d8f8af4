package config

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/compat"
	"github.com/chash-dev/chash/hashfn"
)

// The distributions of deployed programs, from package compat. Each routes every
// key as the named program does for the same server list, in the same order.
func init() {
	register("ketama", buildKetama)
	register("modula", buildModula)
	register("random", buildRandom)
	register("libketama", buildLibketama)
	register("spymemcached", buildSpymemcached)
	register("libmemcached", buildLibmemcached)
	register("nginx", buildNginx)
	register("groupcache", buildGroupcache)
	register("stathat", buildStathat)
}

// ErrRandom is the error of every lookup of a pool whose distribution is random.
var ErrRandom = errors.New("distribution random cannot be routed offline: twemproxy sends each request to a server chosen at random, whatever the key; use ketama or modula to route by key")

// buildKetama builds twemproxy's ketama ring (compat.Ketama): servers named by
// alias, else host when the port is 11211, else host:port; keys hashed with the
// pool's Hash, fnv1a_64 by default; ties to the server whose name is shorter, then
// sorts first, as twemproxy sorts its servers by name.
func buildKetama(p *Pool, servers []Server) (Router, error) {
	h, nodes, names, err := fixedNodes(p, servers, DefaultHash, twemproxyName, byNameLength)
	if err != nil {
		return nil, err
	}
	return newNamed(p, compat.Ketama{KeyHash: h}, nodes, names)
}

// buildModula builds twemproxy's modula table (compat.Modula): servers named as
// for ketama, which orders the table.
func buildModula(p *Pool, servers []Server) (Router, error) {
	h, nodes, names, err := fixedNodes(p, servers, DefaultHash, twemproxyName, byNameLength)
	if err != nil {
		return nil, err
	}
	m, err := compat.NewModula(nodes, h, "")
	if err != nil {
		return nil, p.errorAt("servers", err)
	}
	return &named{ring: m, names: names}, nil
}

// buildRandom checks the pool like the other twemproxy distributions and returns
// a Router whose every lookup fails with an error that names the pool and wraps
// ErrRandom: twemproxy picks a server at random per request.
func buildRandom(p *Pool, servers []Server) (Router, error) {
	if _, err := p.keyHash(DefaultHash); err != nil {
		return nil, err
	}
	if err := noPoints(p); err != nil {
		return nil, err
	}
	return randomRouter{p.errorAt("distribution", ErrRandom)}, nil
}

// randomRouter fails every lookup with err, which names the file and pool and
// wraps ErrRandom.
type randomRouter struct{ err error }

func (r randomRouter) Lookup([]byte) (string, error) { return "", r.err }

// buildLibketama builds the ring of npm hashring and uhashring
// (compat.Libketama): servers named host:port as written, floor(w/total·40·n)
// labels in float64, keys hashed with md5 unless the pool's Hash says otherwise,
// ties to the server listed first.
func buildLibketama(p *Pool, servers []Server) (Router, error) {
	h, nodes, names, err := fixedNodes(p, servers, "md5", addrName, firstWins)
	if err != nil {
		return nil, err
	}
	return newNamed(p, compat.Libketama{KeyHash: h}, nodes, names)
}

// buildSpymemcached builds spymemcached's KetamaNodeLocator (compat.Libketama):
// 160 points per server when every weight is 1 (KetamaConnectionFactory without
// weights), the float32 weighted count otherwise; servers named host:port (give
// IP literals: spymemcached names a server given by host name "host/ip:port");
// ties to the server listed last (TreeMap.put).
func buildSpymemcached(p *Pool, servers []Server) (Router, error) {
	h, nodes, names, err := fixedNodes(p, servers, "md5", addrName, lastWins)
	if err != nil {
		return nil, err
	}
	s := compat.Libketama{KeyHash: h, Count: compat.LibketamaFixed}
	for _, sv := range servers {
		if sv.Weight > 1 {
			s.Count = compat.LibketamaFloat32
		}
	}
	return newNamed(p, s, nodes, names)
}

// buildLibmemcached builds libmemcached's ketama continuum (compat.Libmemcached):
// servers named host, or host:port when the port is not 11211; 100 points per
// server hashed with the key hash (one_at_a_time by default) unless a weight is
// above 1, which switches to the weighted MD5 ring as libmemcached does; ties to
// the server listed first.
func buildLibmemcached(p *Pool, servers []Server) (Router, error) {
	h, nodes, names, err := fixedNodes(p, servers, "one_at_a_time", libmemcachedName, firstWins)
	if err != nil {
		return nil, err
	}
	s := compat.Libmemcached{KeyHash: h}
	for _, sv := range servers {
		if sv.Weight > 1 {
			s.Weighted = true
		}
	}
	return newNamed(p, s, nodes, names)
}

// buildNginx builds nginx's "hash $key consistent" ring (compat.Nginx): servers
// named host:port, 160 points per unit of weight, keys hashed with crc32a (the
// only hash nginx has), ties to the server listed first.
func buildNginx(p *Pool, servers []Server) (Router, error) {
	if err := onlyHash(p, "crc32a"); err != nil {
		return nil, err
	}
	if err := noPoints(p); err != nil {
		return nil, err
	}
	if err := checkPoints(p, servers, compat.NginxPoints); err != nil {
		return nil, err
	}
	nodes, names, err := nodesOf(p, servers, addrName, firstWins)
	if err != nil {
		return nil, err
	}
	return newNamed(p, compat.Nginx{}, nodes, names)
}

// buildGroupcache builds groupcache's consistenthash ring (compat.Groupcache):
// Points replicas per server (50, HTTPPool's, if zero), labels itoa(i) + the
// server's Name (give the peer's URL as the alias), crc32a unless the pool's Hash
// names another function, ties to the server listed last. groupcache has no
// weights, so every weight must be 1.
func buildGroupcache(p *Pool, servers []Server) (Router, error) {
	if err := unweighted(p, servers); err != nil {
		return nil, err
	}
	per := p.Points
	if per == 0 {
		per = compat.GroupcacheReplicas
	}
	if err := checkPoints(p, servers, per); err != nil {
		return nil, err
	}
	s := compat.Groupcache{Replicas: per}
	if p.Hash != "" {
		f, err := p.keyHash("")
		if err != nil {
			return nil, err
		}
		s.HashFunc = f
	}
	nodes, names, err := nodesOf(p, servers, Server.Name, lastWins)
	if err != nil {
		return nil, err
	}
	return newNamed(p, s, nodes, names)
}

// buildStathat builds stathat.com/c/consistent's ring (compat.Stathat): Points
// replicas per server (20, its default, if zero), labels itoa(i) + Name, crc32a
// only, ties to the server listed last; every weight must be 1.
func buildStathat(p *Pool, servers []Server) (Router, error) {
	if err := onlyHash(p, "crc32a"); err != nil {
		return nil, err
	}
	if err := unweighted(p, servers); err != nil {
		return nil, err
	}
	per := p.Points
	if per == 0 {
		per = compat.StathatReplicas
	}
	if err := checkPoints(p, servers, per); err != nil {
		return nil, err
	}
	nodes, names, err := nodesOf(p, servers, Server.Name, lastWins)
	if err != nil {
		return nil, err
	}
	return newNamed(p, compat.Stathat{Replicas: per}, nodes, names)
}

// twemproxyName is the name twemproxy hashes for s (nc_conf.c, conf_add_server):
// the alias; else host alone for port 11211; else host:port; for a Unix socket
// without alias, the path and a colon ("/tmp/mc.sock:"), as twemproxy's length
// arithmetic leaves it.
func twemproxyName(s Server) string {
	if s.Alias == "" && s.Port == 0 {
		return s.Host + ":"
	}
	return compat.TwemproxyName(s.Host, strconv.Itoa(s.Port), s.Alias)
}

// libmemcachedName is the name libmemcached hashes for s: host alone for port
// 11211, else host:port; aliases are not libmemcached's and are not hashed.
func libmemcachedName(s Server) string {
	if s.Port == 0 {
		return s.Host
	}
	return compat.TwemproxyName(s.Host, strconv.Itoa(s.Port), "")
}

// addrName is host:port as written (the path alone for a Unix socket), the name
// hashed by libketama, spymemcached and nginx; aliases are not hashed.
func addrName(s Server) string {
	if s.Port == 0 {
		return s.Host
	}
	return s.Host + ":" + strconv.Itoa(s.Port)
}

// named is a router whose nodes are named as the program hashes them, reporting
// servers by their Server.Name.
type named struct {
	ring  Router
	names map[string]string // hashed name -> Server.Name
}

func (r *named) Lookup(key []byte) (string, error) {
	n, err := r.ring.Lookup(key)
	if err != nil {
		return "", err
	}
	return r.names[n], nil
}

// Tie rules: the Order of the server at index i, called name, such that on equal
// ring positions the node with the lower Order (then the lower name) wins.
func firstWins(i int, name string) int    { return i }
func lastWins(i int, name string) int     { return -i }
func byNameLength(i int, name string) int { return len(name) }

// fixedNodes does what the builders of programs with a fixed point count share:
// it takes the pool's key hash (def if the pool sets none), refuses points:, and
// names and orders the servers as nodesOf does.
func fixedNodes(p *Pool, servers []Server, def string, hashName func(Server) string, order func(int, string) int) (hashfn.Func, []chash.Node, map[string]string, error) {
	h, err := p.keyHash(def)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := noPoints(p); err != nil {
		return nil, nil, nil, err
	}
	nodes, names, err := nodesOf(p, servers, hashName, order)
	return h, nodes, names, err
}

// nodesOf names each server as the program hashes it and orders it by the
// program's tie rule; names maps each node name back to its Server.Name. Two
// servers that the program would hash alike are an error.
func nodesOf(p *Pool, servers []Server, hashName func(Server) string, order func(int, string) int) ([]chash.Node, map[string]string, error) {
	nodes := make([]chash.Node, len(servers))
	names := make(map[string]string, len(servers))
	for i, sv := range servers {
		n := hashName(sv)
		if prev, dup := names[n]; dup {
			return nil, nil, p.errorAt("servers", fmt.Errorf("servers %q and %q are both named %q by distribution %s, which cannot tell them apart", prev, sv.Name(), n, p.Distribution))
		}
		names[n] = sv.Name()
		nodes[i] = chash.Node{Name: n, Weight: sv.Weight, Order: order(i, n)}
	}
	return nodes, names, nil
}

// newNamed builds a ring of nodes with scheme s that reports servers by names.
func newNamed(p *Pool, s chash.Scheme, nodes []chash.Node, names map[string]string) (Router, error) {
	r, err := chash.New(s, nodes)
	if err != nil {
		return nil, p.errorAt("servers", err)
	}
	return &namedRing{named{ring: r, names: names}, r}, nil
}

// namedRing is a named router over a ring, which it exposes so that analysis can
// compute exact shares and movement from the ring's arcs.
type namedRing struct {
	named
	r *chash.Ring
}

// Ring returns the ring and the map from its node names to server names.
func (r *namedRing) Ring() (*chash.Ring, map[string]string) { return r.r, r.names }

// noPoints reports an error if the pool sets points, which the distribution does
// not use.
func noPoints(p *Pool) error {
	if p.Points != 0 {
		return p.errorAt("points", fmt.Errorf("points is not used by distribution %s (only by chash, seed, groupcache and stathat)", p.Distribution))
	}
	return nil
}

// onlyHash reports an error if the pool names a hash other than want, the only
// key hash of the distribution.
func onlyHash(p *Pool, want string) error {
	if p.Hash != "" && p.Hash != want {
		return p.errorAt("hash", fmt.Errorf("distribution %s hashes keys with %s only, not %q", p.Distribution, want, p.Hash))
	}
	return nil
}

// unweighted reports an error for a server whose weight is not 1.
func unweighted(p *Pool, servers []Server) error {
	for _, s := range servers {
		if s.Weight != 1 {
			return p.errorAt("servers", fmt.Errorf("server %q: weight %d: distribution %s has no weights, give every server weight 1", s.Name(), s.Weight, p.Distribution))
		}
	}
	return nil
}

var (
	_ Router = (*named)(nil)
	_ Router = (*compat.Modula)(nil)
	_ Router = randomRouter{}
)
