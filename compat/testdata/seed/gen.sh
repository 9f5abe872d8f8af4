#!/usr/bin/env bash
# Regenerates the seed-ring golden files by running the seed articles' Java ring
# (SeedRing.java) with the machine's JDK. Usage: bash gen.sh (from any directory).
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
javac -d "$tmp" SeedRing.java
ver=$(java -version 2>&1 | head -1)
printf '192.168.0.%d:111\n' 0 1 2 3 4 >"$tmp/five"
for i in $(seq 0 49); do printf '10.1.%d.%d:11211\n' $((i / 10)) $((i % 10)); done >"$tmp/fifty"
keys() {
	printf '%s\n' 127.0.0.1:1111 221.226.0.1:2222 10.211.0.1:3333 '' a 中文 'ключ' 'emoji😀key' 'ü' 'naïve:42' '𝄞' 'key with spaces'
	for i in $(seq 0 1999); do printf 'user:%d\n' "$i"; done
}
for ring in "five 0" "five 5" "five 160" "fifty 0" "fifty 100"; do
	set -- $ring
	out="$1-$2.tsv"
	{
		echo "# SeedRing.java (the seed articles' TreeMap ring), $ver"
		echo "# servers: $1 ($(head -1 "$tmp/$1") ...), virtual nodes: $2; command: bash gen.sh"
		echo "# key<TAB>java getHash(key)<TAB>server"
		keys | java -cp "$tmp" SeedRing "$tmp/$1" "$2"
	} >"$out"
	printf '%s\n' "$(cat "$tmp/$1")" >"servers-$1.txt"
done
