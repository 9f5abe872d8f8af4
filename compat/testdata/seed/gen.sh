#!/usr/bin/env bash
# gen.sh regenerates the golden files of compat's seed tests by running the seed
# articles' Java rings, Article000.java ... Article004.java (their I/O is in
# SeedIO.java), with the machine's JDK. Usage: bash gen.sh (from any directory).
#
# It writes the server lists servers-NAME.txt and, for each case below,
# NNN-NAME[-ARG...].tsv: a header naming the JDK and the command that made it,
# then "KEY<TAB>HASH<TAB>SERVER" per key, HASH being the key's hash as the
# article computes it, with a fourth column "throws" where the article's program
# throws NoSuchElementException (the 000 article's, past the last point) and
# SERVER is the first point's. compat's TestSeedArticleGolden builds the chash
# ring matching each command; TestSeedArticleJava reruns the commands on more keys.
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
javac -d "$tmp" ./*.java
ver=$(java -version 2>&1 | head -1)

printf '192.168.0.%d:111\n' 0 1 2 3 4 >servers-five.txt        # article 000
printf '192.168.2.%d\n' 106 107 108 >servers-ips.txt           # article 001
printf '192.168.2.%d\n' 106 107 108 109 >servers-ips4.txt      # article 001, after add
printf '192.168.0.%d:8888\n' 1 2 3 >servers-three.txt          # article 003
for i in $(seq 0 49); do printf '10.1.%d.%d:11211\n' $((i / 10)) $((i % 10)); done >servers-fifty.txt
# Non-ASCII and template-like names; "a1" then "a" share the labels "a10", "a11",
# ... of "{name}{i}", and "Aa" and "BB" have the same String.hashCode: in Java the
# server added later keeps a shared point.
printf '%s\n' a1 a Aa BB 缓存-甲 кэш-2 😀 'node{i}' '{name}' >servers-odd.txt

keys() {
	printf '%s\n' 127.0.0.1:1111 221.226.0.1:2222 10.211.0.1:3333 zs 999999 233333 \
		semlinker kakuqo fer 192.168.0.0:1111 '' a Aa BB 中文 'ключ' 'emoji😀key' 'ü' \
		'naïve:42' '𝄞' 'key with spaces'
	for i in $(seq 0 999); do printf 'user:%d\n' "$i"; done
}
keys >"$tmp/keys"

rm -f [0-9][0-9][0-9]-*.tsv
run() {
	local id=$1 servers=$2
	shift 2
	local out="$id-$servers.tsv" article
	[ $# -eq 0 ] || out="$id-$servers$(printf -- '-%s' "$@").tsv"
	case $id in
	000) article=000_e9707e8ab86841d9.txt ;;
	001) article=001_37c3335863982e2d.txt ;;
	002) article=002_928219273e2ab314.txt ;;
	003) article=003_4e018a8b45ca771b.txt ;;
	004) article=004_a30ec39aea443aa7.txt ;;
	esac
	{
		echo "# Article$id.java, the ring of seed article $article, run by $ver"
		echo "# command: java Article$id servers-$servers.txt${*:+ $*} < keys; made by gen.sh"
		echo "# key<TAB>hash<TAB>server[<TAB>throws]"
		java -cp "$tmp" "Article$id" "servers-$servers.txt" "$@" <"$tmp/keys" | paste "$tmp/keys" -
	} >"$out"
}
run 000 five 5 # the article's ConsistentHashingWithVirtualNode
run 000 five 0 # its ConsistentHashingWithoutVirtualNode
run 000 five 160
run 000 fifty 100
run 000 odd 7
run 001 ips 3 # the article's main
run 001 ips4 3 # the same, after add("192.168.2.109")
run 001 five 160
run 001 odd 20
run 002 five 3
run 002 fifty 100
run 002 odd 20
run 003 three # the article's main
run 003 five
run 003 fifty
run 004 five 160 java_hashcode
run 004 fifty 100 md5
run 004 odd 20 java_hashcode
run 004 odd 12 java_fnv1_32
run 004 ips 3 java_hashcode_spread
