#!/bin/sh
# The engine at two commits, side by side in counts that do not depend on how busy the machine
# is: user-space instructions, system calls and GSO sends per forwarded datagram, per backend,
# under loads shaped like the benchmark's 50,000/s and 200,000/s (bursts of 50 and 200).
#
#   bench/compare-instructions.sh OLD NEW [COUNT]    e.g. bench/compare-instructions.sh 2be9fa3 HEAD
#
# The harness is the same at both: bench/compare-forwarder/main.swift (one forwarding turn over
# the API both commits share) is built against each commit's engine as that commit's
# engine-bench target, in a worktree kept under .build-compare/ ($COMPARE_DIR; gitignored, later
# runs rebuild only what changed). Each build then runs as the "C" side of bench/profile-forwarder.sh:
# callgrind over COUNT/2 and COUNT datagrams (default 20000; the difference, so start-up cancels
# out), then strace -c. Columns: instructions per datagram; the engine's own syscall counter
# per datagram (over the COUNT run) and strace's count of packet-path calls (its own run);
# datagrams per receive batch; GSO segments per GSO send. Batches depend on timing (how much
# of a burst has arrived when a turn starts), and with them syscalls and instructions per
# datagram: compare them side by side. Needs `swift build -c release --product engine-bench` here (the driver),
# valgrind and strace. BURSTS="50 200" and ENGINES=... choose the loads and backends.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 OLD NEW [COUNT]" >&2; exit 2; }
old=$1 new=$2 count=${3:-20000}
# Where the two worktrees and builds are kept (COMPARE_DIR=... runs two comparisons at once).
dir=${COMPARE_DIR:-.build-compare}
bursts=${BURSTS:-50 200}
root=$(git rev-parse --show-toplevel)
cd "$root"
bench=.build/release/engine-bench
[ -x "$bench" ] || { echo "$0: build the driver first: swift build -c release --product engine-bench" >&2; exit 2; }
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] && echo "kept $work" >&2 || rm -rf "$work"' EXIT

for side in old new; do
    commit=$old; [ $side = new ] && commit=$new
    src=$root/$dir/$side-src
    if [ -d "$src" ]; then
        git -C "$src" checkout -q -f --detach "$commit" && git -C "$src" clean -q -fd
    else
        git worktree add -q --detach "$src" "$commit"
    fi
    # That commit's engine, this checkout's forwarder in place of its benchmark.
    rm -rf "$src/bench/engine-bench"
    mkdir -p "$src/bench/engine-bench"
    cp bench/compare-forwarder/main.swift "$src/bench/engine-bench/main.swift"
    flags=""
    grep -q "public var gro" "$src/Sources/DatagramEngine/EngineConfiguration.swift" && flags="-Xswiftc -DENGINE_HAS_GRO"
    echo "building the forwarder against $commit ($side)" >&2
    # shellcheck disable=SC2086
    swift build -c release --package-path "$src" --scratch-path "$root/$dir/$side" --product engine-bench $flags >&2
    cp "$root/$dir/$side/release/engine-bench" "$work/forwarder-$side"
done

for burst in $bursts; do
    for side in old new; do
        echo "profiling $side, bursts of $burst" >&2
        COMPARE_REPORT=$work/report-$side-$burst SIDES=c BURST=$burst REFERENCE=$work/forwarder-$side \
            OUT=$work/cg-$side BENCH=$bench bench/profile-forwarder.sh "$count" > "$work/table-$side-$burst"
    done
done

echo "| engine | burst | instructions/datagram old | new | new/old | syscalls/datagram old | new | strace old | new | datagrams/receive batch old | new | segments/GSO send old | new |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for burst in $bursts; do
    # Report lines, three per engine (callgrind COUNT/2, callgrind COUNT, strace):
    # NAME in out syscalls gsoSegments gsoSends receiveBatches. Per datagram: the totals of the
    # callgrind run over COUNT (what the engine counts is the packet path's alone; a difference
    # of two runs would mix in how differently their turns happened to fall).
    for side in old new; do
        awk '{ n[$1]++ } n[$1] == 2 { printf "%s %.3f %.1f %s\n", $1, $4 / $3, $2 / $7,
                   ($6 > 0 ? sprintf("%.1f", $5 / $6) : "-") }' \
            "$work/report-$side-$burst" | sort > "$work/counters-$side-$burst"
        # profile-forwarder's row with SIDES=c: | engine | - | C instructions | - | - | C syscalls | names |
        awk -F'|' 'NR > 2 { gsub(/ /, "", $2); gsub(/ /, "", $4); gsub(/ /, "", $7); print $2, $4, $7 }' \
            "$work/table-$side-$burst" | sort > "$work/instructions-$side-$burst"
    done
    join "$work/instructions-old-$burst" "$work/instructions-new-$burst" > "$work/i"
    join "$work/counters-old-$burst" "$work/counters-new-$burst" > "$work/c"
    join "$work/i" "$work/c" | awk -v burst="$burst" '{
        printf "| %s | %s | %s | %s | %.3f | %s | %s | %s | %s | %s | %s | %s | %s |\n",
            $1, burst, $2, $4, $4 / $2, $6, $9, $3, $5, $7, $10, $8, $11 }'
done
