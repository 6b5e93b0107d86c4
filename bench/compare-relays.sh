#!/bin/sh
# The mediarelay executable at two builds, side by side: `mediarelay-load compare` runs each
# build once per round over the same loads and engines, interleaved so that the machine's drift
# falls on both (old, new, new, old, ...). Prints the median relay CPU per datagram of each
# engine at each load for both builds, and new/old. The harness (mediarelay-load) is one binary
# for both sides; only the relay differs.
#
#   bench/compare-relays.sh OLD_MEDIARELAY NEW_MEDIARELAY [ROUNDS] [compare options]
#   e.g. bench/compare-relays.sh /tmp/old/mediarelay .build/release/mediarelay 8 \
#            --engines perpacket,mmsg,uring,uring+gso --loads 50k,200k --seconds 2
#
# LOADGEN=PATH picks the load generator (default .build/release/mediarelay-load). Run it on a
# quiet machine: the figures mean nothing while others compile.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 OLD_MEDIARELAY NEW_MEDIARELAY [ROUNDS] [compare options]" >&2; exit 2; }
old=$1 new=$2; shift 2
rounds=${1:-6}; [ $# -gt 0 ] && shift
load=${LOADGEN:-.build/release/mediarelay-load}
for binary in "$old" "$new" "$load"; do
    [ -x "$binary" ] || { echo "$0: $binary is not an executable (swift build -c release)" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

: > "$work/rows"
i=1
while [ "$i" -le "$rounds" ]; do
    # Alternate which build goes first, so neither always runs on a warmer machine.
    if [ $((i % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
    for side in $order; do
        binary=$old; [ "$side" = new ] && binary=$new
        if ! "$load" compare --server "$binary" --repeats 1 --out "$work/$side-$i" "$@" > "$work/$side-$i.log" 2>&1; then
            echo "$0: round $i, $side: mediarelay-load compare failed:" >&2
            tail -n 5 "$work/$side-$i.log" >&2
            exit 1
        fi
        # CSV: repeat,engine,relay_engine,load,...,delivered_pct (10),...,relay_cpu_us_per_datagram (14)
        tail -n +2 "$work/$side-$i.csv" | sed "s/^/$side,/" >> "$work/rows"
        echo "round $i $side done" >&2
    done
    i=$((i + 1))
done

printf '| engine | load | old us/datagram (median) | new us/datagram (median) | new/old | delivered %% old, new (lowest) | rounds |\n'
printf '|---|---|---:|---:|---:|---|---:|\n'
awk -F, '
    { key = $3 "|" $5; side = $1; count[side, key]++; cpu[side, key, count[side, key]] = $16
      if (!((side, key) in low) || $12 < low[side, key]) low[side, key] = $12; keys[key] = 1 }
    function median(side, key,   n, i, j, t, v) {
        n = count[side, key]
        for (i = 1; i <= n; i++) v[i] = cpu[side, key, i]
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
        return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    END {
        for (key in keys) {
            split(key, part, "|")
            o = median("old", key); w = median("new", key)
            printf "| %s | %s | %.3f | %.3f | %.3f | %s, %s | %d |\n", part[1], part[2], o, w, w / o, low["old", key], low["new", key], count["new", key]
        }
    }' "$work/rows" | sort
