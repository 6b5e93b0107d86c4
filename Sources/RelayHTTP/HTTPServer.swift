import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif
import SystemSupport

/// A small, bounded HTTP/1.1 server for the relay's control API and metrics.
///
/// Contract: `init` binds and listens (or throws an `HTTPServerError` a user can act on);
/// `start()` serves on one dedicated thread that multiplexes every connection with poll();
/// `stop()` closes the listener and all connections and returns once that thread has ended.
/// The handler runs on that thread, one request at a time, so it must be quick and must not
/// call `stop()`. Limits in `HTTPLimits` bound memory, connections and time per client.
/// `start()` and `stop()` may be called from any thread, more than once.
public final class HTTPServer: Sendable {
    /// The port actually listened on (the kernel's choice when 0 was asked for).
    public let boundPort: UInt16
    public let limits: HTTPLimits
    private let listenFD: Int32
    private let served = ConnectionCount()
    private let wakeReadFD: Int32
    private let wakeWriteFD: Int32
    private let handler: @Sendable (HTTPRequest) -> HTTPResponse
    private let priorityPaths: [String]
    private let state = Mutex(RunState())

    private struct RunState {
        var started = false
        var stopped = false
        var finished: DispatchSemaphore?
    }

    /// - Parameter priorityPaths: paths (such as "/healthz") whose GET requests are answered
    ///   before the other requests read in the same turn, so a liveness probe never waits
    ///   behind API calls; their handling must be cheap.
    public init(
        host: String, port: UInt16, limits: HTTPLimits = .init(), priorityPaths: [String] = [],
        handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse
    ) throws {
        let fd = try ListeningSocket.open(host: host, port: port)
        var pipeFDs: [Int32] = [-1, -1]
        let piped = SystemCall.outcome { Int(pipe(&pipeFDs)) }
        guard case .done = piped else {
            let code: Int32 = if case .failed(let code) = piped { code } else { EAGAIN }
            SystemCall.close(fd)
            throw HTTPServerError(
                address: "\(host):\(port)", errno: code,
                description: "cannot start the HTTP server on \(host):\(port): pipe: \(SystemCallError.explain(code))")
        }
        SocketCall.makeNonBlocking(pipeFDs[0])
        SocketCall.makeNonBlocking(pipeFDs[1])
        self.listenFD = fd
        self.wakeReadFD = pipeFDs[0]
        self.wakeWriteFD = pipeFDs[1]
        self.boundPort = ListeningSocket.boundPort(fd)
        self.limits = limits
        self.handler = handler
        self.priorityPaths = priorityPaths
    }

    deinit {
        stop()
    }

    /// Connections admitted and not yet closed (those turned away with 503 are not counted), as
    /// of the serving thread's last turn: at most `limits.maxConnections`.
    public var servedConnections: Int { served.value.load(ordering: .relaxed) }

    /// Starts serving on a new thread named "mediarelay-http". Does nothing after the first call
    /// or after `stop()`.
    public func start() {
        let finished = DispatchSemaphore(value: 0)
        let shouldStart = state.withLock { state in
            guard !state.started, !state.stopped else { return false }
            state.started = true
            state.finished = finished
            return true
        }
        guard shouldStart else { return }
        let (listenFD, wakeFD, limits, handler) = (self.listenFD, wakeReadFD, self.limits, self.handler)
        let (priorityPaths, served) = (self.priorityPaths, self.served)
        let thread = Thread {
            ThreadName.set("mediarelay-http")
            ServeLoop(listenFD: listenFD, wakeFD: wakeFD, limits: limits, priorityPaths: priorityPaths, served: served,
                      handler: handler).run()
            finished.signal()
        }
        thread.name = "mediarelay-http"
        thread.start()
    }

    /// Stops serving, closes every socket and waits for the serving thread to end.
    public func stop() {
        let (wasStarted, finished, alreadyStopped) = state.withLock { state in
            let result = (state.started, state.finished, state.stopped)
            state.stopped = true
            return result
        }
        guard !alreadyStopped else { return }
        if wasStarted, let finished {
            var byte: UInt8 = 1
            SystemCall.ignoringFailure { Glibc.write(wakeWriteFD, &byte, 1) }
            finished.wait()
        }
        SocketCall.close(listenFD)
        SocketCall.close(wakeReadFD)
        SocketCall.close(wakeWriteFD)
    }
}
