package resp_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/chash-dev/chash/internal/resp"
)

// A proxy's client loop: read each request, check it, answer what it answers
// itself, route the rest, and stop at a protocol error after answering it, as
// Redis does.
func Example() {
	route := func(key []byte) (int, error) { return len(key) % 3, nil } // a proxy's ring
	in := "PING\r\n*2\r\n$3\r\nGET\r\n$4\r\nuser\r\nKEYS *\r\nGET\r\nECHO \"hi there\"\r\n" +
		"RENAME ab cde\r\n*1\r\n$x\r\nPING\r\n"
	r := resp.NewReader(strings.NewReader(in), resp.Limits{})
	var q resp.Request
	var out []byte
	for {
		err := r.ReadRequest(&q)
		var e *resp.Error
		if errors.As(err, &e) {
			out = resp.AppendError(out, e.Reply) // then close the connection
			break
		}
		if err != nil {
			break
		}
		c, err := resp.Check(q.Args)
		if errors.As(err, &e) {
			out = resp.AppendError(out, e.Reply)
			continue
		}
		switch {
		case c.Name == "ping":
			out = resp.AppendSimple(out, "PONG")
		case c.Name == "echo":
			out = resp.AppendBulk(out, q.Args[1])
		case c.Route == resp.RouteKeys:
			srv, err := c.ServerOf(q.Args, route)
			if errors.As(err, &e) {
				out = resp.AppendError(out, e.Reply)
				continue
			}
			out = resp.AppendSimple(out, fmt.Sprintf("to server %d", srv))
		}
	}
	fmt.Printf("%s", strings.ReplaceAll(string(out), "\r\n", "\n"))
	// Output:
	// +PONG
	// +to server 1
	// -ERR command 'keys' is not supported by the proxy
	// -ERR wrong number of arguments for 'get' command
	// $8
	// hi there
	// -ERR keys of 'rename' are on different servers
	// -ERR Protocol error: invalid bulk length
}

// Split sends an MGET to the servers of its keys and merges their replies in
// the order of the keys.
func ExampleSplit() {
	args := [][]byte{[]byte("MGET"), []byte("apple"), []byte("banana"), []byte("avocado")}
	c, _ := resp.Check(args)
	var s resp.Split
	s.Build(c, args, func(key []byte) (int, error) { return int(key[0] - 'a'), nil }) // a to 0, b to 1
	var replies []*resp.Reply
	for _, sub := range s.Subs {
		fmt.Printf("server %d: %q\n", sub.Server, sub.Request)
		var rp resp.Reply
		answer := map[int]string{0: "*2\r\n$3\r\nred\r\n$-1\r\n", 1: "*1\r\n$6\r\nyellow\r\n"}[sub.Server]
		resp.NewReader(strings.NewReader(answer), resp.Limits{}).ReadReply(&rp)
		replies = append(replies, &rp)
	}
	fmt.Printf("client: %q\n", s.Merge(nil, replies))
	// Output:
	// server 0: "*3\r\n$4\r\nMGET\r\n$5\r\napple\r\n$7\r\navocado\r\n"
	// server 1: "*2\r\n$4\r\nMGET\r\n$6\r\nbanana\r\n"
	// client: "*3\r\n$3\r\nred\r\n$6\r\nyellow\r\n$-1\r\n"
}

func ExampleCommand_AppendKeys() {
	args := strings.Fields("EVAL script 2 {user}:a {user}:b arg")
	var bargs [][]byte
	for _, a := range args {
		bargs = append(bargs, []byte(a))
	}
	c := resp.Lookup(bargs[0])
	keys, ok := c.AppendKeys(nil, bargs)
	fmt.Println(c.Name, c.Route, keys, ok)
	// Output:
	// eval keys [3 4] true
}
