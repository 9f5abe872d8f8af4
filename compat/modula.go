package compat

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/hashfn"
)

// Modula routes keys as twemproxy's "distribution: modula" does
// (src/hashkit/nc_modula.c): the servers are laid out in a table with one slot per
// unit of weight (the first server weight times, then the next, ...), and a key
// goes to slot hash % len(table), the hash being twemproxy's: the key's hash tag
// hashed with the pool's hash, 0 for an empty key.
//
// The order of the table is not the config's: twemproxy sorts a pool's servers by
// name when it validates the config (nc_conf.c, conf_validate_server, which sorts
// to find duplicate names), comparing names by length first and then bytewise
// (string_compare). Nodes must therefore be named as twemproxy names servers
// (TwemproxyName), and NewModula sorts them the same way.
//
// Modula is not a ring: adding or removing a server moves most keys, which is why
// twemproxy recommends it only for pools whose membership never changes. It is
// immutable and safe for concurrent use.
type Modula struct {
	keyHash hashfn.Func
	hashTag string
	nodes   []chash.Node
	slots   []int32
}

// NewModula returns twemproxy's modula table of nodes, named as twemproxy names
// them and given in any order (their Order fields are ignored), with keys hashed by keyHash (nil means fnv1a_64) under
// hash tag hashTag ("" for none; see Ketama.HashTag). It is an error, naming the
// node, if a name is empty or repeated, a weight is below 1 or the weights add
// up to more than chash.MaxPoints slots, or if nodes is empty.
func NewModula(nodes []chash.Node, keyHash hashfn.Func, hashTag string) (*Modula, error) {
	if len(nodes) == 0 {
		return nil, errors.New("compat: modula: no nodes")
	}
	if err := chash.CheckNodes(nodes); err != nil {
		return nil, fmt.Errorf("compat: modula: %w", err)
	}
	m := &Modula{keyHash: keyHash, hashTag: hashTag, nodes: slices.Clone(nodes)}
	slices.SortStableFunc(m.nodes, ModulaOrder)
	slots := 0
	for _, n := range m.nodes {
		if n.Weight > chash.MaxPoints-slots {
			return nil, fmt.Errorf("compat: modula: node %q: weight %d gives the table more than %d slots (one per unit of weight); lower the weights", n.Name, n.Weight, chash.MaxPoints)
		}
		slots += n.Weight
	}
	m.slots = make([]int32, 0, slots)
	for i, n := range m.nodes {
		for range n.Weight {
			m.slots = append(m.slots, int32(i))
		}
	}
	return m, nil
}

// ModulaOrder orders nodes as twemproxy orders a pool's servers, and so lays
// out its modula table: by length of name, then bytewise (see Modula).
func ModulaOrder(a, b chash.Node) int {
	return cmp.Or(cmp.Compare(len(a.Name), len(b.Name)), strings.Compare(a.Name, b.Name))
}

// Lookup returns the name of the node that owns key. It fails only for the zero
// Modula, which NewModula does not return, with chash.ErrEmpty; the error is
// there to match chash.Ring's Lookup.
func (m *Modula) Lookup(key []byte) (string, error) {
	switch len(m.nodes) {
	case 0:
		return "", chash.ErrEmpty
	case 1:
		return m.nodes[0].Name, nil
	}
	h := twemproxyHash(m.keyHash, m.hashTag, key)
	return m.nodes[m.slots[h%uint32(len(m.slots))]].Name, nil
}

// LookupString is Lookup for a string key; it does not copy the key.
func (m *Modula) LookupString(key string) (string, error) {
	return m.Lookup(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// Nodes returns the nodes in table order: by length of name, then name.
func (m *Modula) Nodes() []chash.Node { return slices.Clone(m.nodes) }
