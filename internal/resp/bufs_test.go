package resp

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/iotest"

	"github.com/chash-dev/chash/internal/bigbuf"
	"github.com/chash-dev/chash/internal/bigbuf/bigbuftest"
)

// raceEnabled is set under the race detector, whose sync.Pool drops some of
// what it is given on purpose.
var raceEnabled bool

// TestReleaseReuses relays large values as a proxy does, a request and a
// reply of 100 KB each, released once answered: after the first, reading
// them allocates next to nothing; each used to allocate its buffer anew,
// grown from 16 KiB.
func TestReleaseReuses(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops buffers on purpose")
	}
	val := bytes.Repeat([]byte("v"), 100_000)
	req := AppendRequest(nil, &Request{Args: [][]byte{[]byte("SET"), []byte("key"), val}})
	rep := AppendBulk(nil, val)
	qr := NewReader(&loopReader{b: req}, Limits{})
	rr := NewReader(&loopReader{b: rep}, Limits{})
	var q Request
	var rp Reply
	once := func() {
		if err := qr.ReadRequest(&q); err != nil || len(q.Args) != 3 || len(q.Args[2]) != len(val) {
			t.Fatalf("ReadRequest: %d args, %v", len(q.Args), err)
		}
		q.Release()
		if err := rr.ReadReply(&rp); err != nil || len(rp.Str) != len(val) {
			t.Fatalf("ReadReply: %d bytes, %v", len(rp.Str), err)
		}
		rp.Release()
	}
	once()
	n := bigbuftest.BytesPerCall(once)
	if n > 1024 {
		t.Errorf("reading and releasing a 100 KB request and reply allocates %d bytes; want at most 1 KiB", n)
	}
}

// TestReleasedBuffersIntact reads values of many sizes, some past the
// largest size class, from many goroutines at once in small reads, each
// released once checked: no value is changed by another's use of the memory
// it gave back.
func TestReleasedBuffersIntact(t *testing.T) {
	sizes := []int{0, 1, 100, bigbuf.Min - 3, bigbuf.Min, 100_000, 1 << 20, bigbuf.Max + 5}
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			var q Request
			var rp Reply
			for i := range 60 {
				n := sizes[rng.IntN(len(sizes))]
				if n > 1<<20 && i%10 != 0 {
					n = 300_000
				}
				val := bytes.Repeat([]byte{byte('a' + g)}, n)
				in := append(AppendRequest(nil, &Request{Args: [][]byte{[]byte("SET"), val}}), AppendBulk(nil, val)...)
				r := NewReader(iotest.HalfReader(bytes.NewReader(in)), Limits{MaxBulk: bigbuf.Max * 2, MaxSize: bigbuf.Max * 3})
				if err := r.ReadRequest(&q); err != nil || !bytes.Equal(q.Args[1], val) {
					errs <- fmt.Errorf("goroutine %d: request of a %d-byte value: %v, value intact %v", g, n, err, err == nil && bytes.Equal(q.Args[1], val))
					return
				}
				q.Release()
				if err := r.ReadReply(&rp); err != nil || !bytes.Equal(rp.Str, val) {
					errs <- fmt.Errorf("goroutine %d: reply of a %d-byte value: %v", g, n, err)
					return
				}
				rp.Release()
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
