#!/usr/bin/env bash
# Memory (resident set) of chash proxy and nutcracker in front of one memcached:
# 5,000 idle client connections, then, from a fresh process, a burst of 20,000
# short connections (1,000 at a time, a set and a get of 1,000 bytes each) and
# how the memory comes back down. Prints one line per program and workload.
#
#   ./memory.sh                       # about 5 minutes
#   CHASH_OLD=/path/to/chash ./memory.sh   # also an older chash binary
#   IDLE=100 BURST=200 SETTLE=1s ./memory.sh # a quick check that it runs
#
# Needs memcached and nutcracker (apt-get install memcached nutcracker), and
# ulimit -n of at least 20000.
set -euo pipefail
cd "$(dirname "$0")"
. ../load.sh # $work, $pids, free_port, wait_port, cpu_ticks

(cd ../.. && go build -o "$work/chash" ./cmd/chash)
go build -o "$work/proxyload" .
user=()
[ "$(id -u)" = 0 ] && user=(-u nobody)
mport=$(free_port)
memcached -l 127.0.0.1 -p "$mport" -U 0 -m 1024 -c 18000 -t 1 "${user[@]}" &
pids+=($!)
wait_port "$mport"

progs=("chash=$work/chash")
[ -n "${CHASH_OLD:-}" ] && progs+=("chash-old=$CHASH_OLD")
progs+=(nutcracker=nutcracker)
echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) CPUs; $(memcached -V); $(nutcracker -V 2>&1 | head -1)"
for workload in idle burst; do
	for entry in "${progs[@]}"; do
		name=${entry%%=*} bin=${entry#*=}
		port=$(free_port)
		conf="$work/$name.yml"
		printf 'pool:\n  listen: 127.0.0.1:%s\n  timeout: 5000\n  servers:\n   - 127.0.0.1:%s:1\n' "$port" "$mport" >"$conf"
		if [ "$name" = nutcracker ]; then
			nutcracker -c "$conf" -s "$(free_port)" -a 127.0.0.1 -o "$work/nc.log" -p "$work/nc.pid" &
		else
			"$bin" proxy --config "$conf" --admin "" -s "$(free_port)" -a 127.0.0.1 2>"$work/$name.log" &
		fi
		pid=$!
		pids+=($pid)
		wait_port "$port"
		sleep 1
		if [ $workload = idle ]; then
			"$work/proxyload" -workload idle -addr "127.0.0.1:$port" -conns "${IDLE:-5000}" -value 100 -pid "$pid" -label "$name"
		else
			"$work/proxyload" -workload burst -addr "127.0.0.1:$port" -conns "${BURST:-20000}" -concurrency 1000 -value 1000 \
				-pid "$pid" -settle "${SETTLE:-60s}" -label "$name"
		fi
		kill "$pid"
		wait "$pid" 2>/dev/null || true
	done
done
