@testable import ClientSockets
import Foundation
import Glibc
@testable import LoadGen
import STUN
import Synchronization

/// A stand-in TURN server on 127.0.0.1 whose answers a test writes: each request it receives is
/// handed to `answer`, and what that returns is sent back to the request's source. Runs on its
/// own thread until `stop` (or deinit), so code under test can block in its transactions.
final class ScriptedTurnServerFixture {
    /// What the serving thread and the test share.
    private final class Shared: Sendable {
        let seen = Mutex<[StunMessage]>([])
        let running = Atomic<Bool>(true)
        let finished = DispatchSemaphore(value: 0)
    }

    let socket: TrafficSocket
    let address: SocketAddress
    private let shared = Shared()

    /// Requests seen so far, in order.
    var requests: [StunMessage] { shared.seen.withLock { $0 } }

    init(answer: @escaping @Sendable (StunMessage) -> [UInt8]?) throws {
        socket = try TrafficSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0), tos: 0)
        address = socket.localAddress
        let (fd, shared) = (socket.fd, shared)
        Thread {
            var buffer = [UInt8](repeating: 0, count: 2048)
            while shared.running.load(ordering: .relaxed) {
                var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&ready, 1, 20) > 0 else { continue }
                var source = sockaddr_storage()
                var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let count = withUnsafeMutablePointer(to: &source) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, 0, $0, &length) }
                }
                guard count > 0, let request = try? StunMessage(bytes: Array(buffer[0..<count])) else { continue }
                shared.seen.withLock { $0.append(request) }
                guard let reply = answer(request) else { continue }
                _ = withUnsafePointer(to: &source) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, reply, reply.count, 0, $0, length) }
                }
            }
            shared.finished.signal()
        }.start()
    }

    /// Ends the serving thread (the socket closes with the fixture).
    func stop() {
        guard shared.running.exchange(false, ordering: .relaxed) else { return }
        shared.finished.wait()
    }

    deinit { stop() }

    /// A 401 naming `realm` and `nonce`, as a server challenges an unsigned request.
    static func challenge(_ request: StunMessage, realm: String, nonce: String) -> [UInt8] {
        var answer = MessageBuilder(MessageType(request.method, .errorResponse), transactionID: request.transactionID)
        answer.append(error: .unauthenticated)
        answer.append(.realm, text: realm)
        answer.append(.nonce, text: nonce)
        return answer.bytes
    }
}
