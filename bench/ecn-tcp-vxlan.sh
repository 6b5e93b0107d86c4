#!/bin/bash
# The kernel's TCP with ECN (a congestion controller that is not ours), carried over UDP through
# a relay session at its rate limit, with the relay's CE marking on and then off.
#
#   netns A (10.77.1.2)            netns R: mediarelay             netns B (10.77.2.2)
#   vx0 192.168.77.1  --UDP-->  leg 0  ==session==  leg 1  --UDP-->  vx0 192.168.77.2
#   iperf3 client  <------------ TCP inside VXLAN, both ways ---------->  iperf3 server
#
# Each end's VXLAN device sends to one leg of the session and listens on that leg's port, so
# every frame crosses the relay; "tos inherit" copies the inner ECN field to the outer header,
# and decapsulation (RFC 6040) turns an ECT inner packet CE when the outer one arrived CE. So
# a CE mark the relay sets on a datagram reaches the receiving TCP, which echoes it (ECE), and
# the sending TCP (Reno: net.ipv4.tcp_ecn=1 in both namespaces) backs off without a loss.
#
# Usage: bench/ecn-tcp-vxlan.sh [--relay PATH] [--rate DATAGRAMS_PER_SECOND] [--seconds S] [--fast-path MODE]
#   --relay      the mediarelay executable [.build/release/mediarelay, else .build/debug/mediarelay]
#   --rate       the session legs' max_packets_per_second [20000]
#   --seconds    each iperf3 run [5]
#   --fast-path  the relay's --fast-path (off, tc, xdp, auto) on its two veths [off]
# Prints a line per run and, last, one JSON object: {"rate":..,"seconds":..,"fast_path":..,
# "on":{..},"off":{..}} with each run's retransmits, goodput (bits/s), the relay's CE marks and
# rate-limit drops, and the datagrams the kernel fast path carried.
# Exit status: 0 done; 1 a step failed (said on stderr); 77 this host does not allow network
# namespaces (no CAP_SYS_ADMIN). Needs root, iproute2 (netns, veth, vxlan), ethtool, iperf3,
# python3. Every namespace (and so every device and the relay) goes on exit, however it ends.
#
# Why 20,000 datagrams/s and not a media-like 2,000: the namespaces are joined by veth, so the
# round trip is about 100 us, and TCP never sends less than one or two segments per round trip
# (10,000-20,000 datagrams/s here). Below that rate no marking can hold TCP under the limit and
# only losses slow it (bench/README.md, "The kernel's TCP through a capped session").
set -euo pipefail

relay=""
rate=20000
seconds=5
fast_path=off
while [ $# -gt 0 ]; do
    case "$1" in
        --relay) relay="$2"; shift 2 ;;
        --rate) rate="$2"; shift 2 ;;
        --seconds) seconds="$2"; shift 2 ;;
        --fast-path) fast_path="$2"; shift 2 ;;
        *) echo "ecn-tcp-vxlan: unknown argument $1 (see the header of $0)" >&2; exit 1 ;;
    esac
done
if [ -z "$relay" ]; then
    relay=.build/release/mediarelay
    [ -x "$relay" ] || relay=.build/debug/mediarelay
fi
[ -x "$relay" ] || { echo "ecn-tcp-vxlan: $relay: no such executable (swift build first)" >&2; exit 1; }
for tool in ip ethtool iperf3 python3; do
    command -v "$tool" >/dev/null || { echo "ecn-tcp-vxlan: $tool missing (make test-deps installs it)" >&2; exit 1; }
done

id=$$
ns_r="ecnr$id" ns_a="ecna$id" ns_b="ecnb$id"
relay_pid=""
log=""
cleanup() {
    status=$?
    [ -n "$relay_pid" ] && kill "$relay_pid" 2>/dev/null && wait "$relay_pid" 2>/dev/null
    for ns in "$ns_a" "$ns_b" "$ns_r"; do ip netns del "$ns" 2>/dev/null || true; done
    if [ -n "$log" ]; then
        # The relay's own lines only when something went wrong.
        [ "$status" -ne 0 ] && sed 's/^/relay: /' "$log" >&2
        rm -f "$log"
    fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

step() { "$@" >/dev/null 2>&1 || { echo "ecn-tcp-vxlan: failed: $*" >&2; exit 1; }; }
if ! ip netns add "$ns_r" 2>/dev/null; then
    echo "ecn-tcp-vxlan: this host does not allow network namespaces here (ip netns add)" >&2
    exit 77
fi
step ip netns add "$ns_a"
step ip netns add "$ns_b"
for ns in "$ns_r" "$ns_a" "$ns_b"; do step ip -n "$ns" link set lo up; done
step ip link add "va$id" netns "$ns_a" type veth peer name "ra$id" netns "$ns_r"
step ip link add "vb$id" netns "$ns_b" type veth peer name "rb$id" netns "$ns_r"
step ip -n "$ns_a" addr add 10.77.1.2/24 dev "va$id"
step ip -n "$ns_r" addr add 10.77.1.1/24 dev "ra$id"
step ip -n "$ns_b" addr add 10.77.2.2/24 dev "vb$id"
step ip -n "$ns_r" addr add 10.77.2.1/24 dev "rb$id"
# The inner TCP checksum is left to offload, which veth never does: the relay would carry
# packets with a partial checksum that the far end drops. Computed in software instead.
for pair in "$ns_a va$id" "$ns_b vb$id" "$ns_r ra$id" "$ns_r rb$id"; do
    set -- $pair
    step ip -n "$1" link set "$2" up
    step ip netns exec "$1" ethtool -K "$2" tx off
done
for ns in "$ns_a" "$ns_b"; do
    step ip netns exec "$ns" sysctl -qw net.ipv4.tcp_ecn=1
    # Reno reacts to CE as to a loss (RFC 3168); BBR, this host's default, ignores CE. Reno is
    # allowed in every namespace; cubic may not be.
    step ip netns exec "$ns" sysctl -qw net.ipv4.tcp_congestion_control=reno
done

log=$(mktemp)
fast_path_options=()
[ "$fast_path" = off ] || fast_path_options=(--fast-path "$fast_path" --fast-path-interface "ra$id" --fast-path-interface "rb$id")
ip netns exec "$ns_r" "$relay" --ports 45000-45001 --http 127.0.0.1:9480 --workers 1 "${fast_path_options[@]}" 2>"$log" &
relay_pid=$!

# The control API from inside the relay's namespace: METHOD PATH [BODY] -> the answer's JSON.
api() {
    ip netns exec "$ns_r" python3 - "$@" <<'PY'
import json, sys, urllib.request
method, path = sys.argv[1], sys.argv[2]
body = sys.argv[3].encode() if len(sys.argv) > 3 else None
request = urllib.request.Request("http://127.0.0.1:9480" + path, data=body, method=method)
with urllib.request.urlopen(request, timeout=10) as answer:
    text = answer.read().decode()
print(text if text else "{}")
PY
}
for _ in $(seq 100); do api GET /healthz >/dev/null 2>&1 && break; sleep 0.05; done

# One iperf3 run through a fresh session with "ecn_marking" $1; prints its JSON summary.
run() {
    local marking=$1 session id p0 p1 mac_a mac_b
    session=$(api POST /v1/sessions "{\"max_packets_per_second\": $rate, \"ecn_marking\": \"$marking\"}")
    read -r id p0 p1 < <(python3 -c 'import json,sys; s=json.loads(sys.argv[1]); print(s["id"], s["legs"][0]["port"], s["legs"][1]["port"])' "$session")
    for ns in "$ns_a" "$ns_b"; do ip -n "$ns" link del vx0 2>/dev/null || true; done
    step ip -n "$ns_a" link add vx0 type vxlan id 42 local 10.77.1.2 remote 10.77.1.1 dstport "$p0" srcport "$p0" "$((p0 + 1))" tos inherit
    step ip -n "$ns_b" link add vx0 type vxlan id 42 local 10.77.2.2 remote 10.77.2.1 dstport "$p1" srcport "$p1" "$((p1 + 1))" tos inherit
    step ip -n "$ns_a" addr add 192.168.77.1/24 dev vx0
    step ip -n "$ns_b" addr add 192.168.77.2/24 dev vx0
    step ip -n "$ns_a" link set vx0 up
    step ip -n "$ns_b" link set vx0 up
    # Fixed neighbours: no ARP through a session whose legs are not latched yet.
    mac_a=$(ip -n "$ns_a" -o link show vx0 | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
    mac_b=$(ip -n "$ns_b" -o link show vx0 | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
    step ip -n "$ns_a" neigh add 192.168.77.2 lladdr "$mac_b" dev vx0 nud permanent
    step ip -n "$ns_b" neigh add 192.168.77.1 lladdr "$mac_a" dev vx0 nud permanent
    # Latch leg 1 (B), then leg 0 (A), each with one datagram through its VXLAN device.
    ip netns exec "$ns_b" bash -c 'echo latch > /dev/udp/192.168.77.1/9' 2>/dev/null || true
    sleep 0.2
    ip netns exec "$ns_a" bash -c 'echo latch > /dev/udp/192.168.77.2/9' 2>/dev/null || true
    sleep 0.2
    step ip netns exec "$ns_b" iperf3 -s -1 -D -B 192.168.77.2
    sleep 0.3
    local out kernel_before
    kernel_before=$(api GET /v1/stats)
    out=$(ip netns exec "$ns_a" iperf3 -c 192.168.77.2 -t "$seconds" -J 2>/dev/null || true)
    sleep 0.3
    local stats kernel_after
    stats=$(api GET "/v1/sessions/$id")
    kernel_after=$(api GET /v1/stats)
    api DELETE "/v1/sessions/$id" >/dev/null 2>&1 || true
    python3 - "$marking" "$out" "$stats" "$kernel_before" "$kernel_after" <<'PY'
import json, sys
marking, iperf, session = sys.argv[1], json.loads(sys.argv[2] or "{}"), json.loads(sys.argv[3])
kernel = [json.loads(text).get("fast_path", {}).get("datagrams", 0) for text in sys.argv[4:6]]
if "error" in iperf or "end" not in iperf:
    sys.exit("ecn-tcp-vxlan: iperf3 with marking %s: %s" % (marking, iperf.get("error", "no result")))
end = iperf["end"]
leg = session["legs"][0]
print(json.dumps({
    "retransmits": end["sum_sent"]["retransmits"],
    "goodput_bps": round(end["sum_received"]["bits_per_second"]),
    "congestion_control": end.get("sender_tcp_congestion", "?"),
    "ect0_in": leg["ecn_in"]["ect0"],
    "ce_marked": leg["ce_marked"]["rate_limit"],
    "rate_limit_drops": leg["drops"].get("rate_limit", 0),
    "kernel_datagrams": kernel[1] - kernel[0],
}))
PY
}

on=$(run on)
echo "marking on:  $on" >&2
off=$(run off)
echo "marking off: $off" >&2
echo "{\"rate\": $rate, \"seconds\": $seconds, \"fast_path\": \"$fast_path\", \"on\": $on, \"off\": $off}"
