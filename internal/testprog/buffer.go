package testprog

import (
	"bytes"
	"fmt"
	"sync"
)

// A Buffer collects what a program or a logger writes, for a test to read
// while the writer goes on: a bytes.Buffer that is safe for concurrent use.
// The zero value is an empty Buffer without a limit.
type Buffer struct {
	// Limit is the most bytes the Buffer keeps; later writes are counted and
	// dropped, keeping the start, where a failure usually shows first. If zero,
	// there is no limit.
	Limit int

	mu      sync.Mutex
	b       bytes.Buffer
	dropped int
}

// Write appends p to the buffer, or drops what exceeds the Limit. It never
// fails, so that a writer is never stopped by its log.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	keep := p
	if b.Limit > 0 && b.b.Len()+len(p) > b.Limit {
		keep = p[:max(0, b.Limit-b.b.Len())]
		b.dropped += len(p) - len(keep)
	}
	b.b.Write(keep)
	return len(p), nil
}

// String returns what was written, followed by a note of how many bytes were
// dropped if some were.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dropped > 0 {
		return fmt.Sprintf("%s\n[testprog: %d more bytes dropped]", b.b.String(), b.dropped)
	}
	return b.b.String()
}

// Len returns the number of bytes written, dropped ones included.
func (b *Buffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Len() + b.dropped
}

// Reset empties the buffer.
func (b *Buffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.Reset()
	b.dropped = 0
}
