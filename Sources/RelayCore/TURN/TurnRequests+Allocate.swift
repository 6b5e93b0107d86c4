import DatagramEngine
import Glibc
import NetAddress
import STUN
import SystemSupport

/// Allocate (RFC 8656 section 7.2): checks, quotas and redirects, the relayed sockets, and the
/// success answer.
extension TurnRequests {
    func allocate(_ message: StunMessage, _ client: TurnClient, _ identity: TurnIdentity,
                  _ answer: inout MessageBuilder) throws(TurnRefusal) {
        if let existing = store.index(of: client) {
            // The Allocate that made it, retransmitted after its cached answer expired, is
            // answered as a success again; any other is a mismatch.
            guard store[existing].transaction == message.transactionID else {
                throw TurnRefusal(code: .allocationMismatch)
            }
            return describe(existing, client, reservation: nil, additionalError: nil, draftNumbers: false, &answer)
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
        if token != nil && redeemed == nil { throw TurnRefusal(code: .insufficientCapacity, cause: .unknownReservation) }
        let family = redeemed?.family ?? requested ?? .ipv4
        let dontFragment = message.contains(.dontFragment)
        guard relayedSockets.bindAddress(family) != nil else {
            if let redeemed { relayedSockets.releasePort(redeemed.port) }
            throw TurnRefusal(code: .addressFamilyNotSupported, cause: .familyNotRelayed(family))
        }
        // A port reserved here is redeemed here: only a client without a token may be sent on.
        let movable = redeemed == nil
        if movable && shared.isDraining { try redirect(client, .draining) }
        if let quota = shared.admit(identity.username, perUser: settings.maxAllocationsPerUser, total: settings.maxAllocations) {
            if let redeemed { relayedSockets.releasePort(redeemed.port) }
            // A user over their own quota would be over it on a sibling too: 486 stays.
            if movable && quota == .insufficientCapacity { try redirect(client, .capacity) }
            throw TurnRefusal(code: quota, cause: quota == .insufficientCapacity ? .allocationLimit : .userAllocationLimit)
        }

        var reservation: UInt64?
        let primary: RelayedSocket
        do throws(TurnRefusal) {
            if let redeemed {
                primary = try relayedSockets.open(family, port: redeemed.port, held: redeemed.held.socket, dontFragment: dontFragment)
            } else if let reserveNext = evenPort {
                (primary, reservation) = try relayedSockets.openEven(family, reserveNext: reserveNext, dontFragment: dontFragment)
            } else {
                primary = try relayedSockets.open(family, port: nil, dontFragment: dontFragment)
            }
        } catch {
            shared.release(identity.username)
            if movable && error.code == .insufficientCapacity { try redirect(client, .ports) }
            throw error
        }
        var secondary: RelayedSocket?
        var additionalError: ErrorCode?
        if additional == .ipv6 {
            if relayedSockets.bindAddress(.ipv6) == nil {
                additionalError = .addressFamilyNotSupported
            } else {
                do throws(TurnRefusal) { secondary = try relayedSockets.open(.ipv6, port: nil, dontFragment: dontFragment) } catch { additionalError = error.code }
            }
        }

        let index = store.reserveIndex()
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
        allocation.dontFragment = dontFragment
        if client.isStream {
            allocation.transport = streams.transport(of: client.connectionIndex)
            streams.allocationMade(on: client.connectionIndex)
        }
        allocationsByTransport[allocation.transport.rawValue] &+= 1
        store.insert(allocation, at: index)
        counters.allocationsCreated &+= 1
        describe(Int(index), client, reservation: reservation, additionalError: additionalError,
                 draftNumbers: draftNumbers, &answer)
    }

    /// Sends a new client to an alternate of its transport and family (300 Try Alternate,
    /// RFC 8489 section 10) when there is one, counted by `reason`; returns when there is
    /// none, so the caller refuses or serves the client as it would without alternates.
    private func redirect(_ client: TurnClient, _ reason: TurnRedirectReason) throws(TurnRefusal) {
        // A client over TLS goes to an alternate's TLS port; UDP and TCP share a port.
        let tls = client.isStream && streams.transport(of: client.connectionIndex) == .tls
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
    private func describe(_ index: Int, _ client: TurnClient, reservation: UInt64?, additionalError: ErrorCode?,
                  draftNumbers: Bool, _ answer: inout MessageBuilder) {
        let allocation = store[index]
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
}
