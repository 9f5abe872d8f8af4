package memento

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/chash-dev/chash"
)

// Config configures Buckets. The zero value is ready to use.
type Config struct {
	// KeyHash hashes a key to 64 bits. If nil, it defaults to XXH64 with seed 0.
	KeyHash func(key []byte) uint64
}

// Buckets maps keys to named nodes with MementoHash: node i of the list given
// to New is bucket i. It is immutable and safe for concurrent use. See the
// package comment for its limits.
type Buckets struct {
	cfg    Config
	t      *Table
	names  []string // by bucket; "" for a removed bucket
	bucket map[string]int
}

// New returns Buckets over nodes, in the order given, none removed. It is an
// error, naming the node, for an empty or duplicate name or a weight other
// than 1. An empty list gives Buckets whose lookups return chash.ErrEmpty.
func New(cfg Config, nodes []chash.Node) (*Buckets, error) {
	t, _ := NewTable(0)
	b := &Buckets{cfg: cfg, t: t, bucket: map[string]int{}}
	return b.Add(nodes...)
}

// Add returns Buckets with nodes added, each in the most recently removed
// bucket or, when none is, in a new bucket at the end: each takes its fair
// share of keys, from every other node. b is never changed.
func (b *Buckets) Add(nodes ...chash.Node) (*Buckets, error) {
	nb := &Buckets{cfg: b.cfg, t: b.t, names: slices.Clone(b.names), bucket: maps.Clone(b.bucket)}
	if nb.t == nil { // the zero Buckets, which New had not set up
		nb.t, nb.bucket = &Table{}, map[string]int{}
	}
	for _, n := range nodes {
		switch _, dup := nb.bucket[n.Name]; {
		case n.Name == "":
			return nil, errors.New("memento: node with an empty name")
		case n.Weight != 1:
			return nil, fmt.Errorf("memento: node %q: weight %d; MementoHash supports only weight 1", n.Name, n.Weight)
		case dup:
			return nil, fmt.Errorf("memento: duplicate node %q", n.Name)
		}
		var i int
		nb.t, i = nb.t.Restore()
		if i == len(nb.names) {
			nb.names = append(nb.names, "")
		}
		nb.names[i] = n.Name
		nb.bucket[n.Name] = i
	}
	return nb, nil
}

// Remove returns Buckets without the named nodes, removed in the order given.
// Only their keys move, spread evenly over the remaining nodes. It is an
// error if a node is not present or is named twice; b is never changed.
func (b *Buckets) Remove(names ...string) (*Buckets, error) {
	nb := &Buckets{cfg: b.cfg, t: b.t, names: slices.Clone(b.names), bucket: maps.Clone(b.bucket)}
	for k, name := range names {
		i, ok := nb.bucket[name]
		if !ok {
			if slices.Contains(names[:k], name) {
				return nil, fmt.Errorf("memento: remove %q: node named twice", name)
			}
			return nil, fmt.Errorf("memento: remove %q: no such node", name)
		}
		t, err := nb.t.Remove(i)
		if err != nil {
			return nil, err
		}
		nb.t = t
		nb.names[i] = ""
		delete(nb.bucket, name)
		nb.names = nb.names[:t.Size()]
	}
	return nb, nil
}

// Lookup returns the name of the node that owns key. It allocates nothing.
func (b *Buckets) Lookup(key []byte) (string, error) {
	if b.t == nil { // the zero Buckets
		return "", chash.ErrEmpty
	}
	var h uint64
	if b.cfg.KeyHash != nil {
		h = b.cfg.KeyHash(key)
	} else {
		h = xxhash.Sum64(key)
	}
	i := b.t.Bucket(h)
	if i < 0 {
		return "", chash.ErrEmpty
	}
	return b.names[i], nil
}

// LookupString is Lookup for a string key; it does not copy the key.
func (b *Buckets) LookupString(key string) (string, error) {
	return b.Lookup(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// Nodes returns the working nodes in bucket order.
func (b *Buckets) Nodes() []chash.Node {
	var ns []chash.Node
	for _, name := range b.names {
		if name != "" {
			ns = append(ns, chash.Node{Name: name, Weight: 1})
		}
	}
	return ns
}

// Len returns the number of working nodes.
func (b *Buckets) Len() int { return len(b.bucket) }
