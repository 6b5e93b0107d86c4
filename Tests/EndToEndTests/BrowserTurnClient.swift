import ClientSockets
@testable import LoadGen
import NetAddress
import STUN

/// A TURN client that allocates the way a browser does: the rules of libwebrtc's Allocate
/// (TurnAllocateRequest in p2p/base/turn_port.cc), on a `TurnWireClient`'s socket.
///
/// - It signs a request only once it holds a credential hash; the hash is computed when it
///   learns a realm, from a 401 or from the REALM of a 300.
/// - A 401 is retried only while it has no hash; with one, a 401 ends the attempt.
/// - Any other error ends it, 438 Stale Nonce included (libwebrtc retries 438 only for
///   Refresh, CreatePermission and ChannelBind).
/// - A 300 Try Alternate moves it to ALTERNATE-SERVER on the same socket, taking REALM and
///   NONCE from the 300 when present (the 300's integrity is not checked); its next Allocate
///   goes there signed with the realm and nonce it holds. A server already tried ends it.
final class BrowserTurnClient {
    let wire: TurnWireClient
    /// Whether it has computed its credential hash (libwebrtc's `hash_` not empty).
    private(set) var hasHash = false
    /// The servers it has sent an Allocate to, in order.
    private(set) var tried: [String] = []

    /// What one Allocate came to.
    enum Outcome: Equatable {
        case allocated(relayed: Endpoint)
        /// Why it gave up, as libwebrtc would: the error code and its phase.
        case failed(String)
    }

    init(server: Endpoint, username: String, password: String) throws {
        wire = try TurnWireClient(server: server, username: username, password: password)
    }

    /// Where its requests go now.
    var server: SocketAddress { wire.server }

    /// Allocates, following 401 and 300 as libwebrtc does.
    func allocate() -> Outcome {
        tried = [wire.server.description]
        for _ in 0..<8 {
            let request: [UInt8]
            if hasHash {
                request = wire.signed(.allocate) { $0.append(.requestedTransport, [17, 0, 0, 0]) }
            } else {
                var bare = MessageBuilder(MessageType(.allocate, .request), transactionID: .random())
                bare.append(.requestedTransport, [17, 0, 0, 0])
                bare.appendFingerprint()
                request = bare.bytes
            }
            let answer: StunMessage
            do { answer = try wire.exchange(request, seconds: 5) } catch { return .failed("no answer from \(wire.server)") }
            if answer.messageClass == .successResponse {
                guard let relayed = try? answer.xorAddress(.xorRelayedAddress) else { return .failed("success without a relayed address") }
                return .allocated(relayed: relayed)
            }
            let code = answer.errorCode?.code ?? 0
            switch code {
            case 401:
                guard !hasHash else { return .failed("401 with a credential hash") }
                guard let realm = try? answer.text(.realm), let nonce = try? answer.text(.nonce) else {
                    return .failed("401 without REALM or NONCE")
                }
                wire.realm = realm
                wire.nonce = nonce
                hasHash = true
            case 300:
                guard let alternate = answer.alternateServer else { return .failed("300 without ALTERNATE-SERVER") }
                guard !tried.contains(alternate.description) else { return .failed("300 to a server already tried") }
                if let realm = try? answer.text(.realm), realm != wire.realm {
                    wire.realm = realm
                    hasHash = true
                }
                if let nonce = try? answer.text(.nonce) { wire.nonce = nonce }
                wire.server = alternate
                tried.append(alternate.description)
            default:
                return .failed("\(code) on \(wire.server)")
            }
        }
        return .failed("too many rounds")
    }
}
