#!/usr/bin/env bash
# Reproduces the tables in README.md: runs the benchmarks of this module against
# the peer libraries, keeps the raw output in results/bench.txt, and writes the
# medians and ratios into README.md (between its benchtable marks).
#
#   ./run.sh                    # the published run: -count 5, about 10-15 minutes
#   COUNT=1 BENCHTIME=50ms ./run.sh   # a quick look; do not publish it
#
# Four go test runs, because the benchmarks need different settings:
#  1. lookups, hashing, replica sets, add/remove and memory: -benchtime 200ms;
#  2. parallel lookups at GOMAXPROCS 1 and 2 (-cpu 1,2);
#  3. builds: -benchtime 200ms, except stathat and buraksezer at 1000 nodes,
#  4. which take seconds each (they re-sort after every node): -benchtime 1x.
# Each run builds the rings it needs once (see shared in peers_test.go).
set -euo pipefail
cd "$(dirname "$0")"

count=${COUNT:-5}
benchtime=${BENCHTIME:-200ms}
out=${OUT:-results/bench.txt}
mkdir -p "$(dirname "$out")"

slow='^BenchmarkBuild$/^nodes=1000$/^lib=(stathat|buraksezer)$'
gotest() { go test -run '^$' -count "$count" "$@"; }

{
	echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "# machine: $(nproc) CPUs, $(free -g | awk '/^Mem:/ {print $2 " GiB"}'), load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
	echo "# go: $(go version)"
	echo "# command: COUNT=$count BENCHTIME=$benchtime ./run.sh"
	gotest -benchtime "$benchtime" -bench '^Benchmark(Hash|Lookup|Replicas|Add|Remove|Memory)$'
	gotest -benchtime "$benchtime" -cpu 1,2 -bench '^BenchmarkLookupParallel$'
	gotest -benchtime "$benchtime" -bench '^BenchmarkBuild$' -skip "$slow"
	gotest -benchtime 1x -bench "$slow"
	echo "# load average $(cut -d' ' -f1-3 /proc/loadavg) at end"
} 2>&1 | tee "$out"

go run ./cmd/benchtable -update README.md "$out"
