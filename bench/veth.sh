#!/usr/bin/env bash
# Loopback against a veth pair (issue 11). On loopback a GSO buffer can reach a socket without
# being cut into datagrams, so loopback may overstate what GSO (and GRO) gain on a real NIC.
# This runs the same comparison twice: on loopback, then with the relay and the C forwarder in
# one network namespace and the load generator in another, joined by a veth pair whose offloads
# are set like a real link's (below). Both
# namespaces (and so the veth pair) are created here and removed on exit, whatever happens.
# Needs root (ip netns). Writes bench/results/veth-loopback.* and bench/results/veth.*.
# LOADS=... picks the loads; extra arguments go to `mediarelay-load compare` (e.g. --quick).
set -euo pipefail
cd "$(dirname "$0")/.."
generator=mr-c11-gen relay=mr-c11-relay
generator_link=c11-gen0 relay_link=c11-relay0
generator_address=10.211.0.1 relay_address=10.211.0.2
[ "$(id -u)" = 0 ] || { echo "bench/veth.sh: needs root for ip netns" >&2; exit 2; }
cleanup() {
	ip netns del "$generator" 2>/dev/null || true
	ip netns del "$relay" 2>/dev/null || true
}
trap cleanup EXIT
cleanup
ip netns add "$generator"
ip netns add "$relay"
ip link add "$generator_link" netns "$generator" type veth peer name "$relay_link" netns "$relay"
ip -n "$generator" addr add "$generator_address/24" dev "$generator_link"
ip -n "$relay" addr add "$relay_address/24" dev "$relay_link"
for namespace in "$generator" "$relay"; do ip -n "$namespace" link set lo up; done
ip -n "$generator" link set "$generator_link" up
ip -n "$relay" link set "$relay_link" up
# Like a real link: a GSO buffer is cut into datagrams before it crosses the pair (as a NIC
# would put them on the wire), and each side may coalesce arrivals again with GRO, as a NIC's
# driver does. Without this a GSO buffer would cross the pair whole, as on loopback. veth runs
# GRO only in NAPI, here in its own thread (so arrivals queue up and can be merged), and hands a
# locally sent UDP datagram to it only with rx-udp-gro-forwarding on: "gro on" alone merges
# nothing (GROVethTests shows both).
for side in "$generator:$generator_link" "$relay:$relay_link"; do
	ip netns exec "${side%%:*}" ethtool -K "${side#*:}" tx-udp-segmentation off gro on rx-udp-gro-forwarding on ||
		echo "bench/veth.sh: ethtool could not set the offloads of ${side#*:}; GSO buffers may cross whole" >&2
	ip netns exec "${side%%:*}" sh -c "echo 1 > /sys/class/net/${side#*:}/threaded" ||
		echo "bench/veth.sh: no threaded NAPI on ${side#*:}; its GRO will merge little" >&2
done

arguments=(--server .build/release/mediarelay --reference .build/reference/forwarder --loads "${LOADS:-50k,200k,video200}" "$@")
echo "== loopback"
.build/release/mediarelay-load compare "${arguments[@]}" --out bench/results/veth-loopback
echo "== veth: generator in $generator ($generator_address), relay in $relay ($relay_address)"
ip netns exec "$generator" .build/release/mediarelay-load compare "${arguments[@]}" \
	--relay-host "$relay_address" --server-prefix "ip netns exec $relay" --out bench/results/veth
# What the veth pair offloads decides whether a GSO buffer crosses it whole: say it with the results.
{
	echo
	echo "## The veth pair's offloads"
	echo
	echo "Relay side ($relay_link), from ethtool -k:"
	echo
	ip netns exec "$relay" ethtool -k "$relay_link" 2>/dev/null |
		grep -E "generic-(segmentation|receive)-offload|udp|gro" | sed 's/^/    /' || echo "    (ethtool not available)"
} >> bench/results/veth.md
echo
cat bench/results/veth-loopback.md bench/results/veth.md
