#!/bin/sh
# User-space instructions and system calls per forwarded datagram, per backend: our engine's
# harness against the C reference, and the relay executable against the harness: counts that do
# not depend on how busy the machine is, unlike CPU time.
#
#   bench/profile-forwarder.sh [COUNT]     (default 20000; ENGINES="mmsg uring" to choose,
#                                           SIDES="swift c exe" to choose who runs: swift is the
#                                           harness, exe the relay executable, the default when
#                                           $MEDIARELAY was built; SIDES=swift skips the C runs,
#                                           which a change to the engine does not move; BURST=50
#                                           RATE=4000 to shape the load, default 16 at 4000/s)
#
# Each forwarder runs alone as a process (`engine-bench serve` for ours, .build/reference/forwarder
# for C, .build/release/mediarelay with one worker and a forward rule for the executable, its
# engine set from the harness's configuration) and is sent exactly COUNT datagrams of 200 bytes
# in bursts of 16 at 4000/s by `engine-bench --count` (FixedCount.swift). Instructions:
# valgrind's callgrind over COUNT/2 and COUNT datagrams, the difference divided by the difference
# in datagrams forwarded, so start-up and shutdown cancel out; for the executable, all its
# threads and its worker thread alone (callgrind --separate-threads: the thread that runs
# Worker.turn). System calls: `strace -c -f` over COUNT datagrams, per datagram, by name
# (compare them with the engine's own counter, `engine-bench --count` prints it), every thread's.
# The executable's uring backend stalls under valgrind 3.19 (it never forwards, and with
# --fair-sched=yes never finishes starting; the one-thread harness runs), and this VM has no
# hardware counters for `perf stat -e instructions:u`: its instructions show as "n/a".
# The callgrind files stay in $OUT (default /tmp/profile-forwarder) for
# `callgrind_annotate $OUT/swift-mmsg.cg` (the hot functions; the executable's per thread,
# $OUT/exe-mmsg.cg-02 and so on). Needs a release build and the reference:
# `swift build -c release && make reference`.
set -eu
count=${1:-20000}
half=$((count / 2))
engines=${ENGINES:-perpacket mmsg mmsg+gso uring uring+gso}
out=${OUT:-/tmp/profile-forwarder}
bench=${BENCH:-.build/release/engine-bench}
reference=${REFERENCE:-.build/reference/forwarder}
mediarelay=${MEDIARELAY:-.build/release/mediarelay}
default_sides="swift c"
[ -x "$mediarelay" ] && default_sides="swift c exe"
sides=${SIDES:-$default_sides}
burst=${BURST:-16}
rate=${RATE:-4000}
for tool in valgrind strace; do
    command -v $tool >/dev/null || { echo "$0: needs $tool (apt-get install $tool)" >&2; exit 2; }
done
[ -x "$bench" ] && [ -x "$reference" ] || { echo "$0: build $bench and $reference first" >&2; exit 2; }
case " $sides " in *" exe "*) [ -x "$mediarelay" ] || { echo "$0: build $mediarelay first" >&2; exit 2; } ;; esac
mkdir -p "$out"

# Runs one forwarder under a wrapper; prints engine-bench's "SIDE NAME sent N forwarded F ..." line.
run() { # side engine count wrap
    "$bench" --count "$3" --only "$2" --side "$1" --c-forwarder "$reference" --executable "$mediarelay" \
        --rates "$rate" --burst "$burst" --wrap "$4" 2>/dev/null
}
field() { echo "$1" | awk -v key="$2" '{ for (i = 1; i < NF; i++) if ($i == key) print $(i + 1) }'; }
syscalls() { # file.strace datagrams: "NAME PER-DATAGRAM" lines, the busiest first
    awk -v n="$2" '$1 ~ /^[0-9.]+$/ && $4 ~ /^[0-9]+$/ { printf "%s %.3f\n", $NF, $4 / n }' "$1" | sort -k2 -rn
}
instructions() { # callgrind files: their totals summed (the executable's: one file per thread)
    awk '/^(summary|totals):/ { sum += $2; nextfile } END { print sum + 0 }' "$@"
}
per() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.0f", (b - a) / n }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else printf "-" }'; }
# The executable's worker thread: the callgrind file of the thread that ran Worker.turn.
worker() { grep -l 'RelayCore6WorkerC4turn' "$1".cg-* | head -1; }

header="| engine | Swift instructions/datagram | C instructions/datagram | Swift/C | syscalls/datagram Swift | C | Swift syscalls by name (per datagram) | C syscalls by name |"
rule="|---|---:|---:|---:|---:|---:|---|---|"
case " $sides " in *" exe "*)
    header="$header executable instructions/datagram, all threads | its worker thread | executable/Swift | syscalls/datagram executable | executable syscalls by name |"
    rule="$rule---:|---:|---:|---:|---|" ;;
esac
echo "$header"
echo "$rule"
for engine in $engines; do
    ins_swift=- ins_c=- ins_exe=- ins_worker=- sys_swift=- sys_c=- sys_exe=- names_swift=- names_c=- names_exe=-
    for side in $sides; do
        file=$out/$side-$engine
        case "$side $engine" in
        "exe uring"*) ins_exe="n/a" ins_worker="n/a" ;;  # stalls under valgrind (above)
        exe*)
            rm -f "$file"-half.cg* "$file".cg*
            line1=$(run $side "$engine" $half "valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file=$file-half.cg")
            line2=$(run $side "$engine" $count "valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file=$file.cg")
            forwarded=$(( $(field "$line2" forwarded) - $(field "$line1" forwarded) ))
            ins_exe=$(per "$(instructions "$file"-half.cg-*)" "$(instructions "$file".cg-*)" $forwarded)
            ins_worker=$(per "$(instructions "$(worker "$file-half")")" "$(instructions "$(worker "$file")")" $forwarded) ;;
        *)
            line1=$(run $side "$engine" $half "valgrind --tool=callgrind --callgrind-out-file=$file-half.cg")
            line2=$(run $side "$engine" $count "valgrind --tool=callgrind --callgrind-out-file=$file.cg")
            forwarded=$(( $(field "$line2" forwarded) - $(field "$line1" forwarded) ))
            eval "ins_$side=$(per "$(instructions "$file-half.cg")" "$(instructions "$file.cg")" $forwarded)" ;;
        esac
        line=$(run $side "$engine" $count "strace -c -f -o $file.strace")
        # strace -c rows: % time, seconds, usecs/call, calls, [errors], syscall. One run: the
        # batches a turn finds vary from run to run, so a difference of two runs can mislead;
        # counted are the calls made at least once per 100 datagrams: the packet path's, not
        # start-up's (a few hundred for the Swift runtime, a few dozen for C), nor the
        # executable's main and HTTP threads' (a few a second).
        forwarded=$(field "$line" forwarded)
        eval "sys_$side=$(syscalls $file.strace $forwarded | awk '$1 != "total" && $2 >= 0.01 { sum += $2 } END { printf "%.3f", sum }')"
        eval "names_$side=\"$(syscalls $file.strace $forwarded | awk '$1 != "total" && $2 >= 0.01 { printf "%s%s %s", sep, $1, $2; sep = ", " }')\""
    done
    row="| $engine | $ins_swift | $ins_c | $(ratio "$ins_swift" "$ins_c") | $sys_swift | $sys_c | $names_swift | $names_c |"
    case " $sides " in *" exe "*)
        row="$row $ins_exe | $ins_worker | $(ratio "$ins_exe" "$ins_swift") | $sys_exe | $names_exe |" ;;
    esac
    echo "$row"
done
