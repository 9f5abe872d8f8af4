package hashfn_test

import (
	"fmt"
	"log"

	"github.com/chash-dev/chash/hashfn"
)

func Example() {
	// A pool configured with "hash: fnv1a_64", twemproxy's default.
	f, err := hashfn.Lookup("fnv1a_64")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("0x%08x\n", f([]byte("user:1000")))
	fmt.Printf("0x%08x\n", hashfn.String(f, "user:1000"))

	_, err = hashfn.Lookup("fnv1a-64")
	fmt.Println(err != nil)
	// Output:
	// 0xae7b4289
	// 0xae7b4289
	// true
}

func ExampleCRC32() {
	// twemproxy's crc32 keeps 15 bits of the CRC; crc32a is the full CRC-32.
	fmt.Printf("0x%08x 0x%08x\n", hashfn.CRC32([]byte("123456789")), hashfn.CRC32A([]byte("123456789")))
	// Output:
	// 0x00004bf4 0xcbf43926
}
