package dist

import (
	"fmt"
	"strconv"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/compat"
	"github.com/chash-dev/chash/hashfn"
	"github.com/chash-dev/chash/internal/config"
)

// The distributions of deployed programs, from package compat. Each routes every
// key as the named program does for the same server list, in the same order.

// buildKetama builds twemproxy's ketama ring (compat.Ketama): servers named by
// alias, else host when the port is 11211, else host:port; keys hashed with the
// pool's Hash, fnv1a_64 by default; ties to the server whose name is shorter, then
// sorts first, as twemproxy sorts its servers by name.
func buildKetama(p *config.Pool, servers []config.Server, prev Router) (Router, error) {
	h, nodes, err := programNodes(p, servers, config.DefaultHash, twemproxyName, byNameLength)
	if err != nil {
		return nil, err
	}
	return newRingRouter(p, compat.Ketama{KeyHash: h}, nodes, prev)
}

// buildModula builds twemproxy's modula table (compat.Modula): servers named as
// for ketama, which orders the table.
func buildModula(p *config.Pool, servers []config.Server, _ Router) (Router, error) {
	if err := checkSlots(p, servers); err != nil {
		return nil, err
	}
	h, nodes, err := programNodes(p, servers, config.DefaultHash, twemproxyName, byNameLength)
	if err != nil {
		return nil, err
	}
	m, err := compat.NewModula(nodes, h, "")
	if err != nil {
		return nil, p.ErrorAt("servers", err)
	}
	return &named{r: m, names: namesOf(nodes)}, nil
}

// buildRandom checks the pool's hash like the other twemproxy distributions and
// returns a router that picks a server at random for each lookup, as twemproxy
// does for each request.
func buildRandom(p *config.Pool, servers []config.Server, _ Router) (Router, error) {
	if _, err := keyHash(p, config.DefaultHash); err != nil {
		return nil, err
	}
	return randomRouter{len(servers)}, nil
}

// buildLibketama builds the ring of npm hashring and uhashring
// (compat.Libketama): servers named host:port as written, floor(w/total·40·n)
// labels in float64, keys hashed with md5 unless the pool's Hash says otherwise,
// ties to the server listed first.
func buildLibketama(p *config.Pool, servers []config.Server, prev Router) (Router, error) {
	h, nodes, err := programNodes(p, servers, "md5", addrName, firstWins)
	if err != nil {
		return nil, err
	}
	return newRingRouter(p, compat.Libketama{KeyHash: h}, nodes, prev)
}

// buildSpymemcached builds spymemcached's KetamaNodeLocator (compat.Libketama):
// 160 points per server when every weight is 1 (KetamaConnectionFactory without
// weights), the float32 weighted count otherwise; servers named host:port (give
// IP literals: spymemcached names a server given by host name "host/ip:port");
// ties to the server listed last (TreeMap.put).
func buildSpymemcached(p *config.Pool, servers []config.Server, prev Router) (Router, error) {
	h, nodes, err := programNodes(p, servers, "md5", addrName, lastWins)
	if err != nil {
		return nil, err
	}
	s := compat.Libketama{KeyHash: h, Count: compat.LibketamaFixed}
	for _, sv := range servers {
		if sv.Weight > 1 {
			s.Count = compat.LibketamaFloat32
		}
	}
	return newRingRouter(p, s, nodes, prev)
}

// buildLibmemcached builds libmemcached's ketama continuum (compat.Libmemcached):
// servers named host, or host:port when the port is not 11211; 100 points per
// server hashed with the key hash (one_at_a_time by default) unless a weight is
// above 1, which switches to the weighted MD5 ring as libmemcached does; ties to
// the server listed first.
func buildLibmemcached(p *config.Pool, servers []config.Server, prev Router) (Router, error) {
	h, nodes, err := programNodes(p, servers, "one_at_a_time", libmemcachedName, firstWins)
	if err != nil {
		return nil, err
	}
	return newRingRouter(p, compat.Libmemcached{KeyHash: h}.For(nodes), nodes, prev)
}

// buildNginx builds nginx's "hash $key consistent" ring (compat.Nginx): servers
// named host:port, 160 points per unit of weight, keys hashed with crc32a (the
// only hash nginx has), ties to the server listed first.
func buildNginx(p *config.Pool, servers []config.Server, prev Router) (Router, error) {
	if err := checkPoints(p, servers, compat.NginxPoints); err != nil {
		return nil, err
	}
	nodes, err := nodesOf(p, servers, addrName, firstWins)
	if err != nil {
		return nil, err
	}
	return newRingRouter(p, compat.Nginx{}, nodes, prev)
}

// buildGroupcache builds groupcache's consistenthash ring (compat.Groupcache):
// Points replicas per server (50, HTTPPool's, if zero), labels itoa(i) + the
// server's Name (give the peer's URL as the alias), crc32a unless the pool's Hash
// names another function, ties to the server listed last. groupcache has no
// weights, so every weight must be 1.
func buildGroupcache(p *config.Pool, servers []config.Server, prev Router) (Router, error) {
	if err := unweighted(p, servers); err != nil {
		return nil, err
	}
	per, err := perWeight(p, servers, compat.GroupcacheReplicas)
	if err != nil {
		return nil, err
	}
	h, err := ringHash(p)
	if err != nil {
		return nil, err
	}
	nodes, err := nodesOf(p, servers, config.Server.Name, lastWins)
	if err != nil {
		return nil, err
	}
	return newRingRouter(p, compat.Groupcache{Replicas: per, HashFunc: h}, nodes, prev)
}

// buildStathat builds stathat.com/c/consistent's ring (compat.Stathat): Points
// replicas per server (20, its default, if zero), labels itoa(i) + Name, crc32a
// only, ties to the server listed last; every weight must be 1.
func buildStathat(p *config.Pool, servers []config.Server, prev Router) (Router, error) {
	if err := unweighted(p, servers); err != nil {
		return nil, err
	}
	per, err := perWeight(p, servers, compat.StathatReplicas)
	if err != nil {
		return nil, err
	}
	nodes, err := nodesOf(p, servers, config.Server.Name, lastWins)
	if err != nil {
		return nil, err
	}
	return newRingRouter(p, compat.Stathat{Replicas: per}, nodes, prev)
}

// twemproxyName is the name twemproxy hashes for s (nc_conf.c, conf_add_server):
// the alias; else host alone for port 11211; else host:port; for a Unix socket
// without alias, the path and a colon ("/tmp/mc.sock:"), as twemproxy's length
// arithmetic leaves it.
func twemproxyName(s config.Server) string {
	if s.Alias == "" && s.Port == 0 {
		return s.Host + ":"
	}
	return compat.TwemproxyName(s.Host, strconv.Itoa(s.Port), s.Alias)
}

// libmemcachedName is the name libmemcached hashes for s: host alone for port
// 11211, else host:port; aliases are not libmemcached's and are not hashed.
func libmemcachedName(s config.Server) string {
	if s.Port == 0 {
		return s.Host
	}
	return compat.TwemproxyName(s.Host, strconv.Itoa(s.Port), "")
}

// addrName is host:port as written (the path alone for a Unix socket), the name
// hashed by libketama, spymemcached and nginx; aliases are not hashed.
func addrName(s config.Server) string {
	if s.Port == 0 {
		return s.Host
	}
	return s.Host + ":" + strconv.Itoa(s.Port)
}

// Tie rules: the Order of the server at index i, called name, such that on equal
// ring positions the node with the lower Order (then the lower name) wins.
func firstWins(i int, name string) int    { return i }
func lastWins(i int, name string) int     { return -i }
func byNameLength(i int, name string) int { return len(name) }

// programNodes does what the builders of programs with a fixed point count
// share: it takes the pool's key hash (def if the pool sets none) and names and
// orders the servers as nodesOf does.
func programNodes(p *config.Pool, servers []config.Server, def string, hashName func(config.Server) string, order func(int, string) int) (hashfn.Func, []chash.Node, error) {
	h, err := keyHash(p, def)
	if err != nil {
		return nil, nil, err
	}
	nodes, err := nodesOf(p, servers, hashName, order)
	return h, nodes, err
}

// nodesOf names each server as the program hashes it and orders it by the
// program's tie rule: nodes[i] is servers[i]. Two servers that the program
// would hash alike are an error.
func nodesOf(p *config.Pool, servers []config.Server, hashName func(config.Server) string, order func(int, string) int) ([]chash.Node, error) {
	nodes := make([]chash.Node, len(servers))
	seen := make(map[string]string, len(servers))
	for i, sv := range servers {
		n := hashName(sv)
		if prev, dup := seen[n]; dup {
			return nil, p.ErrorAt("servers", fmt.Errorf("servers %q and %q are both named %q by distribution %s, which cannot tell them apart", prev, sv.Name(), n, p.Distribution))
		}
		seen[n] = sv.Name()
		nodes[i] = chash.Node{Name: n, Weight: sv.Weight, Order: order(i, n)}
	}
	return nodes, nil
}
