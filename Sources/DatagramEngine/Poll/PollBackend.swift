import Glibc
import CURing
import SystemSupport

/// The perPacket and mmsg backends: epoll says which sockets are ready, then recvmsg per
/// datagram or recvmmsg per socket; sendmsg per message or sendmmsg per run of one socket.
/// Both use the same vectors and metadata handling: only the system calls differ. Listeners
/// and streams are `PollStreams`', dispatched to it by the socket's kind.
final class PollBackend {
    private let state: EngineState
    private let batched: Bool
    private let poller: EventPoller
    private let vectors: ReceiveVectors
    private let waker: EngineWaker
    /// Listeners and streams; nil when the configuration keeps streams off.
    private let streams: PollStreams?
    /// Receive slots the last turn used: only those need `prepare` again.
    @exclusivity(unchecked) private var slotsUsed = 0

    /// `batched`: recvmmsg / sendmmsg (mmsg) rather than one call per datagram (perPacket).
    init(state: EngineState, batched: Bool, waker: EngineWaker) throws(SystemCallError) {
        self.state = state
        self.batched = batched
        self.waker = waker
        let configuration = state.configuration
        // A UDP GRO buffer may hold up to 64 KiB; without GRO one datagram is the most.
        vectors = ReceiveVectors(capacity: configuration.batchSize,
                                 payloadSize: state.groActive ? EngineState.groBufferSize : configuration.maxDatagramSize)
        let poller = try EventPoller(capacity: max(64, configuration.batchSize))
        try poller.add(waker.descriptor, tag: EventPoller.wakeTag)
        self.poller = poller
        streams = state.streams.map { PollStreams(state: state, streams: $0, poller: poller) }
    }

    func register(_ id: SocketID, descriptor: Int32) throws(SystemCallError) {
        try poller.add(descriptor, tag: EventPoller.tag(id))
    }

    func unregister(_ ids: [SocketID]) {
        for id in ids {
            guard let slot = state.table.lookup(id) else { continue }
            poller.remove(state.table[slot].descriptor)
            state.table.release(slot)
        }
    }

    // MARK: receive

    func receive(timeoutMilliseconds: Int32) {
        vectors.prepare(0..<slotsUsed)
        var timeout = timeoutMilliseconds
        if let streams, let table = state.streams {
            streams.service()
            timeout = table.waitLimit(timeout)
        }
        let ready = poller.wait(timeout: timeout)
        state.counters.syscalls &+= 1
        var used = 0
        for event in 0..<ready {
            let tag = poller.tag(event)
            if tag == EventPoller.wakeTag {
                waker.drain()
                state.counters.syscalls &+= 1
                state.wasWoken = true
                continue
            }
            let id = EventPoller.socket(tag)
            // The socket's one lookup this turn: its descriptor and owner serve all its datagrams.
            guard let slot = state.table.lookup(id) else { continue }
            let entry = state.table[slot]
            guard entry.kind == .datagram else {
                if entry.kind == .listener {
                    streams?.accept(on: id, descriptor: entry.descriptor)
                } else {
                    streams?.handle(Int(entry.stream), events: poller.flags(event))
                }
                continue
            }
            guard used < vectors.capacity else { continue }
            let from = Source(id: id, slot: slot, owner: entry.owner)
            used = batched ? receiveMany(entry.descriptor, from, used: used) : receiveEach(entry.descriptor, from, used: used)
        }
        slotsUsed = used
        if let streams, let table = state.streams {
            streams.service()
            table.makeEvents(state.streamEvents)
        }
    }

    /// Sends the streams' new output (the datagrams are `send`'s).
    func flushStreams() { streams?.flush() }

    /// The socket a receive reads, as its datagrams are recorded.
    private struct Source {
        var id: SocketID
        var slot: Int
        var owner: OwnerTag
    }

    /// One recvmmsg: whatever is queued, up to the free slots, without waiting for more.
    private func receiveMany(_ descriptor: Int32, _ from: Source, used: Int) -> Int {
        let room = vectors.capacity - used
        // MSG_TRUNC: a datagram longer than its buffer reports its real length.
        let flags = mr_msg_waitforone() | Int32(MSG_DONTWAIT) | Int32(MSG_TRUNC)
        let outcome = SystemCall.ownOutcome("recvmmsg") { Int(mr_recvmmsg(descriptor, vectors.headers(from: used), UInt32(room), flags)) }
        state.counters.syscalls &+= 1
        guard case .done(let count) = outcome, count > 0 else { return used }
        state.counters.noteBatch(count)
        for index in used..<(used + count) { deliver(index, from) }
        return used + count
    }

    /// recvmsg until the socket is empty or the slots are full.
    private func receiveEach(_ descriptor: Int32, _ from: Source, used start: Int) -> Int {
        var used = start
        while used < vectors.capacity {
            let outcome = SystemCall.ownOutcome("recvmsg") { recvmsg(descriptor, vectors.header(at: used), Int32(MSG_DONTWAIT) | Int32(MSG_TRUNC)) }
            state.counters.syscalls &+= 1
            guard case .done(let length) = outcome else { break }
            vectors.setLength(length, at: used)
            state.counters.noteBatch(1)
            deliver(used, from)
            used += 1
        }
        return used
    }

    @inline(__always)
    private func deliver(_ index: Int, _ from: Source) {
        let datagram = vectors.datagram(at: index)
        _ = state.deliver(socket: from.id, slot: from.slot, owner: from.owner, source: datagram.source, metadata: datagram.metadata,
                          truncated: datagram.truncated, size: datagram.size, payload: datagram.payload)
    }

    // MARK: send

    func send() {
        if batched { sendRuns() } else { sendEach() }
    }

    private func sendEach() {
        let vectors = state.sendVectors
        for index in 0..<vectors.count {
            let descriptor = vectors.message(index).descriptor
            state.counters.syscalls &+= 1
            switch SystemCall.ownOutcome("sendmsg", { sendmsg(descriptor, vectors.header(at: index), 0) }) {
            case .done: state.sent(index)
            case .wouldBlock: state.refused(index, errno: EAGAIN)
            case .failed(let code): state.refused(index, errno: code)
            }
        }
    }

    /// One sendmmsg per run of messages for one socket, repeated until the run is sent.
    private func sendRuns() {
        let vectors = state.sendVectors
        var start = 0
        let total = vectors.count
        while start < total {
            let slot = vectors.message(start).slot
            var end = start + 1
            while end < total && vectors.message(end).slot == slot { end += 1 }
            let descriptor = vectors.message(start).descriptor
            var next = start
            while next < end {
                state.counters.syscalls &+= 1
                let outcome = SystemCall.ownOutcome("sendmmsg") { Int(mr_sendmmsg(descriptor, vectors.headers(from: next), UInt32(end - next), 0)) }
                switch outcome {
                case .done(let sent) where sent > 0:
                    for index in next..<(next + sent) { state.sent(index) }
                    next += sent
                case .done:
                    // Only an empty vector gives 0; never spin on it.
                    state.refused(next..<end, errno: EAGAIN)
                    next = end
                case .wouldBlock, .failed(ENOBUFS):
                    // The socket's buffer is full: the rest of the run would fail the same way,
                    // one system call each. Count them all and move on.
                    state.refused(next..<end, errno: outcome == .wouldBlock ? EAGAIN : ENOBUFS)
                    next = end
                case .failed(let code):
                    // sendmmsg reports the error of the first message it could not send.
                    state.refused(next, errno: code)
                    next += 1
                }
            }
            start = end
        }
    }
}
