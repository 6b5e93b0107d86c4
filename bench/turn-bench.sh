#!/usr/bin/env bash
# TURN relay CPU per relayed datagram: coturn's turnserver and mediarelay, under the same
# uclient workload, interleaved over repeats. See bench/README.md.
#
#   bench/turn-bench.sh [--target coturn|coturn-fast|mediarelay|both|all|LIST] [--clients 200,2000]
#                       [--seconds 10] [--repeats 3] [--driver uclient|load] [--transport udp|tcp|tls]
#                       [--coturn PATH] [--peers shared|each] [--out FILE]
#
# --transport: how the clients reach the server (uclient -t, -t -S; mediarelay-load
# --turn-transport); the relayed side is UDP either way. --coturn PATH measures that turnserver
# (bench/coturn-latest.sh builds one) in place of Debian's, as `coturn` (its defaults) and
# `coturn-fast` (--multiplex-peer --udp-gso, which needs --peers each). --peers each: every
# client to its own peer address 127.1.(i/250).(i%250+1), one turnutils_peer listening on all of
# them; with uclient that is one process per client, which on 2 cores falls behind at 2,000.
# --driver load: mediarelay-load --turn drives every client from one process instead of uclient
# (with --peers each: --turn-peers each to the same addresses and the same turnutils_peer).
# A uclient process still running 60 s after its messages should have ended is killed and
# counted as a client error, so a run never waits for ever.
# Workload: N turnutils_uclient clients, each one allocation without RTCP (-c) sending
# 160-byte ChannelData messages every 20 ms (50/s) to turnutils_peer, which echoes them back.
# A relayed datagram is one crossing of the relay: client->peer and peer->client each count,
# so datagrams = uclient's tot_send_msgs + tot_recv_msgs.
# CPU: the server process's threads' time on CPU (/proc/PID/task/*/schedstat, nanoseconds),
# read just before the clients start and after the last one exits, so allocation set-up is
# included (a few transactions per client against 50 x seconds datagrams each way). It is
# split into user and system time in the proportion of the process's utime and stime
# (/proc/PID/stat, clock ticks) over the same interval: on loopback most of a relay's CPU is
# the kernel's UDP work, which no user-space saving can remove, so the split shows what the
# server's own code costs.
set -euo pipefail
cd "$(dirname "$0")/.."

target=coturn
transport=udp
coturn_path=""       # --coturn: a turnserver built from source, in place of Debian's
peers=shared         # --peers each: a peer address per client (what coturn --multiplex-peer needs)
clients_list=200,2000
seconds=10
repeats=3
out=""
per_process=200      # uclient connects its clients one after another; 200 per process keeps it short
workdir=$(mktemp -d /tmp/turn-bench.XXXXXX)
user=bench
password=bench-password
realm=bench.example
mediarelay=${MEDIARELAY:-.build/release/mediarelay}   # the binary measured by --target mediarelay
load=${MEDIARELAY_LOAD:-.build/release/mediarelay-load}  # the client with --driver load
driver=uclient

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --target) target=$2; shift 2 ;;
        --clients) clients_list=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --repeats) repeats=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --driver) driver=$2; shift 2 ;;
        --transport) transport=$2; shift 2 ;;
        --coturn) coturn_path=$2; shift 2 ;;
        --peers) peers=$2; shift 2 ;;
        -h|--help) usage 0 ;;
        *) echo "turn-bench: unknown argument $1" >&2; usage 2 ;;
    esac
done
case "$transport" in
    udp|tcp|tls) ;;
    *) echo "turn-bench: --transport is udp, tcp or tls, not $transport" >&2; exit 2 ;;
esac
case "$peers" in
    shared|each) ;;
    *) echo "turn-bench: --peers is shared or each, not $peers" >&2; exit 2 ;;
esac
case "$target" in
    both) targets=(coturn mediarelay); [ -z "$coturn_path" ] || targets=(coturn coturn-fast mediarelay) ;;
    all) targets=(coturn coturn-fast mediarelay) ;;
    *) IFS=, read -r -a targets <<< "$target" ;;
esac
for which in "${targets[@]}"; do
    case "$which" in
        coturn|mediarelay) ;;
        coturn-fast) [ -n "$coturn_path" ] || { echo "turn-bench: coturn-fast is a coturn built from source: give --coturn PATH (bench/coturn-latest.sh)" >&2; exit 2; } ;;
        *) echo "turn-bench: --target is coturn, coturn-fast, mediarelay, both, all or a comma list of them, not $which" >&2; exit 2 ;;
    esac
done
case "$driver" in
    uclient) ;;
    load)
        [ -x "$load" ] || { echo "turn-bench: $load is missing; build first: swift build -c release" >&2; exit 1; }
        ;;
    *) echo "turn-bench: --driver is uclient or load, not $driver" >&2; exit 2 ;;
esac
for tool in turnserver turnutils_uclient turnutils_peer socat openssl; do
    command -v "$tool" >/dev/null || { echo "turn-bench: $tool is missing (make test-deps installs coturn and socat)" >&2; exit 1; }
done
turnserver=turnserver uclient=turnutils_uclient peer_tool=turnutils_peer
if [ -n "$coturn_path" ]; then
    [ -x "$coturn_path" ] || { echo "turn-bench: --coturn $coturn_path is not an executable (bench/coturn-latest.sh SRC builds one)" >&2; exit 1; }
    turnserver=$coturn_path
    # Its own tools when built beside it: the peer listens on many addresses at once and the
    # client has --no-even-port, which --multiplex-peer needs.
    built=$(dirname "$coturn_path")
    [ -x "$built/turnutils_peer" ] && peer_tool=$built/turnutils_peer
    [ "$peers" = each ] && [ -x "$built/turnutils_uclient" ] && uclient=$built/turnutils_uclient
fi
uclient=${UCLIENT:-$uclient}
no_even_port=()
uclient_help=$("$uclient" --help 2>&1 || true)  # it exits non-zero after its usage
if [[ "$uclient_help" == *--no-even-port* ]]; then no_even_port=(--no-even-port); fi
if [[ " ${targets[*]} " == *" coturn-fast "* ]]; then
    # --multiplex-peer tells allocations apart by their peer's address and refuses EVEN-PORT,
    # which Debian's 4.6.1 uclient asks for on about half its allocations (mediarelay-load
    # never asks for it).
    if [ "$peers" != each ] || { [ "$driver" = uclient ] && [ ${#no_even_port[@]} -eq 0 ]; }; then
        echo "turn-bench: coturn-fast (--multiplex-peer) needs --peers each and, with --driver uclient, a uclient with --no-even-port (the one built beside --coturn, or UCLIENT=PATH)" >&2
        exit 2
    fi
fi
case "$transport" in
    udp) uclient_transport=() ;;
    tcp) uclient_transport=(-t) ;;
    tls) uclient_transport=(-t -S) ;;
esac
# Every allocation holds a relayed socket, and coturn a socket per client as well.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

# Only this script's own background jobs are stopped, by their ids.
cleanup() {
    local jobs_left
    jobs_left=$(jobs -p)
    [ -z "$jobs_left" ] || kill $jobs_left 2>/dev/null || true
    wait 2>/dev/null || true
    [ -n "${KEEP_WORKDIR:-}" ] && echo "turn-bench: kept $workdir" >&2 || rm -rf "$workdir"
}
trap cleanup EXIT

free_port() {  # a port nobody has bound on this host now, for UDP or TCP, with $1 (default 1) free in a row
    local port count=${1:-1} i taken
    while :; do
        port=$((20000 + RANDOM % 10000))
        taken=""
        for i in $(seq 0 $((count - 1))); do
            [ -z "$(ss -Hunl "sport = :$((port + i))" 2>/dev/null)$(ss -Htnl "sport = :$((port + i))" 2>/dev/null)" ] || taken=1
        done
        [ -n "$taken" ] || { echo "$port"; return; }
    done
}

# A certificate for the TLS listeners (self-signed: uclient and mediarelay-load check none).
if [ "$transport" = tls ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=turn-bench \
        -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
        -keyout "$workdir/server.key" -out "$workdir/server.pem" >/dev/null 2>&1 \
        || { echo "turn-bench: openssl could not make a test certificate" >&2; exit 1; }
fi

tcp_accepts() {  # whether 127.0.0.1:$1 accepts a TCP connection within 20 s
    local port=$1 i
    for i in $(seq 1 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
        sleep 0.2
    done
    return 1
}

# Sends $2 (printf format) to ${3:-127.0.0.1}:$1 until anything comes back, for at most 20 s.
udp_answers() {
    local port=$1 payload=$2 host=${3:-127.0.0.1} i
    for i in $(seq 1 100); do
        if printf "$payload" | socat -T 0.2 - "UDP:$host:$port" 2>/dev/null | head -c 1 | grep -q .; then
            return 0
        fi
    done
    return 1
}
stun_binding='\x00\x01\x00\x00\x21\x12\xa4\x42ZZZZZZZZZZZZ'  # any TURN server answers it without credentials

cpu_ns() {  # total on-CPU time of every thread of $1
    local pid=$1 total=0 run rest file
    for file in /proc/"$pid"/task/*/schedstat; do
        { read -r run rest < "$file"; } 2>/dev/null || continue
        total=$((total + run))
    done
    echo "$total"
}

proc_ticks() {  # utime and stime of process $1 in clock ticks (fields 14 and 15 of /proc/PID/stat)
    # Fields are counted after the command name's last ')': it may hold spaces.
    sed 's/.*) //' /proc/"$1"/stat | awk '{ print $12, $13 }'
}

any_alive() { local pid; for pid in "$@"; do kill -0 "$pid" 2>/dev/null && return 0; done; return 1; }

# Starts the server under test on TURN port $2 (UDP and TCP) and $3 (TLS), relayed ports $4-$5;
# sets server_pid.
start_server() {
    local which=$1 port=$2 tls_port=$3 low=$4 high=$5 flags
    case "$which" in
        coturn|coturn-fast)
            flags=(-n --listening-ip 127.0.0.1 --listening-port "$port" --relay-ip 127.0.0.1
                --allow-loopback-peers --no-cli --no-dtls --min-port "$low" --max-port "$high"
                --lt-cred-mech --user "$user:$password" --realm "$realm"
                --log-file /dev/null --no-stdout-log --db "$workdir/turndb" --pidfile "$workdir/turnserver.pid")
            if [ "$transport" = tls ]; then
                flags+=(--tls-listening-port "$tls_port" --cert "$workdir/server.pem" --pkey "$workdir/server.key")
            else
                flags+=(--no-tls)
            fi
            if [ -n "$coturn_path" ]; then
                # coturn 4.17 takes ChannelBind for 0x4000-0x4FFF only (RFC 8656); Debian's 4.6.1
                # uclient picks up to 0x7FFF and fails with 400 without this.
                flags+=(--rfc5766-channel-numbers)
            fi
            if [ "$which" = coturn-fast ]; then
                # Its fastest UDP relaying: one shared relay socket per thread, recvmmsg in and
                # sendmmsg (GSO where a batch allows) out. Its ports: two per relay thread.
                flags+=(--multiplex-peer --udp-gso --multiplex-peer-port "$(free_port $((2 * $(nproc) + 2)))")
            fi
            "$turnserver" "${flags[@]}" >/dev/null 2>&1 &
            ;;
        mediarelay)
            # The slot for mediarelay's own TURN listener (issue 10): uclient is simply pointed
            # at --turn. Loopback peers must be allowed explicitly, as for any operator. Every
            # client's first Allocate is answered 401 from the one address 127.0.0.1, which the
            # per-source budget would stretch over minutes at 2,000 clients: it is off here.
            [ -x "$mediarelay" ] || { echo "turn-bench: $mediarelay is missing; build first: swift build -c release" >&2; exit 1; }
            "$mediarelay" --http 127.0.0.1:0 --ports "$low-$high" --relay-address 127.0.0.1 \
                --turn "127.0.0.1:$port" --turn-realm "$realm" --turn-user "$user:$password" \
                --turn-allowed-peer "$allowed_peers" --turn-port-share 100 --turn-unauthenticated-rate 0 --log-level warning \
                $(mediarelay_stream_listeners "$port" "$tls_port") \
                >/dev/null 2>"$workdir/mediarelay.log" &
            ;;
    esac
    server_pid=$!
}

# mediarelay's TURN over TCP and TLS listeners (issue 18: --turn-tcp, --turn-tls, --tls-cert,
# --tls-key), kept apart here so that this line alone changes if the relay's options do. A
# build without them refuses to start, and the target is reported as not measured.
# Every client comes from 127.0.0.1 here, so the per-source cap (500 by default, for one office
# behind a NAT) is raised to the run's size, as coturn has none.
mediarelay_stream_listeners() {
    local port=$1 tls_port=$2 cap="--turn-max-connections-per-source 10000"
    case "$transport" in
        tcp) echo "--turn-tcp 127.0.0.1:$port $cap" ;;
        tls) echo "--turn-tls 127.0.0.1:$tls_port --tls-cert $workdir/server.pem --tls-key $workdir/server.key $cap" ;;
    esac
}

# Where the clients' peers are: one address (127.0.0.1) for all, or one per client (--peers
# each: 127.1.X.Y, which loopback answers for as for 127.0.0.1).
peer_address() {  # of client $1 (0-based)
    if [ "$peers" = each ]; then echo "127.1.$(($1 / 250)).$(($1 % 250 + 1))"; else echo 127.0.0.1; fi
}
if [ "$peers" = each ]; then allowed_peers=127.0.0.0/8; else allowed_peers=127.0.0.1/32; fi

# --peers each: one turnutils_peer listening on the addresses of clients 0 to $1 - 1, on a free
# port; sets peer_port and appends its pid to peer_pids. Checked at the first and last address.
start_peer_each() {
    local clients=$1 i listen=()
    peer_port=$(free_port)
    for i in $(seq 0 $((clients - 1))); do listen+=(-L "$(peer_address "$i")"); done
    "$peer_tool" "${listen[@]}" -p "$peer_port" >/dev/null 2>&1 &
    peer_pids+=($!)
    for i in 0 $((clients - 1)); do
        udp_answers "$peer_port" 'ping' "$(peer_address "$i")" || { echo "turn-bench: $peer_tool did not echo on $(peer_address "$i"):$peer_port" >&2; exit 1; }
    done
}

# One measurement: target, clients. Appends "target clients us_per_datagram datagrams rate lost
# errors user_us_per_datagram system_us_per_datagram" to results.
measure() {
    local which=$1 clients=$2 port tls_port client_port low high server processes i n rest before after start end connected
    port=$(free_port)
    tls_port=$(free_port)
    if [ "$transport" = tls ]; then client_port=$tls_port; else client_port=$port; fi
    # Below the kernel's ephemeral range (32768-60999 by default), where thousands of uclient
    # sockets would take relay ports away from the server, and four ports per client: coturn
    # answered 508 "no available ports" to 2,000 clients with 2,500 ports.
    low=10000; high=$((low + 4 * clients + 1000)); [ "$high" -le 19999 ] || high=19999
    start_server "$which" "$port" "$tls_port" "$low" "$high"
    server=$server_pid
    if ! udp_answers "$port" "$stun_binding" || { [ "$transport" != udp ] && ! tcp_accepts "$client_port"; }; then
        kill "$server" 2>/dev/null || true
        if [ "$which" = mediarelay ]; then
            echo "turn-bench: mediarelay does not answer TURN over $transport on 127.0.0.1:$client_port (a build without it, or it did not start); skipping it" >&2
            sed -n '1,3p' "$workdir/mediarelay.log" >&2 || true
            return 1
        fi
        echo "turn-bench: $which did not answer TURN over $transport on 127.0.0.1:$client_port" >&2; exit 1
    fi

    if [ "$driver" = load ]; then measure_load "$which" "$clients" "$client_port" "$server"; return; fi
    # uclient connects its clients one after another: a process per 200 clients, each with its
    # own turnutils_peer; with --peers each, a process per client and one peer listening on
    # every client's address.
    local per=$per_process
    [ "$peers" = shared ] || per=1
    processes=$(( (clients + per - 1) / per ))
    local peer_pids=() client_pids=() logs=() peer_port
    if [ "$peers" = each ]; then
        start_peer_each "$clients"
        for i in $(seq 1 "$processes"); do echo "$peer_port" > "$workdir/peer-$i"; done
    else
        for i in $(seq 1 "$processes"); do
            peer_port=$(free_port)
            "$peer_tool" -L 127.0.0.1 -p "$peer_port" >/dev/null 2>&1 &
            peer_pids+=($!)
            echo "$peer_port" > "$workdir/peer-$i"
            udp_answers "$peer_port" 'ping' || { echo "turn-bench: turnutils_peer did not echo on $peer_port" >&2; exit 1; }
        done
    fi

    before=$(cpu_ns "$server")
    ticks_before=$(proc_ticks "$server")
    start=$(date +%s.%N)
    rest=$clients
    for i in $(seq 1 "$processes"); do
        n=$(( rest < per ? rest : per )); rest=$((rest - n))
        "$uclient" -c -m "$n" -n $((50 * seconds)) -l 160 -z 20 -u "$user" -w "$password" "${uclient_transport[@]}" "${no_even_port[@]}" \
            -p "$client_port" -e "$(peer_address $((i - 1)))" -r "$(cat "$workdir/peer-$i")" 127.0.0.1 > "$workdir/uclient-$i.log" 2>&1 &
        client_pids+=($!)
        logs+=("$workdir/uclient-$i.log")
    done
    # The data phase starts when every process has connected all its clients or given up (a
    # process that exits before connecting must not hold the start back to the end of the run),
    # and at the latest 60 s plus 0.1 s per client after the first started (one stuck connecting
    # is then left to the deadline below).
    connected=""
    local connect_by=$(( $(date +%s) + 60 + clients / 10 ))
    while [ -z "$connected" ]; do
        local waiting=0
        for i in "${!client_pids[@]}"; do
            grep -q 'Total connect time' "${logs[$i]}" 2>/dev/null || ! kill -0 "${client_pids[$i]}" 2>/dev/null || waiting=$((waiting + 1))
        done
        if [ "$waiting" -eq 0 ] || [ "$(date +%s)" -ge "$connect_by" ]; then connected=$(date +%s.%N); else sleep 0.2; fi
    done
    # Every process's messages end $seconds later. At 2,000 processes on 2 cores a few uclients
    # were seen never to exit: one still running a minute after that is killed (TERM, then KILL)
    # and counted as a client error, so the run ends.
    local done_by=$(( ${connected%.*} + seconds + 60 )) killed=()
    while any_alive "${client_pids[@]}" && [ "$(date +%s)" -lt "$done_by" ]; do sleep 0.5; done
    for i in "${!client_pids[@]}"; do
        if kill -0 "${client_pids[$i]}" 2>/dev/null; then kill "${client_pids[$i]}" 2>/dev/null || true; killed+=("$i"); fi
    done
    if [ ${#killed[@]} -gt 0 ]; then
        sleep 2
        for i in "${killed[@]}"; do kill -9 "${client_pids[$i]}" 2>/dev/null || true; done
    fi
    for pid in "${client_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    after=$(cpu_ns "$server")
    ticks_after=$(proc_ticks "$server")
    end=$(date +%s.%N)
    kill "$server" "${peer_pids[@]}" 2>/dev/null || true
    wait "$server" "${peer_pids[@]}" 2>/dev/null || true

    local sent=0 received=0 lost=0 errors=${#killed[@]} s r l
    if [ ${#killed[@]} -gt 0 ]; then
        echo "turn-bench: $which: killed ${#killed[@]} uclient process(es) still running $seconds s + 60 s into the data phase; the first one's last lines:" >&2
        tail -3 "${logs[${killed[0]}]}" >&2
    fi
    for i in "${!logs[@]}"; do
        log=${logs[$i]}
        s=$(grep -o 'tot_send_msgs=[0-9]*' "$log" | tail -1 | cut -d= -f2)
        r=$(grep -o 'tot_recv_msgs=[0-9]*' "$log" | tail -1 | cut -d= -f2)
        l=$(grep -o 'Total lost packets [0-9]*' "$log" | tail -1 | awk '{print $4}')
        errors=$((errors + $(grep -c ERROR "$log" || true)))
        # A process that never reported its totals lost all its clients: an error, said here
        # (a killed one is counted and said above).
        if ! grep -q 'tot_send_msgs' "$log" && [[ " ${killed[*]} " != *" $i "* ]]; then
            errors=$((errors + 1))
            echo "turn-bench: a uclient process of $which reported no totals; its last lines:" >&2
            tail -3 "$log" >&2
        fi
        sent=$((sent + ${s:-0})); received=$((received + ${r:-0})); lost=$((lost + ${l:-0}))
    done
    local datagrams=$((sent + received))
    if [ "$datagrams" -eq 0 ]; then
        echo "turn-bench: $which with $clients clients relayed nothing; first lines of a client log:" >&2
        head -5 "${logs[0]}" >&2
        exit 1
    fi
    awk -v t="$which" -v c="$clients" -v cpu=$((after - before)) -v d="$datagrams" -v s="$start" -v k="$connected" -v e="$end" \
        -v lost="$lost" -v sent="$sent" -v err="$errors" -v tb="$ticks_before" -v ta="$ticks_after" \
        'BEGIN { us = cpu / 1000 / d; split(tb, b); split(ta, a); user = a[1] - b[1]; sys = a[2] - b[2]
                 share = (user + sys) ? user / (user + sys) : 0
                 printf "%s %d %.3f %d %.0f %.2f %d %.3f %.3f\n", t, c, us, d, d / (e - k), (sent ? 100 * lost / sent : 0), err, us * share, us * (1 - share) }' \
        >> "$workdir/results"
    report_last
}

# The workload of uclient, driven by mediarelay-load: N TURN clients, voice (50 datagrams/s of
# 160 B each, EF + ECT(0)) over channels. --peers shared: to the generator's own peer socket,
# which sends the same back to every relayed address (--bidirectional). --peers each: every
# client to its own address on one turnutils_peer (start_peer_each, as for uclient), which
# echoes each datagram (--turn-peer, --turn-peers each). Either way each client costs the relay
# 100 crossings a second, as a uclient client and turnutils_peer's echo do, and every crossing
# is a relayed datagram: mediarelay-load divides the server's CPU by the datagrams it sent,
# plus, with an echo peer, those that came back (relay_proc_cpu_ns_per_packet), the same
# count as uclient's tot_send_msgs + tot_recv_msgs. Allocation set-up is outside the measured
# interval; CPU is the server's utime + stime from /proc/PID/stat over the data phase, the
# same for both servers.
json_field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" "$2"; }
measure_load() {
    local which=$1 clients=$2 port=$3 server=$4 json="$workdir/load.json" ticks_before ticks_after peer_pids=() peer_port
    local peering=(--bidirectional)
    if [ "$peers" = each ]; then
        start_peer_each "$clients"
        peering=(--turn-peer "$(peer_address 0):$peer_port" --turn-peers each)
    fi
    # The generator measures the data phase only; the user/system proportion comes from the
    # whole run (set-up included), which is close enough for a split of the same total.
    ticks_before=$(proc_ticks "$server")
    "$load" --turn "127.0.0.1:$port" --turn-transport "$transport" --turn-user "$user:$password" --streams "$clients" --profile voice \
        "${peering[@]}" --seconds "$seconds" --relay-pid "$server" --json --no-progress \
        > "$json" 2> "$workdir/load.log" || true
    ticks_after=$(proc_ticks "$server" 2>/dev/null || echo "$ticks_before")
    kill "$server" "${peer_pids[@]}" 2>/dev/null || true
    wait "$server" "${peer_pids[@]}" 2>/dev/null || true
    local sent received ns lost seconds_run datagrams
    sent=$(json_field sent "$json"); received=$(json_field received "$json"); ns=$(json_field relay_proc_cpu_ns_per_packet "$json")
    lost=$(json_field lost "$json"); seconds_run=$(json_field seconds "$json")
    if [ -z "$sent" ] || [ "$sent" = 0 ] || [ -z "$ns" ] || [ "$ns" = null ]; then
        echo "turn-bench: mediarelay-load against $which with $clients clients measured nothing:" >&2
        tail -3 "$workdir/load.log" >&2
        exit 1
    fi
    # Crossings, as relay_proc_cpu_ns_per_packet counted them: an echo came back across the relay.
    if [ "$peers" = each ]; then datagrams=$((sent + received)); else datagrams=$sent; fi
    awk -v t="$which" -v c="$clients" -v ns="$ns" -v d="$datagrams" -v sent="$sent" -v s="$seconds_run" -v lost="$lost" \
        -v tb="$ticks_before" -v ta="$ticks_after" \
        'BEGIN { us = ns / 1000; split(tb, b); split(ta, a); user = a[1] - b[1]; sys = a[2] - b[2]
                 share = (user + sys) ? user / (user + sys) : 0
                 printf "%s %d %.3f %d %.0f %.2f %d %.3f %.3f\n", t, c, us, d, d / s, 100 * lost / sent, 0, us * share, us * (1 - share) }' \
        >> "$workdir/results"
    report_last
}

report_last() {
    tail -1 "$workdir/results" | awk '{ printf "turn-bench: %-10s %5d clients: %7.3f us/datagram (user %.3f, system %.3f), %d datagrams, %.0f/s, lost %.2f%%, %d errors\n", $1, $2, $3, $8, $9, $4, $5, $6, $7 }' >&2
}

IFS=, read -r -a client_counts <<< "$clients_list"
skipped=()
for repeat in $(seq 1 "$repeats"); do
    for clients in "${client_counts[@]}"; do
        for which in "${targets[@]}"; do
            if [[ " ${skipped[*]} " == *" $which "* ]]; then continue; fi
            echo "turn-bench: repeat $repeat/$repeats, $which, $clients clients" >&2
            measure "$which" "$clients" || skipped+=("$which")
        done
    done
done
[ -s "$workdir/results" ] || { echo "turn-bench: nothing measured" >&2; exit 1; }

{
    if [ -n "$coturn_path" ]; then
        coturn_version="$("$coturn_path" --version 2>/dev/null | head -1) built from source ($coturn_path)"
    else
        coturn_version=$(dpkg-query -W -f='${Version}' coturn 2>/dev/null || echo '?')
    fi
    echo "TURN relay CPU per relayed datagram over $transport: $(nproc) CPUs, $(uname -r), coturn $coturn_version, $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "Command: bench/turn-bench.sh --target $target --clients $clients_list --seconds $seconds --repeats $repeats --driver $driver --transport $transport --peers $peers${coturn_path:+ --coturn $coturn_path}"
    if [ "$driver" = load ]; then echo "Clients: $load"; else echo "Clients: $uclient"; fi
    echo
    echo "| server | clients | offered datagrams/s | relay CPU us/datagram, median (min-max) | user us/datagram | system us/datagram | relayed/s (mean) | lost (worst) | client errors |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    sort -k1,1 -k2,2n -k3,3n "$workdir/results" | awk '
        function median(v, k,   i, j, x) {  # of v[1..k], sorted in place
            for (i = 2; i <= k; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
            return (k % 2) ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
        }
        function flush() {
            if (n == 0) return
            m = (n % 2) ? us[(n + 1) / 2] : (us[n / 2] + us[n / 2 + 1]) / 2
            printf "| %s | %d | %d | %.2f (%.2f-%.2f) | %.2f | %.2f | %.0f | %.2f%% | %d |\n", key1, key2, key2 * 100, m, us[1], us[n],
                median(user, n), median(sys, n), rate / n, lostmax, errs
            n = 0; lostmax = 0; errs = 0; rate = 0
        }
        { if ($1 != key1 || $2 != key2) { flush(); key1 = $1; key2 = $2 }
          n++; us[n] = $3; user[n] = $8; sys[n] = $9; rate += $5; if ($6 > lostmax) lostmax = $6; errs += $7 }
        END { flush() }'
    if [ ${#skipped[@]} -gt 0 ]; then echo; echo "Not measured: ${skipped[*]} (no TURN listener answered)."; fi
} | tee ${out:+"$out"}
