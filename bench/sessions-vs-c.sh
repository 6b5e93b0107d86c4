#!/usr/bin/env bash
# Issue 20 for sessions: the relay's forward path per backend (perpacket, mmsg, uring with GSO
# and GRO off; uring with GSO) against the C reference forwarder of the same backend
# (bench/reference, --legs mode: c-perpacket, c-mmsg, c-uring, c-uring+gso), over the same
# session flows at 20 and at 200 session pairs, interleaved repeats, two whole runs back to
# back; then the per-repeat relay/C ratios of both runs pooled. See bench/README.md ("Sessions
# against the C reference").
#
#   bench/sessions-vs-c.sh [extra mediarelay-load compare options; they come last and win]
#
# Environment: REPEATS [8], RUN_SECONDS [1.5], LOADS [50k,200k,50kx200,200kx200] (NNNk: NNN thousand
# datagrams/s of 200 B over 20 sessions; NNNkx200: over 200), PIN [split] (off leaves placement to
# the scheduler), RUNS [2], OUT [bench/results/sessions-vs-c] (writes OUT-runN.{md,csv,svg} and
# OUT-pooled.txt). About 9 minutes a run at the defaults on 2 cores: run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench/results/sessions-vs-c}
for binary in .build/release/mediarelay .build/release/mediarelay-load .build/reference/forwarder; do
	[ -x "$binary" ] || { echo "sessions-vs-c: $binary is missing: swift build -c release && make reference" >&2; exit 2; }
done
csvs=()
for run in $(seq 1 "${RUNS:-2}"); do
	echo "sessions-vs-c: run $run of ${RUNS:-2}" >&2
	.build/release/mediarelay-load compare --server .build/release/mediarelay --reference .build/reference/forwarder \
		--references all --engines perpacket,mmsg,uring,uring+gso --loads "${LOADS:-50k,200k,50kx200,200kx200}" \
		--repeats "${REPEATS:-8}" --seconds "${RUN_SECONDS:-1.5}" --pin "${PIN:-split}" --out "$out-run$run" "$@"
	csvs+=("$out-run$run.csv")
done
bench/pool-ratios.py "${csvs[@]}" | tee "$out-pooled.txt"
