# Shell functions of the load scripts (proxyload/run.sh, proxyload/memory.sh,
# proxyload/replicas.sh, redisload/run.sh), which source this file from their
# own directory: a work directory ($work) removed at exit, or kept, with the
# proxies' logs, when the script fails, processes ($pids) killed at exit, and
#
#   free_port       a TCP port of 127.0.0.1 that nothing listens on
#   wait_port PORT  waits until something listens on PORT (10 s at most)
#   cpu_ticks PID   the user+system clock ticks of process PID so far
#   tick            clock ticks per second
#   start_memcached N   starts N memcached servers (256 MiB, one thread each)
#                   on free ports, their addresses in $servers
work=$(mktemp -d)
pids=()
cleanup() {
	local rc=$?
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [ "$rc" -ne 0 ]; then
		echo "$0 failed (exit $rc); its programs' logs are kept in $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT

# free_port picks below the ephemeral range: a port of that range that nothing
# listens on may still be the local end of a connection, and then a listen on
# it fails.
lowest_ephemeral=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
free_port() {
	while :; do
		local p=$((10000 + RANDOM % (lowest_ephemeral - 10000)))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
}
wait_port() {
	for _ in $(seq 200); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return; fi
		sleep 0.05
	done
	echo "nothing listens on $1" >&2
	exit 1
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
tick=$(getconf CLK_TCK)
servers=()
start_memcached() {
	local user=() p
	[ "$(id -u)" = 0 ] && user=(-u nobody)
	for _ in $(seq "$1"); do
		p=$(free_port)
		memcached -l 127.0.0.1 -p "$p" -U 0 -m 256 -t 1 "${user[@]}" &
		pids+=($!)
		servers+=("127.0.0.1:$p")
		wait_port "$p"
	done
}
