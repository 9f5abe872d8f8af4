package analyze

import (
	"fmt"
	"iter"
	"slices"

	"github.com/chash-dev/chash/internal/dist"
)

// ReplicaMovement is what a change does to the replica sets of a pool that
// keeps each key on several servers (replicas:), measured over sample keys.
// A key's set is its servers in any order: a set whose members only change
// places keeps its copies (the owner's move is in Movement).
type ReplicaMovement struct {
	// Old and New are the two pools' replicas.
	Old int `json:"old"`
	New int `json:"new"`
	// Keys is the number of sample keys routed through both.
	Keys uint64 `json:"keys"`
	// Changed is the fraction of keys whose set gains or loses a server.
	Changed float64 `json:"changed"`
	// Copies is the fraction of the new copies that are on a server not in
	// the key's old set: the copies a migration makes, or that start cold.
	Copies float64 `json:"copies"`
	// Cold is the fraction of keys none of whose new servers was in their
	// old set: after the change, no replica of theirs holds them.
	Cold float64 `json:"cold"`
}

// DiffReplicas routes keys through the replica sets of old and new, each
// with its pool's replicas (Config.Replicas), and measures what changes. It
// returns nil if neither pool keeps more than one copy of a key, and an
// error if a pool that does has no replica sets.
func DiffReplicas(old, new *Pool, keys iter.Seq[[]byte]) (*ReplicaMovement, error) {
	nOld, nNew := max(old.Config.Replicas, 1), max(new.Config.Replicas, 1)
	if nOld == 1 && nNew == 1 {
		return nil, nil
	}
	ro, err := replicaRouter(old)
	if err != nil {
		return nil, err
	}
	rn, err := replicaRouter(new)
	if err != nil {
		return nil, err
	}
	// Servers are compared by name: oldOf[j] is new server j's index in
	// old, -1 if it is not there.
	index := make(map[string]int, len(old.Nodes))
	for i, n := range old.Nodes {
		index[n.Name] = i
	}
	oldOf := make([]int, len(new.Nodes))
	for j, n := range new.Nodes {
		i, ok := index[n.Name]
		if !ok {
			i = -1
		}
		oldOf[j] = i
	}
	m := &ReplicaMovement{Old: nOld, New: nNew}
	var changed, cold, copies, all uint64
	var a, b []int
	for k := range old.hashKeys(keys) {
		if a, err = ro.AppendN(a[:0], k, nOld); err != nil {
			return nil, err
		}
		if b, err = rn.AppendN(b[:0], k, nNew); err != nil {
			return nil, err
		}
		m.Keys++
		kept := 0
		for _, j := range b {
			if i := oldOf[j]; i >= 0 && slices.Contains(a, i) {
				kept++
			}
		}
		all += uint64(len(b))
		copies += uint64(len(b) - kept)
		if kept < len(b) || kept < len(a) {
			changed++
		}
		if kept == 0 {
			cold++
		}
	}
	if m.Keys > 0 {
		m.Changed = float64(changed) / float64(m.Keys)
		m.Cold = float64(cold) / float64(m.Keys)
	}
	if all > 0 {
		m.Copies = float64(copies) / float64(all)
	}
	return m, nil
}

// replicaRouter returns p's router as a dist.ReplicaRouter.
func replicaRouter(p *Pool) (dist.ReplicaRouter, error) {
	r, ok := p.Router.(dist.ReplicaRouter)
	if !ok {
		return nil, fmt.Errorf("analyze: pool %q: distribution %s has no replica sets", p.Config.Name, p.Entry.Name)
	}
	return r, nil
}
