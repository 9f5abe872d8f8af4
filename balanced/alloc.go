package balanced

import (
	"cmp"
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// An allocator holds the tokens of a ring while it grows. Each token owns the
// arc from the previous token (exclusive) to itself (inclusive), so a token
// placed inside an arc takes the arc's first part from the arc's owner and
// leaves everything else alone. Loads are exact: arc lengths in positions.
type allocator struct {
	pos, start []uint32 // token t owns (start[t], pos[t]]
	owner      []int32
	names      []string
	weight     []uint64
	load       []uint64  // positions owned by each node
	tokens     [][]int32 // each node's tokens
	heap       []int32   // nodes, most loaded per unit of weight first
	at         []int     // each node's index in heap
}

// arc returns the length of token t's arc; a lone token owns the whole ring.
func (a *allocator) arc(t int32) uint64 {
	if d := a.pos[t] - a.start[t]; d != 0 {
		return uint64(d)
	}
	return 1 << 32
}

// heavier reports whether node i carries more load per unit of weight than
// node j, ties going to the name that sorts first, so that the result does not
// depend on the order the allocator learnt the nodes in.
func (a *allocator) heavier(i, j int32) bool {
	hi1, lo1 := bits.Mul64(a.load[i], a.weight[j])
	hi2, lo2 := bits.Mul64(a.load[j], a.weight[i])
	if hi1 != hi2 {
		return hi1 > hi2
	}
	if lo1 != lo2 {
		return lo1 > lo2
	}
	return a.names[i] < a.names[j]
}

// addNode registers a node with no tokens yet and returns its index.
func (a *allocator) addNode(name string, weight int) int32 {
	i := int32(len(a.names))
	a.names = append(a.names, name)
	a.weight = append(a.weight, uint64(weight))
	a.load = append(a.load, 0)
	a.tokens = append(a.tokens, nil)
	a.at = append(a.at, -1)
	return i
}

// addToken records a token of node o at p owning (start, p].
func (a *allocator) addToken(o int32, p, start uint32) {
	t := int32(len(a.pos))
	a.pos = append(a.pos, p)
	a.start = append(a.start, start)
	a.owner = append(a.owner, o)
	a.tokens[o] = append(a.tokens[o], t)
}

// join gives node o (registered, with no tokens) its k tokens. The first node
// of a ring gets k evenly spaced tokens from a position hashed from its name.
// A later node takes its fair share, 2^32·w/W, in k pieces: each piece is
// taken from the node then most loaded per unit of weight, out of its longest
// arc, and is the share still to take divided by the pieces still to place,
// or the arc less one position if that is shorter.
func (a *allocator) join(o int32, k int) {
	if len(a.pos) == 0 {
		off := uint32(xxhash.Sum64String(a.names[o]))
		for j := range k {
			p := off + uint32(uint64(j)<<32/uint64(k))
			prev := off + uint32(uint64(j+k-1)%uint64(k)<<32/uint64(k))
			a.addToken(o, p, prev)
		}
		a.load[o] = 1 << 32
		a.push(o)
		return
	}
	var total uint64
	for _, w := range a.weight {
		total += w
	}
	hi, lo := bits.Mul64(1<<32, a.weight[o])
	share, _ := bits.Div64(hi, lo, total)
	for r := uint64(k); r > 0; r-- {
		x := a.heap[0]
		t := a.longest(x)
		l := a.arc(t)
		if l < 2 {
			// Cannot happen within maxTokens: x never gains or loses tokens
			// after its own join, so its longest arc is at least
			// load/tokens ≥ 2^32/(total tokens) ≥ 256 positions.
			break
		}
		take := min((share+r-1)/r, l-1)
		if take == 0 {
			take = 1
		}
		p := a.start[t] + uint32(take)
		a.addToken(o, p, a.start[t])
		a.start[t] = p
		a.load[x] -= take
		a.load[o] += take
		share -= min(take, share)
		a.down(0)
	}
	a.push(o)
}

// longest returns node x's token with the longest arc, the lowest position
// among equals.
func (a *allocator) longest(x int32) int32 {
	best := a.tokens[x][0]
	for _, t := range a.tokens[x][1:] {
		if c := cmp.Compare(a.arc(t), a.arc(best)); c > 0 || c == 0 && a.pos[t] < a.pos[best] {
			best = t
		}
	}
	return best
}

func (a *allocator) push(o int32) {
	a.at[o] = len(a.heap)
	a.heap = append(a.heap, o)
	a.up(len(a.heap) - 1)
}

func (a *allocator) swap(i, j int) {
	a.heap[i], a.heap[j] = a.heap[j], a.heap[i]
	a.at[a.heap[i]], a.at[a.heap[j]] = i, j
}

func (a *allocator) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !a.heavier(a.heap[i], a.heap[p]) {
			return
		}
		a.swap(i, p)
		i = p
	}
}

func (a *allocator) down(i int) {
	for {
		c := 2*i + 1
		if c >= len(a.heap) {
			return
		}
		if c+1 < len(a.heap) && a.heavier(a.heap[c+1], a.heap[c]) {
			c++
		}
		if !a.heavier(a.heap[c], a.heap[i]) {
			return
		}
		a.swap(i, c)
		i = c
	}
}
