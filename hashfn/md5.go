package hashfn

import (
	"crypto/md5"
	"encoding/binary"
)

// MD5 is twemproxy's "md5" key hash (src/hashkit/nc_md5.c, hash_md5): bytes 0-3
// of the MD5 digest of key, read little-endian. It is also libmemcached's
// HASHKIT_HASH_MD5 and the key hash of libketama. MD5 of the empty key is hashed
// like any other (0xd98c1dd4); twemproxy itself never calls a key hash for an empty
// key (it routes such keys with hash 0), which is the ring's business, not this
// function's.
func MD5(key []byte) uint32 {
	d := md5.Sum(key)
	return binary.LittleEndian.Uint32(d[0:4])
}
