package resp

import "github.com/chash-dev/chash/internal/bigbuf"

// Release gives q's memory back for reuse by other Requests and Readers
// (bigbuf) and clears q: for a request that held a large value, or many
// arguments, which q would otherwise keep. Its Args must not be used
// afterwards.
func (q *Request) Release() {
	q.giveBig()
	bigbuf.Give(q.data)
	args, ends, big := q.Args[:0], q.ends[:0], q.big[:0]
	if cap(args) > keptArgs || cap(ends) > keptArgs || cap(big) > keptArgs {
		args, ends, big = nil, nil, nil
	}
	*q = Request{Args: args, ends: ends, big: big}
}

// keptArgs bounds the arguments a released Request keeps room for.
const keptArgs = 1024

// Release is Request.Release for a reply: it gives rp's memory back and
// clears rp; Str and Bytes' result must not be used afterwards.
func (rp *Reply) Release() {
	bigbuf.Give(rp.raw)
	*rp = Reply{}
}
