package jump

import "github.com/cespare/xxhash/v2"

func xxhashSum(s string) uint64 { return xxhash.Sum64String(s) }
