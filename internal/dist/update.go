package dist

import (
	"reflect"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/internal/config"
)

// Update returns the router of the pool p over servers, routing every key
// exactly as Build(p, servers) would, made from prev, a router that Build or
// Update made for the pool prevPool, where that is cheaper. For the
// distributions whose router is a ring (chash, ketama, libketama,
// spymemcached, libmemcached, nginx, groupcache, stathat, seed), the new ring
// is merged from prev's as chash.Ring.Add, Remove and Reweight merge: the
// points of the servers that stay are copied rather than hashed again, so
// that a change of a few servers of a pool of a thousand costs a fraction of
// a build. This is the path of a proxy whose servers come and go.
//
// Update builds afresh, as Build, when prev or prevPool is nil, when their
// routing settings differ from p's (the settings Fingerprint covers), when
// the distribution's router is no ring, or when a server that stays changes
// its place among the others in a distribution whose server order breaks ties
// (Order OrderTies: removing a server from the middle of such a list moves
// the others up). Its errors are Build's.
func Update(prevPool *config.Pool, prev Router, p *config.Pool, servers []config.Server) (Router, error) {
	e, err := buildable(p, servers)
	if err != nil {
		return nil, err
	}
	if prevPool == nil || prev == nil || routingOf(prevPool) != routingOf(p) {
		prev = nil
	}
	return e.buildSpanned(p, servers, prev)
}

// mergeRing returns the ring of nodes with scheme s merged from the ring of
// prev, or nil if prev is no ring router, its ring's scheme is not s, or a
// node that stays has another Order (the merge keeps nodes' places among
// each other). Errors of the merge, such as a name given twice, also give
// nil: the caller's build from scratch reports them.
func mergeRing(prev Router, s chash.Scheme, nodes []chash.Node) *chash.Ring {
	var base *chash.Ring
	switch r := prev.(type) {
	case *ringRouter:
		base = r.ring
	case replicaRing:
		base = r.ring
	default:
		return nil
	}
	if !sameScheme(base.Scheme(), s) {
		return nil
	}
	old := base.Nodes()
	was := make(map[string]chash.Node, len(old))
	for _, n := range old {
		was[n.Name] = n
	}
	stays := make(map[string]bool, len(nodes))
	var added, reweighted []chash.Node
	for _, n := range nodes {
		o, ok := was[n.Name]
		switch {
		case !ok:
			added = append(added, n)
		case o.Order != n.Order:
			return nil
		case o.Weight != n.Weight:
			reweighted = append(reweighted, n)
		}
		stays[n.Name] = true
	}
	var gone []string
	for _, n := range old {
		if !stays[n.Name] {
			gone = append(gone, n.Name)
		}
	}
	r := base
	var err error
	if len(gone) > 0 {
		if r, err = r.Remove(gone...); err != nil {
			return nil
		}
	}
	if len(reweighted) > 0 {
		if r, err = r.Reweight(reweighted...); err != nil {
			return nil
		}
	}
	if len(added) > 0 {
		if r, err = r.Add(added...); err != nil {
			return nil
		}
	}
	return r
}

// sameScheme reports whether two schemes place points alike: the same type
// with the same fields. The builders make schemes of plain fields and
// functions (a key hash); two functions are taken as the same if their code
// is, which holds for the hash functions of one name, and Update merges only
// between pools whose routing settings, the hash's name among them, are the
// same. Fields that depend on the servers, such as libmemcached's switch to
// its weighted ring when a weight is above 1, are compared as they are.
func sameScheme(a, b chash.Scheme) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if !va.IsValid() || !vb.IsValid() || va.Type() != vb.Type() {
		return false
	}
	return sameValue(va, vb)
}

func sameValue(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Func:
		return a.Pointer() == b.Pointer()
	case reflect.Struct:
		for i := range a.NumField() {
			if !sameValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.String:
		return a.Equal(b)
	}
	return false // a kind no scheme has yet: build afresh rather than guess
}
