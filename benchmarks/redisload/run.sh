#!/usr/bin/env bash
# Load test of chash proxy's Redis pools against nutcracker, with the same
# redis-server instances behind both, on loopback: redis-benchmark's GET, SET,
# INCR, LPUSH and MSET (10 keys) at 1, 8 and 50 connections, unpipelined and
# pipelined 16 deep, on 1 and 3 servers. Prints one line per run and keeps
# them in results.txt (OUT=...). CPU µs/op is the user+system time of the
# proxy under test (from /proc/PID/stat) per request; p99 is redis-benchmark's;
# errors counts the error replies redis-benchmark saw (it shows at most one a
# second, so a count above 0 means "some").
#
#   ./run.sh                          # REQUESTS=20000 per run (×5 pipelined)
#   REQUESTS=500 ./run.sh             # a smoke run
#   CHASH_ARGS="--procs 1" ./run.sh   # flags added to chash proxy's
#   for i in 1 2 3 4 5; do OUT=res$i.txt ./run.sh; done
#   go run ../cmd/loadtable res*.txt  # medians, side by side, targets checked
#
# Needs Go, redis-server, redis-benchmark and nutcracker (apt-get install
# redis-server redis-tools nutcracker). The load generator, both proxies and
# the servers share this machine's cores: run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")"
requests=${REQUESTS:-20000}
out=${OUT:-results.txt}
progs=${PROGS:-nutcracker chash}
. ../load.sh # $work, $pids, free_port, wait_port, cpu_ticks

(cd ../.. && go build -o "$work/chash" ./cmd/chash)

servers=()
for i in 1 2 3; do
	p=$(free_port)
	redis-server --port "$p" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
		--io-threads 1 --loglevel warning >"$work/redis-$i.log" 2>&1 &
	pids+=($!)
	servers+=("127.0.0.1:$p")
	wait_port "$p"
done

{
	echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
	echo "# $(go version); $(redis-server --version | cut -d' ' -f1-3); $(nutcracker -V 2>&1 | head -1)"
	echo "# command: ${CHASH_ARGS:+CHASH_ARGS=\"$CHASH_ARGS\" }REQUESTS=$requests ./run.sh"
} | tee "$out"

for n in 1 3; do
	declare -A port pid
	for prog in $progs; do
		port[$prog]=$(free_port)
		conf="$work/$prog-$n.yml"
		{
			echo "pool:"
			echo "  listen: 127.0.0.1:${port[$prog]}"
			echo "  redis: true"
			echo "  hash: fnv1a_64"
			echo "  distribution: ketama"
			echo "  timeout: 2000"
			echo "  servers:"
			for s in "${servers[@]:0:$n}"; do echo "   - $s:1"; done
		} >"$conf"
		if [ "$prog" = chash ]; then
			"$work/chash" proxy --config "$conf" --admin "" -s "$(free_port)" -a 127.0.0.1 ${CHASH_ARGS:-} 2>"$work/chash-$n.log" &
		else
			nutcracker -c "$conf" -s "$(free_port)" -a 127.0.0.1 -o "$work/nc-$n.log" -p "$work/nc-$n.pid" &
		fi
		pid[$prog]=$!
		pids+=($!)
		wait_port "${port[$prog]}"
	done
	for test in get set incr lpush mset; do
		for conns in 1 8 50; do
			for pipe in 1 16; do
				for prog in $progs; do
					reqs=$requests
					[ "$pipe" -gt 1 ] && reqs=$((requests * 5))
					before=$(cpu_ticks "${pid[$prog]}")
					res=$(redis-benchmark -h 127.0.0.1 -p "${port[$prog]}" -t "$test" -n "$reqs" -c "$conns" \
						-P "$pipe" -r 100000 -e --csv 2>/dev/null)
					after=$(cpu_ticks "${pid[$prog]}")
					# "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
					line=$(echo "$res" | grep '^"' | tail -1)
					errors=$(echo "$res" | grep -c 'Error from server' || true)
					rps=$(echo "$line" | cut -d, -f2 | tr -d '"')
					p99=$(echo "$line" | cut -d, -f7 | tr -d '"')
					cpu=$(awk -v a="$before" -v b="$after" -v t="$tick" -v n="$reqs" 'BEGIN{printf "%.1f", (b-a)/t*1e6/n}')
					printf '%s\tservers=%d\t%s\tconns=%d\tpipeline=%d\tops/s=%s\tp99=%sms\tcpu=%sµs/op\terrors=%d\n' \
						"$prog" "$n" "$test" "$conns" "$pipe" "$rps" "$p99" "$cpu" "$errors" | tee -a "$out"
				done
			done
		done
	done
	for prog in $progs; do kill "${pid[$prog]}"; done
done
