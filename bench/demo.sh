#!/usr/bin/env bash
# `make demo`: compare the relay's engines (per-packet against batched) on this machine and
# show the report. Extra arguments go to `mediarelay-load compare` (e.g. --quick, --repeats 5).
set -euo pipefail
cd "$(dirname "$0")/.."
.build/release/mediarelay-load compare --server .build/release/mediarelay --out bench/results/latest "$@"
echo
cat bench/results/latest.md
