package membership_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/chash-dev/chash/internal/membership"
)

func ExampleParseURL() {
	u, err := membership.ParseURL("etcd://10.0.0.1:2379,10.0.0.2:2379/chash/cache/")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(u.Endpoints, u.Prefix)
	_, err = membership.ParseURL("etcd://10.0.0.1:2379/chash/cache")
	fmt.Println(err)
	// Output:
	// [10.0.0.1:2379 10.0.0.2:2379] /chash/cache/
	// membership: servers_from "etcd://10.0.0.1:2379/chash/cache": key prefix "/chash/cache" does not end in "/": it would also match "/chash/cache2/..."
}

// ExampleOpen follows a file of servers as a proxy follows a pool's
// servers_from: the first list, then each change.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "servers")
	os.WriteFile(path, []byte("# rack 1\n10.0.0.1:11211:1 cache-1\n"), 0o644)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	src, err := membership.Open(ctx, "file:"+path, membership.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	show := func(l membership.List) error {
		fmt.Print("revision ", l.Revision, ":")
		for _, s := range l.Servers {
			fmt.Print(" ", s.Name())
		}
		fmt.Println()
		return nil // a proxy would return UpdateServers' error
	}
	show(src.List())

	changed := make(chan struct{})
	go src.Run(ctx, func(l membership.List) error {
		defer close(changed)
		return show(l)
	})
	// As configuration tools write it: a new file renamed over the old.
	os.WriteFile(path+".tmp", []byte("10.0.0.1:11211:1 cache-1\n10.0.0.2:11211:1 cache-2\n"), 0o644)
	os.Rename(path+".tmp", path)
	<-changed
	// Output:
	// revision 1: cache-1
	// revision 2: cache-1 cache-2
}
