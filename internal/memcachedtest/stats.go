package memcachedtest

import (
	"fmt"
	"strings"
)

// ParseStats reads a reply to memcached's stats, "STAT name value" lines and
// END, from memcached or a proxy's data port, into a map by name.
func ParseStats(reply string) (map[string]string, error) {
	body, ok := strings.CutSuffix(reply, "END\r\n")
	if !ok {
		return nil, fmt.Errorf("stats answered %q: want STAT lines and END", reply)
	}
	stats := map[string]string{}
	for _, l := range strings.Split(body, "\r\n") {
		if l == "" {
			continue
		}
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != "STAT" {
			return nil, fmt.Errorf("stats answered %q: line %q is no STAT line", reply, l)
		}
		stats[f[1]] = f[2]
	}
	return stats, nil
}
