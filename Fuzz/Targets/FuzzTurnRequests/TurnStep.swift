import FuzzSupport
import NetAddress
import STUN

/// One step of a run, read from the input: a datagram from a client (raw bytes, a request
/// built and signed here, ChannelData or a Send indication), a datagram from a peer to an
/// allocation, or time passing.
enum TurnStep {
    case fromClient(Int, [UInt8])
    case fromPeer(Int, allocation: Int, [UInt8])
    case wait(UInt64)

    init(_ input: inout FuzzInput, nonceFor: (Endpoint) -> String) {
        let kind = input.take() % 6
        let client = Int(input.take() % 3)
        switch kind {
        case 0:
            self = .fromClient(client, Self.bytes(&input, count: Int(input.take())))
        case 1, 2:
            self = .fromClient(client, Self.signedRequest(&input, nonce: nonceFor(TurnRun.clients[client])))
        case 3:
            let channel = 0x4000 + UInt16(input.take() % 4)
            let payload = Self.bytes(&input, count: Int(input.take() % 64))
            self = .fromClient(client, [UInt8(channel >> 8), UInt8(channel & 0xFF), 0, UInt8(payload.count)] + payload)
        case 4:
            var indication = MessageBuilder(MessageType(.send, .indication), transactionID: TurnRun.transactions[0])
            indication.append(.xorPeerAddress, xorAddress: TurnRun.peers[Int(input.take() % 3)])
            indication.append(.data, Self.bytes(&input, count: Int(input.take() % 64)))
            self = .fromClient(client, indication.bytes)
        default:
            if input.take() & 1 == 0 {
                self = .fromPeer(Int(input.take() % 3), allocation: Int(input.take()), Self.bytes(&input, count: Int(input.take() % 64)))
            } else {
                self = .wait(UInt64(input.take()) * 8)
            }
        }
    }

    private static func bytes(_ input: inout FuzzInput, count: Int) -> [UInt8] {
        (0..<count).map { _ in input.take() }
    }

    /// A request of a TURN method with attributes the input picks (well-formed values of the
    /// attributes the handlers read, or raw ones), signed as alice with the client's nonce.
    private static func signedRequest(_ input: inout FuzzInput, nonce: String) -> [UInt8] {
        let methods: [Method] = [.allocate, .refresh, .createPermission, .channelBind, .binding]
        let method = methods[Int(input.take()) % methods.count]
        var builder = MessageBuilder(MessageType(method, .request), transactionID: TurnRun.transactions[Int(input.take() % 4)])
        for _ in 0..<(input.take() % 6) {
            switch input.take() % 9 {
            case 0: builder.append(.requestedTransport, [input.take() & 1 == 0 ? 17 : 6, 0, 0, 0])
            case 1: builder.append(.lifetime, uint32: UInt32(input.take()) * 16)
            case 2: builder.append(.xorPeerAddress, xorAddress: TurnRun.peers[Int(input.take() % 3)])
            case 3: builder.append(.channelNumber, [0x40, input.take() % 4, 0, 0])
            case 4: builder.append(.requestedAddressFamily, [input.take() & 1 == 0 ? 1 : 2, 0, 0, 0])
            case 5: builder.append(.evenPort, [input.take() & 0x80])
            case 6: builder.append(.reservationToken, bytes(&input, count: 8))
            case 7: builder.append(.dontFragment, [])
            default:
                let type = AttributeType(rawValue: UInt16(input.take()) << 8 | UInt16(input.take()))
                builder.append(type, bytes(&input, count: Int(input.take() % 16)))
            }
        }
        let signature = input.take()
        if signature & 4 == 0 {
            builder.append(.username, text: "alice")
            builder.append(.realm, text: TurnRun.realm)
            builder.append(.nonce, text: nonce)
            builder.appendIntegrity(signature & 1 == 0 ? .messageIntegrity : .messageIntegritySHA256, key: TurnRun.key)
        }
        if signature & 2 != 0 { builder.appendFingerprint() }
        return builder.bytes
    }
}
