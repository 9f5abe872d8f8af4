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

// KetamaPoints appends to dst the four ring points that ketama derives from one
// label (twemproxy src/hashkit/nc_ketama.c, ketama_hash with alignment 0..3;
// libmemcached's weighted continuum does the same): for a = 0..3, bytes 4a..4a+3
// of MD5(label) read little-endian. The first of them equals MD5(label).
//
// KetamaPoints allocates nothing when dst has room for four more points.
func KetamaPoints(dst []uint32, label []byte) []uint32 {
	d := md5.Sum(label)
	return append(dst,
		binary.LittleEndian.Uint32(d[0:4]),
		binary.LittleEndian.Uint32(d[4:8]),
		binary.LittleEndian.Uint32(d[8:12]),
		binary.LittleEndian.Uint32(d[12:16]),
	)
}
