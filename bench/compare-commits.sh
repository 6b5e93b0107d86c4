#!/bin/sh
# Builds bench/engine-bench at two commits and runs the two binaries interleaved, so that the
# machine's drift falls on both: old, new, new, old, old, new... one repeat at a time. Prints the
# median CPU per datagram of each engine at each rate for both, and new/old.
#
#   bench/compare-commits.sh OLD NEW [ROUNDS] [extra engine-bench options]
#   e.g. bench/compare-commits.sh main HEAD 6 --rates 50000,200000 --seconds 2
#
# Each commit is built in a temporary git worktree with its own scratch path (.build-compare-*,
# gitignored); nothing in this checkout changes. Run it on a quiet machine: the figures mean
# nothing while others compile. OLD_BIN=PATH NEW_BIN=PATH use engine-bench binaries built
# already (OLD and NEW then only label the table). On a busy machine, compare counts instead:
# bench/compare-instructions.sh OLD NEW (instructions, syscalls, GSO sends per datagram).
# Each side runs with its own commit's harness: engine-bench from before 2026-11-22 evening runs
# our forwarder as a thread and leaves placement to the scheduler, later ones run it as a pinned
# process (bench/README.md). Across that change the two sides are not the same kind of run:
# compare such commits by counts.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 OLD NEW [ROUNDS] [engine-bench options]" >&2; exit 2; }
old=$1 new=$2; shift 2
rounds=${1:-6}; [ $# -gt 0 ] && shift
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'for side in old new; do git -C "$root" worktree remove --force "$work/$side" 2>/dev/null || true; done; rm -rf "$work"' EXIT

for side in old new; do
    commit=$old; [ $side = new ] && commit=$new
    if [ -n "${OLD_BIN:-}" ] && [ -n "${NEW_BIN:-}" ]; then
        prebuilt=$OLD_BIN; [ $side = new ] && prebuilt=$NEW_BIN
        cp "$prebuilt" "$work/engine-bench-$side"
        continue
    fi
    git -C "$root" worktree add --detach "$work/$side" "$commit" >/dev/null
    echo "building engine-bench at $commit ($side)" >&2
    swift build -c release --package-path "$work/$side" --scratch-path "$root/.build-compare-$side" \
        --product engine-bench >&2
    cp "$root/.build-compare-$side/release/engine-bench" "$work/engine-bench-$side"
done

: > "$work/lines"
i=1
while [ $i -le "$rounds" ]; do
    # Alternate which binary goes first, so neither always runs on a warmer machine.
    if [ $((i % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
    for side in $order; do
        # From the scratch directory, where no .build/reference/forwarder is: a newer
        # engine-bench would otherwise run the C reference beside every backend too, and the old
        # one does not know it, so each round would not be like with like.
        (cd "$work" && "./engine-bench-$side" --repeats 1 "$@") 2>&1 >/dev/null | sed "s/^/$side /" | tee -a "$work/lines" >&2
    done
    i=$((i + 1))
done

# Lines read: SIDE repeat 1  NAME RATE/s CPU us/datagram ...
printf '| engine | rate | old us/datagram | new us/datagram | new/old |\n|---|---:|---:|---:|---:|\n'
awk '
    $2 == "repeat" { key = $4 " " $5; cpu[$1, key, ++n[$1, key]] = $6; keys[key] = 1 }
    function median(side, key,   count, i, j, t, v) {
        count = n[side, key]
        for (i = 1; i <= count; i++) v[i] = cpu[side, key, i]
        for (i = 1; i <= count; i++) for (j = i + 1; j <= count; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
        return count % 2 ? v[(count + 1) / 2] : (v[count / 2] + v[count / 2 + 1]) / 2
    }
    END {
        for (key in keys) {
            split(key, part, " ")
            o = median("old", key); w = median("new", key)
            printf "| %s | %s | %.2f | %.2f | %.3f |\n", part[1], part[2], o, w, w / o
        }
    }' "$work/lines" | sort
