import DatagramEngine
import Glibc
import NetAddress
import STUN
import SystemSupport

/// Allocate (RFC 8656 section 7.2) and the relayed sockets an allocation owns.
extension TurnTable {
    /// How long a port reserved by EVEN-PORT's R bit waits for its RESERVATION-TOKEN.
    static let reservationNanoseconds: UInt64 = 30_000_000_000

    func allocate(_ message: StunMessage, _ client: TurnClient, _ identity: TurnIdentity,
                  _ answer: inout MessageBuilder) throws(TurnRefusal) {
        if let existing = byClient[client] {
            // The Allocate that made it, retransmitted after its cached answer expired, is
            // answered as a success again; any other is a mismatch.
            guard allocations[Int(existing)].transaction == message.transactionID else {
                throw TurnRefusal(code: .allocationMismatch)
            }
            return describe(Int(existing), client, reservation: nil, additionalError: nil, draftNumbers: false, &answer)
        }
        guard let transport = try read({ () throws(MessageError) in
            try message.value(.requestedTransport, AttributeValue.requestedTransport)
        }) else { throw .badRequest("REQUESTED-TRANSPORT missing") }
        guard transport == 17 else { throw TurnRefusal(code: .unsupportedTransportProtocol) }
        let requested = try read { () throws(MessageError) in try message.value(.requestedAddressFamily, AttributeValue.addressFamily) }
        // RFC 8656's number, or the draft's that coturn's clients send; answered in kind.
        let draftNumbers = !message.contains(.additionalAddressFamily) && message.contains(.additionalAddressFamilyDraft)
        let additional = try read { () throws(MessageError) in
            try message.value(draftNumbers ? .additionalAddressFamilyDraft : .additionalAddressFamily, AttributeValue.addressFamily)
        }
        let evenPort = try read { () throws(MessageError) in try message.value(.evenPort, AttributeValue.evenPortReservesNext) }
        let token = try read { () throws(MessageError) in try message.value(.reservationToken, AttributeValue.reservationToken) }
        let lifetime = try read { () throws(MessageError) in try message.value(.lifetime, AttributeValue.uint32) }
        if token != nil && (evenPort != nil || requested != nil || additional != nil) {
            throw .badRequest("RESERVATION-TOKEN with EVEN-PORT or an address family")
        }
        // A dual allocation cannot reserve the next port (coturn refuses the same; EVEN-PORT
        // without the R bit still gives the IPv4 relayed address an even port).
        if additional != nil && (requested != nil || evenPort == true) {
            throw .badRequest("ADDITIONAL-ADDRESS-FAMILY with REQUESTED-ADDRESS-FAMILY or EVEN-PORT(R)")
        }
        if additional == .ipv4 { throw .badRequest("ADDITIONAL-ADDRESS-FAMILY must be IPv6") }
        // A reserved port comes with the family of the allocation that reserved it.
        let redeemed = token.flatMap { shared.redeem($0) }
        if token != nil && redeemed == nil { throw TurnRefusal(code: .insufficientCapacity) }
        let family = redeemed?.family ?? requested ?? .ipv4
        let dontFragment = message.contains(.dontFragment)
        guard bindAddress(family) != nil else {
            if let redeemed { ports.release(redeemed.port, from: .turn) }
            throw TurnRefusal(code: .addressFamilyNotSupported)
        }
        // A port reserved here is redeemed here: only a client without a token may be sent on.
        let movable = redeemed == nil
        if movable && shared.isDraining { try redirect(client, .draining) }
        if let quota = shared.admit(identity.username, perUser: settings.maxAllocationsPerUser, total: settings.maxAllocations) {
            if let redeemed { ports.release(redeemed.port, from: .turn) }
            // A user over their own quota would be over it on a sibling too: 486 stays.
            if movable && quota == .insufficientCapacity { try redirect(client, .capacity) }
            throw TurnRefusal(code: quota)
        }

        var reservation: UInt64?
        let primary: RelayedSocket
        do throws(TurnRefusal) {
            if let redeemed {
                primary = try openRelay(family, port: redeemed.port, held: redeemed.held.socket, dontFragment: dontFragment)
            } else if let reserveNext = evenPort {
                (primary, reservation) = try openEvenRelay(family, reserveNext: reserveNext, dontFragment: dontFragment)
            } else {
                primary = try openRelay(family, port: nil, dontFragment: dontFragment)
            }
        } catch {
            shared.release(identity.username)
            if movable && error.code == .insufficientCapacity { try redirect(client, .ports) }
            throw error
        }
        var secondary: RelayedSocket?
        var additionalError: ErrorCode?
        if additional == .ipv6 {
            if bindAddress(.ipv6) == nil {
                additionalError = .addressFamilyNotSupported
            } else {
                do throws(TurnRefusal) { secondary = try openRelay(.ipv6, port: nil, dontFragment: dontFragment) } catch { additionalError = error.code }
            }
        }

        let index = freeAllocations.popLast() ?? Int32(allocations.count)
        let granted = settings.lifetime(requested: lifetime)
        var allocation = Allocation(client: client, username: identity.username, transaction: message.transactionID,
                                    relay4: nil, relay6: nil, created: now,
                                    expires: now &+ UInt64(granted) &* 1_000_000_000)
        for relay in [primary, secondary].compactMap({ $0 }) {
            if relay.advertised.isIPv4 { allocation.relay4 = relay } else { allocation.relay6 = relay }
            engine.setOwner(relay.socket, OwnerTag(.turnRelay, index))
        }
        allocation.bandwidth = Policer(rate: settings.bandwidthPerAllocation, now: now)
        allocation.ecnMarking = shared.ecnMarking
        if client.isStream {
            allocation.transport = connections[Int(client.connection)].transport
            allocationMade(on: Int(client.connection))
        }
        transportCounters.allocations[allocation.transport.rawValue] &+= 1
        if Int(index) < allocations.count { allocations[Int(index)] = allocation } else { allocations.append(allocation) }
        schedule(Int(index), allocation.expires)
        byClient[client] = index
        counters.allocationsCreated &+= 1
        describe(Int(index), client, reservation: reservation, additionalError: additionalError,
                 draftNumbers: draftNumbers, &answer)
    }

    /// Sends a new client to an alternate of its transport and family (300 Try Alternate,
    /// RFC 8489 section 10) when there is one, counted by `reason`; returns when there is
    /// none, so the caller refuses or serves the client as it would without alternates.
    func redirect(_ client: TurnClient, _ reason: TurnRedirectReason) throws(TurnRefusal) {
        // A client over TLS goes to an alternate's TLS port; UDP and TCP share a port.
        let tls = client.isStream && connections[Int(client.connection)].transport == .tls
        guard let redirect = shared.alternate(for: tls ? .tls : .plain, ipv4: client.address.isIPv4) else {
            // A draining relay takes no new allocation it would cut off when the drain ends:
            // 403 sends the client on to its next ICE server.
            if reason == .draining { throw TurnRefusal(code: .forbidden) }
            return
        }
        counters.redirects[reason.rawValue] &+= 1
        throw TurnRefusal(code: .tryAlternate, redirect: redirect)
    }

    /// The success answer's attributes: relayed addresses, lifetime, reservation, mapped address.
    func describe(_ a: Int, _ client: TurnClient, reservation: UInt64?, additionalError: ErrorCode?,
                  draftNumbers: Bool, _ answer: inout MessageBuilder) {
        let allocation = allocations[a]
        for relay in [allocation.relay4, allocation.relay6].compactMap({ $0 }) {
            answer.append(.xorRelayedAddress, xorAddress: relay.advertised)
        }
        let left = allocation.expires > now ? (allocation.expires - now) / 1_000_000_000 : 0
        answer.append(.lifetime, uint32: UInt32(clamping: left))
        if let reservation {
            answer.append(.reservationToken, (0..<8).map { UInt8(truncatingIfNeeded: reservation >> (56 - 8 * $0)) })
        }
        answer.append(.xorMappedAddress, xorAddress: client.address)
        if let code = additionalError {
            // ADDRESS-ERROR-CODE (RFC 8656 section 18.13): the family that failed, then as ERROR-CODE.
            answer.append(draftNumbers ? .addressErrorCodeDraft : .addressErrorCode, [AddressFamily.ipv6.rawValue, 0, UInt8(code.rawValue / 100),
                                              UInt8(code.rawValue % 100)] + Array(code.reason.utf8))
        }
    }

    /// EVEN-PORT: a relayed socket on an even port, and with the R bit the odd port above it
    /// reserved under a fresh token. Even ports another process holds are skipped.
    func openEvenRelay(_ family: AddressFamily, reserveNext: Bool,
                       dontFragment: Bool) throws(TurnRefusal) -> (RelayedSocket, UInt64?) {
        for _ in 0..<16 {
            guard let port = ports.acquireEven(withNext: reserveNext) else { break }
            let relay: RelayedSocket
            do throws(TurnRefusal) {
                relay = try openRelay(family, port: port, dontFragment: dontFragment)
            } catch {
                if reserveNext { ports.release(port + 1, from: .turn) }
                continue
            }
            guard reserveNext else { return (relay, nil) }
            // The odd port is bound now, not when the token comes back: until then any other
            // process could take it, and the RTCP allocation would fail with 508.
            guard var next = bindAddress(family) else { break }
            next.port = port + 1
            guard let held = try? UDPSocket(binding: next, options: socketOptions) else {
                // Just opened, nothing queued on it yet: it can close at once.
                engine.unregister([relay.socket])
                shared.relayedPorts.remove(relay.port, ipv6: relay.ipv6)
                ports.release(relay.port, from: .turn)
                ports.release(port + 1, from: .turn)
                continue
            }
            let token = Digest.random(count: 8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            shared.reserve(port + 1, family: family, held: HeldPort(held), token: token, until: now &+ TurnTable.reservationNanoseconds)
            return (relay, token)
        }
        throw TurnRefusal(code: .insufficientCapacity)
    }

    func bindAddress(_ family: AddressFamily) -> Endpoint? {
        family == .ipv4 ? settings.relayIPv4 : settings.relayIPv6
    }

    /// Binds a relayed socket of `family`: on `port` when given (already taken from the pool,
    /// and `held` already bound on it when a reservation kept it), else on a free port of the
    /// pool, skipping ports another process holds. 508 when none.
    func openRelay(_ family: AddressFamily, port given: UInt16?, held: UDPSocket? = nil, dontFragment: Bool) throws(TurnRefusal) -> RelayedSocket {
        guard var local = bindAddress(family) else { throw TurnRefusal(code: .addressFamilyNotSupported) }
        // A given port was chosen for this allocation: tried once, never swapped for another.
        let result = ports.bindSkippingHeld(for: .turn, attempts: given == nil ? 16 : 1, take: { given ?? ports.acquire(for: .turn) }) {
            (port: UInt16) throws(SystemCallError) -> RelayedSocket in
            local.port = port
            let bound = if let held { held } else { try UDPSocket(binding: local, options: socketOptions) }
            try setDontFragment(bound, dontFragment)
            let socket = try engine.register(bound)
            var advertised = (family == .ipv4 ? settings.advertiseIPv4 : settings.advertiseIPv6) ?? local
            advertised.port = port
            shared.relayedPorts.insert(port, ipv6: family == .ipv6)
            return RelayedSocket(socket: socket, port: port, advertised: advertised)
        }
        guard case .success(let relay) = result else { throw TurnRefusal(code: .insufficientCapacity) }
        return relay
    }

    /// The DF bit of datagrams from a relayed socket (RFC 8656 section 14, IPv4 fragmentation):
    /// with DONT-FRAGMENT in the Allocate, set (IP_PMTUDISC_DO: one too large for the path is
    /// refused by the kernel, never fragmented); without it, clear (IP_PMTUDISC_DONT), the RFC's
    /// behaviour for a relay that cannot read the incoming datagram's DF bit: take it as 0.
    /// Linux's default (IP_PMTUDISC_WANT) would set DF whenever a datagram fits the path, so
    /// the client's choice would not show on the wire. IPv6 has no DF bit: IPV6_DONTFRAG only
    /// stops the relay itself from fragmenting. A failure fails the allocation rather than let
    /// it run without what the client asked for.
    func setDontFragment(_ socket: UDPSocket, _ dontFragment: Bool) throws(SystemCallError) {
        let descriptor = socket.descriptor
        let ipv4 = socket.family == AF_INET
        var value: Int32 = ipv4 ? (dontFragment ? IP_PMTUDISC_DO : IP_PMTUDISC_DONT) : (dontFragment ? 1 : 0)
        let (level, name) = ipv4 ? (Int32(IPPROTO_IP), IP_MTU_DISCOVER) : (Int32(IPPROTO_IPV6), IPV6_DONTFRAG)
        _ = try SystemCall.require(ipv4 ? "setsockopt(IP_MTU_DISCOVER) on a relayed socket" : "setsockopt(IPV6_DONTFRAG) on a relayed socket") {
            Int(setsockopt(descriptor, level, name, &value, socklen_t(MemoryLayout<Int32>.size)))
        }
    }

    /// Forgets an allocation at once (its sockets route nowhere from now on) and queues its
    /// sockets for closing: a Refresh that deletes arrives in the middle of a batch whose
    /// datagrams may still be queued on them, so they close after the flush (`closePending`).
    func removeAllocation(_ a: Int, _ reason: EndReason) {
        guard allocations[a].live else { return }
        account(a, reason)
        let allocation = allocations[a]
        permissionCount -= allocation.permissions.count
        channelCount -= allocation.channels.count
        for relay in [allocation.relay4, allocation.relay6].compactMap({ $0 }) {
            engine.disown(relay.socket)
            closing.append(relay)
        }
        shared.release(allocation.username)
        if allocation.client.isStream { allocationEnded(on: Int(allocation.client.connection)) }
        byClient[allocation.client] = nil
        if lastAllocation == Int32(a) { lastAllocation = -1 }
        allocations[a] = .vacant
        freeAllocations.append(Int32(a))
    }

    /// Closes the sockets of removed allocations (all at once), then returns their ports: no
    /// port is handed out again while its socket is open.
    func closePending() {
        guard !closing.isEmpty else { return }
        engine.unregister(closing.map(\.socket))
        for relay in closing {
            shared.relayedPorts.remove(relay.port, ipv6: relay.ipv6)
            ports.release(relay.port, from: .turn)
        }
        closing.removeAll()
    }
}
