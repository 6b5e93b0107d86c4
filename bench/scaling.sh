#!/usr/bin/env bash
# Multi-worker scaling (issue 11): perpacket and uring+gso with --workers 1 and 2, at rates up to
# the highest this machine sustains, on loopback. The rows say delivered % and CPU per datagram;
# the machine's cores are shared by the generator's two threads and the relay's workers, so
# read where delivered % falls below 100 as the machine's limit, not the relay's alone.
# Writes bench/results/scaling.{md,csv,svg}. LOADS=... picks the rates; extra arguments go to
# `mediarelay-load compare` (e.g. --quick, --repeats 5).
set -euo pipefail
cd "$(dirname "$0")/.."
.build/release/mediarelay-load compare --server .build/release/mediarelay \
	--engines perpacket,uring+gso --workers 1,2 --loads "${LOADS:-200k,300k,400k}" \
	--out bench/results/scaling "$@"
echo
cat bench/results/scaling.md
