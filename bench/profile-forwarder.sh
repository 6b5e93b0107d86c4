#!/bin/sh
# User-space instructions and system calls per forwarded datagram, our engine against the C
# reference, per backend: counts that do not depend on how busy the machine is, unlike CPU time.
#
#   bench/profile-forwarder.sh [COUNT]     (default 20000; ENGINES="mmsg uring" to choose,
#                                           SIDES=swift to skip the C runs, which a change to
#                                           the engine does not move; BURST=50 RATE=4000 to
#                                           shape the load, default 16 at 4000/s)
#
# Each forwarder runs alone as a process (`engine-bench serve` for ours, .build/reference/forwarder
# for C) and is sent exactly COUNT datagrams of 200 bytes in bursts of 16 at 4000/s by
# `engine-bench --count` (FixedCount.swift). Instructions: valgrind's callgrind over COUNT/2 and
# COUNT datagrams, the difference divided by the difference in datagrams forwarded, so start-up
# and shutdown cancel out. System calls: `strace -c -f` over COUNT datagrams, per datagram, by name
# (compare them with the engine's own counter, `engine-bench --count` prints it).
# The callgrind files stay in $OUT (default /tmp/profile-forwarder) for
# `callgrind_annotate $OUT/swift-mmsg.cg` (the hot functions). Needs a release build and the
# reference: `swift build -c release --product engine-bench && make reference`.
set -eu
count=${1:-20000}
half=$((count / 2))
engines=${ENGINES:-perpacket mmsg mmsg+gso uring uring+gso}
sides=${SIDES:-swift c}
out=${OUT:-/tmp/profile-forwarder}
bench=${BENCH:-.build/release/engine-bench}
reference=${REFERENCE:-.build/reference/forwarder}
burst=${BURST:-16}
rate=${RATE:-4000}
for tool in valgrind strace; do
    command -v $tool >/dev/null || { echo "$0: needs $tool (apt-get install $tool)" >&2; exit 2; }
done
[ -x "$bench" ] && [ -x "$reference" ] || { echo "$0: build $bench and $reference first" >&2; exit 2; }
mkdir -p "$out"

# Runs one forwarder under a wrapper; prints engine-bench's "SIDE NAME sent N forwarded F ..." line.
run() { # side engine count wrap
    "$bench" --count "$3" --only "$2" --side "$1" --c-forwarder "$reference" --rates "$rate" --burst "$burst" --wrap "$4" 2>/dev/null
}
field() { echo "$1" | awk -v key="$2" '{ for (i = 1; i < NF; i++) if ($i == key) print $(i + 1) }'; }
syscalls() { # file.strace datagrams: "NAME PER-DATAGRAM" lines, the busiest first
    awk -v n="$2" '$1 ~ /^[0-9.]+$/ && $4 ~ /^[0-9]+$/ { printf "%s %.3f\n", $NF, $4 / n }' "$1" | sort -k2 -rn
}
instructions() { awk '/^(summary|totals):/ { print $2; exit }' "$1"; }

echo "| engine | Swift instructions/datagram | C instructions/datagram | Swift/C | syscalls/datagram Swift | C | Swift syscalls by name (per datagram) | C syscalls by name |"
echo "|---|---:|---:|---:|---:|---:|---|---|"
for engine in $engines; do
    row="| $engine"
    names=""
    ins_c=- sys_c=- ins_swift=- sys_swift=-
    for side in $sides; do
        file=$out/$side-$engine
        line1=$(run $side "$engine" $half "valgrind --tool=callgrind --callgrind-out-file=$file-half.cg")
        line2=$(run $side "$engine" $count "valgrind --tool=callgrind --callgrind-out-file=$file.cg")
        forwarded=$(( $(field "$line2" forwarded) - $(field "$line1" forwarded) ))
        per=$(awk -v a="$(instructions $file-half.cg)" -v b="$(instructions $file.cg)" -v n=$forwarded 'BEGIN { printf "%.0f", (b - a) / n }')
        eval "ins_$side=$per"
        line=$(run $side "$engine" $count "strace -c -f -o $file.strace")
        # strace -c rows: % time, seconds, usecs/call, calls, [errors], syscall. One run: the
        # batches a turn finds vary from run to run, so a difference of two runs can mislead;
        # counted are the calls made at least once per 100 datagrams: the packet path's, not
        # start-up's (a few hundred for the Swift runtime, a few dozen for C).
        forwarded=$(field "$line" forwarded)
        eval "sys_$side=$(syscalls $file.strace $forwarded | awk '$1 != "total" && $2 >= 0.01 { sum += $2 } END { printf "%.3f", sum }')"
        names="$names | $(syscalls $file.strace $forwarded | awk '$1 != "total" && $2 >= 0.01 { printf "%s%s %s", sep, $1, $2; sep = ", " }')"
    done
    ratio=$(awk -v s="$ins_swift" -v c="$ins_c" 'BEGIN { if (c + 0 > 0 && s + 0 > 0) printf "%.2f", s / c; else printf "-" }')
    echo "$row | $ins_swift | $ins_c | $ratio | $sys_swift | $sys_c$names |"
done
