package dist_test

import (
	"fmt"
	"log"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/dist"
)

func Example() {
	const conf = `
articles:
  distribution: seed
  points: 5
  servers:
   - 192.168.0.0:111:1
   - 192.168.0.1:111:1
   - 192.168.0.2:111:1
   - 192.168.0.3:111:1
   - 192.168.0.4:111:1
`
	f, err := config.Parse("nutcracker.yml", []byte(conf))
	if err != nil {
		log.Fatal(err)
	}
	pool, err := f.Pool("articles")
	if err != nil {
		log.Fatal(err)
	}
	r, err := dist.Build(pool, pool.Servers)
	if err != nil {
		log.Fatal(err)
	}
	for _, key := range []string{"127.0.0.1:1111", "221.226.0.1:2222", "10.211.0.1:3333"} {
		i, err := r.Lookup(pool.HashKey([]byte(key)))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(key, pool.Servers[i].Name())
	}
	// Output:
	// 127.0.0.1:1111 192.168.0.0:111
	// 221.226.0.1:2222 192.168.0.0:111
	// 10.211.0.1:3333 192.168.0.2:111
}

// A caller asks an entry what the distribution can do rather than compare its
// name.
func ExampleLookup() {
	for _, name := range []string{"chash", "jump", "random"} {
		e, err := dist.Lookup(name)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: weights %v, replicas %v, random %v, measured by %s\n", e.Name, e.Weights, e.Replicas, e.Random, e.Method)
	}
	_, err := dist.Lookup("ring")
	fmt.Println(err != nil)
	// Output:
	// chash: weights true, replicas true, random false, measured by arcs
	// jump: weights false, replicas false, random false, measured by sample
	// random: weights false, replicas false, random true, measured by none
	// true
}
