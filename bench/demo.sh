#!/usr/bin/env bash
# `make demo`: compare the relay's engines (per-packet against batched) on this machine, beside
# the C per-packet forwarder (bench/reference, built by make reference) over the same flows, and
# show the report. Extra arguments go to `mediarelay-load compare` (e.g. --quick, --repeats 5).
set -euo pipefail
cd "$(dirname "$0")/.."
.build/release/mediarelay-load compare --server .build/release/mediarelay --reference .build/reference/forwarder \
	--out bench/results/latest "$@"
echo
cat bench/results/latest.md
