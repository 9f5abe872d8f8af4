#!/usr/bin/env bash
# What relaying a request costs at one client connection: redis-benchmark GET
# (-c 1, unpipelined) through nutcracker, chash proxy, and relayfloor's two
# byte relays (copy: goroutines and the Go network poller; epoll: a raw epoll
# loop on a locked thread), all in front of one redis-server, alternated for
# ROUNDS rounds. Prints each run's requests a second and the relay's user and
# system CPU µs per request (from /proc/PID/stat), then each one's medians.
#
#   ./run.sh                       # ROUNDS=5, REQUESTS=20000
#
# Needs Go, redis-server, redis-benchmark and nutcracker (apt-get install
# redis-server redis-tools nutcracker); run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")"
requests=${REQUESTS:-20000}
rounds=${ROUNDS:-5}
. ../load.sh # $work, $pids, free_port, wait_port, tick

(cd ../.. && go build -o "$work/chash" ./cmd/chash)
go build -o "$work/relayfloor" .

rp=$(free_port)
redis-server --port "$rp" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
	--io-threads 1 --loglevel warning >"$work/redis.log" 2>&1 &
pids+=($!)
wait_port "$rp"

declare -A port pid
progs="nutcracker chash copy epoll"
for prog in $progs; do
	port[$prog]=$(free_port)
	case $prog in
	nutcracker | chash)
		printf 'pool:\n  listen: 127.0.0.1:%s\n  redis: true\n  hash: fnv1a_64\n  distribution: ketama\n  timeout: 2000\n  servers:\n   - 127.0.0.1:%s:1\n' \
			"${port[$prog]}" "$rp" >"$work/$prog.yml"
		if [ $prog = chash ]; then
			"$work/chash" proxy --config "$work/$prog.yml" --admin "" -s "$(free_port)" -a 127.0.0.1 2>"$work/chash.log" &
		else
			nutcracker -c "$work/$prog.yml" -s "$(free_port)" -a 127.0.0.1 -o "$work/nc.log" &
		fi
		;;
	*) "$work/relayfloor" -mode "$prog" -listen "127.0.0.1:${port[$prog]}" -server "127.0.0.1:$rp" >/dev/null & ;;
	esac
	pid[$prog]=$!
	pids+=($!)
	wait_port "${port[$prog]}"
done

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg); $(go version | cut -d' ' -f3); REQUESTS=$requests ROUNDS=$rounds"
for _ in $(seq "$rounds"); do
	for prog in $progs; do
		read -r u0 s0 < <(awk '{print $14, $15}' "/proc/${pid[$prog]}/stat")
		rps=$(redis-benchmark -h 127.0.0.1 -p "${port[$prog]}" -t get -n "$requests" -c 1 --csv 2>/dev/null |
			grep '^"GET' | cut -d, -f2 | tr -d '"')
		read -r u1 s1 < <(awk '{print $14, $15}' "/proc/${pid[$prog]}/stat")
		awk -v p="$prog" -v r="$rps" -v u="$((u1 - u0))" -v s="$((s1 - s0))" -v t="$tick" -v n="$requests" \
			'BEGIN{printf "%s\tops/s=%s\tuser=%.1fµs/op\tsys=%.1fµs/op\n", p, r, u/t*1e6/n, s/t*1e6/n}'
	done
done | tee "$work/runs.txt"
echo "# medians"
for prog in $progs; do
	grep "^$prog	" "$work/runs.txt" | awk -v p="$prog" '
	function med(a, n,   i, j, x) { for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j > 0 && a[j] > x; j--) a[j+1] = a[j]; a[j+1] = x }
		return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
	{ split($2, r, "="); split($3, u, "[=µ]"); split($4, s, "[=µ]"); n++; R[n] = r[2]; U[n] = u[2]; S[n] = s[2]; T[n] = u[2] + s[2] }
	END { printf "%s\tops/s=%.0f\tuser=%.1f\tsys=%.1f\tcpu=%.1fµs/op\n", p, med(R, n), med(U, n), med(S, n), med(T, n) }'
done
