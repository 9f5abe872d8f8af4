package benchmarks

import (
	"testing"

	"github.com/cespare/xxhash/v2"
	gojump "github.com/dgryski/go-jump"
	gomaglev "github.com/dgryski/go-maglev"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/balanced"
	"github.com/chash-dev/chash/bounded"
	"github.com/chash-dev/chash/jump"
	"github.com/chash-dev/chash/maglev"
	"github.com/chash-dev/chash/memento"
	"github.com/chash-dev/chash/multiprobe"
	"github.com/chash-dev/chash/rendezvous"
)

// The benchmarks of this file compare chash's alternative algorithms with their
// peers and with the cost of hashing a key, on the same 20-byte keys as the ring
// benchmarks. The targets are ratios at 1000 nodes:
//
//	BenchmarkMaglev/nodes=1000/impl=chash ≤ 1.5 × BenchmarkMaglev/nodes=1000/impl=hash-only
//	BenchmarkJumpBucket/nodes=1000/keys=fresh/impl=chash-jump ≤ .../impl=go-jump
//	BenchmarkJumpBucket/nodes=1000/keys=fresh/impl=chash-jumpback ≤ 1/3 × .../impl=chash-jump

// algNodes returns n nodes of weight 1 named as the ring benchmarks name them.
func algNodes(n int) []chash.Node {
	ns := make([]chash.Node, n)
	for i, name := range names(n) {
		ns[i] = chash.Node{Name: name, Weight: 1}
	}
	return ns
}

// hashedKeys are the 64-bit XXH64 hashes of keys, for the bucket functions,
// which take a hash rather than a key.
var hashedKeys = func() []uint64 {
	hs := make([]uint64, numKeys)
	for i, k := range keys {
		hs[i] = xxhash.Sum64String(k)
	}
	return hs
}()

// BenchmarkJumpBucket compares the bucket functions alone, on hashed keys:
// Lamping and Veach's jump hash in chash and in github.com/dgryski/go-jump,
// and chash's JumpBackHash.
//
// keys=fresh hashes a new key every time (SplitMix64 of a counter, a few
// cycles added to every implementation alike), as a stream of requests does.
// keys=4096 cycles through the hashes of the 4096 benchmark keys, as the ring
// benchmarks do; there the branch predictor learns part of each key's jump
// sequence and lets successive lookups overlap, which flatters jump hashing's
// loop about threefold.
func BenchmarkJumpBucket(b *testing.B) {
	impls := []struct {
		name string
		f    func(uint64, int) int
	}{
		{"go-jump", func(h uint64, n int) int { return int(gojump.Hash(h, n)) }},
		{"chash-jump", jump.Hash},
		{"chash-jumpback", jump.Back},
	}
	sized(b, func(b *testing.B, n int) {
		for _, impl := range impls {
			b.Run("keys=fresh/impl="+impl.name, func(b *testing.B) {
				var s int
				for i := 0; i < b.N; i++ {
					s += impl.f(splitmix(uint64(i)), n)
				}
				sinkN.Add(int64(s))
			})
		}
		for _, impl := range impls {
			b.Run("keys=4096/impl="+impl.name, func(b *testing.B) {
				var s int
				for i := 0; i < b.N; i++ {
					s += impl.f(hashedKeys[i&keyMask], n)
				}
				sinkN.Add(int64(s))
			})
		}
	})
}

// splitmix is SplitMix64's output function of x·golden: distinct, well-mixed
// hashes for distinct x.
func splitmix(x uint64) uint64 {
	z := x * 0x9E3779B97F4A7C15
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// BenchmarkMaglev compares a Maglev lookup, key hashing included, with hashing
// the key alone and with github.com/dgryski/go-maglev (whose tables take a
// hash; it is given XXH64 of the key). Both tables have 65537 entries. Each
// loop consumes its results the same way, adding them up in a register, so
// that the difference is the lookup's work and not the harness's.
func BenchmarkMaglev(b *testing.B) {
	sized(b, func(b *testing.B, n int) {
		b.Run("impl=hash-only", func(b *testing.B) {
			var s uint64
			for i := 0; i < b.N; i++ {
				s += xxhash.Sum64(byteKeys[i&keyMask])
			}
			sinkU64 = s
		})
		b.Run("impl=chash", func(b *testing.B) {
			t, err := maglev.New(maglev.Config{}, algNodes(n))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			var s int
			for i := 0; i < b.N; i++ {
				name, _ := t.Lookup(byteKeys[i&keyMask])
				s += len(name)
			}
			sinkN.Add(int64(s))
		})
		b.Run("impl=go-maglev", func(b *testing.B) {
			ns := names(n)
			t := gomaglev.New(ns, gomaglev.SmallM)
			b.ReportAllocs()
			b.ResetTimer()
			var s int
			for i := 0; i < b.N; i++ {
				s += len(ns[t.Lookup(xxhash.Sum64(byteKeys[i&keyMask]))])
			}
			sinkN.Add(int64(s))
		})
	})
}

// BenchmarkAlgorithms looks up one key per iteration, hashing included, in each
// of chash's algorithms over named nodes.
func BenchmarkAlgorithms(b *testing.B) {
	type router interface {
		Lookup(key []byte) (string, error)
	}
	algs := []struct {
		name  string
		build func([]chash.Node) (router, error)
	}{
		{"ring", func(ns []chash.Node) (router, error) { return chash.New(nil, ns) }},
		{"jump", func(ns []chash.Node) (router, error) { return jump.New(jump.Config{}, ns) }},
		{"jumpback", func(ns []chash.Node) (router, error) { return jump.New(jump.Config{Back: true}, ns) }},
		{"rendezvous", func(ns []chash.Node) (router, error) { return rendezvous.New(rendezvous.Config{}, ns) }},
		{"maglev", func(ns []chash.Node) (router, error) { return maglev.New(maglev.Config{}, ns) }},
		{"multiprobe", func(ns []chash.Node) (router, error) { return multiprobe.New(multiprobe.Config{}, ns) }},
		{"bounded", func(ns []chash.Node) (router, error) { return bounded.New(bounded.Config{}, ns) }},
		{"memento", func(ns []chash.Node) (router, error) {
			m, err := memento.New(memento.Config{}, ns)
			if err != nil {
				return nil, err
			}
			// A tenth of the nodes removed, from the middle of the list.
			for i := 0; i < len(ns)/10; i++ {
				if m, err = m.Remove(ns[i*10+5].Name); err != nil {
					return nil, err
				}
			}
			return m, nil
		}},
		{"balanced", func(ns []chash.Node) (router, error) { return balanced.New(balanced.Config{}, ns) }},
	}
	sized(b, func(b *testing.B, n int) {
		ns := algNodes(n)
		for _, alg := range algs {
			b.Run("alg="+alg.name, func(b *testing.B) {
				r, err := alg.build(ns)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					sinkString, sinkErr = r.Lookup(byteKeys[i&keyMask])
				}
			})
		}
	})
}

// TestAlgorithmsAgreeWithPeers checks that chash's jump hash is the peer's
// function, bucket for bucket.
func TestAlgorithmsAgreeWithPeers(t *testing.T) {
	for _, n := range []int{1, 2, 7, 100, 1000, 65536} {
		for _, h := range hashedKeys[:512] {
			if got, want := jump.Hash(h, n), int(gojump.Hash(h, n)); got != want {
				t.Fatalf("jump.Hash(%#x, %d) = %d; go-jump says %d", h, n, got, want)
			}
		}
	}
}
