package proxy

import (
	"fmt"

	"github.com/chash-dev/chash/internal/redistest"
)

// redisPoolYAML returns a one-pool Redis configuration over the servers,
// named s1, s2, ... in order, so that a pool over other servers with the
// same names puts every key on the server of the same name.
func redisPoolYAML(extra string, servers ...*redistest.Server) string {
	lines := make([]string, len(servers))
	for i, s := range servers {
		lines[i] = fmt.Sprintf("%s:1 s%d", s.Addr, i+1)
	}
	return poolOf("redis: true\n"+extra, lines)
}
