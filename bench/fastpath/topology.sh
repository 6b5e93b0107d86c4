# Sourced by bench/fastpath-cpu.sh and bench/fastpath/one-core.sh: the three namespaces of issue
# 30's benchmark and the servers that run in the middle one.
#
#   client ns fpb-c  c0 10.73.1.2/24 ---- r0 10.73.1.1/24  relay ns fpb-r
#   peer ns   fpb-p  p0 10.73.2.2/24 ---- r1 10.73.2.1/24  (ip_forward on)
#
# The peer namespace answers for every address of 10.74.0.0/16 (a local route: flow i's peer is
# 10.74.(i/250).(i%250+1), as bench/turn-bench.sh's --peers each), so coturn's --multiplex-peer,
# which tells allocations apart by peer address, can run; the relay namespace routes that range
# to it. Servers listen on 10.73.1.1 and give relayed addresses there; the peer namespace reaches
# them through r1. Only this file's namespaces and the processes it started are touched.

client_ns=fpb-c relay_ns=fpb-r peer_ns=fpb-p
relay_ip=10.73.1.1 client_ip=10.73.1.2 peer_ip=10.73.2.2 peer_base=10.74.0.1
echo_port=9000 turn_port=3478 http_port=9480
turn_user=bench turn_password=bench-password turn_realm=bench.example

topology_down() {
	local namespace
	for namespace in "$client_ns" "$relay_ns" "$peer_ns"; do ip netns del "$namespace" 2>/dev/null || true; done
}

topology_up() {
	local namespace pair
	topology_down
	for namespace in "$client_ns" "$relay_ns" "$peer_ns"; do ip netns add "$namespace"; ip -n "$namespace" link set lo up; done
	ip link add c0 netns "$client_ns" type veth peer name r0 netns "$relay_ns"
	ip link add r1 netns "$relay_ns" type veth peer name p0 netns "$peer_ns"
	ip -n "$client_ns" addr add "$client_ip/24" dev c0
	ip -n "$relay_ns" addr add "$relay_ip/24" dev r0
	ip -n "$relay_ns" addr add 10.73.2.1/24 dev r1
	ip -n "$peer_ns" addr add "$peer_ip/24" dev p0
	for pair in "$client_ns:c0" "$relay_ns:r0" "$relay_ns:r1" "$peer_ns:p0"; do ip -n "${pair%%:*}" link set "${pair#*:}" up; done
	ip -n "$client_ns" route add default via "$relay_ip"
	ip -n "$peer_ns" route add default via 10.73.2.1
	ip -n "$peer_ns" route add local 10.74.0.0/16 dev lo
	ip -n "$relay_ns" route add 10.74.0.0/16 via "$peer_ip"
	ip netns exec "$relay_ns" sysctl -qw net.ipv4.ip_forward=1
	# The ends fill in their own UDP checksums, as a datagram from a NIC arrives (checksum
	# complete or checked), not CHECKSUM_PARTIAL, which a fast path that strips or adds the
	# ChannelData header must hand back to user space (issue 30's first trap): left on, the
	# kernel columns would measure that fallback, not the fast path. The same in every column.
	ip netns exec "$client_ns" ethtool -K c0 tx off >/dev/null
	ip netns exec "$peer_ns" ethtool -K p0 tx off >/dev/null
	# A veth takes the frames a native XDP program on its peer redirects into it only with GRO
	# on (or an XDP program of its own); without, the xdp column's datagrams vanish uncounted.
	# On for every column, so only the path differs (GRO does not merge datagrams for a socket
	# that did not ask for UDP_GRO).
	ip netns exec "$client_ns" ethtool -K c0 gro on >/dev/null
	ip netns exec "$peer_ns" ethtool -K p0 gro on >/dev/null
	# Thousands of client sockets and relayed ports: the client's sockets stay off the relay's
	# port ranges (the namespaces have their own, but keep the same habit as turn-bench.sh).
	ip netns exec "$client_ns" sysctl -qw net.ipv4.ip_local_port_range="20000 60999"
}

# Waits (at most 20 s) until something in the relay namespace listens on UDP port $1.
wait_udp_listener() {
	local i
	for i in $(seq 100); do
		[ -n "$(ip netns exec "$relay_ns" ss -Hlun "sport = :$1" 2>/dev/null)" ] && return 0
		sleep 0.2
	done
	return 1
}

# Whether this mediarelay has the kernel fast path's options. Its help is read whole into a
# variable: piped into grep -q, the relay could die of SIGPIPE first and pipefail say no.
has_fast_path() {
	[ -n "${mediarelay_help:-}" ] || mediarelay_help=$("$mediarelay" --help 2>&1 || true)
	[[ "$mediarelay_help" == *--fast-path* ]]
}

# Starts mediarelay in the relay namespace: $1 = user (the uring+GSO engine, as make demo runs it)
# or tc or xdp (the same, plus the fast path on both relay-side veths); $2 = turn or sessions;
# MEDIARELAY_ARGS adds options. Sets server_pid.
start_mediarelay() {
	local path=$1 load=$2 extra=(${MEDIARELAY_ARGS:-})
	[ "$path" = user ] || extra+=(--fast-path "$path" --fast-path-interface r0 --fast-path-interface r1)
	[ "$load" = turn ] && extra+=(--turn "$relay_ip:$turn_port" --turn-realm "$turn_realm"
		--turn-user "$turn_user:$turn_password" --turn-allowed-peer 10.74.0.0/16 --turn-port-share 100
		--turn-unauthenticated-rate 0)
	ip netns exec "$relay_ns" "$mediarelay" --engine uring --gso on --gro off --workers 1 --batch-size 64 \
		--max-datagram-size 2048 --http "127.0.0.1:$http_port" --ports 40000-49999 --relay-address "$relay_ip" \
		--log-level warning "${extra[@]}" > "$workdir/relay.log" 2>&1 &
	server_pid=$!
	if [ "$load" = turn ]; then wait_udp_listener "$turn_port"; else wait_http; fi \
		|| { echo "fastpath-cpu: mediarelay did not start:" >&2; head -5 "$workdir/relay.log" >&2; return 1; }
}

wait_http() {
	local i
	for i in $(seq 100); do
		ip netns exec "$relay_ns" curl -sf "http://127.0.0.1:$http_port/v1/stats" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}

# coturn 4.17.1 at its fastest (bench/turn-bench.sh's coturn-fast): one shared relay socket per
# thread (--multiplex-peer), recvmmsg in and sendmmsg with GSO out. Sets server_pid.
start_coturn() {
	ip netns exec "$relay_ns" "$turnserver" -n --listening-ip "$relay_ip" --listening-port "$turn_port" \
		--relay-ip "$relay_ip" --no-cli --no-dtls --no-tls --min-port 10000 --max-port 19999 \
		--lt-cred-mech --user "$turn_user:$turn_password" --realm "$turn_realm" \
		--log-file /dev/null --no-stdout-log --db "$workdir/turndb" --pidfile "$workdir/turnserver.pid" \
		--multiplex-peer --udp-gso --multiplex-peer-port 30000 > "$workdir/relay.log" 2>&1 &
	server_pid=$!
	wait_udp_listener "$turn_port" || { echo "fastpath-cpu: coturn did not start" >&2; return 1; }
}

stop_server() {
	[ -n "${server_pid:-}" ] || return 0
	kill "$server_pid" 2>/dev/null || true
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
}
