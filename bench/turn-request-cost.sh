#!/usr/bin/env bash
# Relay CPU per TURN request (ChannelBind, CreatePermission, Refresh) at 1, 256 and 4,096
# channels per allocation, with the fast path off, tc and xdp (issue 36): a request must change
# only the kernel entries it affects, so its cost stays near the user-space path's however many
# channels the allocation has.
#
#   bench/turn-request-cost.sh        (as root; CHANNELS="1 256 4096" PATHS="user tc xdp"
#                                      REQUESTS=1000 RUNS=2 OUT=bench/results/turn-request-cost.txt;
#                                      MEDIARELAY=PATH for another build)
#
# The namespaces of bench/fastpath/topology.sh: the client in fpb-c, the relay (release build,
# one worker, uring+GSO) in fpb-r with the fast path on both veths for tc and xdp ("user": off),
# the peer address in fpb-p. bench/turn-request-cost.py binds the channels, all to ports of one
# peer address (every channel ends with that one permission: the most entries a renewed
# permission moves), then times each kind of request by the relay's thread run time. A fresh
# relay for every path and channel count; the runs are whole passes over all of them.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "turn-request-cost: needs root (namespaces, BPF)" >&2; exit 1; }
channels_list=${CHANNELS:-1 256 4096}
paths=${PATHS:-user tc xdp}
requests=${REQUESTS:-1000}
runs=${RUNS:-2}
out=${OUT:-bench/results/turn-request-cost.txt}
mediarelay=${MEDIARELAY:-.build/release/mediarelay}
workdir=$(mktemp -d)
source bench/fastpath/topology.sh
trap 'stop_server; topology_down; rm -rf "$workdir"' EXIT
topology_up
export MEDIARELAY_ARGS="--turn-max-channels 5000"
{
	echo "# bench/turn-request-cost.sh at $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Sources bench || echo ' (uncommitted changes)'), $(date -u +%FT%TZ)"
	echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, kernel $(uname -r); requests=$requests"
} > "$out"
for run in $(seq "$runs"); do
	for channels in $channels_list; do
		for path in $paths; do
			start_mediarelay "$path" turn
			result=$(ip netns exec "$client_ns" python3 bench/turn-request-cost.py --server "$relay_ip:$turn_port" \
				--user "$turn_user:$turn_password" --pid "$server_pid" --channels "$channels" --requests "$requests")
			stop_server
			echo "$result" | sed "s/^/run $run $path /" | tee -a "$out"
		done
	done
done
