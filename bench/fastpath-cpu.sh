#!/usr/bin/env bash
# Issue 30's benchmark: whole-machine CPU per relayed datagram through veth namespaces
# (client ns - relay ns - peer ns, bench/fastpath/topology.sh), for these columns:
#   direct  no relay: the relay namespace only routes; the same flows go straight to the peers
#   coturn  coturn 4.17.1 at its fastest (--multiplex-peer --udp-gso), TURN loads only
#   uring   mediarelay --engine uring --gso on, as make demo runs it (--workers 1, batch 64)
#   tc      the same with --fast-path tc --fast-path-interface r0 --fast-path-interface r1
#   xdp     the same with --fast-path xdp
# (tc and xdp run when `mediarelay --help` shows --fast-path, and are reported as not available
# in this build otherwise). Loads (LOADS, comma-separated):
#   turnN   N TURN clients over UDP, 50 ChannelData datagrams/s of 160 B each, channel 0x4000 to
#           their own peer address in the peer ns, where one socket sinks them all (TURN_PEER=sink,
#           the default: client to peer only) or echoes each back from the address it was sent to
#           (TURN_PEER=echo: each datagram crosses the relay twice, and both crossings count as
#           relayed datagrams; at 2,000 clients that is more than 2 vCPUs carry without loss)
#   NNNk    make demo's constant loads: NNN thousand datagrams/s of 200 B over 20 sessions, one
#           way, from one sender socket to one receiver socket that latched every leg B
#   voiceN  make demo's voice load: N sessions of 50 datagrams/s of 160 B, one way
# Both ends are bench/fastpath/flows.c in every column, so only the path between them differs.
# CPU: every CPU's busy time from /proc/stat (user, nice, system, irq, softirq, steal) over the
# data phase, less an idle interval measured after set-up with every process in place (scaled to
# the same length), divided by the datagrams that crossed the relay. Overhead = column minus
# direct in the same repeat. Everything else running on the machine is in every figure: run it on
# a quiet machine and read the load average printed with the table. Beside it, the CPU of the
# benchmark's own processes alone (relay and both ends in a cpuacct cgroup, idle interval
# subtracted likewise): this kernel has no IRQ time accounting, so softirq work done in their
# context (on veth, the whole path of a datagram a process sends) is charged to them, and other
# work on the machine is not; softirq done in ksoftirqd or on another task's time is missed.
#
#
#   [RUNS=1] [REPEATS=3] [SECONDS_PER_RUN=4] [IDLE_SECONDS=3] [LOADS=turn2000,50k,200k,voice2000]
#   [COLUMNS=direct,coturn,uring,tc,xdp] [TURN_PEER=sink] [QUIET=0] [QUIET_WAIT=120]
#   [MEDIARELAY=PATH] [KEEP_LOGS=DIR] [OUT=bench/results/fastpath-cpu.md] bench/fastpath-cpu.sh
#
# RUNS=2 runs everything twice, as two whole runs one after the other; the table gives each run's
# medians side by side. Writes OUT and, beside it, OUT without .md plus -runN.log (one line per
# measurement; bench/fastpath/table.py rebuilds the table from them). KEEP_LOGS=DIR keeps the
# raw lines of the ends and the relay's /v1/stats. MEDIARELAY=PATH measures that build as it is;
# otherwise the script builds mediarelay (release). coturn comes from .build/coturn
# (bench/coturn-latest.sh; Debian's turnserver when it is absent, and the table says so). The
# table also gives other work's drift (see QUIET below) and, for the tc and xdp columns, what
# the kernel carried. Needs root. See bench/README.md, "Kernel fast path".
set -euo pipefail
cd "$(dirname "$0")/.."
turn_peer=${TURN_PEER:-sink}
case "$turn_peer" in echo|sink) ;; *) echo "fastpath-cpu: TURN_PEER is echo or sink" >&2; exit 2 ;; esac
runs=${RUNS:-1} repeats=${REPEATS:-3} seconds=${SECONDS_PER_RUN:-4} idle=${IDLE_SECONDS:-3}
loads=${LOADS:-turn2000,50k,200k,voice2000} columns=${COLUMNS:-direct,coturn,uring,tc,xdp}
out=${OUT:-bench/results/fastpath-cpu.md}
[ "$(id -u)" = 0 ] || { echo "fastpath-cpu: needs root (ip netns)" >&2; exit 2; }
. bench/fastpath/topology.sh

workdir=$(mktemp -d /tmp/fastpath-cpu.XXXXXX)
server_pid="" peer_pid=""
# The benchmark's own processes (this shell's children: the relay and both ends) in a cpuacct
# cgroup of their own, so their CPU can be read apart from everything else on the machine.
cgroup=/sys/fs/cgroup/cpuacct/fastpath-bench-$$
cleanup() {
	stop_server
	[ -z "$peer_pid" ] || { kill "$peer_pid" 2>/dev/null; wait "$peer_pid" 2>/dev/null; } || true
	topology_down
	if [ -d "$cgroup" ]; then
		[ -z "${usage_fd:-}" ] || exec {usage_fd}<&-
		echo $$ > "$(dirname "$cgroup")/cgroup.procs"; rmdir "$cgroup" 2>/dev/null || true
	fi
	rm -rf "$workdir"
}
trap cleanup EXIT
own=()
if mkdir "$cgroup" 2>/dev/null && echo $$ > "$cgroup/cgroup.procs" && exec {usage_fd}< "$cgroup/cpuacct.usage"; then
	own=(--cgroup-fd "$usage_fd")
fi
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

# MEDIARELAY=PATH measures another build (a branch with the fast path, for instance) as is.
mediarelay=${MEDIARELAY:-}
if [ -z "$mediarelay" ]; then swift build -c release --product mediarelay >/dev/null; mediarelay=.build/release/mediarelay; fi
mkdir -p .build/fastpath-bench
cc -O2 -Wall -Wextra -o .build/fastpath-bench/flows bench/fastpath/flows.c bench/fastpath/flows-turn.c bench/fastpath/flows-peer.c -lcrypto
flows=$PWD/.build/fastpath-bench/flows
turnserver=.build/coturn/bin/turnserver coturn_note="coturn 4.17.1 built from source (.build/coturn)"
if [ ! -x "$turnserver" ]; then
	turnserver=$(command -v turnserver || true)
	coturn_note="Debian's coturn $(dpkg-query -W -f='${Version}' coturn 2>/dev/null || echo '?') (.build/coturn absent: bench/coturn-latest.sh)"
fi
hertz=$(getconf CLK_TCK)

# QUIET=1: before each measurement, wait (at most QUIET_WAIT seconds, then go on and say so)
# until the machine has been under 10% busy for 2 s, so that the whole-machine figure is
# measured between other programs' work rather than during it.
quiet=${QUIET:-0} quiet_wait=${QUIET_WAIT:-120}
machine_busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }
wait_quiet() {
	local deadline=$((SECONDS + quiet_wait)) a b
	while [ "$SECONDS" -lt "$deadline" ]; do
		a=$(machine_busy); sleep 2; b=$(machine_busy)
		awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " "); exit !((y[1] - x[1]) < 0.1 * (y[2] - x[2])) }' && return 0
	done
	echo "fastpath-cpu: the machine stayed busy for $quiet_wait s; measuring anyway" >&2
}

# The load's shape: flows, datagrams/s per flow, payload bytes, kind (turn or sessions).
shape() {
	case "$1" in
		turn[0-9]*) echo "${1#turn} 50 160 turn" ;;
		voice[0-9]*) echo "${1#voice} 50 160 sessions" ;;
		[0-9]*k) echo "20 $(( ${1%k} * 1000 / 20 )) 200 sessions" ;;
		*) echo "fastpath-cpu: unknown load $1 (turnN, NNNk, voiceN)" >&2; exit 2 ;;
	esac
}

# Starts the peer end in the peer namespace: for TURN loads TURN_PEER's, a sink (latching
# every leg B of $2 when given) for session loads. Sets peer_pid.
start_peer() {
	local kind=$1 legs=${2:-}
	if [ "$kind" = turn ] && [ "$turn_peer" = echo ]; then
		ip netns exec "$peer_ns" "$flows" echo --port "$echo_port" > "$workdir/peer.out" &
	else
		ip netns exec "$peer_ns" "$flows" sink --port "$echo_port" ${legs:+--legs "$legs"} > "$workdir/peer.out" &
	fi
	peer_pid=$!
	local i
	for i in $(seq 50); do grep -q ready "$workdir/peer.out" 2>/dev/null && return 0; sleep 0.1; done
	echo "fastpath-cpu: the peer end did not start" >&2; exit 1
}

# Stops the peer end; sets peer_count to what it counted (it prints that as it exits).
stop_peer() {
	kill "$peer_pid" 2>/dev/null || true
	wait "$peer_pid" 2>/dev/null || true
	peer_pid=""
	peer_count=$(sed -n 's/^\(echoed\|received\)=//p' "$workdir/peer.out")
}

# measure RUN LOAD COLUMN REPEAT: one measurement; appends a line to $results:
# run load column repeat sent delivered relayed us_per_datagram failed_clients own_us_per_datagram
# offered (datagrams the load should have sent: when sent falls short, the ends could not keep up)
# other_idle% other_run% (other programs' share of the machine in the idle interval and the run)
# kernel_datagrams kernel_on kernel_entries handed_back modes (mediarelay's /v1/stats fast_path after the
# run, counted since start, set-up included; "-" where there is none)
measure() {
	local run=$1 load=$2 column=$3 repeat=$4 count rate size kind line peer_count legs=""
	read -r count rate size kind <<< "$(shape "$load")"
	case "$column" in
		coturn) [ "$kind" = turn ] || return 0 ;;
		tc|xdp) has_fast_path || { echo "$run $load $column $repeat - - - unavailable - - - - - - - - - -" >> "$results"; return 0; } ;;
	esac
	local send=(--flows "$count" --rate "$rate" --size "$size" --seconds "$seconds" --idle "$idle" "${own[@]}")
	case "$column" in
		direct) ;;
		coturn) start_coturn ;;
		uring) start_mediarelay user "$kind" ;;
		tc|xdp) start_mediarelay "$column" "$kind" ;;
	esac
	if [ "$kind" = turn ]; then
		start_peer turn
		send+=(--to "$peer_base:$echo_port" --spread)
		[ "$turn_peer" = sink ] || send+=(--echo)
		if [ "$column" = direct ]; then send=(plain "${send[@]}")
		else send=(turn "${send[@]}" --server "$relay_ip:$turn_port" --user "$turn_user:$turn_password"); fi
	elif [ "$column" = direct ]; then
		start_peer sessions
		send=(plain "${send[@]}" --to "$peer_ip:$echo_port" --socket one)
	else
		legs=$workdir/legs
		ip netns exec "$relay_ns" bench/fastpath/sessions.py "127.0.0.1:$http_port" "$count" "$legs"
		start_peer sessions "$legs"
		sleep 0.5
		send=(legs "${send[@]}" --legs "$legs" --socket one)
	fi
	[ "$quiet" = 0 ] || wait_quiet
	echo "fastpath-cpu: run $run, repeat $repeat, $load, $column (load average $(cut -d' ' -f1 /proc/loadavg))" >&2
	line=$(ip netns exec "$client_ns" "$flows" send "${send[@]}")
	stop_peer
	local stats=$logs_dir/stats-$run-$load-$column-$repeat.json kernel="- - - - -"
	[ "$column" = direct ] || [ "$column" = coturn ] \
		|| ip netns exec "$relay_ns" curl -s "http://127.0.0.1:$http_port/v1/stats" > "$stats" 2>/dev/null || true
	# What the kernel carried: datagrams, whether it was on, its entries, datagrams handed back,
	# each interface's mode.
	[ -s "$stats" ] && kernel=$(python3 bench/fastpath/kernel-share.py < "$stats")
	stop_server
	echo "$load $column $repeat $line peer=$peer_count" >> "$logs_dir/flows-run$run.log"
	[ "${peer_count:-0}" -gt 0 ] || echo "fastpath-cpu: the peer end counted nothing: $line; peer: $(tr '\n' ' ' < "$workdir/peer.out")" >&2
	awk -v run="$run" -v load="$load" -v column="$column" -v repeat="$repeat" -v echo="$([ "$kind" = turn ] && [ "$turn_peer" = echo ] && echo 1 || echo 0)" -v hz="$hertz" -v peer="$peer_count" -v line="$line" -v offered="$((count * rate * ${seconds%.*}))" -v cpus="$(nproc)" -v kernel="$kernel" '
		BEGIN {
			n = split(line, fields, " ")
			for (i = 1; i <= n; i++) { split(fields[i], kv, "="); v[kv[1]] = kv[2] }
			# An echo crossed twice (to the peer, back to the client); anything else once.
			relayed = echo ? peer + v["received"] : peer
			delivered = echo ? v["received"] : peer
			busy = v["run_ticks"] - v["idle_ticks"] * v["run_ns"] / v["idle_ns"]
			own = v["own_run_ns"] - v["own_idle_ns"] * v["run_ns"] / v["idle_ns"]
			# Other work: the machine busy share less ours, in the idle interval and in the run.
			# When the two differ, the whole-machine figure holds the difference.
			other_idle = (v["idle_ticks"] / hz * 1e9 - v["own_idle_ns"]) / (v["idle_ns"] * cpus)
			other_run = (v["run_ticks"] / hz * 1e9 - v["own_run_ns"]) / (v["run_ns"] * cpus)
			printf "%s %s %s %s %d %d %d %.3f %d %s %d %.1f %.1f %s\n", run, load, column, repeat, v["sent"], delivered, relayed,
				relayed ? busy / hz * 1e6 / relayed : 0, v["failed"], v["own_run_ns"] && relayed ? sprintf("%.3f", own / 1000 / relayed) : "-",
				offered, 100 * other_idle, 100 * other_run, kernel
		}' >> "$results"
	tail -1 "$results" | awk '{ printf "fastpath-cpu:   sent %d, delivered %d, relayed %d, %.2f us per relayed datagram (own processes %s)%s\n", $5, $6, $7, $8, $10, $14 == "-" ? "" : sprintf("; kernel fast path: %s datagrams, on %s, %s entries, %s handed back, modes %s", $14, $15, $16, $17, $18) }' >&2
}

raw=${out%.md}
mkdir -p "$(dirname "$out")"
rm -f "$raw"-run*.log
logs_dir=$workdir/logs
mkdir -p "$logs_dir"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M')
topology_up
IFS=, read -r -a load_list <<< "$loads"
IFS=, read -r -a column_list <<< "$columns"
for run in $(seq "$runs"); do
	results=$raw-run$run.log
	: > "$results"
	for repeat in $(seq "$repeats"); do
		for load in "${load_list[@]}"; do
			for column in "${column_list[@]}"; do measure "$run" "$load" "$column" "$repeat"; done
		done
	done
done
# KEEP_LOGS=DIR keeps each measurement's flows line and the relay's /v1/stats after it.
[ -z "${KEEP_LOGS:-}" ] || { mkdir -p "$KEEP_LOGS"; cp "$logs_dir"/* "$KEEP_LOGS"/; }

{
	echo "# Kernel fast path: whole-machine CPU per relayed datagram"
	echo
	echo "Command: \`QUIET=$quiet TURN_PEER=$turn_peer RUNS=$runs REPEATS=$repeats SECONDS_PER_RUN=$seconds IDLE_SECONDS=$idle LOADS=$loads COLUMNS=$columns bench/fastpath-cpu.sh\`"
	echo "at commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- bench/fastpath-cpu.sh bench/fastpath Sources || echo ' (with uncommitted changes to what it runs)'), $started UTC."
	echo "Machine: $(nproc) vCPUs ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), $(uname -r), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)."
	echo "mediarelay: release build, \`--engine uring --gso on --gro off --workers 1 --batch-size 64\`; coturn: $coturn_note, \`--multiplex-peer --udp-gso\`."
	echo "Load average before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg) (all other work on the machine is in every figure)."
	echo
	python3 bench/fastpath/table.py "$raw"-run*.log
} > "$out"
cat "$out"
