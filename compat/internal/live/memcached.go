package live

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/chash-dev/chash/internal/testprog"
)

// Memcached is a running memcached server.
type Memcached struct {
	// Addr is the server's "ip:port".
	Addr string
	*testprog.Proc
}

// StartMemcached starts memcached on addr ("ip:port", or the path of a Unix
// socket) and waits until it listens.
func StartMemcached(addr string) (*Memcached, error) {
	args := []string{"-s", addr}
	if !strings.HasPrefix(addr, "/") {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("live: memcached address %q: %w", addr, err)
		}
		args = []string{"-l", host, "-p", port, "-U", "0"}
	}
	args = append(args, "-m", "16", "-t", "1", "-c", "256")
	if os.Geteuid() == 0 {
		args = append(args, "-u", "root") // memcached refuses root without -u
	}
	p, err := start(testprog.Program{Name: "memcached", Args: args, Ready: testprog.Listening(addr)})
	if err != nil {
		return nil, err
	}
	return &Memcached{Addr: addr, Proc: p}, nil
}

// MemcachedVersion returns memcached's version line ("memcached 1.6.18").
func MemcachedVersion() string {
	bin, err := testprog.Find("memcached")
	if err != nil {
		return "unknown"
	}
	return Version(bin, "-V")
}

// Holders asks each server at addrs for every key and returns, per key, the index
// in addrs of the server that holds it. It is an error if a key is on no server or
// on several.
func Holders(addrs []string, keys [][]byte) ([]int, error) {
	where := make([]int, len(keys))
	for i := range where {
		where[i] = -1
	}
	index := make(map[string][]int, len(keys))
	for i, k := range keys {
		index[string(k)] = append(index[string(k)], i)
	}
	for s, addr := range addrs {
		found, err := present(addr, keys)
		if err != nil {
			return nil, err
		}
		for k := range found {
			for _, i := range index[k] {
				if where[i] >= 0 && where[i] != s {
					return nil, fmt.Errorf("live: key %q is on both %s and %s", keys[i], addrs[where[i]], addr)
				}
				where[i] = s
			}
		}
	}
	for i, w := range where {
		if w < 0 {
			return nil, fmt.Errorf("live: key %q is on none of the %d servers", keys[i], len(addrs))
		}
	}
	return where, nil
}

// present returns the keys that the memcached at addr holds.
func present(addr string, keys [][]byte) (map[string]bool, error) {
	c, err := dial(addr, Timeout)
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * Timeout))
	r := bufio.NewReader(c)
	found := make(map[string]bool)
	const batch = 100
	for i := 0; i < len(keys); i += batch {
		var req bytes.Buffer
		req.WriteString("get")
		for _, k := range keys[i:min(i+batch, len(keys))] {
			req.WriteByte(' ')
			req.Write(k)
		}
		req.WriteString("\r\n")
		if _, err := c.Write(req.Bytes()); err != nil {
			return nil, fmt.Errorf("live: %s: %w", addr, err)
		}
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return nil, fmt.Errorf("live: %s: %w", addr, err)
			}
			line = strings.TrimSuffix(line, "\r\n")
			if line == "END" {
				break
			}
			f := strings.Split(line, " ")
			if len(f) < 4 || f[0] != "VALUE" {
				return nil, fmt.Errorf("live: %s: unexpected reply %q", addr, line)
			}
			n, err := strconv.Atoi(f[3])
			if err != nil {
				return nil, fmt.Errorf("live: %s: unexpected reply %q", addr, line)
			}
			if _, err := r.Discard(n + 2); err != nil {
				return nil, fmt.Errorf("live: %s: %w", addr, err)
			}
			found[f[1]] = true
		}
	}
	return found, nil
}

// FlushAll empties the memcached servers at addrs.
func FlushAll(addrs []string) error {
	for _, addr := range addrs {
		if err := command(addr, "flush_all\r\n", "OK"); err != nil {
			return err
		}
	}
	return nil
}

func command(addr, req, want string) error {
	c, err := dial(addr, Timeout)
	if err != nil {
		return fmt.Errorf("live: %w", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(Timeout))
	if _, err := c.Write([]byte(req)); err != nil {
		return fmt.Errorf("live: %s: %w", addr, err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return fmt.Errorf("live: %s: %w", addr, err)
	}
	if got := strings.TrimSpace(line); got != want {
		return fmt.Errorf("live: %s: %q answered %q, want %q", addr, strings.TrimSpace(req), got, want)
	}
	return nil
}

// SetAll stores every key (its value is the key) through the memcached-protocol
// server at addr — memcached itself or a proxy such as nutcracker — pipelining
// requests in batches.
func SetAll(addr string, keys [][]byte) error {
	c, err := dial(addr, Timeout)
	if err != nil {
		return fmt.Errorf("live: %w", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(6 * Timeout))
	r := bufio.NewReader(c)
	const batch = 50
	for i := 0; i < len(keys); i += batch {
		var req bytes.Buffer
		part := keys[i:min(i+batch, len(keys))]
		for _, k := range part {
			fmt.Fprintf(&req, "set %s 0 0 %d\r\n%s\r\n", k, len(k), k)
		}
		if _, err := c.Write(req.Bytes()); err != nil {
			return fmt.Errorf("live: %s: %w", addr, err)
		}
		for _, k := range part {
			line, err := r.ReadString('\n')
			if err != nil {
				return fmt.Errorf("live: %s: set %q: %w", addr, k, err)
			}
			if line != "STORED\r\n" {
				return fmt.Errorf("live: %s: set %q: %q", addr, k, strings.TrimSpace(line))
			}
		}
	}
	return nil
}
