package proxy

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
)

// TestRepliesBeforeRestOfRequest: a client that sends whole requests and the
// beginning of another (a large value still uploading) gets the replies to
// the whole ones at once, as from the server itself, not once the last
// request is complete; for Redis and memcached pools.
func TestRepliesBeforeRestOfRequest(t *testing.T) {
	for _, tt := range []struct {
		name, yaml     string
		whole, partial string // sent first: whole requests and a request begun
		reply, rest    string // the whole requests' replies; the rest of the partial request
		restReply      string
	}{
		{
			name: "redis", yaml: redisPoolYAML("", startRedisServers(t, 1)...),
			whole: "PING\r\n*2\r\n$3\r\nGET\r\n$1\r\nq\r\n", partial: "*3\r\n$3\r\nSET\r\n$1\r\nz\r\n$10\r\n01234",
			reply: "+PONG\r\n$-1\r\n", rest: "56789\r\n", restReply: "+OK\r\n",
		},
		{
			name: "memcached", yaml: poolYAML("", memcachedtest.Start(t)),
			whole: "version\r\nget q\r\n", partial: "set z 0 0 10\r\n01234",
			reply: "END\r\n", rest: "56789\r\n", restReply: "STORED\r\n",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := startProxy(t, tt.yaml)
			c, err := net.Dial("tcp", p.Addr("alpha").String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			br := bufio.NewReader(c)
			if _, err := c.Write([]byte(tt.whole + tt.partial)); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			var got strings.Builder
			for !strings.HasSuffix(got.String(), tt.reply) {
				line, err := br.ReadString('\n')
				got.WriteString(line)
				if err != nil {
					t.Fatalf("replies before the rest of the last request: %q, %v; want them to end with %q", got.String(), err, tt.reply)
				}
			}
			if _, err := c.Write([]byte(tt.rest)); err != nil {
				t.Fatal(err)
			}
			if line, err := br.ReadString('\n'); line != tt.restReply || err != nil {
				t.Errorf("reply to the last request = %q, %v; want %q", line, err, tt.restReply)
			}
		})
	}
}
