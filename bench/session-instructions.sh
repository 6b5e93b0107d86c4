#!/bin/sh
# User-space instructions per datagram through one relay session, with and without its rate
# limits and the egress cap, counted by valgrind's callgrind (a figure that does not move with
# the machine's load): the cost of the policer (bench/README.md, "What the policer costs per
# datagram").
#
#   bench/session-instructions.sh [COUNT]      (default 20000; MEDIARELAY=PATH for another binary)
#
# The release mediarelay runs alone under callgrind (1 worker, --engine mmsg, GSO and GRO off)
# and bench/session-fixed-count.py sends exactly COUNT/2, then COUNT datagrams of 200 B through a
# session in lock-step bursts of 16. Instructions per datagram = the difference of the two runs'
# totals over the difference in datagrams sent: start-up and shutdown cancel out. The total moves
# by 10-20% from run to run with how the bursts fell into receive batches and how long the runs
# took (idle turns, stats); the instructions attributed to SessionTable.swift and to the
# policer's files (Sources/RelayCore/Policing, inlined code included) do not. BATCH=N sets the
# relay's --batch-size, ENGINE=uring (or perpacket) another backend than mmsg. Variants:
#   none         no limit, no cap
#   packets      max_packets_per_second far above the load (the one limit the relay had before):
#                every datagram refills and charges the bucket and checks the shallow threshold
#   both         max_packets_per_second and max_bytes_per_second: two buckets in series
#   egress       --egress-rate far above the load: credit per datagram, a chunk per turn
#   past limit   a 500 datagrams/s limit that lock step at about 800/s overruns, ECT(1): the
#                mix of marked, passed and dropped datagrams a policing relay sees
# ONLY="none,packets" runs only the variants named. The callgrind files stay in $OUT (default
# /tmp/session-instructions) for callgrind_annotate.
set -eu
cd "$(dirname "$0")/.."
count=${1:-20000}
half=$((count / 2))
out=${OUT:-/tmp/session-instructions}
mediarelay=${MEDIARELAY:-.build/release/mediarelay}
command -v valgrind >/dev/null || { echo "$0: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
[ -x "$mediarelay" ] || { echo "$0: build $mediarelay first: swift build -c release" >&2; exit 2; }
mkdir -p "$out"

# One run: name flags session tos datagrams file. Prints the driver's line.
run() {
    low=$(( 10000 + $(od -An -N2 -tu2 /dev/urandom) % 9000 ))
    # shellcheck disable=SC2086
    valgrind --tool=callgrind --callgrind-out-file="$6" "$mediarelay" --http 127.0.0.1:0 --workers 1 \
        --engine "${ENGINE:-mmsg}" --gso off --gro off --batch-size "${BATCH:-64}" --ports "$low-$((low + 9))" --relay-address 127.0.0.1 \
        --log-level info $2 2>"$6.log" &
    server=$!
    port=""
    while [ -z "$port" ]; do
        sleep 0.2
        port=$(sed -n 's/.*http listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$6.log")
        kill -0 "$server" 2>/dev/null || { echo "$0: the relay did not start: $(cat "$6.log")" >&2; exit 1; }
    done
    line=$(python3 bench/session-fixed-count.py --http "127.0.0.1:$port" --count "$5" --session "$3" --tos "$4")
    kill -TERM "$server"
    wait "$server" || true
    echo "$line"
}
field() { echo "$1" | awk -v key="$2" '{ for (i = 1; i < NF; i++) if ($i == key) print $(i + 1) }'; }
instructions() { awk '/^(summary|totals):/ { print $2; exit }' "$1"; }
# Instructions callgrind attributes to source files whose path contains $2 (code inlined from
# them counts for them; callgrind_annotate names them relative to the checkout): what the policer's own code and the session table's cost, whatever
# the turns' batching did to the rest.
attributed() {
    callgrind_annotate --auto=no --threshold=100 "$1" 2>/dev/null |
        awk -v pattern="$2" '/file:function/ { listing = 1; next } listing && NF == 0 && seen { exit }
            listing && $1 ~ /^[0-9,]+$/ { seen = 1; if (index($0, pattern)) { gsub(",", "", $1); sum += $1 } }
            END { print sum + 0 }'
}
per() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.0f", (b - a) / n }'; }

echo "| variant | datagrams sent (difference) | forwarded | marked CE | instructions/datagram | of which SessionTable.swift | of which Policing/ |"
echo "|---|---:|---:|---:|---:|---:|---:|"
while IFS='|' read -r name flags session tos; do
    case ",${ONLY:-$name}," in *",$name,"*) ;; *) continue ;; esac
    file=$out/$(echo "$name" | tr ' ' '-')
    first=$(run "$name" "$flags" "$session" "$tos" "$half" "$file-half.cg")
    second=$(run "$name" "$flags" "$session" "$tos" "$count" "$file.cg")
    sent=$(( $(field "$second" sent) - $(field "$first" sent) ))
    forwarded=$(( $(field "$second" forwarded) - $(field "$first" forwarded) ))
    marked=$(( $(field "$second" marked) - $(field "$first" marked) ))
    total=$(per "$(instructions "$file-half.cg")" "$(instructions "$file.cg")" "$sent")
    table=$(per "$(attributed "$file-half.cg" Sources/RelayCore/Sessions/SessionTable.swift:)" \
        "$(attributed "$file.cg" Sources/RelayCore/Sessions/SessionTable.swift:)" "$sent")
    policing=$(per "$(attributed "$file-half.cg" Sources/RelayCore/Policing/)" "$(attributed "$file.cg" Sources/RelayCore/Policing/)" "$sent")
    echo "| $name | $sent | $forwarded | $marked | $total | $table | $policing |"
done <<VARIANTS
none||{}|0
packets||{"max_packets_per_second": 1000000}|1
both||{"max_packets_per_second": 1000000, "max_bytes_per_second": 1000000000}|1
egress|--egress-rate 1000000000|{}|1
past limit||{"max_packets_per_second": 500}|1
VARIANTS
