import DatagramEngine
import NetAddress
import STUN

/// Requests: the control path. Each is authenticated (Binding excepted), answered once, and
/// the answer kept for retransmissions. Refusals sent without authentication are bounded per
/// source address (`AnswerBudget`, which requests that authenticate add to), Binding answers
/// are not: Binding is the one request a client makes without credentials by design
/// (server-reflexive candidates, NAT keepalives), and its success adds only XOR-MAPPED-ADDRESS
/// (12 or 24 bytes) to the request, at most 1.4x on the wire. Budgeting it would let whoever
/// forges an address starve the real clients behind it of their candidates, to take away a
/// reflection that gains an attacker little.
///
/// Contract: called by its `TurnTable` on the worker's thread, one whole request at a time;
/// it changes allocations through the `AllocationStore`, opens relayed sockets through
/// `RelayedSockets`, and asks its table to remove an allocation (a Refresh of 0).
final class TurnRequests<Engine: TableEngine> {
    let engine: Engine
    let settings: TurnSettings
    let shared: TurnSharedState
    let store: AllocationStore
    let relayedSockets: RelayedSockets<Engine>
    let streams: TurnStreamClients<Engine>
    let arena: OutgoingArena<Engine>
    let clock: WorkerClock
    /// The table that removes allocations (`attach`); it owns this object, so the reference
    /// needs no count.
    private(set) unowned(unsafe) var table: TurnTable<Engine>?
    private var transactions = TransactionCache()
    /// Answers to requests that did not authenticate, per source address (a fixed table).
    private var answerBudget = AnswerBudget()
    /// Failed authentications and curable refusals, for the log (each rate-limited).
    private var notices: TurnNotices
    /// What the requests made, refused and answered; the table sums its parts' counters.
    var counters = TurnCounters()
    /// Allocations made per transport of their client.
    var allocationsByTransport = InlineArray<3, UInt64>(repeating: 0)

    init(engine: Engine, settings: TurnSettings, shared: TurnSharedState, store: AllocationStore, relayedSockets: RelayedSockets<Engine>,
         streams: TurnStreamClients<Engine>, arena: OutgoingArena<Engine>, clock: WorkerClock) {
        self.engine = engine
        self.settings = settings
        self.shared = shared
        self.store = store
        self.relayedSockets = relayedSockets
        self.streams = streams
        self.arena = arena
        self.clock = clock
        notices = TurnNotices(sink: settings.notices)
    }

    /// Gives the requests their table, once, right after it is made.
    func attach(to table: TurnTable<Engine>) { self.table = table }

    var now: UInt64 { clock.now }

    func request(_ client: TurnClient, _ index: AttributeIndex, _ bytes: UnsafeRawBufferPointer) {
        // Any other request without MESSAGE-INTEGRITY can only be refused (401, or 400 for an
        // unknown method), so its answer is paid for before the message is even copied: past
        // the budget, a flood of them costs a parse and allocates nothing.
        let prepaid = index.type.method != .binding && index.integrity == nil && index.integritySHA256 == nil
        if prepaid && !withinAnswerBudget(client) { return }
        guard let message = try? StunMessage(copying: bytes) else { return counters.add(.malformed) }
        let key = TransactionCache.Key(client: client, transaction: message.transactionID)
        if let cached = transactions.answer(key, now: now) { return send(cached, to: client) }
        let fingerprint = message.index.hasFingerprint
        if message.method == .binding {
            counters.bindingRequests &+= 1
            var answer = MessageBuilder(MessageType(.binding, .successResponse), transactionID: message.transactionID)
            let unknown = message.unknownRequired { _ in false }
            if unknown.isEmpty {
                answer.append(.xorMappedAddress, xorAddress: client.address)
            } else {
                answer = errorAnswer(message, TurnRefusal(code: .unknownAttribute, unknown: unknown))
            }
            if fingerprint { answer.appendFingerprint() }
            return sendUnauthenticated(answer.bytes, to: client, requestSize: bytes.count)
        }
        guard [Method.allocate, .refresh, .createPermission, .channelBind].contains(message.method) else {
            var answer = errorAnswer(message, .badRequest("Unknown method"))
            if fingerprint { answer.appendFingerprint() }
            return sendRefusal(answer.bytes, to: client, requestSize: bytes.count, prepaid: prepaid)
        }
        // Nonces and REST usernames both go by the wall clock: a fleet's hosts share it, so a
        // sibling can judge a nonce this relay issued.
        let second = settings.wallClock()
        let identity: TurnIdentity
        switch authenticate(message, client, second: second) {
        case .failure(let failure):
            counters.add(failure)
            notices.authenticationFailed(failure, message, client: client.address, transport: transport(of: client), now: now)
            if message.method == .allocate && failure != .challenged { counters.refuse(failure.code) }
            var answer = errorAnswer(message, TurnRefusal(code: failure.code))
            if failure.code != .badRequest {
                settings.authenticator.appendChallenge(to: &answer, for: client.address, second: second)
            }
            if fingerprint { answer.appendFingerprint() }
            return sendRefusal(answer.bytes, to: client, requestSize: bytes.count, prepaid: prepaid)
        case .success(let authenticated):
            identity = authenticated
            // The source received its nonce: it is no forged address, and its neighbours
            // behind the same NAT may have their 401s.
            if !client.isStream { answerBudget.earn(client.address, now: now, rate: shared.unauthenticatedRate) }
        }

        var answer = MessageBuilder(MessageType(message.method, .successResponse), transactionID: message.transactionID)
        do throws(TurnRefusal) {
            let unknown = message.unknownRequired(understoodByTurn)
            guard unknown.isEmpty else { throw TurnRefusal(code: .unknownAttribute, unknown: unknown) }
            let change: ChannelChange?
            switch message.method {
            case .allocate:
                try allocate(message, client, identity, &answer)
                change = nil
            case .refresh:
                try refresh(message, client, identity, &answer)
                change = .refreshed
            case .createPermission: change = .permitted(try createPermission(message, client, identity))
            default: change = try channelBind(message, client, identity)
            }
            // Before the success leaves: the first ChannelData after it finds its entry.
            if let change { table.unsafelyUnwrapped.offloadChannels(of: client, after: change) }
        } catch {
            if message.method == .allocate { counters.refuse(error.code) }
            if let cause = error.cause { notices.refused(cause, code: error.code, client: client.address, now: now) }
            answer = errorAnswer(message, error)
            // libwebrtc takes REALM and NONCE from a 300 and signs its Allocate to the alternate
            // with them, never retrying after a 438 there: a nonce the fleet shares lets it in.
            if error.redirect != nil { settings.authenticator.appendRealmAndNonce(to: &answer, for: client.address, second: second) }
        }
        answer.appendIntegrity(identity.integrity, key: identity.key)
        if fingerprint { answer.appendFingerprint() }
        transactions.store(answer.bytes, for: key, now: now)
        send(answer.bytes, to: client)
    }

    /// The long-term credential check, then for an Allocate the check that no other 5-tuple
    /// sent this signed request before: its nonce is bound to the client's address alone.
    private func authenticate(_ message: StunMessage, _ client: TurnClient, second: UInt64) -> Result<TurnIdentity, AuthFailure> {
        let verdict = settings.authenticator.check(message, from: client.address, second: second, unixTime: second)
        guard case .success = verdict, message.method == .allocate,
              let request = AcceptedAllocates.Request(message),
              let nonce = try? message.text(.nonce), let issued = NonceIssuer.issued(nonce) else { return verdict }
        let sender = AcceptedAllocates.Sender(address: client.address, overStream: client.isStream)
        switch shared.admitAllocate(request, from: sender, nonceIssued: issued, second: second, nonces: settings.authenticator.nonces) {
        case .accepted: return verdict
        case .replayed: return .failure(.replayed)
        case .pastHorizon: return .failure(.staleNonce)
        }
    }

    private func errorAnswer(_ message: StunMessage, _ refusal: TurnRefusal) -> MessageBuilder {
        var answer = MessageBuilder(MessageType(message.method, .errorResponse), transactionID: message.transactionID)
        answer.append(error: refusal.code, reason: refusal.reason)
        if !refusal.unknown.isEmpty {
            answer.append(.unknownAttributes, refusal.unknown.flatMap { [UInt8($0.rawValue >> 8), UInt8($0.rawValue & 0xFF)] })
        }
        if let redirect = refusal.redirect {
            answer.append(.alternateServer, plainAddress: redirect.server)
            if let domain = redirect.domain { answer.append(.alternateDomain, text: domain) }
        }
        return answer
    }

    private func transport(of client: TurnClient) -> TurnTransport {
        client.isStream ? streams.transport(of: client.connectionIndex) : .udp
    }

    // MARK: answering

    /// Queues an answer to `client`; its bytes go into the arena so they outlive this call
    /// (a stream copies them at once).
    private func send(_ bytes: [UInt8], to client: TurnClient) {
        if client.isStream {
            if !bytes.withUnsafeBytes({ streams.send($0, to: client) }) { counters.add(.clientBackpressure) }
            return
        }
        guard let out = arena.room(bytes.count) else { return counters.add(.tooLarge) }
        bytes.withUnsafeBytes { out.copyMemory(from: $0) }
        engine.enqueue(socket: client.socket, to: client.address, from: client.localAddress, trafficClass: TrafficClass(rawValue: 0),
                       bytes: UnsafeRawBufferPointer(out))
    }

    /// Sends an answer to an unauthenticated request only if it is not much larger than the
    /// request: the source address may be forged, and the relay must not amplify.
    /// A client over TCP or TLS has proved its address with the handshake: no limit.
    private func sendUnauthenticated(_ bytes: [UInt8], to client: TurnClient, requestSize: Int) {
        guard client.isStream || bytes.count <= requestSize + TurnSettings.unauthenticatedSlack else { return counters.add(.amplification) }
        send(bytes, to: client)
    }

    /// Sends a refusal to a request that did not authenticate if its source's budget has room
    /// (taken already when `prepaid`): a signed request that failed (a stale nonce, a wrong
    /// password) proves no more about its source than an unsigned one.
    private func sendRefusal(_ bytes: [UInt8], to client: TurnClient, requestSize: Int, prepaid: Bool) {
        guard prepaid || withinAnswerBudget(client) else { return }
        sendUnauthenticated(bytes, to: client, requestSize: requestSize)
    }

    /// Takes one answer from the budget of `client`'s address; counts the drop when it is spent.
    /// A stream's address cannot be forged, so its answers take nothing.
    private func withinAnswerBudget(_ client: TurnClient) -> Bool {
        guard client.isStream || answerBudget.take(client.address, now: now, rate: shared.unauthenticatedRate) else {
            counters.add(.unauthenticatedRate)
            return false
        }
        return true
    }

    /// Reads attributes, turning a malformed value into 400.
    func read<T>(_ body: () throws(MessageError) -> T) throws(TurnRefusal) -> T {
        do {
            return try body()
        } catch {
            throw .badRequest("Malformed attribute")
        }
    }

    /// The allocation of `client` made by the same user: 437 without one, 441 for another user.
    private func allocationIndex(of client: TurnClient, _ identity: TurnIdentity) throws(TurnRefusal) -> Int {
        guard let index = store.index(of: client) else { throw TurnRefusal(code: .allocationMismatch) }
        guard store[index].username == identity.username else { throw TurnRefusal(code: .wrongCredentials) }
        return index
    }

    // MARK: Refresh, CreatePermission, ChannelBind

    private func refresh(_ message: StunMessage, _ client: TurnClient, _ identity: TurnIdentity,
                 _ answer: inout MessageBuilder) throws(TurnRefusal) {
        let allocation = try allocationIndex(of: client, identity)
        let requested = try read { () throws(MessageError) in try message.value(.lifetime, AttributeValue.uint32) }
        if let family = try read({ () throws(MessageError) in try message.value(.requestedAddressFamily, AttributeValue.addressFamily) }) {
            let has = family == .ipv4 ? store[allocation].relay4 != nil : store[allocation].relay6 != nil
            guard has else { throw TurnRefusal(code: .peerAddressFamilyMismatch) }
        }
        if requested == 0 {
            table.unsafelyUnwrapped.removeAllocation(allocation, .deleted)
            counters.allocationsDeleted &+= 1
            answer.append(.lifetime, uint32: 0)
            return
        }
        let granted = settings.lifetime(requested: requested)
        store[allocation].expires = now &+ UInt64(granted) &* 1_000_000_000
        answer.append(.lifetime, uint32: granted)
    }

    /// Returns the permission keys it renewed.
    private func createPermission(_ message: StunMessage, _ client: TurnClient, _ identity: TurnIdentity) throws(TurnRefusal) -> [Endpoint] {
        let allocation = try allocationIndex(of: client, identity)
        let peers = try read { () throws(MessageError) in try message.xorAddresses(.xorPeerAddress) }
        guard !peers.isEmpty else { throw .badRequest("XOR-PEER-ADDRESS missing") }
        try checkPeers(allocation, peers, withPorts: false)
        let fresh = Set(peers.map(Allocation.permissionKey)).filter { store[allocation].permissions[$0] == nil }
        guard store[allocation].permissions.count + fresh.count <= settings.maxPermissions else {
            throw TurnRefusal(code: .insufficientCapacity, cause: .permissionLimit)
        }
        for peer in peers { permit(allocation, peer) }
        return peers.map(Allocation.permissionKey)
    }

    private func channelBind(_ message: StunMessage, _ client: TurnClient, _ identity: TurnIdentity) throws(TurnRefusal) -> ChannelChange {
        let allocation = try allocationIndex(of: client, identity)
        let channel = try read { () throws(MessageError) in try message.value(.channelNumber, AttributeValue.channelNumber) }
        let peer = try read { () throws(MessageError) in try message.xorAddress(.xorPeerAddress) }
        guard let channel, let peer else { throw .badRequest("CHANNEL-NUMBER or XOR-PEER-ADDRESS missing") }
        guard ChannelData.channels.contains(channel) else { throw .badRequest("Channel number out of range") }
        try checkPeers(allocation, [peer], withPorts: true)
        // A channel stays with its peer and a peer with its channel (RFC 8656 section 11.2).
        if let bound = store[allocation].channels.binding(number: channel), bound.peer != peer {
            throw .badRequest("Channel number bound to another peer")
        }
        if let other = store[allocation].channels.binding(peer: peer), other.number != channel {
            throw .badRequest("Peer bound to another channel number")
        }
        // Refreshing a channel is always allowed; only a new one counts against the cap.
        if store[allocation].channels.binding(number: channel) == nil && store[allocation].channels.count >= shared.maxChannels {
            counters.channelsRefused &+= 1
            throw TurnRefusal(code: .insufficientCapacity, cause: .channelLimit)
        }
        if !store[allocation].permits(peer, now: now) && store[allocation].permissions.count >= settings.maxPermissions {
            throw TurnRefusal(code: .insufficientCapacity, cause: .permissionLimit)
        }
        let expires = now &+ UInt64(settings.channelLifetime) &* 1_000_000_000
        // The permission's expiry is copied into the channel by `permit`.
        store.bindChannel(allocation, channel, to: peer, until: expires)
        permit(allocation, peer)
        store.schedule(allocation, expires)
        return .bound(channel, permission: Allocation.permissionKey(peer))
    }

    /// 443 for a peer of a family the allocation has no relayed address for, 403 for a peer
    /// the policy refuses: by address alone for a permission, by address and port for a
    /// channel (whose ChannelData is then never checked again).
    private func checkPeers(_ allocation: Int, _ peers: [Endpoint], withPorts: Bool) throws(TurnRefusal) {
        for peer in peers where store[allocation].relay(for: peer) == nil {
            throw TurnRefusal(code: .peerAddressFamilyMismatch)
        }
        let relayed = shared.relayedPorts
        for peer in peers {
            let decision = withPorts ? settings.peerPolicy.decide(peer: peer, isRelayedAddress: { relayed.contains($0) })
                                     : settings.peerPolicy.decide(permission: peer)
            if case .refused(let reason) = decision {
                counters.add(reason)
                throw TurnRefusal(code: .forbidden, cause: .peerRefused(reason, peer))
            }
        }
    }

    /// Installs or refreshes the permission for `peer`'s address, and its copy in every
    /// channel to that address (which the packet path reads instead of the permission).
    private func permit(_ allocation: Int, _ peer: Endpoint) {
        store.permit(allocation, peer, until: now &+ UInt64(settings.permissionLifetime) &* 1_000_000_000)
    }
}

/// The comprehension-required attributes a TURN server acts on or may ignore.
private func understoodByTurn(_ type: AttributeType) -> Bool {
    switch type {
    case .username, .messageIntegrity, .messageIntegritySHA256, .realm, .nonce, .passwordAlgorithm, .lifetime,
         .xorPeerAddress, .data, .requestedAddressFamily, .evenPort, .requestedTransport, .dontFragment,
         .reservationToken, .channelNumber, .priority, .useCandidate, .errorCode, .unknownAttributes,
         .xorMappedAddress, .mappedAddress:
        true
    default:
        false
    }
}
