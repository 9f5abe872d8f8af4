package live

import (
	"fmt"
	"math/rand/v2"
	"unicode/utf8"

	"github.com/chash-dev/chash/internal/testprog"
)

// Keys returns n distinct random keys that memcached, nginx and the client
// programs accept: 1 to 40 bytes, no space or control byte. About one in ten carries
// a hash tag ("{user7}:name"), one in ten bytes >= 0x80: valid UTF-8 when utf8Only
// (for programs that see keys as strings), else arbitrary such bytes.
func Keys(r *rand.Rand, n int, utf8Only bool) [][]byte {
	const printable = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_:.{}/!#$%&()*+,;<=>?@[]^`|~'\""
	runes := []rune("éüßøñçåπλж中文字日本語한국어🙂🚀€")
	keys := make([][]byte, 0, n)
	seen := map[string]bool{}
	for len(keys) < n {
		var k []byte
		switch r.IntN(10) {
		case 0: // hash tag
			k = fmt.Appendf(nil, "{user%d}:%s", r.IntN(50), []string{"name", "mail", "cart", "x"}[r.IntN(4)])
		case 1: // bytes >= 0x80
			for range 1 + r.IntN(12) {
				switch {
				case r.IntN(3) == 0:
					k = append(k, printable[r.IntN(len(printable))])
				case utf8Only:
					k = utf8.AppendRune(k, runes[r.IntN(len(runes))])
				default:
					k = append(k, byte(0x80+r.IntN(0x80)))
				}
			}
		default:
			for range 1 + r.IntN(40) {
				k = append(k, printable[r.IntN(len(printable))])
			}
		}
		if !seen[string(k)] {
			seen[string(k)] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// ServerOpts shapes Servers.
type ServerOpts struct {
	Weights   bool // weights 1..5, else all 1
	Aliases   bool // about half the servers get twemproxy aliases of varied lengths
	Port11211 bool // about a third of the servers listen on port 11211
}

// Servers returns n servers on distinct random loopback addresses (so names differ
// in length and are in no sorted order), each on a port free now.
func Servers(r *rand.Rand, n int, o ServerOpts) ([]Server, error) {
	servers := make([]Server, n)
	used := map[string]bool{}
	for i := range servers {
		s := Server{Weight: 1}
		port := 0
		if o.Port11211 && r.IntN(3) == 0 {
			port = 11211
		}
		for {
			ip, err := LoopbackIP(r, max(port, 1024))
			if err != nil {
				return nil, err
			}
			if !used[ip] {
				used[ip] = true
				s.Host = ip
				break
			}
		}
		if port == 0 {
			p, err := testprog.FreePortOn(s.Host)
			if err != nil {
				return nil, err
			}
			port = p
		}
		s.Port = port
		if o.Weights {
			s.Weight = 1 + r.IntN(5)
		}
		if o.Aliases && r.IntN(2) == 0 {
			s.Alias = fmt.Sprintf("%s%d", []string{"s", "cache-", "memcached-prod-east-", "x"}[r.IntN(4)], i)
		}
		servers[i] = s
	}
	return servers, nil
}
