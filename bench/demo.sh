#!/usr/bin/env bash
# `make demo`: compare the relay's engines (per-packet against batched) on this machine, beside
# the C per-packet forwarder (bench/reference, built by make reference) over the same flows, and
# show the report. Extra arguments go to `mediarelay-load compare` after these and win (e.g.
# --repeats 1 --max-repeats 1 for a quick look, --max-repeats 3 for exactly three rounds).
# Then, as root, the kernel fast path beside the user-space path: bench/fastpath-cpu.sh at two of
# the same session loads through veth namespaces (the fast path needs a real interface, and its
# work runs in the kernel's softirq, so it is counted as whole-machine CPU, not the relay's own),
# added to the report. Without root that part says so and is left out.
set -euo pipefail
cd "$(dirname "$0")/.."
# The relay alone on its CPU, the generator on the other (--pin relay); runs of 1 s, three
# interleaved rounds of every load, then more rounds of the loads whose checks are not yet
# settled, up to eight, none that would end past 300 s (bench/README.md, "make demo").
.build/release/mediarelay-load compare --server .build/release/mediarelay --reference .build/reference/forwarder \
	--pin relay --seconds 1 --repeats 3 --max-repeats 8 --budget 300 --out bench/results/latest "$@"
{
	echo
	echo "## The kernel fast path beside the user-space path"
	echo
	if [ "$(id -u)" = 0 ]; then
		RUNS=1 REPEATS=2 SECONDS_PER_RUN=3 IDLE_SECONDS=2 LOADS=50k,200k COLUMNS=direct,uring,tc \
			OUT=bench/results/latest-fastpath.md bench/fastpath-cpu.sh >/dev/null
		echo "bench/fastpath-cpu.sh (short: one run, two repeats; two whole runs and the TURN load in"
		echo "bench/README.md, \"Kernel fast path\"). Its full report: [latest-fastpath.md](latest-fastpath.md)."
		echo
		# The report's tables without its heading.
		sed -n '/^|/,$p' bench/results/latest-fastpath.md
	else
		echo "Not measured: the fast path needs root (network namespaces, BPF). Run \`sudo make demo\`."
	fi
} >> bench/results/latest.md
echo
cat bench/results/latest.md
