package membership

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// Protocols are the protocols CheckServer speaks.
var Protocols = []string{"memcached", "redis"}

// CheckServer asks the server of a server line, "host:port:weight [name]",
// whether it answers, as a client of its protocol would, within timeout:
// memcached's version, or Redis's PING, answered PONG, or NOAUTH by a
// server that wants a password (it answers; the proxies give it theirs). It
// returns nil if the server answers, else why not: a refused or timed-out
// connection, a server that accepts and says nothing (frozen), or one that
// answers otherwise (a Redis still loading its data: LOADING).
func CheckServer(ctx context.Context, line, protocol string, timeout time.Duration) error {
	var req, want string
	switch protocol {
	case "memcached":
		req, want = "version\r\n", "VERSION "
	case "redis":
		req, want = "PING\r\n", "+PONG"
	default:
		return fmt.Errorf("membership: check: protocol %q is unknown (known: %s)", protocol, strings.Join(Protocols, ", "))
	}
	return askServer(ctx, line, protocol, req, want, timeout)
}

// FlushServer empties the memcached server of a server line with flush_all,
// within timeout: a server that comes back after it was taken out of the
// proxies' lists may hold values written over or deleted meanwhile.
func FlushServer(ctx context.Context, line string, timeout time.Duration) error {
	return askServer(ctx, line, "memcached", "flush_all\r\n", "OK", timeout)
}

// askServer sends req to the server of line and wants a reply line that
// begins with want (for redis, NOAUTH too).
func askServer(ctx context.Context, line, protocol, req, want string, timeout time.Duration) error {
	s, err := parseLine(strings.TrimSpace(line))
	if err != nil {
		return fmt.Errorf("membership: check: %w", err)
	}
	network, addr := "tcp", net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	if s.Port == 0 {
		network, addr = "unix", s.Host
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return fmt.Errorf("%s server %s: %w", protocol, s.Name(), err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	reply, err := ask(conn, req)
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return fmt.Errorf("%s server %s: %s answered with a line of more than 256 bytes", protocol, s.Name(), strings.TrimSpace(req))
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%s server %s: closed the connection without answering %s", protocol, s.Name(), strings.TrimSpace(req))
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("%s server %s: no answer to %s within %v", protocol, s.Name(), strings.TrimSpace(req), timeout)
	case err != nil:
		return fmt.Errorf("%s server %s: %w", protocol, s.Name(), err)
	case strings.HasPrefix(reply, want), protocol == "redis" && strings.HasPrefix(reply, "-NOAUTH"):
		return nil
	}
	return fmt.Errorf("%s server %s: %s answered %q", protocol, s.Name(), strings.TrimSpace(req), reply)
}

// ask writes req and reads one line of reply, without its line end.
func ask(conn net.Conn, req string) (string, error) {
	if _, err := conn.Write([]byte(req)); err != nil {
		return "", err
	}
	line, err := bufio.NewReaderSize(conn, 256).ReadSlice('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(line), "\r\n"), nil
}
