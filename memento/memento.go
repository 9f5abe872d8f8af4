// Package memento implements MementoHash: Massimo Coluzzi, Amos Brocco,
// Alessandro Antonucci and Tiziano Leidi, "MementoHash: A Stateful, Minimal
// Memory, Best Performing Consistent Hash Algorithm" (2023, arXiv:2306.09783).
//
// MementoHash extends jump consistent hashing with arbitrary removals. It keeps
// jump's array of n buckets and remembers each removed bucket in a small
// table, the memento: the bucket, the number of working buckets left after its
// removal, and the bucket removed before it. A key that jump hashing sends to
// a removed bucket is rehashed among the buckets that were working when that
// bucket left, following the memento to whichever bucket now stands in each
// place. A lookup without removals is a jump hash; with r removals it does
// O(ln(n/(n−r))) expected extra steps, so lookups stay at jump's speed unless
// most buckets are gone. Memory is O(r).
//
// Removing any bucket moves only its keys, spread evenly over the others, and
// restoring it moves them back. Additions restore the most recently removed
// bucket, or append a bucket when none is removed: the memento is a stack.
//
// # Limits
//
// The assignment depends on the history of removals, not just on the set of
// working buckets: two clients agree only if they remove the same buckets in
// the same order. That fits a proxy that ejects failing servers at run time;
// clients that each read a configuration file should use jump, a ring, or
// rendezvous hashing. Buckets have no weights.
package memento

import (
	"fmt"
	"maps"

	"github.com/chash-dev/chash/internal/splitmix"
	"github.com/chash-dev/chash/jump"
)

// entry is the memento of a removed bucket.
type entry struct {
	replacer int // working buckets right after the removal
	prev     int // the bucket removed before, or the array size if none
}

// Table is MementoHash over numbered buckets. It is immutable and safe for
// concurrent use; Remove and Restore return new Tables.
type Table struct {
	n       int // buckets in the array, working or not
	removed map[int]entry
	last    int // the most recently removed bucket, or n if none
}

// NewTable returns a Table of n working buckets, 0 to n-1. It is an error if n
// is negative.
func NewTable(n int) (*Table, error) {
	if n < 0 {
		return nil, fmt.Errorf("memento: %d buckets", n)
	}
	return &Table{n: n, last: n}, nil
}

// Len returns the number of working buckets.
func (t *Table) Len() int { return t.n - len(t.removed) }

// Size returns the size of the bucket array: every working bucket is below it.
func (t *Table) Size() int { return t.n }

// Working reports whether bucket b is working.
func (t *Table) Working(b int) bool {
	_, gone := t.removed[b]
	return b >= 0 && b < t.n && !gone
}

// Bucket returns the working bucket of a key hashed to h, or -1 if no bucket
// works.
func (t *Table) Bucket(h uint64) int {
	if t.n-len(t.removed) <= 0 {
		return -1
	}
	b := jump.Hash(h, t.n)
	if len(t.removed) == 0 {
		return b
	}
	for {
		e, gone := t.removed[b]
		if !gone {
			return b
		}
		// Rehash among the e.replacer buckets working right after b left.
		// Those that left earlier (a larger replacer) stand for the bucket
		// that took their place, which may itself be b, and so on.
		b = int(splitmix.Mix64(h^uint64(b+1)*golden) % uint64(e.replacer))
		for {
			f, gone := t.removed[b]
			if !gone || f.replacer < e.replacer {
				break
			}
			b = f.replacer
		}
	}
}

// Remove returns a Table without bucket b. Only b's keys move. It is an error
// if b is not working; t is never changed.
func (t *Table) Remove(b int) (*Table, error) {
	if !t.Working(b) {
		return nil, fmt.Errorf("memento: remove bucket %d: not working", b)
	}
	if len(t.removed) == 0 && b == t.n-1 {
		// The last bucket with nothing removed: shrink, as jump would.
		return &Table{n: b, last: b}, nil
	}
	t2 := &Table{n: t.n, removed: maps.Clone(t.removed), last: b}
	if t2.removed == nil {
		t2.removed = map[int]entry{}
	}
	t2.removed[b] = entry{replacer: t.Len() - 1, prev: t.last}
	return t2, nil
}

// Restore returns a Table with the most recently removed bucket working again,
// or with a bucket appended if none is removed, and that bucket. Only keys
// that belong to it move, back to it. t is never changed.
func (t *Table) Restore() (*Table, int) {
	if len(t.removed) == 0 {
		return &Table{n: t.n + 1, last: t.n + 1}, t.n
	}
	b := t.last
	t2 := &Table{n: t.n, removed: maps.Clone(t.removed), last: t.removed[b].prev}
	delete(t2.removed, b)
	if len(t2.removed) == 0 {
		t2.removed = nil
	}
	return t2, b
}

const golden = 0x9E3779B97F4A7C15
