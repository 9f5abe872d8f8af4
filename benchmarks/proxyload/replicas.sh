#!/usr/bin/env bash
# Load test of chash proxy pools with replicas (issue 14): the same four
# memcached servers behind three chash proxies over chash's ring, one with
# replicas: 1, one with replicas: 2, and one with replicas: 1 and warmup set
# but no warm-up window open (which must cost nothing). Prints one line per
# run, keeps them in replicas.txt, then the ratios issue 14 asks for: set
# throughput with two replicas at least 0.6× and p99 at most 1.5× of one
# replica's, gets within 5%, and the idle warmup within 5% everywhere.
#
#   ./replicas.sh                  # 3 s per run, about 2 minutes
#   DURATION=1s ./replicas.sh      # a smoke run
#
# Needs memcached (apt-get install memcached). The load generator, the proxies
# and memcached share this machine's cores: take medians of several runs on a
# quiet machine.
set -euo pipefail
cd "$(dirname "$0")"
dur=${DURATION:-3s}
out=${OUT:-replicas.txt}
. ../load.sh # $work, $pids, free_port, wait_port, cpu_ticks, start_memcached

(cd ../.. && go build -o "$work/chash" ./cmd/chash)
go build -o "$work/proxyload" .
start_memcached 4

{
	echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
	echo "# $(go version); $(memcached -V)"
	echo "# command: DURATION=$dur ./replicas.sh"
} | tee "$out"

declare -A port pid
for target in replicas1 replicas2 warmup-idle; do
	port[$target]=$(free_port)
	conf="$work/$target.yml"
	{
		echo "pool:"
		echo "  listen: 127.0.0.1:${port[$target]}"
		echo "  distribution: chash"
		echo "  timeout: 1000"
		case $target in
		replicas2) echo "  replicas: 2" ;;
		warmup-idle) echo "  warmup: 600000" ;;
		esac
		echo "  servers:"
		for s in "${servers[@]}"; do echo "   - $s:1"; done
	} >"$conf"
	"$work/chash" proxy --config "$conf" --admin "" -s "$(free_port)" -a 127.0.0.1 2>"$work/$target.log" &
	pid[$target]=$!
	pids+=($!)
	wait_port "${port[$target]}"
done
# Fill through the two-replica proxy: every key on both of its replicas, so
# the one-replica proxies (the same ring) find them on their first replica.
"$work/proxyload" -addr "127.0.0.1:${port[replicas2]}" -fill -duration 0s -label fill >/dev/null

for workload in set get mix get10; do
	for conns in 1 8 50; do
		for target in replicas1 replicas2 warmup-idle; do
			"$work/proxyload" -addr "127.0.0.1:${port[$target]}" -conns "$conns" -workload "$workload" -duration "$dur" \
				-pid "${pid[$target]}" -label "$target	$workload	conns=$conns" | tee -a "$out"
		done
	done
done

# Ratios of each row to replicas1's: ops/s and p99.
echo
echo "target	workload	conns	ops/s÷replicas1	p99÷replicas1"
awk -F'\t' '
	!/^#/ && NF > 3 {
		ops = $4; sub("ops/s=", "", ops); p99 = $6; sub("p99=", "", p99); sub("µs", "", p99)
		key = $2 "\t" $3
		if ($1 == "replicas1") { base_ops[key] = ops; base_p99[key] = p99; next }
		row[++n] = $1 "\t" key; o[n] = ops; p[n] = p99; k[n] = key
	}
	END {
		for (i = 1; i <= n; i++)
			printf "%s\t%.2f\t%.2f\n", row[i], o[i] / base_ops[k[i]], p[i] / base_p99[k[i]]
	}' "$out"
