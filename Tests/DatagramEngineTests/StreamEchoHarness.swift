import Glibc
import NetAddress
import SystemSupport
@testable import DatagramEngine

/// A stream echo service built on the engine, as a TURN-over-TCP server would use it: it takes
/// every accepted connection (naming itself with `setOwner`), writes back what arrives, in
/// frames of `frame` bytes (a partial frame waits in the input, as a framer leaves a partial
/// message), consuming only what the engine took, and records every close with its reason.
/// One `turn` is one receive, the events, one flush.
final class StreamEchoHarness {
    static let role: UInt8 = 9
    /// The listener's tag: the harness's role, an index no connection gets (they count from 0).
    static let listenerIndex: Int32 = 0xFF_FFFF
    let engine: DatagramEngine
    let listener: TCPListener
    let listenerID: SocketID
    let frame: Int
    private(set) var accepted: [SocketID] = []
    private(set) var peers: [SocketID: Endpoint] = [:]
    private(set) var closed: [SocketID: StreamCloseReason] = [:]
    private(set) var writableEvents = 0
    /// Events that reached this service with a tag it never gave out.
    private(set) var strangers = 0
    /// Whether to echo (false: read nothing, so the input fills and the reading stops).
    var echoing = true

    init(backend: Backend, configure: (inout EngineConfiguration) -> Void = { _ in }, local: Endpoint = Loopback.v4,
         listenerSetUp: (TCPListener) -> Void = { _ in }, frame: Int = 1) throws {
        var configuration = EngineConfiguration(backend: backend)
        configuration.streamLimit = 1024
        configure(&configuration)
        engine = try DatagramEngine(configuration: configuration)
        listener = try TCPListener(binding: local)
        listenerSetUp(listener)
        listenerID = try engine.listen(listener, owner: OwnerTag(role: StreamEchoHarness.role, index: StreamEchoHarness.listenerIndex))
        self.frame = frame
    }

    var server: Endpoint { listener.localEndpoint }

    func turn(timeoutMilliseconds: Int32 = 0) {
        engine.receive(timeoutMilliseconds: timeoutMilliseconds)
        for index in 0..<engine.streamEventCount {
            let event = engine.streamEvent(index)
            guard event.owner.role == StreamEchoHarness.role else {
                strangers += 1
                continue
            }
            switch event.kind {
            case .accepted(let listener, let peer, _):
                if listener != listenerID || event.owner.index != StreamEchoHarness.listenerIndex { strangers += 1 }
                peers[event.stream] = peer
                engine.setOwner(event.stream, OwnerTag(role: StreamEchoHarness.role, index: Int32(accepted.count)))
                accepted.append(event.stream)
            case .data:
                echo(event.stream)
            case .writable:
                writableEvents += 1
                echo(event.stream)
            case .closed(let reason):
                closed[event.stream] = reason
            }
        }
        engine.flush()
    }

    /// Writes back the whole frames waiting in `stream`'s input and consumes them.
    func echo(_ stream: SocketID) {
        guard echoing else { return }
        let input = engine.input(stream)
        let whole = input.count / frame * frame
        guard whole > 0 else { return }
        if engine.write(stream, UnsafeRawBufferPointer(rebasing: input[0..<whole])) { engine.consume(stream, whole) }
    }

    /// Runs turns until `done` or `seconds` pass; returns whether `done` came true.
    func run(seconds: Double, until done: () -> Bool) -> Bool {
        let deadline = MonotonicClock.now() + MonotonicClock.nanoseconds(seconds)
        while MonotonicClock.now() < deadline {
            turn(timeoutMilliseconds: 1)
            if done() { return true }
        }
        return done()
    }

    /// Turns the engine until `client`'s receive into `buffer` gives something (bytes, the end
    /// of the stream or an error), for at most `seconds`; `.wouldBlock` when nothing came.
    func receive(_ client: Int32, into buffer: UnsafeMutableRawBufferPointer, seconds: Double = 5) -> TCPClientFixture.Outcome {
        var outcome = TCPClientFixture.Outcome.wouldBlock
        _ = run(seconds: seconds) {
            outcome = TCPClientFixture.receive(client, into: buffer)
            return outcome != .wouldBlock
        }
        return outcome
    }
}
