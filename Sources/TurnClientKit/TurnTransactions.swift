import ClientSockets
import Glibc
import CLoadGen
import STUN
import SystemSupport

/// Runs one STUN transaction for each of many TURN clients at once (RFC 8489 section 6.2.1
/// over UDP, 6.2.2 over TCP and TLS): a bounded number in flight, retransmissions with a
/// doubling timeout over UDP (a stream is reliable: a request goes once, and the client waits
/// as long as a UDP client would retransmit; a failed connection ends its wait), and the
/// long-term credential dance (a 401 or 438 teaches the client the realm and a fresh nonce,
/// and the request goes again, signed), and one 300 Try Alternate followed for an Allocate (the
/// request starts over at the ALTERNATE-SERVER). Control path: set-up, refreshes and release.
struct TurnTransactions {
    /// Where the answers come from.
    enum Answers {
        /// Read from the clients' sockets (nobody else reads them then).
        case sockets
        /// Handed over by the receiving thread, which owns the sockets during the run.
        case inbox(ControlInbox)
    }

    /// Loopback and LAN answers come in well under this; the doubling (250, 500, 1000, 2000,
    /// 2000, 2000 ms) still gives a lossy path close to 8 s before a transaction is given up.
    static let firstTimeoutNs: UInt64 = 250_000_000
    static let maxTimeoutNs: UInt64 = 2_000_000_000
    package static let attempts = 6
    /// Transactions in flight at once: thousands of Allocates in one burst would overflow the
    /// server's socket buffer and turn into retransmissions.
    static let inFlight = 128
    /// Signed retries after a 401 or 438 (the first 401 is expected; a second means stale).
    static let challengeRetries = 3

    package let answers: Answers
    /// Stop starting new transactions on Ctrl-C (set-up); release ignores it.
    let interruptible: Bool

    private struct Pending {
        var client: Int
        var bytes: [UInt8]
        var attempt = 0
        var due: UInt64 = 0
        var challenges = 0
    }

    /// Sends `method` from every client in `clients` (with `attributes` for each) and returns
    /// each client's final answer: a success or error response, or nil when none came.
    package func run(_ clients: [TurnAllocationClient], _ method: Method,
             _ attributes: (TurnAllocationClient, inout MessageBuilder) -> Void) -> [StunMessage?] {
        var results = [StunMessage?](repeating: nil, count: clients.count)
        var byFD: [Int32: Int] = [:]
        for (i, client) in clients.enumerated() { byFD[client.fd] = i }
        var pending: [TransactionID: Pending] = [:]
        var next = 0
        func start(_ client: Int, challenges: Int) {
            let builder = clients[client].request(method) { attributes(clients[client], &$0) }
            pending[builder.transactionID] = Pending(client: client, bytes: builder.bytes, challenges: challenges)
        }
        while next < clients.count || !pending.isEmpty {
            if interruptible && interruptRequested.load(ordering: .relaxed) { break }
            while next < clients.count && pending.count < Self.inFlight {
                start(next, challenges: 0)
                next += 1
            }
            let now = MonotonicClock.now()
            var wakeAt = now + 20_000_000
            for (id, entry) in pending {
                let client = clients[entry.client]
                if client.hasFailed {
                    pending[id] = nil
                    continue
                }
                guard entry.due <= now else { continue }
                guard entry.attempt < Self.attempts else {
                    pending[id] = nil
                    continue
                }
                if entry.attempt == 0 || client.connection == nil { client.send(entry.bytes) }
                let timeout = min(Self.firstTimeoutNs << UInt64(entry.attempt), Self.maxTimeoutNs)
                pending[id]?.attempt += 1
                pending[id]?.due = now + timeout
            }
            for entry in pending.values { wakeAt = min(wakeAt, entry.due) }
            for (fd, bytes) in receive(pending.values.map { clients[$0.client] }, until: wakeAt) {
                guard let message = try? StunMessage(bytes: bytes), let entry = pending[message.transactionID],
                      byFD[fd] == entry.client, message.method == method else { continue }
                let client = clients[entry.client]
                switch message.messageClass {
                case .errorResponse:
                    let code = message.errorCode?.code
                    if code == 401 || code == 438, entry.challenges < Self.challengeRetries, client.learn(challenge: message) {
                        pending[message.transactionID] = nil
                        start(entry.client, challenges: entry.challenges + 1)
                        continue
                    }
                    // A signed client trusts a redirect only when it is signed with its key too:
                    // anyone could forge an unsigned one and steer the client anywhere.
                    if code == 300, method == .allocate, let key = client.key, message.integrity(key: key) == .valid,
                       let alternate = message.alternateServer, client.redirect(to: alternate) {
                        byFD[client.fd] = entry.client  // a client over a stream has a new connection
                        pending[message.transactionID] = nil
                        start(entry.client, challenges: 0)
                        continue
                    }
                case .successResponse:
                    // A signed client accepts only answers signed with its key (RFC 8489 9.2.3).
                    if let key = client.key, message.integrity(key: key) != .valid { continue }
                default:
                    continue
                }
                results[entry.client] = message
                pending[message.transactionID] = nil
            }
        }
        return results
    }

    /// The answers that arrive before `until` (at least one wait of up to that long).
    private func receive(_ clients: [TurnAllocationClient], until: UInt64) -> [(fd: Int32, bytes: [UInt8])] {
        let now = MonotonicClock.now()
        let waitMs = Int32(until > now ? (until - now) / 1_000_000 : 0)
        switch answers {
        case .inbox(let inbox):
            let waiting = inbox.take()
            if !waiting.isEmpty { return waiting }
            MonotonicClock.sleep(until: now + UInt64(min(waitMs, 10)) * 1_000_000)
            return inbox.take()
        case .sockets:
            var links: [Int32: TurnLink] = [:]
            for client in clients { links[client.fd] = client.link }
            var polls = links.keys.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            guard case .done(let ready) = SystemCall.outcome({ Int(poll(&polls, nfds_t(polls.count), waitMs)) }), ready > 0 else {
                return []
            }
            var received: [(fd: Int32, bytes: [UInt8])] = []
            var buffer = [UInt8](repeating: 0, count: 2048)
            for p in polls where p.revents != 0 {
                switch links[p.fd] {
                case .datagram?:
                    // Until the socket is empty (or fails: an ICMP error queued on it, say).
                    while case .done(let n) = SystemCall.outcome({
                        buffer.withUnsafeMutableBytes { recv(p.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                    }) {
                        received.append((p.fd, Array(buffer[0..<n])))
                    }
                case .stream(let connection)?:
                    // Data that arrives meanwhile (a late echo while releasing) is not an answer.
                    _ = connection.receive { frame in
                        if case .stun(let bytes) = frame { received.append((p.fd, Array(bytes))) }
                    }
                case nil:
                    continue
                }
            }
            return received
        }
    }
}
