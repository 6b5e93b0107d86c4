#!/bin/sh
# User-space instructions per relayed TURN datagram (ChannelData both ways), counted by
# valgrind's callgrind: a figure that does not depend on how busy the machine is.
#
#   bench/turn-instructions.sh [COUNT]      (default 20000 per direction; CLIENTS="1 16" to
#                                            choose; MEDIARELAY=PATH for another binary)
#
# The release mediarelay runs alone under callgrind (1 worker, --engine mmsg, GSO and GRO off:
# the same datagram path every run) and bench/turn-fixed-count.py relays exactly COUNT/2, then
# COUNT ChannelData messages each way in lock-step bursts of 16 (160 B) from CLIENTS clients,
# taken in turn, so with 16 no two consecutive datagrams come from one client. Instructions per
# datagram = the difference of the two runs' totals over the difference in datagrams relayed:
# start-up, allocation set-up and shutdown cancel out. Idle turns (100 ms timeouts, stats
# every 100 ms) do not quite, since the runs differ in length: a run of the driver alone shows
# them to be a few hundred instructions per idle turn, under 1% here.
# The callgrind files stay in $OUT (default /tmp/turn-instructions) for callgrind_annotate.
#
#   SETUP="50 250" bench/turn-instructions.sh     instructions per client set-up instead: two
#                                                  runs of 64 datagrams each, with 50 and with
#                                                  250 clients; the difference of the totals
#                                                  over the 200 extra clients is what one
#                                                  client's Allocate (401, then 200) and
#                                                  ChannelBind cost the server.
set -eu
cd "$(dirname "$0")/.."
count=${1:-20000}
half=$((count / 2))
clients_list=${CLIENTS:-1 16}
out=${OUT:-/tmp/turn-instructions}
mediarelay=${MEDIARELAY:-.build/release/mediarelay}
command -v valgrind >/dev/null || { echo "$0: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
[ -x "$mediarelay" ] || { echo "$0: build $mediarelay first: swift build -c release" >&2; exit 2; }
mkdir -p "$out"

free_port() {  # a UDP port nobody has bound on this host now
    while :; do
        port=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 10000))
        [ -n "$(ss -Hunl "sport = :$port" 2>/dev/null)" ] || { echo "$port"; return; }
    done
}

# One run: clients datagrams file. Prints the datagrams relayed (both directions).
run() {
    port=$(free_port)
    low=$(( 10000 + $(od -An -N2 -tu2 /dev/urandom) % 9000 ))
    valgrind --tool=callgrind --callgrind-out-file="$3" "$mediarelay" --http 127.0.0.1:0 --workers 1 \
        --engine mmsg --gso off --gro off --ports "$low-$((low + ${span:-99}))" --relay-address 127.0.0.1 \
        --turn "127.0.0.1:$port" --turn-realm bench.example --turn-user bench:pw \
        --turn-allowed-peer 127.0.0.1/32 --turn-unauthenticated-rate 0 --log-level warning 2>"$3.log" &
    server=$!
    line=$(python3 bench/turn-fixed-count.py --server "127.0.0.1:$port" --user bench:pw --count "$2" --clients "$1")
    kill -TERM "$server"
    wait "$server" || true
    case "$line" in
        *" lost 0") echo "$line" | awk '{ print $2 }' ;;
        *) echo "$0: $line (clients $1, count $2): not an exact count, rerun" >&2; exit 1 ;;
    esac
}
instructions() { awk '/^(summary|totals):/ { print $2; exit }' "$1"; }

if [ -n "${SETUP:-}" ]; then
    set -- $SETUP
    few=$1 many=$2
    span=$((2 * many + 100))  # a relayed port per client within the TURN share (50%), and room
    run "$few" 64 "$out/setup-$few.cg" >/dev/null
    run "$many" 64 "$out/setup-$many.cg" >/dev/null
    per=$(awk -v a="$(instructions "$out/setup-$few.cg")" -v b="$(instructions "$out/setup-$many.cg")" -v n=$((many - few)) \
        'BEGIN { printf "%.0f", (b - a) / n }')
    echo "| binary | clients | instructions/client set-up |"
    echo "|---|---:|---:|"
    echo "| $mediarelay | $few, $many | $per |"
    exit 0
fi

echo "| binary | clients | datagrams relayed (difference) | instructions/datagram |"
echo "|---|---:|---:|---:|"
for clients in $clients_list; do
    file=$out/c$clients
    first=$(run "$clients" "$half" "$file-half.cg")
    second=$(run "$clients" "$count" "$file.cg")
    relayed=$((second - first))
    per=$(awk -v a="$(instructions "$file-half.cg")" -v b="$(instructions "$file.cg")" -v n=$relayed 'BEGIN { printf "%.0f", (b - a) / n }')
    echo "| $mediarelay | $clients | $relayed | $per |"
done
