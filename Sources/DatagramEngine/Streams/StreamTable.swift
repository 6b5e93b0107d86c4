import Glibc
import CURing
import SystemSupport

/// The engine's streams (accepted TCP connections), by index `0 ..< streamLimit`, and what
/// both backends share about them: their buffers' cursors, their phase (`StreamPhase`, changed
/// only by `move`), their deadlines, what they still have to report, and the work lists the
/// backend drains each turn. What a backend alone needs per stream (epoll's interest, io_uring's
/// operations in flight) it keeps itself. Everything is sized once, when the engine starts:
/// lists hold each index at most once (a flag per list), so they never grow.
///
/// A stream's socket table entry stays active until its release, the turn after its `closed`
/// event, so the owner's identifier keeps working (writes are refused) until the owner has seen
/// `closed`.
final class StreamTable {
    /// What a stream has to report, as bits of `State.reports`, in the order they are said.
    enum Report {
        static let accepted: UInt8 = 1
        static let data: UInt8 = 2
        static let writable: UInt8 = 4
        static let closed: UInt8 = 8
    }

    struct State {
        var socket = SocketID(slot: -1, generation: 0)
        var descriptor: Int32 = -1
        var listener = SocketID(slot: -1, generation: 0)
        var phase = StreamPhase.free
        var cursors = StreamCursors()
        var reason = StreamCloseReason.byOwner
        var reports: UInt8 = 0
        /// A `writable` is due once the pending output is at most this many bytes (after a
        /// refused write, or as the owner asked); -1 for none.
        var writableAtMost: Int32 = -1
        /// In the ready, service and send lists.
        var inReadyList = false
        var inServiceList = false
        var inSendList = false
    }

    unowned(unsafe) let state: EngineState  // its owner, which outlives it
    let buffers: StreamBuffers
    /// How many streams there can be: the indices are `0 ..< limit`.
    let limit: Int
    private let states: UnsafeMutablePointer<State>
    private var freeIndices: [Int32]
    /// Streams with something to report, oldest first.
    private var readyList: [Int32] = []
    /// Streams the backend must look at before it waits: arm a receive or change what epoll
    /// watches, stop their I/O for a close.
    private(set) var serviceList: [Int32] = []
    /// Streams with output the next flush should start sending.
    private(set) var sendList: [Int32] = []
    /// Streams whose `closed` was reported this turn, released when the next begins.
    private var releaseList: [Int32] = []
    private let deadlines: StreamDeadlines
    /// Called after every phase change with the stream, the phase it left and the event; nil
    /// in production. For tests that follow streams through their phases on a real backend.
    var transitionObserver: ((Int, StreamPhase, StreamPhase.Event) -> Void)?
    /// Listeners out of descriptors or memory, or waiting for a free index, resumed by the
    /// backend when their pause ends.
    let pausedListeners = PausedListeners()
    /// Connections accepted while no index was free, adopted first as indices come back.
    private let held = HeldConnections()
    private(set) var count = 0

    init(state: EngineState, buffers: StreamBuffers) {
        let configuration = state.configuration
        precondition(configuration.streamHighWater <= configuration.streamOutputBytes && configuration.streamLowWater <= configuration.streamHighWater)
        self.state = state
        limit = configuration.streamLimit
        self.buffers = buffers
        states = .allocate(capacity: limit)
        states.initialize(repeating: State(), count: limit)
        freeIndices = (0..<Int32(limit)).reversed()
        deadlines = StreamDeadlines(limit: limit)
        // Each list holds an index at most once: with room for all, appending never allocates.
        readyList.reserveCapacity(limit)
        serviceList.reserveCapacity(limit)
        sendList.reserveCapacity(limit)
        releaseList.reserveCapacity(limit)
    }

    deinit { states.deallocate() }

    /// A stream's state, read only: its phase changes by `move`, the rest by the calls below.
    subscript(index: Int) -> State { states[index] }

    /// The one way a stream's phase changes. An event its phase does not allow is a bug in the
    /// engine: a precondition failure in debug builds, ignored (the phase kept) in release.
    func move(_ index: Int, _ event: StreamPhase.Event) {
        let from = states[index].phase
        guard let next = from.after(event) else {
            assertionFailure("stream \(index): \(event) is not allowed while \(from)")
            return
        }
        states[index].phase = next
        transitionObserver?(index, from, event)
    }

    /// The stream `id` names, while its socket table entry is active.
    func index(of id: SocketID) -> Int? {
        guard let entry = state.table.entry(id), entry.kind == .stream else { return nil }
        return Int(entry.stream)
    }

    // MARK: accept

    /// Whether a connection accepted now would get a stream. A backend stops accepting while
    /// none is free (`PausedListeners.waitForIndex`), so connections wait in the backlog.
    var hasFreeIndex: Bool { !freeIndices.isEmpty }

    /// Takes a connection the kernel accepted on `listener`. Returns its stream index, or nil
    /// when it waits for one (io_uring's accepts completed before the backend stopped them
    /// are held, and adopted as indices come back) or was refused: too many held already (it
    /// is reset at once, so the client learns it now), or already gone. The backend starts
    /// watching it in its service pass.
    @discardableResult
    func adopt(_ descriptor: consuming Descriptor, listener: SocketID) -> Int? {
        let fd = descriptor.rawValue
        guard let free = freeIndices.popLast() else {
            if !held.isFull {
                held.keep(descriptor, listener: listener)
                return nil
            }
            state.counters.streamsRefused &+= 1
            TCPConnection.reset(descriptor)
            return nil
        }
        guard let peer = SocketNames.peer(of: fd), let local = SocketNames.local(of: fd) else {
            freeIndices.append(free)
            state.counters.streamsRefused &+= 1
            return nil
        }
        TCPConnection.setUp(fd, sendBufferBytes: state.configuration.streamSendBufferBytes,
                            receiveBufferBytes: state.configuration.streamReceiveBufferBytes)
        let index = Int(free)
        let id = state.table.add(TCPConnection(descriptor, peer: peer, local: local), stream: free)
        states[index] = State(socket: id, descriptor: fd, listener: listener)
        move(index, .accept)
        count += 1
        state.counters.streamsAccepted &+= 1
        report(index, Report.accepted)
        service(index)
        return index
    }

    // MARK: the owner's calls

    func input(_ index: Int) -> UnsafeRawBufferPointer { buffers.input(index, states[index].cursors) }

    /// The owner took `bytes` from the front of the input. A full input the engine had stopped
    /// reading has room again: the backend resumes reading in its next service pass.
    func consume(_ index: Int, _ bytes: Int) {
        precondition(bytes >= 0 && bytes <= states[index].cursors.inputCount, "consumed more than the stream's input holds")
        let wasFull = states[index].cursors.inputCount == buffers.inputCapacity
        states[index].cursors.consumed(bytes)
        if wasFull && bytes > 0 { service(index) }
    }

    /// Copies `bytes` into the output ring, whole or not at all: false (counted) when they
    /// would leave more than `limit` (at most the high water mark) pending, or when the stream
    /// is closing.
    func write(_ index: Int, _ bytes: UnsafeRawBufferPointer, limit: Int) -> Bool {
        guard states[index].phase == .open, Int(states[index].cursors.outputCount) + bytes.count <= limit else {
            states[index].writableAtMost = max(states[index].writableAtMost, Int32(state.configuration.streamLowWater - 1))
            state.counters.streamWritesRefused &+= 1
            return false
        }
        buffers.append(index, &states[index].cursors, bytes)
        sendAgain(index)
        return true
    }

    /// The owner wants a `writable` event once at most `bytes` are pending (at the next
    /// report when that is so already).
    func notifyWritable(_ index: Int, pendingAtMost bytes: Int) {
        guard states[index].phase == .open else { return }
        states[index].writableAtMost = max(states[index].writableAtMost, Int32(clamping: bytes))
        writableIfDue(index)
    }

    /// The owner closes the stream. Keeping the output, the stream drains first (no more
    /// reading; bounded by its deadline, or the linger time when it has none); discarding it,
    /// the stream closes at once. Either way its `closed` event comes in a later turn. Only an
    /// open stream may be closed (the engine's API ignores an owner's second close).
    func close(_ index: Int, keepingOutput: Bool) {
        if keepingOutput && states[index].cursors.outputCount > 0 {
            move(index, .drain)
            let linger = MonotonicClock.now() &+ UInt64(state.configuration.closeLingerMilliseconds) &* 1_000_000
            deadlines.set(index, min(deadlines.deadline(of: index), linger))
            service(index)
        } else {
            beginClosing(index, .byOwner)
        }
    }

    /// Sets the stream's deadline (`.max` for none). Only a live stream has one: a closing
    /// stream's deadline would close it twice, so the owner's is ignored there.
    func setDeadline(_ index: Int, _ deadline: UInt64) {
        guard states[index].phase.isLive else { return }
        deadlines.set(index, deadline)
    }

    // MARK: what the backends do and report

    /// The free space after the stream's input, for the next read (see `StreamBuffers`).
    func receiveSpace(_ index: Int) -> UnsafeMutableRawBufferPointer { buffers.receiveSpace(index, &states[index].cursors) }

    /// The oldest pending output, contiguous, for the next send.
    func pendingChunk(_ index: Int) -> UnsafeRawBufferPointer { buffers.pendingChunk(index, states[index].cursors) }

    var inputCapacity: Int { buffers.inputCapacity }

    /// Queues the stream for the next flush again (a send the kernel answered with EAGAIN).
    func sendAgain(_ index: Int) {
        if !states[index].inSendList {
            states[index].inSendList = true
            sendList.append(Int32(index))
        }
    }

    /// `bytes` arrived in the free space `receiveSpace` gave.
    func received(_ index: Int, _ bytes: Int) {
        states[index].cursors.received(bytes)
        state.counters.streamBytesIn &+= UInt64(bytes)
        report(index, Report.data)
    }

    /// The kernel took `bytes` from the front of the output. A stream below the low water mark
    /// after a refusal (or at what its owner asked for) is reported writable; a draining one
    /// that is empty now closes.
    func sent(_ index: Int, _ bytes: Int) {
        state.counters.streamBytesOut &+= UInt64(bytes)
        // A send (io_uring's) that completed after the stream began closing: its output is
        // dropped already, and the cursors must not go below empty.
        guard states[index].phase.isLive else { return }
        states[index].cursors.sent(bytes, capacity: buffers.outputCapacity)
        writableIfDue(index)
        if states[index].cursors.outputCount == 0 && states[index].phase == .draining { beginClosing(index, .byOwner) }
    }

    private func writableIfDue(_ index: Int) {
        let due = states[index].writableAtMost
        if due >= 0 && states[index].cursors.outputCount <= due && states[index].phase == .open {
            states[index].writableAtMost = -1
            report(index, Report.writable)
        }
    }

    /// The connection ended or must end: no more reading or sending. Pending output is dropped
    /// (an owner who wanted it sent closed with `keepingOutput`, and it is sent by now or its
    /// deadline passed). The backend stops what is in flight and then calls `finish`. Only a
    /// live stream (`StreamPhase.isLive`) may begin closing: a backend that learns of an end
    /// while the stream is closing already (a completion racing its cancellation) checks first.
    func beginClosing(_ index: Int, _ reason: StreamCloseReason) {
        move(index, .close)
        states[index].reason = reason
        states[index].cursors.outputCount = 0
        deadlines.set(index, .max)
        service(index)
    }

    /// Nothing is in flight for a closing stream any more: report it closed.
    func finish(_ index: Int) {
        move(index, .finish)
        state.counters.streamsClosed &+= 1
        report(index, Report.closed)
    }

    /// The reason for a failed receive or send of a stream.
    static func reason(_ code: Int32) -> StreamCloseReason {
        code == ENOBUFS || code == ENOMEM ? .limit : .reset
    }

    // MARK: the turn

    /// Releases the streams whose `closed` was reported last turn (their descriptors close
    /// now, their buffers' pages go back to the kernel), gives the indices to held connections
    /// first and then to the listeners waiting for one, and closes the streams whose deadline
    /// has passed.
    func beginTurn() {
        for index in releaseList {
            let slot = Int(states[Int(index)].socket.slot)
            state.table.release(slot)
            buffers.release(Int(index))
            state.counters.syscalls &+= 1
            move(Int(index), .release)
            states[Int(index)] = State()
            freeIndices.append(index)
            count -= 1
        }
        releaseList.removeAll(keepingCapacity: true)
        held.handOver(while: { hasFreeIndex }, to: { adopt($0, listener: $1) })
        if held.isEmpty && hasFreeIndex { pausedListeners.indexFreed() }
        guard deadlines.count > 0 else { return }
        let now = MonotonicClock.now()
        // Only live streams have deadlines (closing takes a stream's away).
        while let index = deadlines.popDue(now: now) { beginClosing(index, .timeout) }
    }

    /// How long the turn may wait: not at all when events are left to say, and not past the
    /// nearest deadline or the end of a listener's pause.
    func waitLimit(_ milliseconds: Int32) -> Int32 {
        if !readyList.isEmpty { return 0 }
        let nearest = min(deadlines.earliest, pausedListeners.earliest)
        guard nearest != .max else { return milliseconds }
        let now = MonotonicClock.now()
        guard nearest > now else { return 0 }
        let until = (nearest - now + 999_999) / 1_000_000
        return milliseconds < 0 ? Int32(clamping: until) : min(milliseconds, Int32(clamping: until))
    }

    var hasReports: Bool { !readyList.isEmpty }

    /// Hands the service list to `body`, one stream at a time, and empties it. A stream
    /// queued again while `body` runs stays for the next pass.
    func takeService(_ body: (Int) -> Void) {
        let taken = serviceList.count
        for position in 0..<taken {
            let index = Int(serviceList[position])
            states[index].inServiceList = false
            body(index)
        }
        serviceList.removeFirst(taken)
    }

    /// Hands the send list to `body` and empties it (a flush).
    func takeSends(_ body: (Int) -> Void) {
        let taken = sendList.count
        for position in 0..<taken {
            let index = Int(sendList[position])
            states[index].inSendList = false
            body(index)
        }
        sendList.removeFirst(taken)
    }

    /// Turns what the streams have to report into this turn's events, oldest first, up to the
    /// list's capacity and `acceptsPerTurn` accepted events; the rest stays for the next turn.
    /// A stream's `accepted` is its only event in that turn, so that its next ones carry the
    /// tag its owner gives it on taking the `accepted`.
    func makeEvents(_ events: StreamEvents) {
        var accepts = state.configuration.acceptsPerTurn
        var kept = 0
        for position in 0..<readyList.count {
            let index = Int(readyList[position])
            var stream = states[index]
            if !events.isFull && (stream.reports & Report.accepted == 0 || accepts > 0) {
                say(index, &stream, events, accepts: &accepts)
                states[index].reports = stream.reports
            }
            if states[index].reports == 0 {
                states[index].inReadyList = false
            } else {
                readyList[kept] = Int32(index)
                kept += 1
            }
        }
        readyList.removeLast(readyList.count - kept)
    }

    private func say(_ index: Int, _ stream: inout State, _ events: StreamEvents, accepts: inout Int) {
        let slot = Int(stream.socket.slot)
        if stream.reports & Report.accepted != 0 {
            guard let connection = state.table.connection(slot) else {
                // Its socket went before this was said (reset at once, say): nothing to
                // announce. Left set, the report kept the stream in the ready list for ever,
                // and the worker, never out of reports, turned without waiting (seen with
                // 2,000 TURN clients connecting at once).
                stream.reports &= ~Report.accepted
                return
            }
            let listenerOwner = state.table.entry(stream.listener)?.owner ?? .unowned
            stream.reports &= ~Report.accepted
            if listenerOwner == .unowned {
                // Its listener was closed or disowned before this was said: nobody will take
                // the connection, so it goes now rather than wait for its peer (unreported).
                states[index].reports = stream.reports
                // It may have ended meanwhile (its peer gone), and closes by itself then.
                if stream.phase.isLive {
                    beginClosing(index, .byOwner)
                    stream = states[index]
                }
                return
            }
            events.append(StreamEvent(owner: listenerOwner, stream: stream.socket,
                                      kind: .accepted(listener: stream.listener, peer: connection.peer, local: connection.local)))
            accepts -= 1
            return
        }
        let owner = state.table[slot].owner
        if stream.reports & Report.data != 0 && !events.isFull {
            if stream.cursors.inputCount > 0 {
                events.append(StreamEvent(owner: owner, stream: stream.socket, kind: .data(available: stream.cursors.inputCount)))
            }
            stream.reports &= ~Report.data
        }
        if stream.reports & Report.writable != 0 && !events.isFull {
            if stream.phase == .open { events.append(StreamEvent(owner: owner, stream: stream.socket, kind: .writable)) }
            stream.reports &= ~Report.writable
        }
        if stream.reports & Report.closed != 0 && !events.isFull {
            events.append(StreamEvent(owner: owner, stream: stream.socket, kind: .closed(stream.reason)))
            stream.reports &= ~Report.closed
            releaseList.append(Int32(index))
        }
    }

    private func report(_ index: Int, _ what: UInt8) {
        states[index].reports |= what
        if !states[index].inReadyList {
            states[index].inReadyList = true
            readyList.append(Int32(index))
        }
    }

    /// Asks the backend to look at the stream before its next wait.
    func service(_ index: Int) {
        if !states[index].inServiceList {
            states[index].inServiceList = true
            serviceList.append(Int32(index))
        }
    }
}
