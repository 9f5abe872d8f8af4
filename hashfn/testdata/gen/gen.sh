#!/bin/sh
# gen.sh regenerates hashfn/testdata/golden.tsv from the programs that define each
# hash, so that the vectors are theirs and not ours:
#
#   twemproxy's twelve hashes: twemproxy 0.5.0's own src/hashkit/nc_*.c, taken from
#     Debian's nutcracker source package (checked by its SHA-256) and compiled with
#     gcc on x86-64, where char is signed as on the deployed nutcracker;
#     cross-checked against Debian's libhashkit (libmemcached) and zlib;
#   xxh64: Debian's libxxhash;
#   java_fnv1_32: the seed articles' Java getHash, run by OpenJDK;
#   java_hashcode, java_hashcode_spread: OpenJDK's own String.hashCode() and the 001
#     seed article's rehash of it.
#
# Usage, from the module root, on Debian 12 (bookworm) x86-64 with a deb-src entry
# for bookworm main in the apt sources:
#
#   apt-get install -y gcc libmemcached-dev libxxhash-dev zlib1g-dev openjdk-17-jdk-headless
#   sh hashfn/testdata/gen/gen.sh > hashfn/testdata/golden.tsv
set -eu

here=$(cd "$(dirname "$0")" && pwd)
orig=nutcracker_0.5.0+dfsg.orig.tar.xz
origsum=10aef7d55e3c18236b9b1bf06b4fa8f1593e1ea7a2bcb5ab30113811cd5d1351

if [ "$(uname -m)" != x86_64 ]; then
	echo "gen.sh: needs x86-64 (signed char), not $(uname -m)" >&2
	exit 1
fi
for pkg in gcc libmemcached-dev libxxhash-dev zlib1g-dev; do
	dpkg-query -W "$pkg" >/dev/null 2>&1 || { echo "gen.sh: install $pkg" >&2; exit 1; }
done
command -v java >/dev/null || { echo "gen.sh: install openjdk-17-jdk-headless" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

# apt-get source may fail to fetch Debian's packaging tarball; only the upstream
# tarball is needed, and its checksum is checked here.
apt-get source --download-only nutcracker=0.5.0+dfsg-2 >apt.log 2>&1 || true
if ! echo "$origsum  $orig" | sha256sum -c - >/dev/null 2>&1; then
	cat apt.log >&2
	echo "gen.sh: could not fetch $orig with sha256 $origsum" >&2
	exit 1
fi
tar xf "$orig"

# nc_core.h pulls in all of nutcracker; the hash files need only these.
mkdir shim
printf '#include <stddef.h>\n#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n' >shim/nc_core.h
for f in md5 crc16 crc32 fnv hsieh jenkins murmur one_at_a_time; do
	gcc -O2 -w -Ishim -c "twemproxy-0.5.0/src/hashkit/nc_$f.c" -o "nc_$f.o"
done
gcc -O2 -Wall -Wextra -o golden "$here/golden.c" nc_*.o -lhashkit -lxxhash -lz

ver() { dpkg-query -W -f '${Package} ${Version}' "$1"; }
cat <<HEADER
# Golden vectors for package hashfn: name TAB key TAB value, read by golden_test.go.
# key: Go-quoted string, or hex:<bytes>; value: the 32-bit hash in hex.
# Produced by hashfn/testdata/gen/gen.sh (golden.c, JavaFNV.java, JavaHashCode.java) on $(uname -m) (signed char):
#   sh hashfn/testdata/gen/gen.sh > hashfn/testdata/golden.tsv
# from:
#   twemproxy: 0.5.0 src/hashkit/nc_*.c of Debian's $orig
#     (sha256 $origsum), gcc $(gcc -dumpfullversion) -O2
#   libhashkit: $(ver libhashkit2) (libmemcached 1.1.4); zlib: $(ver zlib1g)
#   xxh64: $(ver libxxhash0)
#   java_fnv1_32: $(java -version 2>&1 | head -1), seed articles' getHash on new String(key, UTF_8)
#   java_hashcode: the same Java, String.hashCode() of new String(key, UTF_8)
#   java_hashcode_spread: the same Java, the 001 seed article's rehash: (h ^ (h >>> 16)) & 0x7fffffff
HEADER
./golden
./golden -k | java "$here/JavaFNV.java"
./golden -k | java "$here/JavaHashCode.java"
