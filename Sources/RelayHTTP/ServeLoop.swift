#if canImport(Glibc)
import Glibc
#endif
import SystemSupport

/// The accept/serve loop of one `HTTPServer`: poll() over the listener, a wake pipe and every
/// connection, on a single thread.
///
/// Contract: `run()` returns after a byte arrives on the wake descriptor, having closed every
/// connection (not the listener or the wake pipe, which the server owns). Nothing a client
/// sends can block it: all sockets are non-blocking, output is buffered per connection, and
/// every connection always has a deadline (request head, request, idle, write or linger).
final class ServeLoop {
    private let listenFD: Int32
    private let wakeFD: Int32
    private let limits: HTTPLimits
    private let parser: HTTPRequestParser
    private let handler: @Sendable (HTTPRequest) -> HTTPResponse
    /// "GET /healthz " and "GET /healthz?" for each priority path: a buffered request starting
    /// with one of these is answered before the others of its turn.
    private let priorityPrefixes: [[UInt8]]
    private var connections: [Int32: Connection] = [:]
    private var servedCount = 0
    /// `servedCount` published for other threads (HTTPServer.servedConnections).
    private let served: ConnectionCount
    private var rejectedCount = 0
    /// While the process is out of descriptors the listener stays readable; pausing accept
    /// avoids spinning on EMFILE.
    private var acceptPausedUntil: UInt64 = 0
    private let readChunk: UnsafeMutableRawBufferPointer

    /// Stop reading pipelined requests while this much output waits, so a client that sends
    /// but never reads cannot grow our memory.
    private let outputBacklogLimit = 256 * 1024
    private let lingerDiscardLimit = 1024 * 1024

    init(
        listenFD: Int32, wakeFD: Int32, limits: HTTPLimits, priorityPaths: [String], served: ConnectionCount,
        handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse
    ) {
        self.listenFD = listenFD
        self.served = served
        self.priorityPrefixes = priorityPaths.flatMap { [Array("GET \($0) ".utf8), Array("GET \($0)?".utf8)] }
        self.wakeFD = wakeFD
        self.limits = limits
        self.parser = HTTPRequestParser(limits: limits)
        self.handler = handler
        self.readChunk = .allocate(byteCount: 16 * 1024, alignment: 16)
    }

    deinit {
        readChunk.deallocate()
    }

    func run() {
        var pollSet: [pollfd] = []
        while true {
            let now = MonotonicClock.now()
            pollSet.removeAll(keepingCapacity: true)
            pollSet.append(pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0))
            let accepting = now >= acceptPausedUntil
            pollSet.append(pollfd(fd: listenFD, events: accepting ? Int16(POLLIN) : 0, revents: 0))
            var earliest = accepting ? UInt64.max : acceptPausedUntil
            for connection in connections.values {
                var events: Int16 = 0
                if wantsRead(connection) { events |= Int16(POLLIN) }
                if connection.hasPendingOutput { events |= Int16(POLLOUT) }
                pollSet.append(pollfd(fd: connection.fd, events: events, revents: 0))
                earliest = min(earliest, deadline(connection))
            }
            let timeout: Int32 =
                earliest == .max ? -1 : Int32(clamping: (earliest &- min(earliest, now) + 999_999) / 1_000_000)
            do {
                _ = try SocketCall.poll(&pollSet, timeoutMilliseconds: timeout)
            } catch {
                // ENOMEM is the only error poll can meet with a valid set; wait and retry.
                usleep(10_000)
                continue
            }
            if pollSet[0].revents != 0 { break }
            var ready: [Connection] = []
            for entry in pollSet.dropFirst(2) where entry.revents != 0 {
                if let connection = connections[entry.fd], service(connection, events: entry.revents) {
                    ready.append(connection)
                }
            }
            // Health checks first: a probe must not wait behind API calls read in the same turn.
            for connection in ready where isPriority(connection) { process(connection) }
            for connection in ready where !connection.isClosed { process(connection) }
            // Accept after serving, so that connections closed in this turn free their slots.
            if pollSet[1].revents != 0 { acceptPending() }
            expireDeadlines(now: MonotonicClock.now())
            served.value.store(servedCount, ordering: .relaxed)
        }
        for connection in Array(connections.values) { close(connection) }
        served.value.store(servedCount, ordering: .relaxed)
    }

    private func wantsRead(_ connection: Connection) -> Bool {
        switch connection.phase {
        case .serving: connection.pendingOutput < outputBacklogLimit
        case .closingAfterWrite: false
        case .lingering: true
        }
    }

    private func deadline(_ connection: Connection) -> UInt64 {
        if connection.hasPendingOutput {
            return connection.lastWriteProgress + MonotonicClock.nanoseconds(limits.writeTimeout)
        }
        switch connection.phase {
        case .lingering:
            return connection.lingerUntil
        case .closingAfterWrite:
            return 0
        case .serving:
            if let started = connection.requestStartedAt {
                return started + MonotonicClock.nanoseconds(requestTimeout(connection))
            }
            return connection.idleSince + MonotonicClock.nanoseconds(limits.idleTimeout)
        }
    }

    private func acceptPending() {
        // A bounded number per turn: a flood of connects must not starve the connections
        // already being served; the rest wait in the backlog for the next turn.
        for _ in 0..<64 {
            let fd: Int32?
            do {
                fd = try SocketCall.accept(listenFD)
            } catch {
                acceptPausedUntil = MonotonicClock.now() + 100_000_000
                return
            }
            guard let fd else { return }
            let now = MonotonicClock.now()
            if servedCount >= limits.maxConnections, let victim = evictionCandidate() {
                close(victim)
            }
            if servedCount < limits.maxConnections {
                servedCount += 1
                let connection = Connection(fd: fd, rejected: false, now: now)
                connections[fd] = connection
                // A client's request usually arrives with its connection: answering it now
                // keeps it from being the oldest waiter when later newcomers evict one.
                if readOnce(connection) { process(connection) }
            } else if rejectedCount < limits.maxConnections {
                // Tell the client why, rather than leaving it to guess from a reset.
                rejectedCount += 1
                let connection = Connection(fd: fd, rejected: true, now: now)
                connections[fd] = connection
                respond(connection, .error(503, "too many connections (limit \(limits.maxConnections)); retry later"), closing: true)
                flush(connection)
            } else {
                SocketCall.close(fd)
            }
        }
    }

    /// The connection a newcomer at the cap replaces: the one that has waited longest on an
    /// incomplete request (so clients that trickle bytes, or send none, cannot hold the cap),
    /// else the one idle longest between requests (so neither can idle keep-alive ones); nil
    /// when every slot is busy answering. A connection lingering after its last response goes
    /// first: it has been answered, and a client that creates sessions one request per
    /// connection leaves many of them behind. Waiting clients go before idle ones because an
    /// idle connection has at least completed a request.
    private func evictionCandidate() -> Connection? {
        var lingering: Connection?
        var waiting: (connection: Connection, since: UInt64)?
        var idle: Connection?
        for connection in connections.values where !connection.rejected && !connection.hasPendingOutput {
            if connection.phase == .lingering {
                if lingering == nil || connection.lingerUntil < lingering!.lingerUntil { lingering = connection }
                continue
            }
            guard connection.phase == .serving else { continue }
            if let started = connection.requestStartedAt {
                if waiting == nil || started < waiting!.since { waiting = (connection, started) }
            } else if connection.inbound.isEmpty, idle == nil || connection.idleSince < idle!.idleSince {
                idle = connection
            }
        }
        return lingering ?? waiting?.connection ?? idle
    }

    /// The head must come within `headTimeout`; once it is parsed, the body has what is left of
    /// `readTimeout`.
    private func requestTimeout(_ connection: Connection) -> Double {
        connection.bytesNeeded > 0 ? limits.readTimeout : min(limits.headTimeout, limits.readTimeout)
    }

    private func isPriority(_ connection: Connection) -> Bool {
        !connection.isClosed && priorityPrefixes.contains { connection.inbound.starts(with: $0) }
    }

    /// Writes and reads what the events allow; true when buffered requests are to be answered
    /// (the caller does that, so it can answer health checks first).
    private func service(_ connection: Connection, events: Int16) -> Bool {
        if events & Int16(POLLNVAL | POLLERR) != 0 {
            close(connection)
            return false
        }
        var hasInput = false
        if events & Int16(POLLOUT) != 0 {
            flush(connection)
            if connection.isClosed { return false }
            hasInput = connection.phase == .serving && !connection.hasPendingOutput && !connection.inbound.isEmpty
        }
        if events & Int16(POLLIN) != 0 {
            hasInput = readOnce(connection) || hasInput
        } else if events & Int16(POLLHUP) != 0 {
            // Both directions are gone: nothing more can be read or written.
            close(connection)
        }
        return hasInput && !connection.isClosed
    }

    /// One read; true when the connection now holds input worth parsing.
    private func readOnce(_ connection: Connection) -> Bool {
        let result: IOResult
        do {
            result = try SocketCall.read(connection.fd, into: readChunk)
        } catch {
            close(connection)
            return false
        }
        switch result {
        case .wouldBlock:
            return false
        case .endOfFile:
            connection.peerFinishedSending = true
            if connection.phase != .lingering, connection.hasPendingOutput {
                connection.phase = .closingAfterWrite
            } else {
                close(connection)
            }
            return false
        case .processed(let count):
            if connection.phase == .lingering {
                connection.discardedWhileLingering += count
                if connection.discardedWhileLingering > lingerDiscardLimit { close(connection) }
                return false
            }
            guard connection.phase == .serving else { return false }
            if connection.requestStartedAt == nil { connection.requestStartedAt = MonotonicClock.now() }
            connection.inbound.append(contentsOf: UnsafeRawBufferPointer(rebasing: readChunk[0..<count]))
            // A body still arriving: wait for all of it rather than parse the head again.
            return connection.inbound.count >= connection.bytesNeeded
        }
    }

    /// Answers every complete buffered request, in order, until the input runs out, the
    /// connection is to close, or too much output is waiting.
    private func process(_ connection: Connection) {
        while true {
            var answered = false
            // Consumed bytes are dropped once per turn, not per request: removing from the
            // front of the buffer for each of many small pipelined requests would be quadratic.
            var consumedTotal = 0
            parsing: while connection.phase == .serving, connection.pendingOutput < outputBacklogLimit,
                consumedTotal < connection.inbound.count
            {
                connection.bytesNeeded = 0
                switch parser.parse(connection.inbound[consumedTotal...]) {
                case .incomplete:
                    break parsing
                case .awaitingBody(let total):
                    // Counted from this request's start, which is the buffer's front once the
                    // requests before it are dropped below.
                    connection.bytesNeeded = total
                    break parsing
                case .invalid(let status, let reason):
                    consumedTotal = connection.inbound.count
                    respond(connection, .error(status, reason), closing: true)
                case .complete(let request, let consumed):
                    consumedTotal += consumed
                    let response = handler(request)
                    respond(connection, response, closing: !request.wantsKeepAlive || response.asksToClose)
                    connection.requestStartedAt = consumedTotal == connection.inbound.count ? nil : MonotonicClock.now()
                    answered = true
                }
            }
            connection.inbound.removeFirst(consumedTotal)
            flush(connection)
            let canContinue = answered && !connection.isClosed && connection.phase == .serving
                && !connection.hasPendingOutput && !connection.inbound.isEmpty
            if !canContinue { return }
        }
    }

    private func respond(_ connection: Connection, _ response: HTTPResponse, closing: Bool) {
        connection.outbound.append(contentsOf: response.serialized(closing: closing))
        if closing { connection.phase = .closingAfterWrite }
    }

    private func flush(_ connection: Connection) {
        while connection.hasPendingOutput {
            let result: IOResult
            do {
                result = try connection.outbound.withUnsafeBytes { bytes throws(SystemCallError) in
                    try SocketCall.send(connection.fd, UnsafeRawBufferPointer(rebasing: bytes[connection.outboundSent...]))
                }
            } catch {
                close(connection)
                return
            }
            switch result {
            case .processed(let count):
                connection.outboundSent += count
                connection.lastWriteProgress = MonotonicClock.now()
            case .wouldBlock, .endOfFile:
                return
            }
        }
        // Drop a large buffer's memory once written; keep a small one for the next response.
        connection.outbound.removeAll(keepingCapacity: connection.outbound.count <= 16 * 1024)
        connection.outboundSent = 0
        let now = MonotonicClock.now()
        connection.idleSince = now
        if connection.phase == .closingAfterWrite {
            if connection.peerFinishedSending {
                close(connection)
            } else {
                SocketCall.shutdownWrite(connection.fd)
                connection.phase = .lingering
                connection.lingerUntil = now + MonotonicClock.nanoseconds(min(limits.readTimeout, 2))
            }
        }
    }

    private func expireDeadlines(now: UInt64) {
        for connection in Array(connections.values) where deadline(connection) <= now {
            if connection.hasPendingOutput {
                close(connection, abort: true)
            } else if connection.phase != .serving {
                close(connection)
            } else if connection.requestStartedAt != nil {
                connection.inbound.removeAll()
                let what = connection.bytesNeeded > 0 ? "request" : "request head"
                let seconds = requestTimeout(connection)
                connection.requestStartedAt = nil
                respond(connection, .error(408, "no complete \(what) within \(seconds) s"), closing: true)
                flush(connection)
            } else {
                close(connection)
            }
        }
    }

    private func close(_ connection: Connection, abort: Bool = false) {
        guard !connection.isClosed else { return }
        connection.isClosed = true
        connections[connection.fd] = nil
        if connection.rejected { rejectedCount -= 1 } else { servedCount -= 1 }
        if abort { SocketCall.abort(connection.fd) } else { SocketCall.close(connection.fd) }
    }
}
