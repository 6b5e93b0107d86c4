import Glibc
import STUN
import SystemSupport

/// The TURN side of a load run (`--turn`): N clients of one TURN server (or of the alternate a
/// 300 sent a client to), each with its own socket and allocation, a permission for the
/// generator's peer socket and channel 0x4000 bound to it. Forward streams are ChannelData from each client, through its allocation, to
/// the peer socket; reverse streams (--bidirectional) go from the peer socket to each relayed
/// address and come back to the client as ChannelData.
///
/// Allocations live as long as the run: refreshed (allocation, permission, channel) before
/// anything expires, and released with Refresh LIFETIME 0 at the end, on Ctrl-C and when
/// set-up fails half way. Control path, main thread only.
final class TurnClients {
    /// Every client binds the same number: channels belong to an allocation.
    static let channel: UInt16 = 0x4000
    /// Permissions last 300 s (RFC 8656 section 9) and the server does not say otherwise.
    static let permissionLifetime: UInt32 = 300
    /// The allocation lifetime the clients ask for (`--turn-lifetime`); the server may grant
    /// another, and refreshes follow what it granted.
    let requestedLifetime: UInt32

    let server: SocketAddress
    let clients: [TurnClient]
    let peer: UDPSocket
    /// Refresh every this many ns instead of following the granted lifetimes (`--turn-refresh`).
    let refreshEvery: UInt64?
    private var allocated: [TurnClient] = []
    private var lastRefresh: UInt64 = 0
    /// Refresh rounds done during the run, and those in which some client failed.
    private(set) var refreshes = 0
    private(set) var failedRefreshes = 0
    /// Clients whose Allocate a 300 Try Alternate sent to another server.
    var redirected: Int { clients.count { $0.redirected } }

    /// Opens `count` client sockets and the peer socket. The peer binds the local address that
    /// routes to the server, so the relay can reach it (127.0.0.1 for a server on loopback).
    init(server: SocketAddress, count: Int, credential: TurnCredential, lifetime: UInt32, refreshSeconds: Double?,
         tos: UInt8, runSeconds: Double) throws(LoadError) {
        self.server = server
        requestedLifetime = lifetime
        refreshEvery = refreshSeconds.map { UInt64($0 * 1e9) }
        let any = try SocketAddress(host: server.family == AF_INET6 ? "::" : "0.0.0.0", port: 0)
        // REST usernames must outlive the run and its refreshes; an hour of slack.
        let expiry = UInt64(time(nil)) + UInt64(runSeconds) + 3600
        let login = credential.login(validUntil: expiry)
        var clients: [TurnClient] = []
        for _ in 0..<count {
            clients.append(TurnClient(socket: try UDPSocket(bindTo: any, tos: tos), server: server,
                                      username: login.username, password: login.password))
        }
        self.clients = clients
        peer = try UDPSocket(bindTo: try Self.localAddress(toward: server), tos: tos)
    }

    /// Allocate, CreatePermission and ChannelBind for every client. Throws, naming the first
    /// client that failed and the server's answer; what was allocated is released by `release`.
    func allocate(log: (String) -> Void) throws(LoadError) {
        let transactions = TurnTransactions(answers: .sockets, interruptible: true)
        // The relayed address must be of the peer's family (443 otherwise); servers default to IPv4.
        let peerIsIPv6 = peer.localAddress.family == AF_INET6
        let answers = transactions.run(clients, .allocate) { _, builder in
            builder.append(.requestedTransport, [17, 0, 0, 0])
            if peerIsIPv6 { builder.append(.requestedAddressFamily, [AddressFamily.ipv6.rawValue, 0, 0, 0]) }
            builder.append(.lifetime, uint32: self.requestedLifetime)
        }
        for (client, answer) in zip(clients, answers) where answer?.messageClass == .successResponse {
            // Released at the end even if unusable: the server holds it either way.
            allocated.append(client)
            client.relayed = answer?.socketAddress(.xorRelayedAddress)
            client.lifetime = (try? answer?.value(.lifetime, AttributeValue.uint32)) ?? requestedLifetime
        }
        try check(answers, "Allocate")
        if allocated.contains(where: { $0.relayed == nil }) {
            throw LoadError("TURN Allocate at \(server): a success answer without a usable XOR-RELAYED-ADDRESS")
        }
        try bindPeer(transactions)
        lastRefresh = MonotonicClock.now()
        let shortest = allocated.map(\.lifetime).min() ?? 0
        if shortest != requestedLifetime && refreshEvery == nil {
            log("the server granted allocations of \(shortest) s; refreshing every \(refreshInterval / 1_000_000_000) s")
        }
    }

    /// Refreshes allocations, permissions and channels once `refreshInterval` has passed since
    /// the last time. Answers come through `inbox` (the receiving thread owns the sockets).
    /// Returns a line for the log when some refresh failed.
    func refreshIfDue(now: UInt64, inbox: ControlInbox) -> String? {
        guard !allocated.isEmpty, now >= lastRefresh + refreshInterval else { return nil }
        lastRefresh = now
        refreshes += 1
        _ = inbox.take()  // stale answers of nobody's transaction
        let transactions = TurnTransactions(answers: .inbox(inbox), interruptible: true)
        let answers = transactions.run(allocated, .refresh) { client, builder in
            builder.append(.lifetime, uint32: client.lifetime)
        }
        do throws(LoadError) {
            try check(answers, "Refresh")
            try bindPeer(transactions)
            return nil
        } catch {
            failedRefreshes += 1
            return "refresh failed: \(error.message)"
        }
    }

    /// Deletes every allocation (Refresh LIFETIME 0). Returns how many the server did not
    /// confirm; 437 (no such allocation: it is gone already) counts as confirmed.
    @discardableResult
    func release() -> Int {
        guard !allocated.isEmpty else { return 0 }
        let answers = TurnTransactions(answers: .sockets, interruptible: false).run(allocated, .refresh) { _, builder in
            builder.append(.lifetime, uint32: 0)
        }
        allocated = []
        return answers.filter { answer in
            answer?.messageClass != .successResponse && answer?.errorCode?.code != 437
        }.count
    }

    /// Half of the shortest lifetime among allocation and permission, or a minute before it
    /// ends for long ones: late enough to be rare, early enough to survive a lost answer.
    var refreshInterval: UInt64 {
        if let refreshEvery { return refreshEvery }
        let span = UInt64(min(allocated.map(\.lifetime).min() ?? requestedLifetime, Self.permissionLifetime))
        return (span > 120 ? span - 60 : max(1, span / 2)) * 1_000_000_000
    }

    /// CreatePermission, then ChannelBind, for the peer socket on every allocation.
    private func bindPeer(_ transactions: TurnTransactions) throws(LoadError) {
        let peerAddress = peer.localAddress
        let permissions = transactions.run(allocated, .createPermission) { _, builder in
            builder.append(.xorPeerAddress, address: peerAddress)
        }
        try check(permissions, "CreatePermission for \(peerAddress)")
        let channels = transactions.run(allocated, .channelBind) { _, builder in
            builder.append(.channelNumber, [UInt8(Self.channel >> 8), UInt8(Self.channel & 0xFF), 0, 0])
            builder.append(.xorPeerAddress, address: peerAddress)
        }
        try check(channels, "ChannelBind to \(peerAddress)")
    }

    private func check(_ answers: [StunMessage?], _ what: String) throws(LoadError) {
        if interruptRequested.load(ordering: .relaxed) { throw LoadError("TURN \(what) at \(server): interrupted") }
        let failed = answers.indices.filter { answers[$0]?.messageClass != .successResponse }
        guard let first = failed.first else { return }
        let reason: String
        if let answer = answers[first] {
            reason = answer.errorCode.map { "answered \($0.code) \($0.reason)" } ?? "answered without a usable error code"
        } else {
            reason = "no answer after \(TurnTransactions.attempts) attempts"
        }
        throw LoadError("TURN \(what) at \(server): \(failed.count) of \(answers.count) clients failed; the first \(reason)")
    }

    /// The local address the kernel would send from toward `server` (a connected UDP socket
    /// sends nothing), with port 0.
    static func localAddress(toward server: SocketAddress) throws(LoadError) -> SocketAddress {
        let opened = SystemCall.outcome { Int(socket(server.family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)) }
        guard case .done(let socketNumber) = opened else { throw LoadError("UDP socket toward \(server): \(errnoText(opened))") }
        let fd = Int32(socketNumber)
        defer { SystemCall.close(fd) }
        let connected = SystemCall.outcome { Int(server.withSockaddr { connect(fd, $0, $1) }) }
        guard connected == .done(0) else { throw LoadError("no route to TURN server \(server): \(errnoText(connected))") }
        var local = SocketAddress()
        local.length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = SystemCall.outcome {
            withUnsafeMutablePointer(to: &local.storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Int(getsockname(fd, $0, &local.length)) }
            }
        }
        guard named == .done(0) else { throw LoadError("getsockname toward TURN server \(server): \(errnoText(named))") }
        return try SocketAddress(host: local.host, port: 0)
    }
}
