package benchmarks

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/buraksezer/consistent"
	"github.com/cespare/xxhash/v2"
	"github.com/dgryski/go-jump"
	"github.com/dgryski/go-maglev"
	"github.com/golang/groupcache/consistenthash"
	lafikl "github.com/lafikl/consistent"
	"github.com/serialx/hashring"
	stathat "stathat.com/c/consistent"

	"github.com/chash-dev/chash"
)

// points is the number of points (virtual nodes, replicas) per node on every ring
// that lets us choose it: chash's default, and ketama's.
const points = 160

// sizes are the ring sizes, in nodes, of the sized benchmarks.
var sizes = []int{10, 100, 1000}

// bigRing is the size of the ring the update, replica-less and memory benchmarks
// use: 1000 nodes × 160 points, the size issue 2's targets are stated for.
const bigRing = 1000

// numKeys lookup keys of keyLen bytes, generated once; benchmarks rotate through
// them so that every lookup hashes a key the CPU has not just hashed.
const (
	numKeys = 4096 // a power of two: i&(numKeys-1) picks the next key
	keyLen  = 20
)

var (
	keys     = makeKeys()
	byteKeys = bytesOf(keys)
)

func makeKeys() []string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_"
	rng := rand.New(rand.NewPCG(1, 2))
	ks := make([]string, numKeys)
	buf := make([]byte, keyLen)
	for i := range ks {
		for j := range buf {
			buf[j] = alphabet[rng.IntN(len(alphabet))]
		}
		ks[i] = string(buf)
	}
	return ks
}

func bytesOf(ss []string) [][]byte {
	bs := make([][]byte, len(ss))
	for i, s := range ss {
		bs[i] = []byte(s)
	}
	return bs
}

// names returns n node names shaped like memcached servers.
func names(n int) []string {
	ns := make([]string, n)
	for i := range ns {
		ns[i] = fmt.Sprintf("10.0.%d.%d:11211", i/250, i%250)
	}
	return ns
}

// shared returns the ring of n nodes that lib's build function makes, building it
// on first use and keeping it for the rest of the process. Building some peers'
// 1000-node rings takes seconds, and a benchmark function runs several times
// (once to size b.N, then for -count); the update benchmarks restore every ring
// they change, so sharing is safe.
func shared[T any](lib string, n int, build func([]string) T) T {
	return sharedBuild(lib, n, build).ring.(T)
}

// A built ring and the heap it retained when it was built.
type built struct {
	ring     any
	retained int64 // bytes; see retained
}

// sharedBuild is shared, returning also the heap the ring retained when it was
// built, measured then.
func sharedBuild[T any](lib string, n int, build func([]string) T) built {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	key := fmt.Sprintf("%s/%d", lib, n)
	if b, ok := sharedRings[key]; ok {
		return b
	}
	ns := names(n)
	var r T
	b := built{retained: retained(func() { r = build(ns) })}
	runtime.KeepAlive(ns)
	b.ring = r
	sharedRings[key] = b
	return b
}

var (
	sharedMu    sync.Mutex
	sharedRings = map[string]built{}
)

// retained runs build and returns the bytes of heap that what it built keeps
// alive: HeapAlloc after a full collection with the result alive, less HeapAlloc
// after a full collection before build ran. Whatever build's caller made before
// (node names) is not counted; everything the library allocates and keeps is.
// The caller must keep the result alive after retained returns.
func retained(build func()) int64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	build()
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

// extraNode is the node the Add benchmarks add; names never returns it.
const extraNode = "10.1.0.0:11211"

// chash: Standard{} scheme, the default: xxh64 keys, 160 points per unit of
// weight; every node has weight 1.
func newChash(names []string) *chash.Ring {
	ns := make([]chash.Node, len(names))
	for i, n := range names {
		ns[i] = chash.Node{Name: n, Weight: 1}
	}
	r, err := chash.New(chash.Standard{}, ns)
	if err != nil {
		panic(err) // the names are valid and distinct
	}
	return r
}

// stathat.com/c/consistent v1.0.0: NumberOfReplicas = 160 (its default is 20).
// Points and keys are hashed with CRC-32 (IEEE); reads take an RWMutex. Every Add
// and Remove rebuilds the sorted array from its map and re-sorts it.
func newStathat(names []string) *stathat.Consistent {
	c := stathat.New()
	c.NumberOfReplicas = points
	for _, n := range names {
		c.Add(n)
	}
	return c
}

// github.com/buraksezer/consistent v0.10.0: ReplicationFactor = 160 (default 20),
// Load = 1.25 (the default) and PartitionCount = 7919, the 1000th prime: the
// default, 271, panics ("not enough room to distribute partitions") once there are
// more members than partitions. It requires a Hasher; we give it xxhash, as its
// README does. A lookup hashes the key to a partition (hash mod PartitionCount) and
// reads the partition's owner from a map under an RWMutex; the ring itself is only
// consulted when partitions are redistributed, which every Add and Remove does.
func newBuraksezer(names []string) *consistent.Consistent {
	ms := make([]consistent.Member, len(names))
	for i, n := range names {
		ms[i] = member(n)
	}
	return consistent.New(ms, buraksezerConfig)
}

var buraksezerConfig = consistent.Config{
	Hasher:            xxhasher{},
	PartitionCount:    7919,
	ReplicationFactor: points,
	Load:              1.25,
}

type member string

func (m member) String() string { return string(m) }

type xxhasher struct{}

func (xxhasher) Sum64(b []byte) uint64 { return xxhash.Sum64(b) }

// github.com/serialx/hashring (pseudo-version pinned in go.mod): it has no replica
// setting; a node gets one point per unit of weight, so every node has weight 160.
// Its default hash is MD5, positions are 64-bit keys behind an interface, and Add
// and Remove return a new ring built from scratch (every point re-hashed, all
// re-sorted).
func newSerialx(names []string) *hashring.HashRing {
	w := make(map[string]int, len(names))
	for _, n := range names {
		w[n] = points
	}
	return hashring.NewWithWeights(w)
}

// github.com/golang/groupcache/consistenthash (pseudo-version pinned in go.mod):
// replicas = 160, its default hash (CRC-32 IEEE). It has no Remove and is not safe
// for concurrent use with Add.
func newGroupcache(names []string) *consistenthash.Map {
	m := consistenthash.New(points, nil)
	m.Add(names...)
	return m
}

// github.com/lafikl/consistent (pseudo-version pinned in go.mod): its replication
// factor is a constant, 10, that cannot be changed, so its rings have 10 points
// per node, not 160: it does 1/16 of the others' work in builds and updates and
// searches a smaller array. Points and keys are hashed with BLAKE2b-512; reads take
// an RWMutex; every Add re-sorts the whole array.
func newLafikl(names []string) *lafikl.Consistent {
	c := lafikl.New()
	for _, n := range names {
		c.Add(n)
	}
	return c
}

const lafiklPoints = 10

// github.com/dgryski/go-maglev (pseudo-version pinned in go.mod): a lookup table,
// not a ring. Table size M = maglev.BigM = 655373 for every size, at least 100×N
// for N ≤ 1000 as the Maglev paper advises. It takes a 64-bit key hash, so keys are
// hashed with xxhash; Lookup returns a node index, which we turn into the name.
func newMaglev(names []string) *maglev.Table {
	return maglev.New(names, maglev.BigM)
}

// github.com/dgryski/go-jump (pseudo-version pinned in go.mod): no state at all;
// keys are hashed with xxhash and the bucket index turned into the name. It cannot
// remove an arbitrary node, only the last bucket, so it has no build, update or
// memory benchmarks.
func jumpLookup(names []string, key string) string {
	return names[jump.Hash(xxhash.Sum64String(key), len(names))]
}

// go-ketama (github.com/dgryski/go-ketama) is not here: the module proxy this
// suite is built against serves none of its versions (its version list, and its
// latest commit by hash, are refused), so it cannot be pinned.

// TestLookupsReturnMembers checks that every library is set up so that its
// lookups return one of the nodes, so that the benchmarks time real work.
func TestLookupsReturnMembers(t *testing.T) {
	for _, n := range sizes {
		ns := names(n)
		ch := shared("chash", n, newChash)
		st := shared("stathat", n, newStathat)
		bs := shared("buraksezer", n, newBuraksezer)
		sx := shared("serialx", n, newSerialx)
		gc := shared("groupcache", n, newGroupcache)
		lf := shared("lafikl", n, newLafikl)
		mg := shared("maglev", n, newMaglev)
		for _, k := range keys[:64] {
			got := map[string]string{}
			got["chash"], _ = ch.LookupString(k)
			got["stathat"], _ = st.Get(k)
			got["buraksezer"] = bs.LocateKey([]byte(k)).String()
			got["serialx"], _ = sx.GetNode(k)
			got["groupcache"] = gc.Get(k)
			got["lafikl"], _ = lf.Get(k)
			got["maglev"] = ns[mg.Lookup(xxhash.Sum64String(k))]
			got["jump"] = jumpLookup(ns, k)
			for lib, name := range got {
				if !slices.Contains(ns, name) {
					t.Errorf("%s, %d nodes: lookup(%q) = %q; want a node", lib, n, k, name)
				}
			}
			reps, _ := ch.AppendNString(nil, k, 3)
			if want := min(3, n); len(reps) != want {
				t.Errorf("chash, %d nodes: AppendNString(%q, 3) has %d names; want %d", n, k, len(reps), want)
			}
		}
	}
}
