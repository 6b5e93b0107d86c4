#!/bin/bash
# A real browser across a fleet of two relays: headless Chromium opens two relay-only
# RTCPeerConnections through relay A and sends 100 data-channel messages between them.
#   plain     A takes both allocations.
#   capacity  A holds one allocation at most: the second client is sent to B (300).
#   drain     A drains (SIGTERM) before the page loads: both clients are sent to B.
# Chromium refuses a redirect to a loopback address, so the relays live in a network namespace
# of their own with two addresses on one veth, the browser in another.
#
#   Tests/Interop/chromium-fleet.sh MEDIARELAY plain|capacity|drain [extra relay options...]
# Last line: "verdict delivered=N a_allocations=N b_allocations=N redirects=N".
set -u
relay=$1 mode=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
tag=$$
cl=mr-browser-cl-$tag rl=mr-browser-rl-$tag
dir=$(mktemp -d)
cleanup() {
    kill $(jobs -p) 2>/dev/null
    sleep 0.3
    ip netns del "$cl" 2>/dev/null
    ip netns del "$rl" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
ip netns add "$cl" && ip netns add "$rl" || exit 2
ip link add "vb-$tag" netns "$cl" type veth peer name "vr-$tag" netns "$rl" || exit 2
ip -n "$cl" addr add 10.231.0.10/24 dev "vb-$tag"
ip -n "$rl" addr add 10.231.0.1/24 dev "vr-$tag"
ip -n "$rl" addr add 10.231.0.2/24 dev "vr-$tag"
for ns in "$cl" "$rl"; do ip -n "$ns" link set lo up; done
ip -n "$cl" link set "vb-$tag" up
ip -n "$rl" link set "vr-$tag" up

common=(--turn-user alice:wonderland --turn-allowed-peer 10.231.0.0/24 --workers 1 "$@")
first=(--turn 10.231.0.1:3478 --relay-address 10.231.0.1 --ports 40000-40999 --http 127.0.0.1:9001)
case $mode in
    plain) ;;
    capacity) first+=(--turn-max-allocations 1 --turn-alternate 10.231.0.2:3478) ;;
    drain) first+=(--drain-seconds 30 --turn-alternate 10.231.0.2:3478) ;;
    *) echo "$0: mode is plain, capacity or drain" >&2; exit 2 ;;
esac
ip netns exec "$rl" "$relay" "${first[@]}" "${common[@]}" > "$dir/a.log" 2>&1 &
first_pid=$!
ip netns exec "$rl" "$relay" --turn 10.231.0.2:3478 --relay-address 10.231.0.2 --ports 41000-41999 \
    --http 127.0.0.1:9002 "${common[@]}" > "$dir/b.log" 2>&1 &
cd "$here" || exit 2
ip netns exec "$cl" python3 result-server.py 10.231.0.10 8080 > "$dir/results" 2>&1 &
stats() { ip netns exec "$rl" curl -sf "127.0.0.1:$1/v1/stats"; }
for _ in $(seq 1 50); do stats 9001 >/dev/null && stats 9002 >/dev/null && break; sleep 0.2; done
if [ "$mode" = drain ]; then kill -TERM "$first_pid"; sleep 0.5; fi
ip netns exec "$cl" timeout 40 chromium --headless=new --no-sandbox --disable-gpu --user-data-dir="$dir/profile" \
    "http://10.231.0.10:8080/fleet.html?turn=turn:10.231.0.1:3478?transport=udp" > "$dir/chromium.log" 2>&1 &
for _ in $(seq 1 40); do grep -qE "RESULT (ok|timeout|error)" "$dir/results" && break; sleep 1; done
cat "$dir/results"
field() { python3 -c 'import json,sys; d=json.load(sys.stdin)["turn"]; print(eval(sys.argv[1]))' "$1"; }
a=$(stats 9001 | field 'd["allocations_created"]')
b=$(stats 9002 | field 'd["allocations_created"]')
r=$(stats 9001 | field 'sum(d["redirects"].values())')
delivered=$(sed -n 's/^RESULT ok \([0-9]*\)$/\1/p' "$dir/results" | tail -1)
echo "verdict delivered=${delivered:-0} a_allocations=${a:-?} b_allocations=${b:-?} redirects=${r:-?}"
