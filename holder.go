package chash

import "sync/atomic"

// A Holder publishes the current Ring to concurrent readers. Readers call Load (or
// Lookup) without locking; writers Store a new ring or Update the current one. A
// reader sees either the old ring or the new one, never a mix. The zero value holds
// an empty ring and is ready to use; a Holder must not be copied after first use.
type Holder struct {
	p atomic.Pointer[Ring]
}

var emptyRing = &Ring{}

// Load returns the current ring, an empty one if none was stored.
func (h *Holder) Load() *Ring {
	if r := h.p.Load(); r != nil {
		return r
	}
	return emptyRing
}

// Store makes r the current ring. A nil r stores an empty ring.
func (h *Holder) Store(r *Ring) {
	if r == nil {
		r = emptyRing
	}
	h.p.Store(r)
}

// Update replaces the current ring with f's result, retrying if another writer
// changed the ring meanwhile, so concurrent updates are never lost. If f returns an
// error the current ring stays and the error is returned. f may run more than once.
func (h *Holder) Update(f func(*Ring) (*Ring, error)) (*Ring, error) {
	for {
		old := h.p.Load()
		cur := old
		if cur == nil {
			cur = emptyRing
		}
		next, err := f(cur)
		if err != nil {
			return cur, err
		}
		if next == nil {
			next = emptyRing
		}
		if h.p.CompareAndSwap(old, next) {
			return next, nil
		}
	}
}

// Lookup looks key up in the current ring.
func (h *Holder) Lookup(key []byte) (string, error) {
	return h.Load().Lookup(key)
}

// LookupString looks key up in the current ring.
func (h *Holder) LookupString(key string) (string, error) {
	return h.Load().LookupString(key)
}
