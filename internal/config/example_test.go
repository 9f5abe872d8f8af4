package config_test

import (
	"fmt"
	"log"
	"time"

	"github.com/chash-dev/chash/internal/config"
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
	fmt.Println(pool.Name, pool.Distribution, pool.Points, "points per unit of weight")
	for _, s := range pool.Servers {
		fmt.Printf("line %d: %s, weight %d\n", s.Line, s.Name(), s.Weight)
	}
	// Output:
	// articles seed 5 points per unit of weight
	// line 6: 192.168.0.0:111, weight 1
	// line 7: 192.168.0.1:111, weight 1
	// line 8: 192.168.0.2:111, weight 1
	// line 9: 192.168.0.3:111, weight 1
	// line 10: 192.168.0.4:111, weight 1
}

func ExampleParseServer() {
	s, err := config.ParseServer("10.0.0.1:11211:2 cache1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Host, s.Port, s.Weight, s.Alias, s.Name())
	_, err = config.ParseServer("10.0.0.1:11211")
	fmt.Println(err)
	// Output:
	// 10.0.0.1 11211 2 cache1 cache1
	// want "host:port:weight [name]" or "/path/to/socket:weight [name]"
}

func ExampleParse_error() {
	const conf = `alpha:
  distribution: chash
  servers:
   - 10.0.0.1:11211:1
   - 10.0.0.2:11211:x
`
	_, err := config.Parse("nutcracker.yml", []byte(conf))
	fmt.Println(err)
	// Output:
	// config: nutcracker.yml:5: pool "alpha": server "10.0.0.2:11211:x": weight "x" is not a positive integer
}

// ExampleMarshal builds a pool in code and writes it as a nutcracker.yml: the
// keys left at their defaults are left out.
func ExampleMarshal() {
	p := config.NewPool("cache")
	p.Listen = "127.0.0.1:22121"
	p.Hash = "md5"
	p.HashTag = "{}"
	p.Timeout = 400 * time.Millisecond
	p.Servers = []config.Server{
		{Host: "10.0.0.1", Port: 11211, Weight: 1},
		{Host: "10.0.0.2", Port: 11211, Weight: 2, Alias: "cache-2"},
	}
	out, err := config.Marshal(&config.File{Pools: []*config.Pool{p}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(out))
	// Output:
	// cache:
	//   listen: 127.0.0.1:22121
	//   hash: md5
	//   hash_tag: '{}'
	//   timeout: 400
	//   servers:
	//     - 10.0.0.1:11211:1
	//     - 10.0.0.2:11211:2 cache-2
}
