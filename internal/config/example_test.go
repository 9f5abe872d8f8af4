package config_test

import (
	"fmt"
	"log"

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
