package memcache_test

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/chash-dev/chash/internal/memcache"
)

// A set whose key holds a NUL byte, with a value that reads as a command:
// memcached would stop the line at the NUL, refuse "set k" and run flush_all.
// The Reader refuses the set, skips its value and reads on.
func ExampleReader_ReadRequest() {
	in := "set k\x00 0 0 9\r\nflush_all\r\nget  k\r\n"
	r := memcache.NewReader(strings.NewReader(in), memcache.Limits{})
	var req memcache.Request
	for {
		err := r.ReadRequest(&req)
		var e *memcache.Error
		switch {
		case errors.As(err, &e):
			fmt.Printf("refused: %s\n", e.Reply)
			if e.Fatal {
				return
			}
			continue
		case err == io.EOF:
			return
		case err != nil:
			fmt.Println(err)
			return
		}
		fmt.Printf("read: %q\n", memcache.AppendRequest(nil, &req))
	}
	// Output:
	// refused: CLIENT_ERROR bad command line format
	// read: "get k\r\n"
}

// A reply is read against the request it answers: a VALUE for a key the get
// did not ask for means the connection is out of step.
func ExampleReader_ReadReply() {
	var req memcache.Request
	memcache.NewReader(strings.NewReader("get a b\r\n"), memcache.Limits{}).ReadRequest(&req)
	for _, reply := range []string{
		"VALUE b 0 2\r\nhi\r\nEND\r\n",
		"VALUE c 0 2\r\nhi\r\nEND\r\n",
	} {
		var resp memcache.Response
		err := memcache.NewReader(strings.NewReader(reply), memcache.Limits{}).ReadReply(&resp, &req)
		fmt.Printf("%d items, %v\n", len(resp.Items), err)
	}
	// Output:
	// 1 items, <nil>
	// 0 items, memcache: VALUE of a key not asked for: "VALUE c 0 2"
}

// A request built in code is held to the rules ReadRequest reads by before it
// is written: memcached would end this key's line at the NUL byte.
func ExampleRequest_Validate() {
	for _, key := range []string{"user:1", "user:\x001"} {
		req := memcache.Request{Command: memcache.CmdSet, Keys: [][]byte{[]byte(key)}, Value: []byte("hi")}
		if err := req.Validate(); err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%q\n", memcache.AppendRequest(nil, &req))
	}
	// Output:
	// "set user:1 0 0 2\r\nhi\r\n"
	// memcache: CLIENT_ERROR bad command line format: "set user:\x001"
}

// A meta request in quiet mode is followed by mn: memcached answers the mn
// with MN, after the request's reply if its quiet mode let one through.
func ExampleReader_ReadReply_quiet() {
	var req memcache.Request
	memcache.NewReader(strings.NewReader("mg k v q\r\n"), memcache.Limits{}).ReadRequest(&req)
	for _, reply := range []string{"MN\r\n", "VA 2\r\nhi\r\nMN\r\n"} {
		var resp memcache.Response
		err := memcache.NewReader(strings.NewReader(reply), memcache.Limits{}).ReadReply(&resp, &req)
		fmt.Printf("quiet %v: %q, %v\n", resp.Quiet, memcache.AppendResponse(nil, &resp), err)
	}
	// Output:
	// quiet true: "", <nil>
	// quiet false: "VA 2\r\nhi\r\n", <nil>
}
