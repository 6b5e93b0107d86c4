import ClientSockets
import NetAddress
/// `mediarelay-load --help`. Profile numbers come from `TrafficProfile`, so the text cannot
/// drift from the code.
public let helpText = """
usage: mediarelay-load --relay http://HOST:PORT [options]
       mediarelay-load --target HOST:PORT --upstream-listen HOST:PORT [--relay URL] [options]
       mediarelay-load --turn HOST:PORT (--turn-user NAME:PASSWORD | --turn-secret SECRET) [--relay URL | --relay-pid PID] [options]
       mediarelay-load --legs FILE [--forwarder-stats FILE --relay-pid PID] [options]
       mediarelay-load compare --server PATH [--reference PATH [--references perpacket|all]] [--out PREFIX] [--repeats N]
                               [--max-repeats M] [--budget S] [--seconds S] [--quick] [--check] [--loads L,...]
                               [--engines E,...] [--workers N,...] [--relay-host ADDR] [--server-prefix CMD]
                               [--pin off|split|relay]

Offers UDP load through a mediarelay and reports delivery, order, latency, jitter, ECN/DSCP
preservation, and the relay's CPU and syscalls per datagram (from GET /v1/stats before and after).

Session mode (--relay): creates --streams sessions (POST /v1/sessions, 2 legs). Each stream sends to
leg A and receives on the socket that latched leg B; all sessions are deleted at the end and on Ctrl-C.
Forward-rule mode (--target): streams are clients sending to the rule's listen address; the generator
plays the upstream on --upstream-listen, which must be the UPSTREAM of the server's --forward rule.
TURN mode (--turn): --streams TURN clients, each with its own socket (or its own TCP or TLS connection,
--turn-transport), allocate a UDP relayed address on the server (the realm comes from its 401), create a
permission and bind channel 0x4000 to the generator's peer socket (or the echo peer of --turn-peer, or each
client's own with --turn-peers each), then send ChannelData (or Send indications) at the profile's rate; the
peer socket receives (and with --bidirectional sends back to every relayed address,
arriving as ChannelData). Over TCP and TLS a client that cannot connect stops the set-up with the reason; one
whose connection is closed or reset during the run counts as a failed client in the report. Allocations are
refreshed before they expire and released (Refresh LIFETIME 0) at the end and on Ctrl-C. A client answered 300 Try
Alternate (a full or draining relay of a fleet) allocates at its ALTERNATE-SERVER instead, once; the report
says how many were redirected. Relay CPU per datagram
comes from --relay's /v1/stats (mediarelay) or from --relay-pid's /proc/PID/stat per datagram sent
(any server, e.g. coturn's turnserver). The peer socket binds the local address that routes to the server;
the server's peer policy must allow it (mediarelay: --turn-allowed-peer; coturn: --allow-loopback-peers).

Options (default in brackets):
  --relay URL            control API, http://HOST:PORT [required unless --target]
  --token T              control token, sent as Authorization: Bearer T [none]
  --streams N            streams (sessions or clients), 1...10000 [10]
  --rate PPS             TOTAL offered datagrams/s over ALL streams, per direction; constant profile only [1000]
  --size BYTES           datagram size, \(PayloadHeader.size)...9000; constant profile only [200]
  --seconds S            measured duration, 0.1...3600 [5]
  --profile P            constant | voice | game | video [constant]
                           constant: --rate datagrams/s of --size bytes, TOS from --tos
                           voice: \(Int(TrafficProfile.voiceRate)) datagrams/s per stream of \(TrafficProfile.voiceSize) B, DSCP EF (46)
                           game:  \(Int(TrafficProfile.gameRate)) datagrams/s per stream, \(TrafficProfile.gameSizes.lowerBound)...\(TrafficProfile.gameSizes.upperBound) B (deterministic pseudo-random), DSCP AF21 (18)
                           video: \(Int(TrafficProfile.videoFrameRate)) frames/s per stream, each a burst of \(TrafficProfile.videoDatagramSize) B datagrams
                                  carrying --bitrate, DSCP AF41 (34)
                         voice, game and video send ECN ECT(0), so TOS = (DSCP << 2) | 2.
  --tos BYTE             TOS / Traffic Class byte, 0...255, overrides the profile's [constant: 0]
  --bitrate BPS          video bits/s per stream, 8000...1000000000 [\(TrafficProfile.defaultVideoBitrate)]
  --bidirectional        the receiving side also sends the same profile back (doubles the offered load)
  --sender-gso           video: each frame leaves as one GSO send (UDP_SEGMENT), as a sender bursting
                         frames with GSO would send it
  --target HOST:PORT     drive a forward rule: its listen address [none]
  --upstream-listen HOST:PORT  where the generator listens as the rule's upstream [required with --target]
  --turn HOST:PORT       drive a TURN server (RFC 8656): one client per stream [none]
  --turn-user NAME:PASSWORD  TURN long-term credential (a static user) [required with --turn, or:]
  --turn-secret SECRET   TURN REST credentials (coturn's use-auth-secret): user EXPIRY:mediarelay-load
  --turn-lifetime S      allocation lifetime to request, 1...3600 s; refreshes follow what the server grants [600]
  --turn-refresh S       refresh allocations, permissions and channels every S seconds, 0.5...3000
                         [half the shortest of granted lifetime and 300 s, or a minute before it ends]
  --turn-transport T     udp | tcp | tls [udp]: how the clients reach the server. tcp and tls: one connection
                         per client (RFC 8656 section 3.1), STUN and ChannelData framed on it (ChannelData padded
                         to 4); the relayed side stays UDP. tls offers ALPN stun.turn and, as coturn's uclient,
                         does not check the server's certificate unless --tls-ca is given
  --tls-ca FILE          tls: check the server's certificate against the CA certificates in FILE (PEM) and
                         against the host named in --turn (DNS name or IP address)
  --turn-peer HOST:PORT  send to this echo peer (e.g. coturn's turnutils_peer) instead of the generator's own
                         peer socket: every datagram goes out and comes back to its client, latency is the round
                         trip, and relay CPU per datagram counts both crossings; not with --bidirectional
  --turn-peers P         shared | each [shared]; each needs --turn-peer with an IPv4 address A.B.C.D: client i
                         sends to A.B.(C+i/250).(D+i%250) on --turn-peer's port instead (from 127.1.0.1,
                         127.1.(i/250).(i%250+1), bench/turn-bench.sh's --peers each), one echo peer listening on
                         all of them; a server that tells allocations apart by peer (coturn --multiplex-peer)
                         needs it. Not with --bidirectional; the addresses must stay below .255
  --turn-send-indications  data as Send indications (Data indications back) instead of ChannelData; no channel
                         is bound
  --drain S              keep receiving up to S seconds after the last send, for datagrams in flight,
                         0...60 (ends early once everything sent has arrived) [0.3]
  --legs FILE            sessions without a control API, listed in FILE one per line as their legs'
                         HOST:PORT (the C reference forwarder's --legs-file), driven as in session mode
  --forwarder-stats FILE read the C reference forwarder's counters from FILE (its --stats) and its CPU
                         from the CPU clock of --relay-pid, in place of GET /v1/stats
  --warmup S             datagrams sent in the first S seconds are left out of latency figures
                         (not of loss, order or ECN/DSCP), 0...60 [0.5]
  --relay-pid PID        also read the relay's CPU from /proc/PID/stat, to cross-check /v1/stats [none]
  --congestion-control C none | classic | scalable [none]; constant profile only. Each stream's sender
                         reacts to what its receiver saw in each 20 ms window (fed back in memory: sender and
                         receiver are one process): classic (RFC 3168, Reno) halves its rate on a window with a
                         CE mark or a loss; scalable (DCTCP, TCP Prague) multiplies it by 1 - alpha/2, alpha the
                         moving average (gain 1/16) of the fraction marked, and halves on a loss; both add 1% of
                         the offered rate per window otherwise, never exceeding the offered rate
  --session JSON         session mode: more fields of each session created, a JSON object such as
                         '{"max_packets_per_second": 2000, "ecn_marking": "off"}' (the generator sets "legs")
  --json                 print one JSON object as the last line of stdout instead of a table
  --no-progress          no per-second progress line on stderr
  --help                 this text

Latency uses CLOCK_MONOTONIC send timestamps carried in each datagram, so it is only meaningful when
the generator's sender and receiver run on the same host (they always do: one process).
Pacing: absolute deadlines on CLOCK_MONOTONIC; the sender wakes at most every 200 us and sends what is
due in one sendmmsg per socket (bursts of at most rate x 200 us, spread over the streams); the
receiver uses recvmmsg and reads each datagram's TOS byte from IP_RECVTOS / IPV6_RECVTCLASS.
The generator's own CPU (getrusage) is reported so a reader can see it was not the bottleneck.
Exit status: 0 done; 2 bad arguments, unreachable relay, refused token (401) or a run that could not be set up;
130 interrupted (the partial result is still printed); compare: 1 when the comparison failed.

compare: runs the relay (--server PATH) once per engine (perpacket, mmsg, uring with --gso off;
uring with --gso on) x offered load (10k, 50k, 100k, 200k datagrams/s of 200 B over 20 streams, 100k over 2,
2000 voice streams, 200 video streams of 2 Mbit/s with --sender-gso), --repeats times [3] interleaved so drift falls on every engine, each for
--seconds [1.5], then (with --max-repeats) more rounds of the checks not yet settled; writes PREFIX.md (with
the checks' verdicts and the relay's batching counters), PREFIX.csv and PREFIX.svg [--out bench/results/latest]. The relay runs
with the C forwarder's sizes, --batch-size 64 --max-datagram-size 2048.
  --reference PATH       also run the C reference forwarder (bench/reference, built by make reference) over
                         the same flows (a socket pair per session, latching like the relay's legs): as
                         c-perpacket, and report the CPU saved against it as well as against perpacket
  --references R         perpacket | all [perpacket]: with all, also c-NAME beside each relay engine NAME
                         that runs, the C forwarder with NAME's backend, GSO and GRO; all doubles the runs.
                         Every engine that ran beside its C counterpart gets a row of relay/C in PREFIX.md,
                         the median (min-max) of the ratios of runs in the same repeat
  --loads L,...          only these loads: the labels above, NNNk (NNN thousand datagrams/s of 200 B over 20
                         streams), NNNkxS (the same over S streams: 50kx200 is 50k/s over 200 sessions),
                         voiceN, videoN (N streams) [all]
  --engines E,...        only these engines: perpacket, mmsg, uring, uring+gso, mmsg+gso and mmsg+gso+gro
                         (video loads only), and with --reference c-NAME for any of them [all]
  --workers N,...        run each relay engine with each of these worker counts (named "E wN" above 1) [1]
  --relay-host ADDR      the address the relay binds and answers on (sessions and HTTP) [127.0.0.1]
  --server-prefix CMD    start the relay and the C forwarder under CMD, e.g. "ip netns exec NAME" [none]
  --pin P                off | split | relay [off]. relay: the relay (every thread; --workers 1 only) or
                         the C forwarder alone on the last allowed CPU, the generator's threads on the others
                         (make demo: nothing takes the relay's CPU, so its cost and latency are its own). split: the generator's sending thread alone on the first allowed
                         CPU; the relay (every thread; --workers 1 only) or the C forwarder, with the
                         generator's receiving thread, on the last, as engine-bench --pin split. Left to the
                         scheduler, three busy threads on two CPUs land differently at each start, and a
                         forwarder's cost per datagram follows where it landed (engine-bench measured 10-20%
                         of spread between repeats from this), which blurs relay/C by as much
  --max-repeats M        after --repeats rounds, run again only the two sides of the checks (the report's
                         "Checks") not yet settled, up to M rounds in all [--repeats]: a check is settled when
                         the 90 % interval of its median lies wholly on one side of its aim, or is narrower
                         than its bound (10 points of CPU saved, 40 us of p99); with fewer than five repeats
                         (no 90 % interval yet), when their range clears the aim by half the bound. Each
                         check is reported as it stands: met, not met, or inconclusive
  --budget S             past --repeats, start no round that would end after S seconds of the comparison
                         (at the mean length of the runs so far), settled or not [none]
  --quick                1 repeat of 1 s unless --repeats/--seconds say otherwise
  --check                only the CPU cross-check (100k datagrams/s on each engine): relay CPU from
                         /proc/PID/stat next to /v1/stats for the same interval; the last stdout line is
                         {"runs":N,"stats_cpu_seconds":S,"proc_cpu_seconds":P,"proc_over_stats":R}
Every compare run records both CPU figures (OUT.csv, OUT.md).
"""
