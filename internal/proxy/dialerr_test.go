package proxy

import (
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestDialErrorWords checks the words a client gets for each way a server
// connection fails, as twemproxy words them (strerror's), where chash said
// "Connection closed" for all but a few.
func TestDialErrorWords(t *testing.T) {
	op := func(errno syscall.Errno) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errno)}
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{op(syscall.ECONNREFUSED), "Connection refused"},
		{op(syscall.ECONNRESET), "Connection reset by peer"},
		{op(syscall.EHOSTUNREACH), "No route to host"},
		{op(syscall.ENETUNREACH), "Network is unreachable"},
		{op(syscall.EPIPE), "Broken pipe"},
		{op(syscall.ETIMEDOUT), "Connection timed out"},
		{op(syscall.EMFILE), "Too many open files"},
		{&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "cache9", IsNotFound: true}}, "Name or service not known"},
		{&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "server misbehaving", Name: "cache9", IsTemporary: true}}, "Temporary failure in name resolution"},
		{fmt.Errorf("read: %w", os.ErrClosed), "Connection closed"},
	} {
		if got := dialError(c.err).Error(); got != c.want {
			t.Errorf("dialError(%v) = %q; want %q", c.err, got, c.want)
		}
	}
}

// TestUnknownHostAnswered: a server whose host name does not resolve fails
// its requests with the lookup's failure, not "Connection closed".
func TestUnknownHostAnswered(t *testing.T) {
	p := startProxy(t, poolOf("auto_eject_hosts: false", []string{"cache.invalid:11211:1"}))
	c := dial(t, p.Addr("alpha").String())
	got := c.mustDo("get a\r\n")
	if got != "SERVER_ERROR Name or service not known\r\n" && got != "SERVER_ERROR Temporary failure in name resolution\r\n" {
		t.Errorf("get from a server named cache.invalid: %q; want the name's lookup failure", strings.TrimSpace(got))
	}
}
