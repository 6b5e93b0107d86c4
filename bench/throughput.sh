#!/bin/sh
# Throughput per core (issue 20): the highest offered rate at which one forwarder, alone on its
# CPU, delivers at least 99.9%, with the generator (source and sink) on the other CPU
# (engine-bench --pin alone). Two loads, each with uring+gso on all three sides (the harness,
# the C reference and the relay executable, one worker):
#   one-flow  uring+gso      one flow of 200-byte datagrams; the forwarder's socket takes no GRO,
#                            so each datagram reaches it on its own
#   video     uring+gso+gro  the same flow in video bursts, taken whole with UDP GRO
# The source sends each millisecond's datagrams as GSO sends for both (--source-gso): sent one
# by one, one CPU's generator cannot offer the rates a forwarder takes (bench/README.md).
# For each load the rates rise until no side passes (more than half its repeats at 99.9%, the
# source having sent the rate); bench/throughput-table.py then gives, per side, the highest
# rate passed, the forwarder's CPU there, and what stopped it: the forwarder, or the generator.
#
#   bench/throughput.sh [engine-bench options]
#   RATES=200000,400000,...  BENCH_REPEATS=5  BENCH_SECONDS=2  LOADS="one-flow video"  OUT=bench/results/throughput
#
# Writes $OUT.log (engine-bench's per-run lines, the load's name in front) and $OUT.md (the
# tables). Needs .build/release/engine-bench, .build/release/mediarelay (swift build -c release)
# and .build/reference/forwarder (make reference). Run it on a quiet machine of two CPUs or more.
set -eu
cd "$(dirname "$0")/.."
bench=.build/release/engine-bench
for binary in "$bench" .build/release/mediarelay .build/reference/forwarder; do
    [ -x "$binary" ] || { echo "$0: $binary is not an executable (swift build -c release; make reference)" >&2; exit 2; }
done
rates=${RATES:-200000,400000,600000,800000,1000000,1200000,1500000,2000000,2500000,3000000,4000000,5000000,6000000,8000000,10000000}
repeats=${BENCH_REPEATS:-5}
seconds=${BENCH_SECONDS:-2}
out=${OUT:-bench/results/throughput}
mkdir -p "$(dirname "$out")"
: > "$out.log"
run=$(mktemp)
trap 'rm -f "$run"' EXIT
for load in ${LOADS:-one-flow video}; do
    case $load in
        one-flow) config=uring+gso ;;
        video) config=uring+gso+gro ;;
        *) echo "$0: LOADS: one-flow or video, not $load" >&2; exit 2 ;;
    esac
    for rate in $(echo "$rates" | tr , ' '); do
        "$bench" --pin alone --source-gso --only "$config" --rates "$rate" --repeats "$repeats" --seconds "$seconds" \
            "$@" > /dev/null 2> "$run" || { cat "$run" >&2; exit 1; }
        grep '^repeat' "$run" | sed "s/^/$load /" | tee -a "$out.log" >&2
        python3 bench/throughput-table.py --passed "$load" "$rate" "$out.log" || break
    done
done
{
    echo "bench/throughput.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), $(git rev-parse --short HEAD 2>/dev/null || echo '?'),"
    echo "$(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), Linux $(uname -r);"
    echo "repeats $repeats of $seconds s, rates $rates, engine-bench options: --pin alone --source-gso $*"
    echo
    python3 bench/throughput-table.py "$out.log"
} > "$out.md"
cat "$out.md"
