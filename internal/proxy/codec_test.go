package proxy

import "testing"

// codecCase is a request and its server's reply, for benchmarkCodec.
type codecCase struct{ name, req, reply string }

// benchmarkCodec times what a codec does for one request on its way through
// the proxy, for each case: read the request, encode it for its server, read
// the reply and write the client's.
func benchmarkCodec(b *testing.B, cd codec, cases []codecCase) {
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			reqs, replies := &repeatReader{s: bc.req}, &repeatReader{s: bc.reply}
			cc, sc := cd.newClient(reqs), cd.newServer(replies)
			req, rep := cd.newRequest(), cd.newReply()
			var out, back []byte
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cc.read(req); err != nil {
					b.Fatal(err)
				}
				out = req.appendRequest(out[:0], nil, 0, rep)
				if err := sc.read(rep); err != nil {
					b.Fatal(err)
				}
				rep.lookups() // as the server connection counts hits
				back = req.appendReply(back[:0], rep)
			}
		})
	}
}
