// Package chash is a consistent-hash ring: it spreads keys over named nodes so that
// adding or removing a node moves as few keys as possible.
//
// Each node owns points on a ring of 2^32 positions, as many as its Scheme gives it
// (chash's own scheme, Standard, gives 160 per unit of weight). A key belongs to the
// first point at or after the key's hash, wrapping past the top. Adding a node only
// takes keys from the points it lands in front of; removing one hands each of its
// arcs to the next point clockwise, so a departing node's keys spread over many
// survivors.
//
// A Ring never changes once built. Add, Remove and Reweight return a new Ring that
// shares nothing with the old one, built by merging the changed nodes' points into
// the sorted array rather than by re-hashing and re-sorting everything. A Holder
// publishes the current Ring to concurrent readers with an atomic pointer, so reads
// never lock and never see a half-built ring.
//
// Lookups hash the key once, read one slot of a fixed-size index over the top bits
// of the hash, and usually stop at the first point they look at; they allocate
// nothing.
//
// The schemes of deployed systems (twemproxy's and libmemcached's ketama, nginx, the
// seed articles' Java rings, ...) live in package compat; hash functions in hashfn.
package chash
