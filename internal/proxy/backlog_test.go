//go:build linux

package proxy

import (
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/testprog"
)

// listenQueue returns the length of the listen queue of the socket listening
// on addr, as ss shows it: the Send-Q of a listening socket is its backlog.
func listenQueue(t *testing.T, ss string, addr net.Addr) int {
	t.Helper()
	port := strconv.Itoa(addr.(*net.TCPAddr).Port)
	out, err := exec.Command(ss, "-Hltn", "sport = :"+port).Output()
	if err != nil {
		t.Fatalf("ss -Hltn: %v", err)
	}
	f := strings.Fields(string(out)) // State Recv-Q Send-Q Local Peer
	if len(f) < 4 || f[0] != "LISTEN" {
		t.Fatalf("ss -Hltn sport = :%s = %q; want a listening socket", port, out)
	}
	n, err := strconv.Atoi(f[2])
	if err != nil {
		t.Fatalf("ss -Hltn sport = :%s = %q: Send-Q is not a number", port, out)
	}
	return n
}

// TestBacklog checks that a pool's backlog reaches listen(2), at start and on
// reload.
func TestBacklog(t *testing.T) {
	ss := testprog.LookPath(t, "ss")
	const yaml = "alpha:\n  listen: 127.0.0.1:22121\n  backlog: %d\n  servers: [127.0.0.1:1:1]\n"
	p := startProxy(t, strings.Replace(yaml, "%d", "37", 1))
	if got := listenQueue(t, ss, p.Addr("alpha")); got != 37 {
		t.Errorf("backlog: 37 listens with a queue of %d; want 37", got)
	}
	reloadAlpha(t, p, strings.Replace(yaml, "%d", "1000", 1))
	if got := listenQueue(t, ss, p.Addr("alpha")); got != 1000 {
		t.Errorf("backlog reloaded as 1000 listens with a queue of %d; want 1000", got)
	}
}
