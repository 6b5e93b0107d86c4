#!/usr/bin/env bash
# ECN-reactive senders at a session leg's rate limit, with the relay's CE marking on and off.
# See bench/README.md ("ECN-reactive senders at a capped leg").
#
#   bench/ecn-at-cap.sh [--cap 2000] [--streams 4] [--load 1.5] [--seconds 10] [--size 200] [--out FILE]
#
# One relay (release build, one worker, 127.0.0.1); for each sender and each marking setting a
# run of mediarelay-load in session mode, --streams sessions whose legs are capped at --cap
# datagrams/s ("max_packets_per_second"), offered --load times the cap per stream:
#   ECT(1) senders with --congestion-control scalable (L4S),
#   ECT(0) senders with --congestion-control classic,
#   Not-ECT senders with --congestion-control classic (they can only react to losses).
# Prints (and with --out writes) a Markdown table: throughput delivered (datagrams/s over all
# streams, and as a share of the caps), loss, the share of received datagrams that arrived CE,
# and p99 one-way latency (after the generator's 0.5 s warm-up).
set -euo pipefail
cd "$(dirname "$0")/.."

cap=2000
streams=4
load=1.5
seconds=10
size=200
out=""
relay=${MEDIARELAY:-.build/release/mediarelay}
generator=${MEDIARELAY_LOAD:-.build/release/mediarelay-load}

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --cap) cap=$2; shift 2 ;;
        --streams) streams=$2; shift 2 ;;
        --load) load=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --size) size=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h|--help) usage 0 ;;
        *) echo "ecn-at-cap: unknown argument $1" >&2; usage 2 ;;
    esac
done
for binary in "$relay" "$generator"; do
    [ -x "$binary" ] || { echo "ecn-at-cap: $binary is missing; build first: swift build -c release" >&2; exit 1; }
done

workdir=$(mktemp -d /tmp/ecn-at-cap.XXXXXX)
relay_pid=""
cleanup() {
    [ -n "$relay_pid" ] && kill "$relay_pid" 2>/dev/null && wait "$relay_pid" 2>/dev/null || true
    rm -rf "$workdir"
}
trap cleanup EXIT

"$relay" --relay-address 127.0.0.1 --http 127.0.0.1:0 --workers 1 --ports 47000-47999 2>"$workdir/relay.log" &
relay_pid=$!
port=""
for _ in $(seq 200); do
    port=$(sed -n 's/.*http listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$workdir/relay.log")
    [ -n "$port" ] && break
    sleep 0.05
done
[ -n "$port" ] || { echo "ecn-at-cap: the relay did not start:" >&2; cat "$workdir/relay.log" >&2; exit 1; }

rate=$(python3 -c "print(int($cap * $load * $streams))")
senders=("ECT(1) scalable:1:scalable" "ECT(0) classic:2:classic" "Not-ECT classic:0:classic")
rows=()
for sender in "${senders[@]}"; do
    IFS=: read -r name tos control <<<"$sender"
    for marking in on off; do
        json=$("$generator" --relay "http://127.0.0.1:$port" --streams "$streams" --rate "$rate" --size "$size" \
            --seconds "$seconds" --tos "$tos" --congestion-control "$control" --no-progress --json \
            --session "{\"max_packets_per_second\": $cap, \"ecn_marking\": \"$marking\"}" 2>>"$workdir/load.log" | tail -1)
        rows+=("$(python3 - "$name" "$marking" "$json" "$cap" "$streams" <<'PY'
import json, sys
name, marking, result, cap, streams = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
throughput = result["received"] / result["seconds"]
loss = result["lost"] / result["sent"] * 100 if result["sent"] else 0
print("| %s | %s | %.0f (%.0f%%) | %.2f%% | %.1f%% | %.0f |" % (
    name, marking, throughput, throughput / (cap * streams) * 100, loss, result["ce_fraction"] * 100,
    result["latency_us"]["p99"]))
PY
)")
        echo "${rows[-1]}" >&2
    done
done

table=$(cat <<EOF
$streams sessions, legs capped at $cap datagrams/s each, offered ${load}x ($rate datagrams/s of $size B in all) for $seconds s.

| sender | marking | throughput, datagrams/s (of the caps) | loss | arrived CE | p99 latency, us |
|---|---|---:|---:|---:|---:|
$(printf '%s\n' "${rows[@]}")
EOF
)
echo "$table"
if [ -n "$out" ]; then echo "$table" > "$out"; fi
