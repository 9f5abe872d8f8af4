// Package bigbuf keeps large byte buffers for reuse: the values of requests
// and replies that a proxy relays, from 16 KiB to 64 MiB, in size classes of
// powers of two.
//
// A proxy relaying values of 100 KB that gave each a new buffer, grown from
// its read buffer's size, spent a third of its CPU allocating, zeroing and
// collecting them. With Grow and Give it allocates next to nothing per value.
// Buffers given back are let go at garbage collections, as sync.Pool lets go
// of what it holds, so a burst of large values does not stay pinned.
package bigbuf

import (
	"math/bits"
	"sync"
)

// Min and Max bound the buffers kept: Grow allocates others as usual and Give
// drops them.
const (
	Min      = 1 << 14 // 16 KiB
	maxClass = 26
	Max      = 1 << maxClass // 64 MiB
)

var (
	pools [maxClass + 1]sync.Pool // *[]byte by log2 of the size
	// The *[]byte that carried buffers, for the next buffer given back: a
	// pool holds pointers, and a new one for each would be an allocation.
	heads sync.Pool
)

// take returns an empty buffer of capacity size, a power of two between Min
// and Max.
func take(size int) []byte {
	p, ok := pools[bits.Len(uint(size))-1].Get().(*[]byte)
	if !ok {
		return make([]byte, 0, size)
	}
	b := *p
	*p = nil
	heads.Put(p)
	return b
}

// Give gives b's memory back for reuse, if its capacity is a size class (a
// power of two from Min to Max); nothing may use b's memory afterwards.
func Give(b []byte) {
	c := cap(b)
	if c < Min || c > Max || c&(c-1) != 0 {
		return
	}
	p, ok := heads.Get().(*[]byte)
	if !ok {
		p = new([]byte)
	}
	*p = b[:0]
	pools[bits.Len(uint(c))-1].Put(p)
}

// Grow returns dst, with its contents, in a buffer of at least size bytes:
// dst itself if it has the room; else a kept buffer if size is within the
// classes (size rounded up to a power of two: at most twice size), or a new
// one of size bytes. dst's memory is given back (Give): the caller keeps only
// the slice returned.
func Grow(dst []byte, size int) []byte {
	if size <= cap(dst) {
		return dst
	}
	var nb []byte
	if size < Min || size > Max {
		nb = make([]byte, 0, size)
	} else {
		nb = take(1 << bits.Len(uint(size-1)))
	}
	nb = append(nb, dst...)
	Give(dst)
	return nb
}

// Class returns the size class at or below size, for a caller that bounds
// its growth by what has arrived: Grow rounds size up, to at most twice it.
// Sizes outside the classes are returned as they are.
func Class(size int) int {
	if size < Min || size > Max {
		return size
	}
	return 1 << (bits.Len(uint(size)) - 1)
}
