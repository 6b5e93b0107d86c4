import FuzzSupport
import NetAddress
@testable import RelayCore
import STUN

/// What must hold of a TURN table between any two steps, whatever the clients sent.
enum TurnTableInvariants {
    static func check(_ table: TurnTable<InMemoryEngine>, pool: PortPool) {
        let store = table.store
        let live = store.liveIndices
        expect(live.count == store.count, "\(live.count) live allocations, \(store.count) by client")
        expect(table.shared.allocations == store.count, "the quota counts \(table.shared.allocations), the table holds \(store.count)")
        var ports: [Bool: Set<UInt16>] = [false: [], true: []]
        var permissions = 0
        var channels = 0
        for index in live {
            let allocation = store[index]
            expect(store.index(of: allocation.client) == index, "allocation \(index) is not found by its client")
            for relayed in [allocation.relay4, allocation.relay6].compactMap({ $0 }) {
                expect(ports[relayed.ipv6]!.insert(relayed.port).inserted, "relayed port \(relayed.port) held twice in one family")
                expect(pool.isHeld(relayed.port), "relayed port \(relayed.port) not held in the pool")
            }
            expect(allocation.relay4 != nil || allocation.relay6 != nil, "an allocation without a relayed address")
            expect(allocation.permissions.count <= table.settings.maxPermissions + 1, "\(allocation.permissions.count) permissions")
            permissions += allocation.permissions.count
            channels += allocation.channels.count
            for binding in allocation.channels.entries {
                expect(ChannelData.channels.contains(binding.number), "channel \(binding.number) out of range")
                expect(allocation.channels.binding(number: binding.number)?.peer == binding.peer, "channel \(binding.number) found by number elsewhere")
                expect(allocation.channels.binding(peer: binding.peer)?.number == binding.number, "channel \(binding.number) found by peer elsewhere")
            }
        }
        expect(store.permissionCount == permissions, "permissions counted \(store.permissionCount), held \(permissions)")
        expect(store.channelCount == channels, "channels counted \(store.channelCount), held \(channels)")
    }
}

/// The datagrams the table sent, judged: to a client only STUN that parses or ChannelData,
/// each answer to a transaction that client asked, and no unsigned answer much larger than
/// the request it answers (the relay must not amplify for a forged source).
struct TurnAnswers {
    private var asked: [Endpoint: [TransactionID: Int]] = [:]

    mutating func sent(_ bytes: [UInt8], by client: Endpoint) {
        guard bytes.count >= 20, let index = try? bytes.withUnsafeBytes({ try AttributeIndex(parsing: $0) }) else { return }
        asked[client, default: [:]][index.transactionID] = max(asked[client]?[index.transactionID] ?? 0, bytes.count)
    }

    func judge(_ bytes: [UInt8], to destination: Endpoint, clients: [Endpoint]) {
        guard clients.contains(destination) else { return }
        expect(!bytes.isEmpty, "an empty datagram to a client")
        if ChannelData.isChannelData(bytes[0]) {
            expect(bytes.withUnsafeBytes { ChannelData.parse($0) } != nil, "malformed ChannelData to a client")
            return
        }
        guard let message = try? StunMessage(bytes: bytes) else { return expect(false, "a datagram to a client that is not STUN") }
        guard message.messageClass == .successResponse || message.messageClass == .errorResponse else { return }
        guard let request = asked[destination]?[message.transactionID] else {
            return expect(false, "an answer to a transaction \(destination) never asked")
        }
        if message.integrityType == nil && message.method != .binding {
            expect(bytes.count <= request + TurnSettings.unauthenticatedSlack, "an unsigned answer of \(bytes.count) bytes to \(request)")
        }
    }
}
