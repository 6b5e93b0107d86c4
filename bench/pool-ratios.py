#!/usr/bin/env python3
"""Pools engine-bench's per-repeat lines (its stderr) from one or more whole runs.

    bench/pool-ratios.py run1.err [run2.err ...]

For every configuration and rate: Swift/C of each repeat (the two ran side by side in that
repeat), as median, quartiles and min-max over all repeats given; then uring against mmsg
(uring+gso against mmsg+gso) per repeat, for Swift and for C, with how many repeats had uring
no dearer. One run's table prints medians of a few repeats; with the spread of this machine
(+-10-15% per repeat) a median of 8 moves by about 4%, so claims about a few percent are
read here, over repeats pooled from whole runs, and each run's own table beside it.
Runs with `--timestamps both` also get each configuration with receive timestamps ("+ts")
against without, per repeat, and all of them pooled.
With the relay executable in the runs (engine-bench --executable): executable/C and
executable/harness per repeat, for its whole process and its worker thread, each over CPU per
datagram delivered at the sink, as engine-bench's executable table.

    bench/pool-ratios.py run1.csv [run2.csv ...]

The same for `mediarelay-load compare` (its PREFIX.csv, bench/sessions-vs-c.sh): for every load
and relay engine NAME that ran beside c-NAME, relay/C of each repeat (the runs of one repeat
round of one file), pooled over every file given.
"""
import csv
import re
import statistics
import sys
from collections import defaultdict

LINE = re.compile(r"repeat (\d+)\s+(C:|exe:)?(\S+)\s+(\d+)/s\s+([\d.]+) us/datagram")
DELIVERED = re.compile(r"([\d.]+) us/delivered")
WORKER = re.compile(r"worker ([\d.]+) us/delivered")
SIDES = {None: "swift", "C:": "c", "exe:": "exe"}
NAMES = ["perpacket", "mmsg", "mmsg+gso", "uring", "uring+gso", "mmsg+gso+gro", "uring+gso+gro"]
RIVALS = [("uring", "mmsg"), ("uring+gso", "mmsg+gso")]


def summary(values):
    values = sorted(values)
    n = len(values)
    return (f"n={n} median {statistics.median(values):.3f} "
            f"quartiles {values[n // 4]:.2f}-{values[(3 * n) // 4]:.2f} min-max {values[0]:.2f}-{values[-1]:.2f}")


def pool_compare(paths):
    cpu = defaultdict(dict)  # (engine, load) -> {(file, repeat): us/datagram}
    loads = []
    for path in paths:
        with open(path, newline="") as rows:
            for row in csv.DictReader(rows):
                if row["error"] or not row["relay_cpu_us_per_datagram"]:
                    continue
                cpu[(row["engine"], row["load"])][(path, row["repeat"])] = float(row["relay_cpu_us_per_datagram"])
                if row["load"] not in loads:
                    loads.append(row["load"])
    for load in loads:
        engines = [key[0] for key in cpu if key[1] == load and not key[0].startswith("c-")]
        for engine in sorted(engines, key=lambda name: NAMES.index(name) if name in NAMES else len(NAMES)):
            relay, c = cpu[(engine, load)], cpu.get(("c-" + engine, load))
            if c:
                ratios = [relay[k] / c[k] for k in relay if k in c]
                print(f"{load:10s} {engine:13s} relay/C {summary(ratios)} within 1.05x in {sum(r <= 1.05 for r in ratios)}")


def main(paths):
    if not paths:
        sys.exit("usage: pool-ratios.py ENGINE-BENCH-STDERR... | COMPARE-CSV...")
    if all(path.endswith(".csv") for path in paths):
        return pool_compare(paths)
    cpu = defaultdict(dict)  # (side, name, rate) -> {(file, repeat): us/datagram}
    delivered = defaultdict(dict)  # the same per datagram delivered; side "worker": the executable's worker thread
    for path in paths:
        with open(path) as lines:
            for line in lines:
                match = LINE.match(line)
                if match:
                    side = SIDES[match.group(2)]
                    key = (side, match.group(3), int(match.group(4)))
                    run = (path, int(match.group(1)))
                    cpu[key][run] = float(match.group(5))
                    for found, name in ((DELIVERED.search(line), side), (WORKER.search(line), "worker")):
                        if found:
                            delivered[(name,) + key[1:]][run] = float(found.group(1))
    for rate in sorted({key[2] for key in cpu}):
        for name in NAMES:
            swift, c = cpu.get(("swift", name, rate)), cpu.get(("c", name, rate))
            if swift and c:
                ratios = [swift[k] / c[k] for k in swift if k in c]
                print(f"{rate}/s {name:13s} Swift/C {summary(ratios)}")
        stamped_all = []
        for name in NAMES:
            plain, stamped = cpu.get(("swift", name, rate)), cpu.get(("swift", name + "+ts", rate))
            if plain and stamped:
                ratios = [stamped[k] / plain[k] for k in stamped if k in plain]
                stamped_all += ratios
                print(f"{rate}/s {name:13s} +ts/without {summary(ratios)}")
        if stamped_all:
            print(f"{rate}/s every configuration +ts/without {summary(stamped_all)}")
        for name in NAMES:
            for side, over in (("exe", "c"), ("worker", "c"), ("exe", "swift"), ("worker", "swift")):
                a, b = delivered.get((side, name, rate)), delivered.get((over, name, rate))
                if a and b:
                    ratios = [a[k] / b[k] for k in a if k in b]
                    label = {"exe": "executable", "worker": "exe worker", "c": "C", "swift": "harness"}
                    print(f"{rate}/s {name:13s} {label[side]}/{label[over]} {summary(ratios)}")
        for uring, mmsg in RIVALS:
            for side in ("swift", "c"):
                a, b = cpu.get((side, uring, rate)), cpu.get((side, mmsg, rate))
                if a and b:
                    ratios = [a[k] / b[k] for k in a if k in b]
                    print(f"{rate}/s {side:5s} {uring}/{mmsg} {summary(ratios)} "
                          f"no dearer in {sum(r <= 1 for r in ratios)}")


if __name__ == "__main__":
    main(sys.argv[1:])
