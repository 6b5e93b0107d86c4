import ClientSockets
import Glibc
import STUN
import SystemSupport

/// How a run's TURN clients reach their server and carry their data (`--turn-transport`,
/// `--tls-ca`, `--turn-peer`, `--turn-peers`, `--turn-send-indications`).
package struct TurnClientSettings: Sendable {
    package var transport = TurnTransport.udp
    /// The server's host as the user named it (TLS: SNI and the certificate's name); the
    /// address's numeric host when nil.
    package var host: String?
    /// TLS: check the server's certificate against these CA certificates (PEM).
    package var tlsCA: String?
    /// A peer that echoes every datagram (coturn's turnutils_peer) in place of the generator's
    /// own peer socket: the data then goes out and comes back to the clients.
    package var echoPeer: SocketAddress?
    /// With an echo peer: all clients to it, or each to its own address counted up from it.
    package var peers = TurnPeers.shared
    /// Data as Send indications (and Data indications back) instead of ChannelData.
    package var sendIndications = false
    /// The largest datagram of the run, which sizes the connections' buffers.
    package var maxDatagram = 1500

    /// A connection's input holds the largest message the server may send it (a datagram in a
    /// Data indication, or a STUN answer) several times over, so reads are seldom short of room.
    package var inputCapacity: Int { max(8192, 4 * (maxDatagram + TurnFraming.maxOverhead)) }
    /// Output: room for a few datagrams and a request while the socket is full.
    package var outputCapacity: Int { max(16384, 4 * (maxDatagram + TurnFraming.maxOverhead)) }

    package init() {}
}

/// The TURN side of a load run (`--turn`): N clients of one TURN server (or of the alternate a
/// 300 sent a client to), each with its own socket or connection (`--turn-transport`) and
/// allocation, a permission for its peer and, unless they send Send indications, channel
/// 0x4000 bound to it. The peer is the generator's own socket, or an echo peer (`--turn-peer`),
/// one for all clients or an address of its own for each (`--turn-peers each`).
/// Forward streams go from each client, through its allocation, to the peer; reverse streams
/// (--bidirectional, own peer only) go from the peer socket to each relayed address and come
/// back to the client as ChannelData (or Data indications); an echo peer sends every forward
/// datagram back the same way.
///
/// Allocations live as long as the run: refreshed (allocation, permission, channel) before
/// anything expires, and released with Refresh LIFETIME 0 at the end, on Ctrl-C and when
/// set-up fails half way. Control path, main thread only.
package final class TurnClients {
    /// Every client binds the same number: channels belong to an allocation.
    package static let channel: UInt16 = 0x4000
    /// Permissions last 300 s (RFC 8656 section 9) and the server does not say otherwise.
    package static let permissionLifetime: UInt32 = 300
    /// The allocation lifetime the clients ask for (`--turn-lifetime`); the server may grant
    /// another, and refreshes follow what it granted.
    let requestedLifetime: UInt32

    package let server: SocketAddress
    package let settings: TurnClientSettings
    package let clients: [TurnAllocationClient]
    /// The generator's own peer socket; nil with an echo peer.
    package let peer: TrafficSocket?
    /// Where the clients' data goes: the own peer socket's address, or the echo peer (with
    /// `--turn-peers each` the first client's; each client's own is `TurnAllocationClient.peer`).
    let peerAddress: SocketAddress
    /// Refresh every this many ns instead of following the granted lifetimes (`--turn-refresh`).
    let refreshEvery: UInt64?
    private var allocated: [TurnAllocationClient] = []
    private var lastRefresh: UInt64 = 0
    /// Refresh rounds done during the run, and those in which some client failed.
    package private(set) var refreshes = 0
    package private(set) var failedRefreshes = 0
    /// Clients whose Allocate a 300 Try Alternate sent to another server.
    package var redirected: Int { clients.count { $0.redirected } }
    /// Clients whose connection failed (TCP and TLS), and the first reason.
    package var failed: (count: Int, first: String?) {
        let reasons = clients.compactMap(\.failure)
        return (reasons.count, reasons.first)
    }

    /// Opens `count` client sockets or connections and the peer socket. The peer binds the
    /// local address that routes to the server, so the relay can reach it (127.0.0.1 for a
    /// server on loopback). Throws when a client cannot connect, naming how many and why, and
    /// when `settings.peers` has no addresses for `count` clients.
    package init(server: SocketAddress, count: Int, credential: TurnCredential, lifetime: UInt32, refreshSeconds: Double?,
         tos: UInt8, runSeconds: Double, settings: TurnClientSettings = TurnClientSettings()) throws(LoadError) {
        self.server = server
        self.settings = settings
        requestedLifetime = lifetime
        refreshEvery = refreshSeconds.map { UInt64($0 * 1e9) }
        // REST usernames must outlive the run and its refreshes; an hour of slack.
        let expiry = UInt64(time(nil)) + UInt64(runSeconds) + 3600
        let login = credential.login(validUntil: expiry)
        var links: [TurnLink] = []
        if settings.transport.isStream {
            let tls = settings.transport == .tls ? try TLSOverSocket.context(caFile: settings.tlsCA) : nil
            let target = TurnConnector.Target(server: server, host: settings.host ?? server.host, tls: tls,
                                              inputCapacity: settings.inputCapacity, outputCapacity: settings.outputCapacity)
            let opened = TurnConnector(target: target).open(count)
            let failures = opened.compactMap { result -> LoadError? in
                if case .failure(let error) = result { return error }
                return nil
            }
            if let first = failures.first {
                throw LoadError("\(failures.count) of \(count) TURN clients could not connect; the first: \(first.message)")
            }
            links = opened.compactMap { try? $0.get() }.map { .stream($0) }
        } else {
            let any = try SocketAddress(host: server.family == AF_INET6 ? "::" : "0.0.0.0", port: 0)
            for _ in 0..<count { links.append(.datagram(try TrafficSocket(bindTo: any, tos: tos))) }
        }
        if let echo = settings.echoPeer {
            peer = nil
            peerAddress = echo
        } else {
            let socket = try TrafficSocket(bindTo: try Self.localAddress(toward: server), tos: tos)
            peer = socket
            peerAddress = socket.localAddress
        }
        let peers = try (settings.echoPeer == nil ? .shared : settings.peers).addresses(first: peerAddress, count: count)
        clients = zip(links, peers).map { link, peer in
            let client = TurnAllocationClient(link: link, server: server, username: login.username, password: login.password)
            client.peer = peer
            return client
        }
    }

    /// How `client` frames its data: ChannelData on the bound channel, or Send indications to
    /// its peer.
    package func framing(of client: TurnAllocationClient) -> TurnFraming {
        settings.sendIndications ? .sendIndication(to: peerAddress(of: client)) : .channelData(Self.channel)
    }

    /// Every client of this set has its peer; the shared one stands in for a client made elsewhere.
    private func peerAddress(of client: TurnAllocationClient) -> SocketAddress { client.peer ?? peerAddress }

    /// The peers as the messages name them.
    private var peerText: String {
        settings.peers == .each && peer == nil ? "each client's peer counted up from \(peerAddress)" : "\(peerAddress)"
    }

    /// Allocate, CreatePermission and ChannelBind for every client. Throws, naming the first
    /// client that failed and the server's answer; what was allocated is released by `release`.
    package func allocate(log: (String) -> Void) throws(LoadError) {
        let transactions = TurnTransactions(answers: .sockets, interruptible: true)
        // The relayed address must be of the peer's family (443 otherwise); servers default to IPv4.
        let peerIsIPv6 = peerAddress.family == AF_INET6
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
        try check(answers, of: clients, "Allocate")
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
    package func refreshIfDue(now: UInt64, inbox: ControlInbox) -> String? {
        // A failed connection took its allocation with it (the run reports the client failed).
        allocated.removeAll { $0.hasFailed }
        guard !allocated.isEmpty, now >= lastRefresh + refreshInterval else { return nil }
        lastRefresh = now
        refreshes += 1
        _ = inbox.take()  // stale answers of nobody's transaction
        let transactions = TurnTransactions(answers: .inbox(inbox), interruptible: true)
        let answers = transactions.run(allocated, .refresh) { client, builder in
            builder.append(.lifetime, uint32: client.lifetime)
        }
        do throws(LoadError) {
            try check(answers, of: allocated, "Refresh")
            try bindPeer(transactions)
            return nil
        } catch {
            failedRefreshes += 1
            return "refresh failed: \(error.message)"
        }
    }

    /// Deletes every allocation (Refresh LIFETIME 0). Returns how many the server did not
    /// confirm; 437 (no such allocation: it is gone already) counts as confirmed, and so does
    /// the allocation of a failed connection, which the server deleted when it closed.
    @discardableResult
    package func release() -> Int {
        let open = allocated.filter { !$0.hasFailed }
        allocated = open
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

    /// CreatePermission, then ChannelBind unless the data goes in Send indications, for each
    /// allocation's peer.
    private func bindPeer(_ transactions: TurnTransactions) throws(LoadError) {
        let permissions = transactions.run(allocated, .createPermission) { client, builder in
            builder.append(.xorPeerAddress, address: self.peerAddress(of: client))
        }
        try check(permissions, of: allocated, "CreatePermission for \(peerText)")
        if settings.sendIndications { return }
        let channels = transactions.run(allocated, .channelBind) { client, builder in
            builder.append(.channelNumber, [UInt8(Self.channel >> 8), UInt8(Self.channel & 0xFF), 0, 0])
            builder.append(.xorPeerAddress, address: self.peerAddress(of: client))
        }
        try check(channels, of: allocated, "ChannelBind to \(peerText)")
    }

    private func check(_ answers: [StunMessage?], of asked: [TurnAllocationClient], _ what: String) throws(LoadError) {
        if interruptRequested.load(ordering: .relaxed) { throw LoadError("TURN \(what) at \(server): interrupted") }
        let failed = answers.indices.filter { answers[$0]?.messageClass != .successResponse }
        guard let first = failed.first else { return }
        let reason: String
        if let answer = answers[first] {
            reason = answer.errorCode.map { "answered \($0.code) \($0.reason)" } ?? "answered without a usable error code"
        } else if let failure = asked[first].failure {
            reason = "connection failed: \(failure)"
        } else {
            reason = "no answer after \(TurnTransactions.attempts) attempts"
        }
        throw LoadError("TURN \(what) at \(server): \(failed.count) of \(answers.count) clients failed; the first \(reason)")
    }

    /// The local address the kernel would send from toward `server` (a connected UDP socket
    /// sends nothing), with port 0.
    package static func localAddress(toward server: SocketAddress) throws(LoadError) -> SocketAddress {
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
