import ClientSockets
import Glibc
import SystemSupport
import TLS

/// Opens many TURN clients' connections to one server at once, without blocking: non-blocking
/// connects, then (for TLS) handshakes, all driven by one poll loop, at most `inFlight` under
/// way at a time so that the server's accept queue and its handshake CPU are not flooded.
/// Each connection either opens within `timeoutNs` or fails with a reason a user can act on.
/// Control path: set-up, and a client following a 300 Try Alternate.
struct TurnConnector: Sendable {
    /// What every connection of a run shares.
    struct Target: Sendable {
        let server: SocketAddress
        /// The host as the user named the server (TLS: SNI and the certificate's name).
        let host: String
        /// nil for TCP.
        let tls: TLSClientContext?
        let inputCapacity: Int
        let outputCapacity: Int

        var transportName: String { tls == nil ? "TCP" : "TLS" }
    }

    static let inFlight = 128
    static let timeoutNs: UInt64 = 10_000_000_000

    package let target: Target

    private struct Attempt {
        let index: Int
        let fd: Int32
        var tls: TLSOverSocket?
        var events = Int16(POLLOUT)
        let deadline: UInt64
        var handshaking: Bool { tls != nil }
    }

    /// Opens `count` connections; each result is the connection or why it could not open.
    package func open(_ count: Int) -> [Result<TurnStreamConnection, LoadError>] {
        var results = [Result<TurnStreamConnection, LoadError>?](repeating: nil, count: count)
        var attempts: [Attempt] = []
        var next = 0
        while next < count || !attempts.isEmpty {
            if interruptRequested.load(ordering: .relaxed) {
                for attempt in attempts { abandon(attempt) }
                attempts = []
                for i in results.indices where results[i] == nil { results[i] = .failure(LoadError("\(what): interrupted")) }
                break
            }
            while next < count && attempts.count < Self.inFlight {
                if let attempt = start(next, &results) { attempts.append(attempt) }
                next += 1
            }
            guard !attempts.isEmpty else { continue }
            let now = MonotonicClock.now()
            let nearest = attempts.map(\.deadline).min() ?? now
            let waitMs = Int32(min(100, nearest > now ? (nearest - now) / 1_000_000 + 1 : 0))
            var polls = attempts.map { pollfd(fd: $0.fd, events: $0.events, revents: 0) }
            SystemCall.ignoringFailure { Int(poll(&polls, nfds_t(polls.count), waitMs)) }
            let after = MonotonicClock.now()
            var still: [Attempt] = []
            for (attempt, p) in zip(attempts, polls) {
                if p.revents == 0 {
                    if after < attempt.deadline {
                        still.append(attempt)
                    } else {
                        abandon(attempt)
                        let step = attempt.handshaking ? "TLS handshake" : "connect"
                        results[attempt.index] = .failure(LoadError("\(what): \(step): no answer within \(Self.timeoutNs / 1_000_000_000) s"))
                    }
                    continue
                }
                if let advanced = advance(attempt, &results) { still.append(advanced) }
            }
            attempts = still
        }
        return results.map { $0 ?? .failure(LoadError("\(target.transportName) to \(target.server): not attempted")) }
    }

    /// Opens one connection (a client following a redirect), waiting for it.
    func openOne() -> Result<TurnStreamConnection, LoadError> { open(1)[0] }

    private var what: String { "TURN over \(target.transportName) to \(target.server)" }

    private func start(_ index: Int, _ results: inout [Result<TurnStreamConnection, LoadError>?]) -> Attempt? {
        let started: TCPConnect.Started
        do {
            started = try TCPConnect.start(to: target.server, noDelay: true)
        } catch {
            results[index] = .failure(LoadError("\(what): \(error.call): \(errnoText(error.code))\(advice(error.code))"))
            return nil
        }
        let attempt = Attempt(index: index, fd: started.fd, deadline: MonotonicClock.now() + Self.timeoutNs)
        return started.connected ? advance(attempt, &results, connectDone: true) : attempt
    }

    /// One step of a connection that polled ready: the connect's outcome, then the handshake.
    /// nil when it is done (opened or failed, in `results`).
    private func advance(_ attempt: Attempt, _ results: inout [Result<TurnStreamConnection, LoadError>?],
                         connectDone: Bool = false) -> Attempt? {
        var attempt = attempt
        if !attempt.handshaking {
            let code = connectDone ? 0 : TCPConnect.outcome(of: attempt.fd)
            guard code == 0 else {
                abandon(attempt)
                results[attempt.index] = .failure(LoadError("\(what): connect: \(errnoText(code))\(advice(code))"))
                return nil
            }
            guard let context = target.tls else {
                results[attempt.index] = .success(connection(attempt))
                return nil
            }
            do {
                attempt.tls = try TLSOverSocket(fd: attempt.fd, context: context, host: target.host)
            } catch {
                abandon(attempt)
                results[attempt.index] = .failure(error)
                return nil
            }
        }
        guard let tls = attempt.tls else { return nil }
        switch Self.handshake(tls) {
        case .opened:
            results[attempt.index] = .success(connection(attempt))
            return nil
        case .waiting(let events):
            attempt.events = events
            return attempt
        case .failed(let why):
            abandon(attempt)
            results[attempt.index] = .failure(LoadError("\(what): TLS handshake: \(why)"))
            return nil
        }
    }

    private enum Handshake { case opened, waiting(Int16), failed(String) }

    /// Moves a handshake on (its flights sent, the server's fed in) until it is done or waits
    /// on the socket.
    private static func handshake(_ tls: TLSOverSocket) -> Handshake {
        while true {
            let step = tls.session.handshake()
            if case .failed = step {
                _ = tls.flush()  // the alert, if the socket takes it now
                return .failed(tls.handshakeFailure)
            }
            switch tls.flush() {
            case .failed(let why): return .failed("send: \(why)")
            case .wouldBlock: return .waiting(Int16(POLLOUT))
            case .done: if step == .done { return .opened }
            }
            switch tls.fill() {
            case .fed: continue
            case .wouldBlock: return .waiting(Int16(POLLIN))
            case .closed: return .failed("the server closed the connection")
            case .failed(let why): return .failed("recv: \(why)")
            }
        }
    }

    private func connection(_ attempt: Attempt) -> TurnStreamConnection {
        TurnStreamConnection(fd: attempt.fd, tls: attempt.tls, server: target.server, host: target.host, context: target.tls,
                       inputCapacity: target.inputCapacity, outputCapacity: target.outputCapacity)
    }

    private func abandon(_ attempt: Attempt) {
        SystemCall.close(attempt.fd)
    }

    /// What a user can do about a failed connect.
    private func advice(_ code: Int32) -> String {
        switch code {
        case ECONNREFUSED: "; is a TURN server listening on \(target.transportName) there?"
        case EMFILE, ENFILE: "; too many open files: raise the limit (ulimit -n) or run fewer --streams"
        case EADDRNOTAVAIL: "; out of local ports toward the server: run fewer --streams"
        default: ""
        }
    }
}
