import Dispatch
import Foundation
import Glibc
import TestSupport
import TLS

/// A TLS echo server on 127.0.0.1 for one connection, on its own thread: a server session
/// carried over the accepted socket (SocketSessionHarness), every plaintext byte written back,
/// close_notify answered. What it saw is its `Outcome`, for the test to check after the
/// client (openssl s_client) is done.
final class TLSEchoServerHarness {
    struct Outcome: Sendable {
        var accepted = false
        var handshake = TLSHandshakeStep.inProgress
        var failureDetail: String?
        var negotiatedALPN: String?
        var protocolVersion = ""
        var echoedBytes = 0
        /// How reading ended: .closed (close_notify), .failed, or nil (the socket ended first).
        var readEnd: TLSRead?
    }

    let port: UInt16
    private let listener: Int32
    private let finished = DispatchSemaphore(value: 0)
    private let result = OutcomeBox()

    init(context: TLSServerContext, seconds: Double = 20) {
        (listener, port) = LoopbackTCP.listen()
        let thread = Thread { [listener, result, finished] in
            result.value = Self.serve(listener: listener, context: context, seconds: seconds)
            finished.signal()
        }
        thread.start()
    }

    /// What the server saw, once its connection is over; nil when it is still going after
    /// `seconds`.
    func outcome(seconds: Double) -> Outcome? {
        guard finished.wait(timeout: .now() + seconds) == .success else { return nil }
        finished.signal()
        return result.value
    }

    deinit {
        // Wakes an accept that is still waiting; the listener is closed only once the thread
        // is done with it, so its number cannot be reused under the thread.
        shutdown(listener, Int32(SHUT_RDWR))
        _ = finished.wait(timeout: .now() + 30)
        close(listener)
    }

    private static func serve(listener: Int32, context: TLSServerContext, seconds: Double) -> Outcome {
        var outcome = Outcome()
        guard let fd = LoopbackTCP.accept(listener, seconds: seconds) else { return outcome }
        outcome.accepted = true
        guard let session = try? TLSSession(server: context) else { return outcome }
        let connection = SocketSessionHarness(session: session, fd: fd)
        outcome.handshake = connection.handshake(seconds: seconds)
        outcome.failureDetail = session.failureDetail
        outcome.negotiatedALPN = session.negotiatedALPN
        outcome.protocolVersion = session.protocolVersion
        guard outcome.handshake == .done else { return outcome }
        let deadline = Date().addingTimeInterval(seconds)
        while connection.readEnd == nil, connection.turn(until: deadline) {
            let fresh = connection.takePlaintext()
            guard !fresh.isEmpty else { continue }
            if connection.write(fresh) { outcome.echoedBytes += fresh.count }
        }
        outcome.readEnd = connection.readEnd
        if connection.readEnd == .closed {
            session.shutdown()
            connection.flush()
        }
        return outcome
    }
}

/// The outcome, written by the server's thread before it signals and read after the wait.
private final class OutcomeBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored = TLSEchoServerHarness.Outcome()

    var value: TLSEchoServerHarness.Outcome {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
