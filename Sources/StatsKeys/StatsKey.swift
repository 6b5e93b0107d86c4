/// The keys of the relay's GET /v1/stats object, written once for the writer (the relay
/// executable's `StatsReport` and `TurnStatsReport`) and for everything that reads them (the
/// load generator, engine-bench, tests). A key renamed here renames it on both sides; a key
/// removed here breaks the build of every reader, not a benchmark run later.
///
/// Stats are a contract (docs/ARCHITECTURE.md, "Contracts"): add keys, never rename the text
/// of one. This module is a leaf (no imports), so a reader takes the names without the relay.
public enum StatsKey {
    // What the relay is and how it runs (the top level only).
    public static let engine = "engine"
    public static let engineReason = "engine_reason"
    public static let workers = "workers"
    public static let uptimeSeconds = "uptime_seconds"
    public static let draining = "draining"
    public static let sessionsMax = "sessions_max"
    public static let portsInUse = "ports_in_use"
    public static let portsTotal = "ports_total"
    public static let capacity = "capacity"
    public static let tlsCertificate = "tls_certificate"
    public static let perWorker = "per_worker"
    /// The TURN server's object (`StatsKey.Turn`).
    public static let turn = "turn"
    /// The kernel fast path's object (`StatsKey.FastPath`).
    public static let fastPath = "fast_path"

    // CPU: the whole process at the top level, the worker thread's own in `per_worker`.
    public static let cpuUserSeconds = "cpu_user_seconds"
    public static let cpuSystemSeconds = "cpu_system_seconds"
    public static let cpuNsPerPacket = "cpu_ns_per_packet"
    /// In a `per_worker` entry: the worker's index.
    public static let worker = "worker"

    // The engine's counters (top level: all workers; `per_worker`: one each).
    public static let packetsIn = "packets_in"
    public static let packetsOut = "packets_out"
    public static let bytesIn = "bytes_in"
    public static let bytesOut = "bytes_out"
    public static let syscalls = "syscalls"
    public static let receiveBatches = "receive_batches"
    public static let syscallsPerPacket = "syscalls_per_packet"
    public static let batchSizeHistogram = "batch_size_histogram"
    /// Worker turns that received datagrams, and datagrams per such turn (the buckets of
    /// `batch_size_histogram`): across sockets, where a receive batch is one socket's.
    public static let receiveTurns = "receive_turns"
    public static let turnSizeHistogram = "turn_size_histogram"
    public static let ecnIn = "ecn_in"
    public static let ecnOut = "ecn_out"
    /// CE marks the relay set, by cause (also inside `turn`).
    public static let ceMarked = "ce_marked"
    /// Datagrams not forwarded, by reason (also inside `turn`, by TURN's reasons).
    public static let drops = "drops"
    public static let sendErrors = "send_errors"
    public static let gsoSegments = "gso_segments"
    public static let gsoSends = "gso_sends"
    public static let gsoFallbacks = "gso_fallbacks"
    public static let groSegments = "gro_segments"
    public static let receiveRestarts = "receive_restarts"
    public static let receiveFailures = "receive_failures"
    public static let receiveCancelsForced = "receive_cancels_forced"

    // Sessions and forward rules.
    public static let sessions = "sessions"
    public static let forwardClients = "forward_clients"
    public static let sockets = "sockets"
    public static let sessionsCreated = "sessions_created"
    public static let sessionsDeleted = "sessions_deleted"
    public static let sessionsExpired = "sessions_expired"
    public static let forwardClientsCreated = "forward_clients_created"
    public static let forwardClientsExpired = "forward_clients_expired"

    /// The keys of `tls_certificate`.
    public enum Certificate {
        public static let subject = "subject"
        public static let serial = "serial"
        public static let notAfter = "not_after"
        public static let secondsUntilExpiry = "seconds_until_expiry"
    }

    /// The keys of the `turn` object.
    public enum Turn {
        public static let redirects = "redirects"
        public static let allocations = "allocations"
        public static let permissions = "permissions"
        public static let channels = "channels"
        public static let allocationsCreated = "allocations_created"
        public static let allocationsDeleted = "allocations_deleted"
        public static let allocationsExpired = "allocations_expired"
        /// Allocate requests refused, by error code ("486", ...).
        public static let allocationsRefused = "allocations_refused"
        public static let channelsRefused = "channels_refused"
        public static let authFailures = "auth_failures"
        public static let drops = StatsKey.drops
        public static let peerRefusals = "peer_refusals"
        public static let bindingRequests = "binding_requests"
        public static let channelDataToPeers = "channel_data_to_peers"
        public static let channelDataToClients = "channel_data_to_clients"
        public static let indicationsToPeers = "indications_to_peers"
        public static let indicationsToClients = "indications_to_clients"
        public static let bytesToPeers = "bytes_to_peers"
        public static let bytesToClients = "bytes_to_clients"
        public static let ceMarked = StatsKey.ceMarked
        /// One object per transport, keyed by the transport's name (`StatsKey.Transport`).
        public static let transports = "transports"
    }

    /// The keys of the `fast_path` object: what was asked for and what runs, then the kernel's
    /// counters since the program was loaded (every entry's, removed ones included).
    public enum FastPath {
        /// The `--fast-path` value: "off", "auto", "tc" or "xdp".
        public static let requested = "requested"
        /// Whether the program runs on at least one interface.
        public static let on = "on"
        /// Why it is off (absent while on).
        public static let reason = "reason"
        /// One object per interface: `name`, `mode` ("tc", "xdp" or "off") and, when off, `reason`.
        public static let interfaces = "interfaces"
        public static let name = "name"
        public static let mode = "mode"
        public static let entries = "entries"
        public static let capacity = "capacity"
        /// Entries the kernel would not take (table full, a family it cannot rewrite).
        public static let refusals = "refusals"
        public static let datagrams = "datagrams"
        /// UDP payload bytes sent on.
        public static let bytes = "bytes"
        public static let ecnIn = StatsKey.ecnIn
        public static let ecnOut = StatsKey.ecnOut
        /// Datagrams of an entry the kernel gave to user space unmodified, by reason.
        public static let handedBack = "handed_back"
        /// Dropped because a kernel helper failed half-way through a rewrite.
        public static let failed = "failed"
    }

    /// The keys of one transport's object inside `turn.transports` ("udp", "tcp", "tls").
    public enum Transport {
        public static let allocationsCreated = Turn.allocationsCreated
        public static let datagramsToPeers = "datagrams_to_peers"
        public static let datagramsToClients = "datagrams_to_clients"
        public static let bytesToPeers = Turn.bytesToPeers
        public static let bytesToClients = Turn.bytesToClients
        /// TCP and TLS only: connections open now, opened, and closed by reason.
        public static let connections = "connections"
        public static let connectionsOpened = "connections_opened"
        public static let connectionsClosed = "connections_closed"
        /// TLS only: `completed`, and `failed` by reason.
        public static let handshakes = "handshakes"
        public static let handshakesCompleted = "completed"
        public static let handshakesFailed = "failed"
    }
}
