#!/usr/bin/env bash
# A first sketch of issue 30's benchmark: whole-machine CPU per relayed datagram through veth
# namespaces, sender ns - relay ns - receiver ns, for
#   floor: no relay at all; the relay namespace only routes (ip_forward), so the datagram crosses
#          the same two veth pairs with no relay software;
#   tc:    the fast path's tc program rewrites and redirects each datagram (one plain entry,
#          installed by fastpath-holder, the test helper that owns the link and waits).
# Relay overhead = tc minus floor. CPU is every CPU's busy time from /proc/stat (user, nice,
# system, irq, softirq, steal), less an idle interval of the same length measured just before,
# divided by the datagrams received. Everything else running on the machine is in it: on a
# shared machine read the figures as a sketch. The tc program's own time per run comes from the
# kernel's BPF statistics (kernel.bpf_stats_enabled, run_time_ns / run_cnt), which other load
# does not touch. Needs root and bpftool. Writes bench/results/fastpath-cpu.md.
# RATE (datagrams/s) [50000], SECONDS per run [5], SIZE (bytes) [200], REPEATS [2].
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${RATE:-50000} seconds=${SECONDS_PER_RUN:-5} size=${SIZE:-200} repeats=${REPEATS:-2}
sender=fpb-s relay=fpb-r receiver=fpb-d
[ "$(id -u)" = 0 ] || { echo "bench/fastpath-cpu.sh: needs root (ip netns, BPF)" >&2; exit 2; }
holder_pid=""
cleanup() {
	[ -n "$holder_pid" ] && kill -9 "$holder_pid" 2>/dev/null || true
	for namespace in "$sender" "$relay" "$receiver"; do ip netns del "$namespace" 2>/dev/null || true; done
}
trap cleanup EXIT
cleanup

swift build --product fastpath-holder >/dev/null
mkdir -p .build/fastpath-bench
cc -O2 -Wall -Wextra -o .build/fastpath-bench/udp-blast bench/fastpath/udp-blast.c
blast=.build/fastpath-bench/udp-blast holder=.build/debug/fastpath-holder

for namespace in "$sender" "$relay" "$receiver"; do ip netns add "$namespace"; ip -n "$namespace" link set lo up; done
ip link add s0 netns "$sender" type veth peer name r0 netns "$relay"
ip link add r1 netns "$relay" type veth peer name d0 netns "$receiver"
ip -n "$sender" addr add 10.73.1.2/24 dev s0
ip -n "$relay" addr add 10.73.1.1/24 dev r0
ip -n "$relay" addr add 10.73.2.1/24 dev r1
ip -n "$receiver" addr add 10.73.2.2/24 dev d0
for pair in "$sender:s0" "$relay:r0" "$relay:r1" "$receiver:d0"; do ip -n "${pair%%:*}" link set "${pair#*:}" up; done
ip -n "$sender" route add default via 10.73.1.1
ip -n "$receiver" route add default via 10.73.2.1
ip netns exec "$relay" sysctl -qw net.ipv4.ip_forward=1

busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
hertz=$(getconf CLK_TCK)

# run MODE DESTINATION PORT: one measured run; prints "received us_per_datagram".
run() {
	local destination=$1 port=$2
	local idle_start idle_end start end received
	idle_start=$(busy); sleep "$seconds"; idle_end=$(busy)
	ip netns exec "$receiver" "$blast" receive 9000 $((seconds + 3)) > .build/fastpath-bench/received &
	local receiver_pid=$!
	sleep 0.3
	start=$(busy)
	ip netns exec "$sender" "$blast" send 40000 "$destination" "$port" "$rate" "$seconds" "$size" > .build/fastpath-bench/sent
	end=$(busy)
	wait "$receiver_pid"
	received=$(cat .build/fastpath-bench/received)
	awk -v run=$((end - start)) -v idle=$((idle_end - idle_start)) -v n="$received" -v hz="$hertz" \
		'BEGIN { printf "%d %.2f\n", n, (run - idle) / hz * 1e6 / (n > 0 ? n : 1) }'
}

results=() program_times=()
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for repeat in $(seq "$repeats"); do
	# floor: straight to the receiver, routed by the relay namespace.
	results+=("floor $repeat $(run 10.73.2.2 9000) $(cat .build/fastpath-bench/sent)")
	# tc: to the relay's address; the tc program sends it on from 10.73.2.1:50000.
	ip netns exec "$relay" "$holder" r0 10.73.1.2:40000 10.73.1.1:3478 10.73.2.1:50000 10.73.2.2:9000 r1 > .build/fastpath-bench/holder &
	holder_pid=$!
	for _ in $(seq 50); do grep -q ready .build/fastpath-bench/holder 2>/dev/null && break; sleep 0.1; done
	grep -q ready .build/fastpath-bench/holder || { cat .build/fastpath-bench/holder >&2; exit 1; }
	sysctl -qw kernel.bpf_stats_enabled=1
	results+=("tc $repeat $(run 10.73.1.1 3478) $(cat .build/fastpath-bench/sent)")
	program_times+=("$(bpftool prog show name mr_relay_ingress -j | python3 -c '
import json, sys
shown = json.load(sys.stdin)
programs = [p for p in (shown if isinstance(shown, list) else [shown]) if p.get("run_cnt", 0) > 0]
print(" ".join("%d runs, %.0f ns a run" % (p["run_cnt"], p["run_time_ns"] / p["run_cnt"]) for p in programs) or "no runs counted")')")
	sysctl -qw kernel.bpf_stats_enabled=0
	kill -9 "$holder_pid"; wait "$holder_pid" 2>/dev/null || true; holder_pid=""
done

{
	echo "# Kernel fast path: whole-machine CPU per datagram (sketch)"
	echo
	echo "bench/fastpath-cpu.sh on $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%dT%H:%MZ): $rate datagrams/s of $size B for $seconds s,"
	echo "sender ns -> relay ns -> receiver ns over veth; busy CPU from /proc/stat less an idle interval of equal length."
	echo
	echo "Load average before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine is in every figure)."
	echo
	echo "| path | run | sent | received | CPU us per datagram |"
	echo "|---|---|---|---|---|"
	for line in "${results[@]}"; do
		read -r mode repeat received microseconds sent <<< "$line"
		echo "| $mode | $repeat | $sent | $received | $microseconds |"
	done
	echo
	echo "The tc program's own time (kernel BPF statistics), per tc run:"
	echo
	for line in "${program_times[@]}"; do echo "- $line"; done
} > bench/results/fastpath-cpu.md
cat bench/results/fastpath-cpu.md
