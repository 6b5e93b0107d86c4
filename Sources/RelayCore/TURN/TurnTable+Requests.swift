import DatagramEngine
import NetAddress
import STUN

/// A request refused with an error code (and, for 420, the attributes not understood; for
/// 300, where to go instead).
struct TurnRefusal: Error {
    var code: ErrorCode
    var unknown: [AttributeType] = []
    var redirect: TurnRedirect?
    /// The reason phrase when the code's own says too little: a 400 names what was wrong, so a
    /// client's log (uclient prints it) tells its developer which rule the request broke.
    var reason: String?

    static func badRequest(_ reason: String) -> TurnRefusal { TurnRefusal(code: .badRequest, reason: reason) }
}

/// Requests: the control path. Each is authenticated (Binding excepted), answered once, and
/// the answer kept for retransmissions. Refusals sent without authentication are bounded per
/// source address (`AnswerBudget`, which requests that authenticate add to), Binding answers
/// are not: Binding is the one request a client makes without credentials by design
/// (server-reflexive candidates, NAT keepalives), and its success adds only XOR-MAPPED-ADDRESS
/// (12 or 24 bytes) to the request, at most 1.4x on the wire. Budgeting it would let whoever
/// forges an address starve the real clients behind it of their candidates, to take away a
/// reflection that gains an attacker little.
extension TurnTable {
    /// A response to an unauthenticated request may exceed the request by this many bytes at
    /// most: a 401 carries REALM, NONCE and PASSWORD-ALGORITHMS, but nobody may use the relay
    /// to multiply traffic towards a forged source address.
    static let unauthenticatedSlack = 128

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
        switch settings.authenticator.check(message, from: client.address, second: second, unixTime: second) {
        case .failure(let failure):
            counters.add(failure)
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
            let unknown = message.unknownRequired(TurnTable.understood)
            guard unknown.isEmpty else { throw TurnRefusal(code: .unknownAttribute, unknown: unknown) }
            switch message.method {
            case .allocate: try allocate(message, client, identity, &answer)
            case .refresh: try refresh(message, client, identity, &answer)
            case .createPermission: try createPermission(message, client, identity)
            default: try channelBind(message, client, identity)
            }
        } catch {
            if message.method == .allocate { counters.refuse(error.code) }
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

    func errorAnswer(_ message: StunMessage, _ refusal: TurnRefusal) -> MessageBuilder {
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

    /// The comprehension-required attributes a TURN server acts on or may ignore.
    static func understood(_ type: AttributeType) -> Bool {
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

    // MARK: answering

    /// Queues an answer to `client`; its bytes go into the arena so they outlive this call
    /// (a stream copies them at once).
    func send(_ bytes: [UInt8], to client: TurnClient) {
        if client.isStream {
            if !bytes.withUnsafeBytes({ toStream(client, $0) }) { counters.add(.clientBackpressure) }
            return
        }
        guard let out = room(bytes.count) else { return counters.add(.tooLarge) }
        bytes.withUnsafeBytes { out.copyMemory(from: $0) }
        engine.enqueue(socket: client.listener, to: client.address, trafficClass: TrafficClass(rawValue: 0),
                       bytes: UnsafeRawBufferPointer(out))
    }

    /// Sends an answer to an unauthenticated request only if it is not much larger than the
    /// request: the source address may be forged, and the relay must not amplify.
    /// A client over TCP or TLS has proved its address with the handshake: no limit.
    func sendUnauthenticated(_ bytes: [UInt8], to client: TurnClient, requestSize: Int) {
        guard client.isStream || bytes.count <= requestSize + TurnTable.unauthenticatedSlack else { return counters.add(.amplification) }
        send(bytes, to: client)
    }

    /// Sends a refusal to a request that did not authenticate if its source's budget has room
    /// (taken already when `prepaid`): a signed request that failed (a stale nonce, a wrong
    /// password) proves no more about its source than an unsigned one.
    func sendRefusal(_ bytes: [UInt8], to client: TurnClient, requestSize: Int, prepaid: Bool) {
        guard prepaid || withinAnswerBudget(client) else { return }
        sendUnauthenticated(bytes, to: client, requestSize: requestSize)
    }

    /// Takes one answer from the budget of `client`'s address; counts the drop when it is spent.
    /// A stream's address cannot be forged, so its answers take nothing.
    func withinAnswerBudget(_ client: TurnClient) -> Bool {
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
    func allocation(of client: TurnClient, _ identity: TurnIdentity) throws(TurnRefusal) -> Int {
        guard let index = byClient[client] else { throw TurnRefusal(code: .allocationMismatch) }
        guard allocations[Int(index)].username == identity.username else { throw TurnRefusal(code: .wrongCredentials) }
        return Int(index)
    }

    // MARK: Refresh, CreatePermission, ChannelBind

    func refresh(_ message: StunMessage, _ client: TurnClient, _ identity: TurnIdentity,
                 _ answer: inout MessageBuilder) throws(TurnRefusal) {
        let a = try allocation(of: client, identity)
        let requested = try read { () throws(MessageError) in try message.value(.lifetime, AttributeValue.uint32) }
        if let family = try read({ () throws(MessageError) in try message.value(.requestedAddressFamily, AttributeValue.addressFamily) }) {
            let has = family == .ipv4 ? allocations[a].relay4 != nil : allocations[a].relay6 != nil
            guard has else { throw TurnRefusal(code: .peerAddressFamilyMismatch) }
        }
        if requested == 0 {
            removeAllocation(a, .deleted)
            counters.allocationsDeleted &+= 1
            answer.append(.lifetime, uint32: 0)
            return
        }
        let granted = settings.lifetime(requested: requested)
        allocations[a].expires = now &+ UInt64(granted) &* 1_000_000_000
        answer.append(.lifetime, uint32: granted)
    }

    func createPermission(_ message: StunMessage, _ client: TurnClient, _ identity: TurnIdentity) throws(TurnRefusal) {
        let a = try allocation(of: client, identity)
        let peers = try read { () throws(MessageError) in try message.xorAddresses(.xorPeerAddress) }
        guard !peers.isEmpty else { throw .badRequest("XOR-PEER-ADDRESS missing") }
        try checkPeers(a, peers, withPorts: false)
        let fresh = Set(peers.map(Allocation.permissionKey)).filter { allocations[a].permissions[$0] == nil }
        guard allocations[a].permissions.count + fresh.count <= settings.maxPermissions else {
            throw TurnRefusal(code: .insufficientCapacity)
        }
        for peer in peers { permit(a, peer) }
    }

    func channelBind(_ message: StunMessage, _ client: TurnClient, _ identity: TurnIdentity) throws(TurnRefusal) {
        let a = try allocation(of: client, identity)
        let channel = try read { () throws(MessageError) in try message.value(.channelNumber, AttributeValue.channelNumber) }
        let peer = try read { () throws(MessageError) in try message.xorAddress(.xorPeerAddress) }
        guard let channel, let peer else { throw .badRequest("CHANNEL-NUMBER or XOR-PEER-ADDRESS missing") }
        guard ChannelData.channels.contains(channel) else { throw .badRequest("Channel number out of range") }
        try checkPeers(a, [peer], withPorts: true)
        // A channel stays with its peer and a peer with its channel (RFC 8656 section 11.2).
        if let bound = allocations[a].channels.binding(number: channel), bound.peer != peer {
            throw .badRequest("Channel number bound to another peer")
        }
        if let other = allocations[a].channels.binding(peer: peer), other.number != channel {
            throw .badRequest("Peer bound to another channel number")
        }
        // Refreshing a channel is always allowed; only a new one counts against the cap.
        if allocations[a].channels.binding(number: channel) == nil && allocations[a].channels.count >= shared.maxChannels {
            counters.channelsRefused &+= 1
            throw TurnRefusal(code: .insufficientCapacity)
        }
        if !allocations[a].permits(peer, now: now) && allocations[a].permissions.count >= settings.maxPermissions {
            throw TurnRefusal(code: .insufficientCapacity)
        }
        let expires = now &+ UInt64(settings.channelLifetime) &* 1_000_000_000
        // The permission's expiry is copied into the channel by `permit`.
        if allocations[a].channels.bind(channel, peer: peer, expires: expires, permissionExpires: 0) { channelCount += 1 }
        permit(a, peer)
        schedule(a, expires)
    }

    /// 443 for a peer of a family the allocation has no relayed address for, 403 for a peer
    /// the policy refuses: by address alone for a permission, by address and port for a
    /// channel (whose ChannelData is then never checked again).
    func checkPeers(_ a: Int, _ peers: [Endpoint], withPorts: Bool) throws(TurnRefusal) {
        for peer in peers where allocations[a].relay(for: peer) == nil {
            throw TurnRefusal(code: .peerAddressFamilyMismatch)
        }
        let relayed = shared.relayedPorts
        for peer in peers {
            let decision = withPorts ? settings.peerPolicy.decide(peer: peer, isRelayedAddress: { relayed.contains($0) })
                                     : settings.peerPolicy.decide(permission: peer)
            if case .refused(let reason) = decision {
                counters.add(reason)
                throw TurnRefusal(code: .forbidden)
            }
        }
    }

    /// Installs or refreshes the permission for `peer`'s address, and its copy in every
    /// channel to that address (which the packet path reads instead of the permission).
    func permit(_ a: Int, _ peer: Endpoint) {
        let key = Allocation.permissionKey(peer)
        let expires = now &+ UInt64(settings.permissionLifetime) &* 1_000_000_000
        if allocations[a].permissions.updateValue(expires, forKey: key) == nil { permissionCount += 1 }
        allocations[a].channels.renewPermission(key, until: expires)
        schedule(a, expires)
    }
}

extension TurnAuthenticator {
    /// Whether the 401 to the smallest Allocate a client may send (REQUESTED-TRANSPORT alone)
    /// fits under `TurnTable.unauthenticatedSlack`. The realm is the one part of a 401 the
    /// operator sizes: past about 52 bytes such a client gets no answer at all (counted as an
    /// `amplification` drop), so the server warns at start.
    public var challengeFitsBareAllocate: Bool {
        var bare = MessageBuilder(MessageType(.allocate, .request), transactionID: .random())
        bare.append(.requestedTransport, [17, 0, 0, 0])
        var answer = MessageBuilder(MessageType(.allocate, .errorResponse), transactionID: bare.transactionID)
        answer.append(error: .unauthenticated)
        appendChallenge(to: &answer, for: Endpoint(ipv4: 0, port: 0), second: 0)
        return answer.bytes.count <= bare.bytes.count + TurnTable.unauthenticatedSlack
    }
}
