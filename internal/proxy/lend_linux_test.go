package proxy

import (
	"bytes"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"
)

// TestRawWriteAll writes many parts, empty ones among them and more than one
// writev takes, to a peer that reads slowly, so that writes are cut short
// and go on once the socket takes more.
func TestRawWriteAll(t *testing.T) {
	a, b := tcpPair(t)
	a.SetWriteBuffer(16 << 10)
	// A write that goes wrong fails at its deadline rather than hang.
	a.SetWriteDeadline(time.Now().Add(20 * time.Second))
	b.SetReadDeadline(time.Now().Add(20 * time.Second))
	rw := socketIO(a).(*rawIO)
	rng := rand.New(rand.NewPCG(1, 2))
	var bufs [][]byte
	var want []byte
	for i := range 3000 {
		n := []int{0, 1, 7, 100, 3000}[rng.IntN(5)]
		if i%100 == 0 {
			n = 70_000 // larger than the socket's buffer
		}
		p := lentValue(0, i, n)
		bufs = append(bufs, p)
		want = append(want, p...)
	}
	got := make(chan []byte)
	go func() {
		var buf bytes.Buffer
		chunk := make([]byte, 32<<10)
		for buf.Len() < len(want) {
			n, err := b.Read(chunk)
			buf.Write(chunk[:n])
			if err != nil {
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
		got <- buf.Bytes()
	}()
	if err := rw.writeAll(bufs); err != nil {
		t.Fatalf("writeAll of %d bytes in %d parts: %v", len(want), 3000, err)
	}
	if g := <-got; !bytes.Equal(g, want) {
		t.Fatalf("the peer read %d bytes, not the %d written", len(g), len(want))
	}
	// A closed peer fails the write with net.Conn's words.
	b.Close()
	var err error
	for range 100 {
		if err = rw.writeAll([][]byte{make([]byte, 1<<20)}); err != nil {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), "write tcp") {
		t.Fatalf("writeAll to a closed peer: %v; want net.Conn's write error", err)
	}
}

// TestReadable: a server connection's reader and a client's source say how
// many bytes the socket holds (and a source those of its head too), so that
// a large value's buffer is sized at once; a stream that cannot tell says 0.
func TestReadable(t *testing.T) {
	a, b := tcpPair(t)
	if _, err := b.Write(make([]byte, 50_000)); err != nil {
		t.Fatal(err)
	}
	cr := &countingReader{r: socketIO(a)}
	got := 0
	for deadline := time.Now().Add(5 * time.Second); got != 50_000 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		got = cr.Readable()
	}
	if got != 50_000 {
		t.Fatalf("Readable = %d; want the 50,000 bytes sent", got)
	}
	src := clientSource{rw: socketIO(a)}
	src.take()
	defer src.drop()
	n, err := src.rw.Read(src.buf[:100])
	if err != nil {
		t.Fatal(err)
	}
	src.head = src.buf[10:n]
	if got := src.Readable(); got != 50_000-10 {
		t.Errorf("clientSource.Readable = %d; want %d (head and socket)", got, 50_000-10)
	}
	p, _ := net.Pipe()
	defer p.Close()
	if got := (&countingReader{r: socketIO(p)}).Readable(); got != 0 {
		t.Errorf("Readable of a pipe = %d; want 0", got)
	}
}
