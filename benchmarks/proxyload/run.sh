#!/usr/bin/env bash
# Load test of chash proxy against nutcracker and memcached itself, with the
# same memcached servers behind both proxies, on loopback. Prints one line per
# run and keeps them in results.txt.
#
#   ./run.sh                  # 3 s per run, about 3 minutes
#   DURATION=10s ./run.sh
#   CHASH_ARGS="--procs 1" ./run.sh    # flags added to chash proxy's
#
# Needs memcached and nutcracker (apt-get install memcached nutcracker). The
# load generator, the proxy and memcached share this machine's cores, so the
# figures compare the programs with each other, not with a dedicated host.
set -euo pipefail
cd "$(dirname "$0")"
dur=${DURATION:-3s}
out=${OUT:-results.txt}
. ../load.sh # $work, $pids, free_port, wait_port, cpu_ticks, start_memcached

(cd ../.. && go build -o "$work/chash" ./cmd/chash)
go build -o "$work/proxyload" .
start_memcached 4

{
	echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
	echo "# $(go version); $(memcached -V); $(nutcracker -V 2>&1 | head -1)"
	echo "# command: ${CHASH_ARGS:+CHASH_ARGS=\"$CHASH_ARGS\" }DURATION=$dur ./run.sh"
} | tee "$out"

for n in 1 2 4; do
	chash_port=$(free_port)
	nc_port=$(free_port)
	for prog in chash nutcracker; do
		port=$chash_port
		[ $prog = nutcracker ] && port=$nc_port
		conf="$work/$prog-$n.yml"
		{
			echo "pool:"
			echo "  listen: 127.0.0.1:$port"
			echo "  hash: fnv1a_64"
			echo "  distribution: ketama"
			echo "  timeout: 1000"
			echo "  servers:"
			for s in "${servers[@]:0:$n}"; do echo "   - $s:1"; done
		} >"$conf"
		if [ $prog = chash ]; then
			"$work/chash" proxy --config "$conf" --admin "" -s "$(free_port)" -a 127.0.0.1 ${CHASH_ARGS:-} 2>"$work/chash-$n.log" &
			chash_pid=$!
			pids+=($!)
		else
			nutcracker -c "$conf" -s "$(free_port)" -a 127.0.0.1 -o "$work/nc-$n.log" -p "$work/nc-$n.pid" &
			nc_pid=$!
			pids+=($!)
		fi
		wait_port "$port"
	done
	"$work/proxyload" -addr "127.0.0.1:$chash_port" -fill -duration 0s -label fill >/dev/null
	for workload in mix get10; do
		for conns in 1 8 50; do
			if [ "$n" = 1 ]; then
				"$work/proxyload" -addr "${servers[0]}" -conns "$conns" -workload "$workload" -duration "$dur" \
					-pid "${pids[0]}" -label "memcached	servers=1	$workload	conns=$conns" | tee -a "$out"
			fi
			"$work/proxyload" -addr "127.0.0.1:$nc_port" -conns "$conns" -workload "$workload" -duration "$dur" \
				-pid "$nc_pid" -label "nutcracker	servers=$n	$workload	conns=$conns" | tee -a "$out"
			"$work/proxyload" -addr "127.0.0.1:$chash_port" -conns "$conns" -workload "$workload" -duration "$dur" \
				-pid "$chash_pid" -label "chash	servers=$n	$workload	conns=$conns" | tee -a "$out"
		done
	done
	# Pipelined: 8 connections, 16 requests in flight each.
	for prog in nutcracker chash; do
		port=$chash_port pid=$chash_pid
		[ $prog = nutcracker ] && port=$nc_port pid=$nc_pid
		"$work/proxyload" -addr "127.0.0.1:$port" -conns 8 -pipeline 16 -workload mix -duration "$dur" \
			-pid "$pid" -label "$prog	servers=$n	mix-pipelined16	conns=8" | tee -a "$out"
	done
done
