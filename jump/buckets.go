package jump

import (
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/chash-dev/chash"
)

// Config configures Buckets. The zero value is ready to use.
type Config struct {
	// Back selects JumpBackHash (Back) instead of Lamping and Veach's Hash. The
	// two place keys differently, so every client of a deployment must agree.
	// If false, Hash is used.
	Back bool
	// KeyHash hashes a key to the 64-bit value the bucket function takes. If
	// nil, it defaults to XXH64 with seed 0.
	KeyHash func(key []byte) uint64
}

// Buckets maps keys to named nodes: node i of the list is bucket i. It is
// immutable and safe for concurrent use. See the package comment for its
// limits.
type Buckets struct {
	cfg   Config
	nodes []chash.Node
	names []string
}

// New returns Buckets over nodes, in the order given. It is an error, naming
// the node, for an empty or duplicate name or a weight other than 1 (jump
// hashing has no weights). An empty list gives Buckets whose lookups return
// chash.ErrEmpty.
func New(cfg Config, nodes []chash.Node) (*Buckets, error) {
	b := &Buckets{cfg: cfg}
	return b.Add(nodes...)
}

// Add returns new Buckets with nodes appended as the last buckets; keys move
// only to them, each taking its fair share. b is never changed.
func (b *Buckets) Add(nodes ...chash.Node) (*Buckets, error) {
	seen := make(map[string]bool, len(b.nodes)+len(nodes))
	for _, n := range b.nodes {
		seen[n.Name] = true
	}
	for _, n := range nodes {
		switch {
		case n.Name == "":
			return nil, errors.New("jump: node with an empty name")
		case n.Weight != 1:
			return nil, fmt.Errorf("jump: node %q: weight %d; jump hashing supports only weight 1", n.Name, n.Weight)
		case seen[n.Name]:
			return nil, fmt.Errorf("jump: duplicate node %q", n.Name)
		}
		seen[n.Name] = true
	}
	nb := &Buckets{cfg: b.cfg}
	nb.nodes = append(slices.Clip(b.nodes), nodes...)
	nb.names = make([]string, len(nb.nodes))
	for i, n := range nb.nodes {
		nb.names[i] = n.Name
	}
	return nb, nil
}

// Remove returns new Buckets without the named node, which must be the last
// one: removing any other bucket would renumber those after it and move most
// keys. b is never changed.
func (b *Buckets) Remove(name string) (*Buckets, error) {
	i := slices.Index(b.names, name)
	switch {
	case i < 0:
		return nil, fmt.Errorf("jump: remove %q: no such node", name)
	case i != len(b.names)-1:
		return nil, fmt.Errorf("jump: remove %q: only the last node (%q) can be removed", name, b.names[len(b.names)-1])
	}
	return &Buckets{cfg: b.cfg, nodes: b.nodes[:i:i], names: b.names[:i:i]}, nil
}

// Lookup returns the name of the node that owns key. It allocates nothing.
func (b *Buckets) Lookup(key []byte) (string, error) {
	if len(b.names) == 0 {
		return "", chash.ErrEmpty
	}
	var h uint64
	if b.cfg.KeyHash != nil {
		h = b.cfg.KeyHash(key)
	} else {
		h = xxhash.Sum64(key)
	}
	if b.cfg.Back {
		return b.names[Back(h, len(b.names))], nil
	}
	return b.names[Hash(h, len(b.names))], nil
}

// LookupString is Lookup for a string key; it does not copy the key.
func (b *Buckets) LookupString(key string) (string, error) {
	return b.Lookup(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// Nodes returns the nodes in bucket order.
func (b *Buckets) Nodes() []chash.Node { return slices.Clone(b.nodes) }

// Len returns the number of nodes.
func (b *Buckets) Len() int { return len(b.nodes) }
