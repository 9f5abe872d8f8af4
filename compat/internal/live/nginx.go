package live

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/chash-dev/chash/internal/testprog"
)

// NginxVersion returns nginx's version line ("nginx version: nginx/1.22.1").
func NginxVersion() string {
	bin, err := testprog.Find("nginx")
	if err != nil {
		return "unknown"
	}
	return Version(bin, "-v")
}

// NginxConf returns the nginx.conf Nginx runs in dir: a front end on listen
// proxying to upstream "up" ("hash $http_x_key consistent" over servers, with
// their weights), and for each server a virtual server on its address that
// answers with the server's address.
func NginxConf(dir, listen string, servers []Server) string {
	var b strings.Builder
	fmt.Fprintf(&b, "daemon off;\nmaster_process off;\nworker_processes 1;\npid %s;\nerror_log %s warn;\n",
		filepath.Join(dir, "nginx.pid"), filepath.Join(dir, "error.log"))
	b.WriteString("events { worker_connections 256; }\nhttp {\n  access_log off;\n  keepalive_requests 1000000;\n")
	for _, t := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		fmt.Fprintf(&b, "  %s_temp_path %s;\n", t, filepath.Join(dir, t))
	}
	b.WriteString("  upstream up {\n    hash $http_x_key consistent;\n")
	for _, s := range servers {
		fmt.Fprintf(&b, "    server %s weight=%d;\n", s.Addr(), s.Weight)
	}
	b.WriteString("  }\n")
	fmt.Fprintf(&b, "  server {\n    listen %s;\n    location / { proxy_pass http://up; proxy_next_upstream off; }\n  }\n", listen)
	for _, s := range servers {
		fmt.Fprintf(&b, "  server {\n    listen %s;\n    location / { return 200 %q; }\n  }\n", s.Addr(), s.Addr())
	}
	b.WriteString("}\n")
	return b.String()
}

// Nginx starts nginx in dir with NginxConf, sends one request per key with the key
// in header X-Key, and returns per key the index of the server that answered.
// Keys must not hold CR, LF, NUL or leading or trailing blanks, and must not be
// empty (nginx balances an empty key round robin).
func Nginx(dir string, servers []Server, keys [][]byte) ([]int, error) {
	port, err := testprog.FreePortOn("127.0.0.1")
	if err != nil {
		return nil, err
	}
	listen := "127.0.0.1:" + strconv.Itoa(port)
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(NginxConf(dir, listen, servers)), 0o644); err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	proc, err := start(testprog.Program{
		Name:  "nginx",
		Args:  []string{"-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log")},
		Ready: testprog.Listening(append([]string{listen}, addrs(servers)...)...),
	})
	if err != nil {
		return nil, err
	}
	defer proc.Stop()
	var (
		c net.Conn
		r *bufio.Reader
	)
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	var got strings.Builder
	for _, k := range keys {
		if c == nil {
			if c, err = net.DialTimeout("tcp", listen, Timeout); err != nil {
				return nil, fmt.Errorf("live: %w", err)
			}
			c.SetDeadline(time.Now().Add(6 * Timeout))
			r = bufio.NewReader(c)
		}
		if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: chash\r\nX-Key: %s\r\n\r\n", k); err != nil {
			return nil, fmt.Errorf("live: nginx: %w", err)
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			return nil, fmt.Errorf("live: nginx: key %q: %w", k, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			return nil, fmt.Errorf("live: nginx: key %q: %s %q %v", k, resp.Status, body, err)
		}
		got.Write(body)
		got.WriteByte('\n')
		if resp.Close {
			c.Close()
			c = nil
		}
	}
	return answers([]byte(got.String()), servers, len(keys), Server.Addr)
}
