#!/bin/sh
# Two builds of the relay executable, pinned, each measured against the C reference in the same
# repeats: whole engine-bench runs alternate between the builds (old, new, new, old, ...), and
# each repeat's executable/C ratio (CPU per datagram delivered) is pooled per build. The C
# forwarder is the yardstick inside every repeat, so the machine's drift between runs cancels;
# new/old is the ratio of the pooled medians.
#
#   bench/compare-executables.sh OLD_MEDIARELAY NEW_MEDIARELAY [RUNS] [engine-bench options]
#   e.g. bench/compare-executables.sh .build-old/release/mediarelay .build/release/mediarelay 4 \
#            --rates 50000 --seconds 1 --repeats 8 --only perpacket,mmsg,uring,uring+gso
#
# Needs .build/release/engine-bench and .build/reference/forwarder (make reference). Logs stay
# in $OUT (default /tmp/compare-executables). Run it on a quiet machine.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 OLD_MEDIARELAY NEW_MEDIARELAY [RUNS] [engine-bench options]" >&2; exit 2; }
old=$1 new=$2; shift 2
runs=${1:-4}; [ $# -gt 0 ] && shift
bench=.build/release/engine-bench
reference=.build/reference/forwarder
for binary in "$old" "$new" "$bench" "$reference"; do
    [ -x "$binary" ] || { echo "$0: $binary is not an executable (swift build -c release; make reference)" >&2; exit 2; }
done
out=${OUT:-/tmp/compare-executables}
mkdir -p "$out"
i=1
while [ "$i" -le "$runs" ]; do
    if [ $((i % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
    for side in $order; do
        binary=$old; [ "$side" = new ] && binary=$new
        "$bench" --c-forwarder "$reference" --executable "$binary" "$@" > "$out/$side-$i.md" 2> "$out/$side-$i.log"
        echo "run $i $side done" >&2
    done
    i=$((i + 1))
done
python3 - "$out" "$runs" <<'PY'
import re, statistics, sys
from collections import defaultdict
out, runs = sys.argv[1], int(sys.argv[2])
line = re.compile(r"repeat (\d+)\s+(\S+)\s+(\d+)/s .*?([\d.]+) us/delivered")
ratios = defaultdict(list)  # (build, run, engine, rate) -> exe/C per repeat
for build in ("old", "new"):
    for run in range(1, runs + 1):
        seen = defaultdict(dict)
        for text in open(f"{out}/{build}-{run}.log"):
            match = line.search(text)
            if not match:
                continue
            repeat, name, rate, cpu = match.group(1), match.group(2), match.group(3), float(match.group(4))
            side, _, engine = name.rpartition(":")
            seen[(engine, rate, repeat)][side or "swift"] = cpu
        for (engine, rate, _), sides in seen.items():
            if "exe" in sides and "C" in sides:
                ratios[(build, run, engine, rate)].append(sides["exe"] / sides["C"])
def pooled(build, engine, rate, runs_wanted):
    return [r for run in runs_wanted for r in ratios.get((build, run, engine, rate), [])]
def summary(values):
    values = sorted(values)
    q = statistics.quantiles(values, n=4) if len(values) >= 4 else [values[0], statistics.median(values), values[-1]]
    return f"{statistics.median(values):.3f} ({q[0]:.3f}-{q[2]:.3f})"
keys = sorted({(k[2], k[3]) for k in ratios})
# Each whole pair of runs on its own (the claim must hold in each), then all pooled.
for label, wanted in [(f"pair {i}", [i]) for i in range(1, runs + 1)] + [("pooled", list(range(1, runs + 1)))]:
    print(f"\n{label}: executable/C per repeat, median (quartiles)\n")
    print("| engine | rate | old exe/C | new exe/C | new/old |")
    print("|---|---:|---:|---:|---:|")
    for engine, rate in keys:
        old, new = pooled("old", engine, rate, wanted), pooled("new", engine, rate, wanted)
        if old and new:
            print(f"| {engine} | {rate} | {summary(old)} | {summary(new)} | {statistics.median(new) / statistics.median(old):.3f} |")
PY
