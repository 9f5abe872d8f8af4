package hashfn

// sx returns b as C's (uint32_t)(char)b on x86-64, where char is signed: bytes
// >= 0x80 are sign-extended to 0xFFFFFF80..0xFFFFFFFF. twemproxy and libhashkit
// read keys through a const char * and convert each byte this way in several
// hashes, so keys with such bytes hash differently from a clean unsigned
// implementation. The functions that use sx say so; the quirk is kept on purpose.
//
// This is the x86-64 behaviour that deployed nutcracker binaries have. A build of
// the same C code where char is unsigned (arm64 Linux) does not sign-extend, and
// routes keys with bytes >= 0x80 differently from an x86-64 build.
func sx(b byte) uint32 {
	return uint32(int32(int8(b)))
}
