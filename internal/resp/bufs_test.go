package resp

import (
	"bytes"
	"fmt"
	"io"
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

// TestTakeArg takes a large argument from a request: the caller gets the
// bytes read, the request no longer holds or counts them, and only
// arguments of BigArg bytes or more, each once, can be taken.
func TestTakeArg(t *testing.T) {
	val, small := bytes.Repeat([]byte("v"), 100_000), bytes.Repeat([]byte("s"), BigArg-1)
	in := AppendRequest(nil, &Request{Args: [][]byte{[]byte("HSET"), []byte("h"), []byte("f"), val, []byte("g"), small}})
	var q Request
	if err := NewReader(bytes.NewReader(in), Limits{}).ReadRequest(&q); err != nil {
		t.Fatal(err)
	}
	size := q.Size()
	for _, i := range []int{-1, 0, 1, 2, 5, 6} {
		if _, ok := q.TakeArg(i); ok {
			t.Errorf("TakeArg(%d) of a small argument (or none) took it", i)
		}
	}
	b, ok := q.TakeArg(3)
	if !ok || !bytes.Equal(b, val) || q.Args[3] != nil {
		t.Fatalf("TakeArg(3) = %d bytes, %v, Args[3] %d bytes; want the value, true, nil", len(b), ok, len(q.Args[3]))
	}
	if q.Size() != size-len(val) {
		t.Errorf("Size after TakeArg = %d; want %d", q.Size(), size-len(val))
	}
	if _, ok := q.TakeArg(3); ok {
		t.Error("TakeArg(3) took the argument twice")
	}
	if !bytes.Equal(q.Args[5], small) || string(q.Args[4]) != "g" {
		t.Error("the arguments after the one taken changed")
	}
	q.Reset()
	if len(q.big) != 0 || q.bigLen != 0 {
		t.Errorf("Reset kept %d large arguments (%d bytes)", len(q.big), q.bigLen)
	}
}

// readable is a stream that says how many of its bytes a read returns at
// once.
type readable struct{ n int }

func (r readable) Read(p []byte) (int, error) { return 0, nil }
func (r readable) Readable() int              { return r.n }

// TestGrowthReadable: a value that arrived whole, as its stream says
// (Readable), gets its buffer at once; one that did not grows by what
// arrived, at most twice that.
func TestGrowthReadable(t *testing.T) {
	const n = 100_000
	for _, tc := range []struct {
		rd   io.Reader
		want int
	}{
		{readable{n}, n},                // all there: the whole value
		{readable{n + 500}, n},          // and more
		{readable{30_000}, 16 << 10},    // part: the class below what arrived
		{readable{0}, 4 << 10},          // nothing yet: the buffer's size
		{bytes.NewReader(nil), 4 << 10}, // a stream that cannot tell
	} {
		r := NewReaderSize(tc.rd, Limits{}, 4<<10)
		if got := r.growth(nil, n, 1); got != tc.want {
			t.Errorf("growth for %d bytes over %T%v = %d; want %d", n, tc.rd, tc.rd, got, tc.want)
		}
	}
	// Small values do not ask.
	r := NewReaderSize(readable{1 << 20}, Limits{}, 4<<10)
	if got := r.growth(nil, 10_000, 1); got != 4<<10 {
		t.Errorf("growth for 10,000 bytes = %d; want the buffer's 4096", got)
	}
}
