#!/usr/bin/env python3
"""The tables of bench/fastpath-cpu.sh from its per-run logs (one file per whole run).

    table.py RUN_LOG...

A log line: run load column repeat sent delivered relayed us_per_datagram failed_clients
own_us_per_datagram offered other_idle% other_run% kernel_datagrams kernel_on kernel_entries
handed_back modes, or the same with "-" fields and "unavailable" (a fast-path column this
build cannot run). us_per_datagram is whole-machine CPU, own_us_per_datagram the benchmark's
own processes' (a cpuacct cgroup; "-" without one).
Overhead is a column's figure minus direct's in the same run and repeat; a ratio of overheads is
taken per repeat too, so drift between repeats falls on both sides. Every figure is the median
(min-max) over the repeats of one run.
"""
import statistics
import sys

ORDER = ["direct", "coturn", "uring", "tc", "xdp"]
# A repeat whose other work moved by less than this share of the machine (percent) between the
# idle interval and the run: its whole-machine figure is close to ours alone.
STEADY = 3.0
NAMES = {"direct": "direct (no relay)", "coturn": "coturn 4.17.1 fastest", "uring": "mediarelay uring+gso",
         "tc": "mediarelay fast path tc", "xdp": "mediarelay fast path xdp"}


def spread(values, digits=2):
    if not values:
        return "-"
    return "%.*f (%.*f-%.*f)" % (digits, statistics.median(values), digits, min(values), digits, max(values))


def main():
    rows, unavailable, loads, runs = {}, set(), [], []
    for path in sys.argv[1:]:
        for line in open(path):
            f = line.split()
            if len(f) < 9:
                continue
            run, load, column, repeat = f[0], f[1], f[2], int(f[3])
            if load not in loads:
                loads.append(load)
            if run not in runs:
                runs.append(run)
            if f[7] == "unavailable":
                unavailable.add(column)
                continue
            own = float(f[9]) if len(f) > 9 and f[9] != "-" else None
            offered = int(f[10]) if len(f) > 10 else int(f[4])
            drift = abs(float(f[12]) - float(f[11])) if len(f) > 12 else None
            kernel = (int(f[13]), f[14] == "1", int(f[15]), int(f[16]), f[17] if len(f) > 17 else "?") if len(f) > 16 and f[13] != "-" else None
            rows[(run, load, column, repeat)] = (int(f[4]), int(f[5]), int(f[6]), float(f[7]), int(f[8]), own, offered, drift, kernel)
    columns = [c for c in ORDER if any(k[2] == c for k in rows) or c in unavailable]

    def figures(run, load, column):
        return {k[3]: v for k, v in rows.items() if k[:3] == (run, load, column)}

    def overheads(run, load, column, metric=3):
        base, mine = figures(run, load, "direct"), figures(run, load, column)
        return {r: mine[r][metric] - base[r][metric] for r in mine
                if r in base and mine[r][metric] is not None and base[r][metric] is not None}

    print("Whole machine: every CPU's busy time (/proc/stat, softirq included) per relayed datagram, us; own: the")
    print("benchmark's processes alone (cpuacct); overhead: minus direct in the same repeat; median (min-max) over repeats.")
    print("Other work's drift: how far other programs' share of the machine moved between the idle interval and the run")
    print("(percent of all CPUs); the whole-machine figure holds that movement, the own-process figure does not. Steady")
    print("repeats: those whose drift was under %.0f%%, their whole-machine figures alone." % STEADY)
    print()
    header = "| load | path |" + "".join(" run %s: whole machine | overhead | whole machine, steady repeats | own processes | overhead | delivered, worst | sent of offered, worst | other work's drift, worst |" % r for r in runs)
    print(header)
    print("|---|---|" + "---:|---:|---:|---:|---:|---:|---:|---:|" * len(runs))
    for load in loads:
        for column in columns:
            if column == "coturn" and not any(figures(r, load, column) for r in runs):
                continue
            cells = []
            for run in runs:
                mine = figures(run, load, column)
                if column in unavailable and not mine:
                    cells += ["not available in this build", "-", "-", "-", "-", "-", "-", "-"]
                    continue
                worst = min((v[1] / v[0] for v in mine.values() if v[0]), default=None)
                failed = sum(v[4] for v in mine.values())
                for metric in (3, 5):
                    cells.append(spread([v[metric] for v in mine.values() if v[metric] is not None]))
                    cells.append(spread(list(overheads(run, load, column, metric).values())) if column != "direct" else "-")
                    if metric == 3:
                        steady = [v[3] for v in mine.values() if v[7] is not None and v[7] < STEADY]
                        cells.append("%s, %d of %d" % (spread(steady), len(steady), len(mine)) if steady else "none of %d" % len(mine))
                cells.append(("%.2f%%" % (100 * worst) if worst is not None else "-") + (", %d clients failed" % failed if failed else ""))
                short = min((v[0] / v[6] for v in mine.values() if v[6]), default=None)
                cells.append("%.1f%%" % (100 * short) if short is not None else "-")
                drift = max((v[7] for v in mine.values() if v[7] is not None), default=None)
                cells.append("%.1f%%" % drift if drift is not None else "-")
            print("| %s | %s | %s |" % (load, NAMES[column], " | ".join(cells)))
    carried = [(k, v) for k, v in sorted(rows.items()) if k[2] in ("tc", "xdp") and v[8] is not None]
    if carried:
        print()
        print("What the kernel carried in the fast-path columns (mediarelay's /v1/stats fast_path after each repeat, since start):")
        print()
        print("| run | load | path | repeat | on | interfaces' modes | entries | kernel datagrams / relayed | handed back |")
        print("|---|---|---|---:|---|---|---:|---:|---:|")
        for (run, load, column, repeat), v in carried:
            datagrams, on, entries, handed, modes = v[8]
            print("| %s | %s | %s | %d | %s | %s | %d | %.1f%% | %d |" % (run, load, column, repeat, "yes" if on else "no", modes, entries,
                                                               100 * datagrams / v[2] if v[2] else 0, handed))
    print()
    print("Ratios of overheads, per repeat (aims: fast path / coturn <= 0.3, fast path / uring <= 0.5):")
    print()
    print("| load | ratio |" + "".join(" run %s: whole machine | run %s: own processes |" % (r, r) for r in runs))
    print("|---|---|" + "---:|---:|" * len(runs))
    pairs = [("uring", "coturn"), ("tc", "coturn"), ("tc", "uring"), ("xdp", "coturn"), ("xdp", "uring")]
    for load in loads:
        for top, bottom in pairs:
            if top not in columns or bottom not in columns:
                continue
            if not any(figures(r, load, bottom) for r in runs) and bottom not in unavailable:
                continue
            cells = []
            for run in runs:
                for metric in (3, 5):
                    a, b = overheads(run, load, top, metric), overheads(run, load, bottom, metric)
                    ratios = [a[r] / b[r] for r in a if r in b and b[r] > 0]
                    if (top in unavailable and not figures(run, load, top)) or (bottom in unavailable and not figures(run, load, bottom)):
                        cells.append("not available in this build")
                    else:
                        cells.append(spread(ratios) if ratios else "-")
            print("| %s | %s / %s |" % (load, top, bottom) + "".join(" %s |" % c for c in cells))


main()
