#!/usr/bin/env python3
"""The throughput table from engine-bench's per-run lines (bench/throughput.sh writes them).

    bench/throughput-table.py LOG                     the summary and the per-rate table
    bench/throughput-table.py --passed LOAD RATE LOG  exit 0 if some side passed at RATE

Each line is engine-bench's per-run line (stderr) with the load's name in front, as
throughput.sh writes it:

    LOAD repeat N  [C:|exe:]CONFIG RATE/s ... delivered D% ... sent S/s  socket drops forwarder A
    sink B  forwarder CPU F%  generator CPU G%  busy NAME C% NAME C%  limit L

A side passes a rate when more than half of its repeats there have `limit none`: at least
99.9% delivered, with the source having sent the rate (engine-bench's `Limit`). Its throughput
is the highest rate it passed with every lower rate passed too, so one lucky repeat above a
failure does not count; "at least" when what stopped it was the generator, or nothing. Beside it: the forwarder's CPU there (its process, as a share of one
CPU) and the generator's (source and sink threads), and what stopped it at the next rate: the
forwarder (its socket dropped), or the generator (the source could not send the rate, or the
sink's socket dropped), so that a limit of the generator is never reported as the relay's.
Where a pinned CPU was busier than what engine-bench ran on it by more than 10 points, other
work shared it, and the table says so.
"""
import re
import statistics
import sys
from collections import Counter, defaultdict

LINE = re.compile(r"^(\S+) repeat (\d+)\s+(C:|exe:)?(\S+)\s+(\d+)/s .*?delivered ([\d.]+)%")
LOAD = re.compile(r"sent (\d+)/s  socket drops forwarder (\d+) sink (\d+)  forwarder CPU (\d+)%  generator CPU (\d+)%"
                  r"(?:  busy (\S+) (\d+)% (\S+) (\d+)%)?  limit (\S+)")
OTHER_WORK = 10  # points of a pinned CPU busy beyond what engine-bench ran there
SIDES = {None: "harness", "C:": "C reference", "exe:": "mediarelay"}
STOPPED = {
    "forwarder": "the forwarder: its socket dropped",
    "forwarder+sink": "the forwarder and the sink: both sockets dropped",
    "sink": "the generator: the sink's socket dropped, the forwarder's did not",
    "source": "the generator: the source did not send the rate, so the forwarder was not offered it",
    "unexplained": "lost, but neither socket dropped",
}


def read(path):
    """(load, side, config) -> rate -> [run], a run being a dict of its figures."""
    runs = defaultdict(lambda: defaultdict(list))
    with open(path) as lines:
        for line in lines:
            match, load = LINE.match(line), LOAD.search(line)
            if not (match and load):
                continue
            run = {"delivered": float(match.group(6)), "sent": int(load.group(1)),
                   "drops": (int(load.group(2)), int(load.group(3))), "forwarder_cpu": int(load.group(4)),
                   "generator_cpu": int(load.group(5)), "limit": load.group(10)}
            if load.group(6):
                run["busy"] = {"generator": (load.group(6), int(load.group(7))),
                               "forwarder": (load.group(8), int(load.group(9)))}
            key = (match.group(1), SIDES[match.group(3)], match.group(4))
            runs[key][int(match.group(5))].append(run)
    return runs


def passed(runs):
    return sum(run["limit"] == "none" for run in runs) * 2 > len(runs)


def median(runs, figure):
    return statistics.median(figure(run) for run in runs)


def busy(runs, which):
    """The median busy share of one pinned CPU, with what engine-bench ran on it."""
    if not all("busy" in run for run in runs):
        return "-"
    return f"{median(runs, lambda run: run['busy'][which][1]):.0f}% ({runs[0]['busy'][which][0]})"


def other_work(runs):
    """Where a pinned CPU was busier than engine-bench's own threads on it, by more than
    OTHER_WORK points in the median: a sentence, else ''."""
    if not all("busy" in run for run in runs):
        return ""
    found = []
    for which, ours in (("forwarder", "forwarder_cpu"), ("generator", "generator_cpu")):
        extra = median(runs, lambda run: run["busy"][which][1] - run[ours])
        if extra > OTHER_WORK:
            found.append(f"the {which}'s CPU {extra:.0f} points")
    return f"; other work took {' and '.join(found)}: not a quiet machine" if found else ""


def sustained(by_rate, every):
    """The highest rate passed with every lower rate passed; and the first rate failed."""
    best = None
    for rate in sorted(by_rate):
        runs = by_rate[rate]
        ok = all(run["limit"] == "none" for run in runs) if every else passed(runs)
        if not ok:
            return best, rate
        best = rate
    return best, None


def cpu(runs, figure):
    return f"{median(runs, lambda run: run[figure]):.0f}%"


GENERATOR = {"source", "sink"}


def limit_at(by_rate, rate):
    """The most common limit among the repeats that failed at `rate`; None past the rates tried."""
    if rate is None:
        return None
    return Counter(run["limit"] for run in by_rate[rate] if run["limit"] != "none").most_common(1)[0][0]


def stopped(by_rate, rate):
    if rate is None:
        return "not reached: the highest rate tried passed"
    runs = by_rate[rate]
    limit = limit_at(by_rate, rate)
    figures = (f"delivered {median(runs, lambda run: run['delivered']):.1f}%, "
               f"sent {median(runs, lambda run: run['sent']):.0f}/s, "
               f"forwarder CPU {cpu(runs, 'forwarder_cpu')}, generator CPU {cpu(runs, 'generator_cpu')}")
    return f"{rate}/s: {STOPPED.get(limit, limit)} ({figures}{other_work(runs)})"


def summary(runs):
    rows = ["| load | side | highest rate, >= 99.9% delivered in most repeats | forwarder CPU there | "
            "generator CPU there | highest rate, every repeat | what stopped it at the next rate |",
            "|---|---|---:|---:|---:|---:|---|"]
    notes = []
    for (load, side, config), by_rate in runs.items():
        best, failed = sustained(by_rate, every=False)
        every, _ = sustained(by_rate, every=True)
        if best is None:
            rows.append(f"| {load} ({config}) | {side} | below {failed}/s | - | - | - | {stopped(by_rate, failed)} |")
            continue
        there = by_rate[best]
        if other_work(there):
            notes.append(f"- {load}, {side} at {best}/s{other_work(there)}.")
        # Stopped by the generator, or by no rate at all: the forwarder's own limit is higher.
        bound = "at least " if failed is None or limit_at(by_rate, failed) in GENERATOR else ""
        rows.append(f"| {load} ({config}) | {side} | {bound}{best}/s{' (see below)' if other_work(there) else ''} | "
                    f"{cpu(there, 'forwarder_cpu')} | {cpu(there, 'generator_cpu')} | "
                    f"{f'{every}/s' if every else '-'} | {stopped(by_rate, failed)} |")
    return "\n".join(rows + ([""] + notes if notes else [])) + "\n"


def detail(runs):
    rows = ["| load | side | offered | repeats passed | delivered, median | sent, median | "
            "forwarder CPU | generator CPU | forwarder's CPU busy | generator's CPU busy | limits |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for (load, side, config), by_rate in runs.items():
        for rate in sorted(by_rate):
            rate_runs = by_rate[rate]
            limits = ", ".join(f"{name} {count}" for name, count in Counter(run["limit"] for run in rate_runs).most_common())
            rows.append(f"| {load} ({config}) | {side} | {rate}/s | "
                        f"{sum(run['limit'] == 'none' for run in rate_runs)} of {len(rate_runs)} | "
                        f"{median(rate_runs, lambda run: run['delivered']):.2f}% | "
                        f"{median(rate_runs, lambda run: run['sent']):.0f}/s | "
                        f"{cpu(rate_runs, 'forwarder_cpu')} | {cpu(rate_runs, 'generator_cpu')} | "
                        f"{busy(rate_runs, 'forwarder')} | {busy(rate_runs, 'generator')} | {limits} |")
    return "\n".join(rows) + "\n"


def main(arguments):
    if len(arguments) == 4 and arguments[0] == "--passed":
        load, rate, path = arguments[1], int(arguments[2]), arguments[3]
        sides = [by_rate[rate] for (name, _, _), by_rate in read(path).items() if name == load and rate in by_rate]
        sys.exit(0 if any(passed(runs) for runs in sides) else 1)
    if len(arguments) != 1:
        sys.exit(__doc__)
    runs = read(arguments[0])
    if not runs:
        sys.exit(f"{arguments[0]}: no engine-bench per-run lines with a load's figures")
    print(summary(runs))
    print(detail(runs), end="")


if __name__ == "__main__":
    main(sys.argv[1:])
