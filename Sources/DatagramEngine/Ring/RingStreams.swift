import Glibc
import CURing
import SystemSupport

/// Streams and listeners on io_uring. A listener has one multishot accept; a stream has at
/// most one receive in flight (into its input's free space, at most the read budget, armed
/// again once per turn, and not at all while its input is full: backpressure) and at most one
/// send (of its oldest output, started at flush or as the previous send completes). Their
/// completions are handled whenever they are reaped, in a turn or while a flush waits for its
/// datagram sends, and never kept for later or waited for: a client that does not read holds
/// only its own send. A closing stream's operations are cancelled, and it is reported closed
/// when the last of them has completed, so its buffers and descriptor are never released under
/// the kernel's feet.
final class RingStreams {
    /// A stream's operations in the ring: this backend's own part of a stream's state. The
    /// kernel holds a buffer of the stream while its receive or send is in flight, so the
    /// stream is finished (and later released) only when neither is.
    struct Flight {
        var receiveInFlight = false
        var sendInFlight = false
        /// Its cancellation was asked for (the receive's when draining, both when closing).
        var receiveCancelled = false
        var sendCancelled = false
        /// Closing, with cancellations asked for and not all completed (`awaitingCancellations`).
        var closingInFlight = false

        var isEmpty: Bool { !receiveInFlight && !sendInFlight }
    }

    private let state: EngineState
    private let streams: StreamTable
    private let ring: Ring
    private let readBudget: Int
    /// Listeners whose multishot accept must be armed (new, or ended), by the next arming pass.
    /// (Internal for closing: a listener still waiting here has nothing in flight to cancel.)
    var toArm: [(slot: Int, generation: UInt32, descriptor: Int32)] = []
    /// Listeners with a multishot accept in flight, and those of them whose cancellation was
    /// asked for (every stream index taken), by slot and generation: a listener is armed again
    /// only once its last accept has completed, so it never has two.
    private var armed = Set<RingTag>()
    private var stopping = Set<RingTag>()
    /// By stream index; back to `Flight()` when the stream is finished.
    private let flights: UnsafeMutablePointer<Flight>
    /// Closing streams still waiting for their operations' last completions. While there are
    /// any, each turn ends with an io_uring_enter that runs the kernel's deferred work
    /// (DEFER_TASKRUN), where their cancellations complete: a busy turn (completions waiting,
    /// so it does not wait) would otherwise only submit, and a closing stream would keep its
    /// index for several turns more.
    private(set) var awaitingCancellations = 0

    init(state: EngineState, streams: StreamTable, ring: Ring) {
        self.state = state
        self.streams = streams
        self.ring = ring
        readBudget = state.configuration.streamReadBudget
        flights = .allocate(capacity: max(streams.limit, 1))
        flights.initialize(repeating: Flight(), count: max(streams.limit, 1))
        ring.lend(streams.buffers)
    }

    deinit { flights.deallocate() }

    /// Handles a completion of a listener's or a stream's operation; false for any other kind.
    func handle(_ completion: RingCompletion) -> Bool {
        switch completion.tag.kind {
        case .accept: accepted(completion)
        case .streamReceive: received(completion)
        case .streamSend: sent(completion)
        case .streamCancel: break
        default: return false
        }
        return true
    }

    func register(listener id: SocketID, descriptor: Int32) {
        toArm.append((Int(id.slot), id.generation, descriptor))
    }

    /// Arms the accepts waiting in `toArm`, then services the streams (`service`).
    func arm() {
        streams.pausedListeners.takeDue { listener in
            guard let entry = state.table.entry(listener), entry.kind == .listener else { return }
            toArm.append((Int(listener.slot), listener.generation, entry.descriptor))
        }
        for (slot, generation, descriptor) in toArm {
            let tag = RingTag(.accept, generation: generation, slot: slot)
            // Still armed: its last completion (of the cancellation) arms it again.
            guard armed.insert(tag).inserted else { continue }
            ring.prepareAccept(descriptor: descriptor, tag: tag)
        }
        toArm.removeAll(keepingCapacity: true)
        service()
    }

    /// The stream a completion is for: its tag's socket must still be that stream.
    private func stream(_ tag: RingTag) -> Int? {
        guard state.table.holds(slot: tag.slot, generation: tag.generation) else { return nil }
        let index = Int(state.table[tag.slot].stream)
        return index >= 0 && streams[index].socket.generation == tag.generation ? index : nil
    }

    private func accepted(_ completion: RingCompletion) {
        let slot = completion.tag.slot
        let generation = completion.tag.generation
        let current = state.table.holds(slot: slot, generation: generation)
        let active = current && state.table[slot].active
        let listener = SocketID(slot: Int32(slot), generation: generation)
        if completion.result >= 0 {
            let descriptor = Descriptor(taking: completion.result)
            if active {
                streams.adopt(descriptor, listener: listener)
                if !streams.hasFreeIndex { stopAccepting(completion.tag, listener) }
            }
            // Otherwise the listener is closing: `descriptor` ends here and closes.
        } else if completion.result == -EBADF || completion.result == -EFAULT {
            SystemCall.bug("io_uring accept", errno: -completion.result)
        } else if completion.result != -ECANCELED {
            state.counters.acceptErrors &+= 1
            // Paused only when the accept ended: one still armed must not get a twin.
            if active && PausedListeners.isShortage(-completion.result) && completion.flags & UInt32(IORING_CQE_F_MORE) == 0 {
                streams.pausedListeners.pause(SocketID(slot: Int32(slot), generation: generation))
            }
        }
        if completion.flags & UInt32(IORING_CQE_F_MORE) == 0 {
            armed.remove(completion.tag)
            stopping.remove(completion.tag)
            if active && streams.pausedListeners.contains(listener) {
                // Out of descriptors or memory: armed again when the pause ends (`arm`).
            } else if active {
                // The multishot accept ended (the kernel chose to, or a passing error): arm it
                // again; the backlog keeps the connections meanwhile.
                toArm.append((slot, generation, state.table[slot].descriptor))
            } else if current {
                state.table.release(slot)
            }
        }
    }

    /// Every stream index is taken: the listener's multishot accept is cancelled, so further
    /// connections wait in the kernel's backlog (those accepted before the kernel sees the
    /// cancellation are held by the stream table), and it is armed again once an index is free.
    private func stopAccepting(_ accept: RingTag, _ listener: SocketID) {
        streams.pausedListeners.waitForIndex(listener)
        guard armed.contains(accept), stopping.insert(accept).inserted else { return }
        ring.prepareCancel(of: accept, tag: RingTag(.streamCancel, generation: accept.generation, slot: accept.slot))
    }

    private func received(_ completion: RingCompletion) {
        guard let index = stream(completion.tag) else { return }
        flights[index].receiveInFlight = false
        let result = completion.result
        if result > 0 {
            if streams[index].phase == .open {
                streams.received(index, Int(result))
                streams.service(index)  // the next receive, armed with the turn's others
            }
        } else if result == 0 {
            // An end that raced the stream's close is already being handled.
            if streams[index].phase.isLive { streams.beginClosing(index, .peerClosed) }
        } else {
            failed(index, -result, "io_uring recv")
        }
        settle(index)
    }

    private func sent(_ completion: RingCompletion) {
        guard let index = stream(completion.tag) else { return }
        flights[index].sendInFlight = false
        let result = completion.result
        if result >= 0 {
            streams.sent(index, Int(result))
            startSend(index)
        } else {
            failed(index, -result, "io_uring send")
        }
        settle(index)
    }

    private func failed(_ index: Int, _ code: Int32, _ operation: StaticString) {
        switch code {
        case ECANCELED:
            break
        case EAGAIN, EINTR:
            // Not expected without MSG_DONTWAIT, but harmless: try again next turn or flush.
            streams.service(index)
            streams.sendAgain(index)
        case EBADF, EFAULT:
            SystemCall.bug(operation, errno: code)
        default:
            if streams[index].phase.isLive { streams.beginClosing(index, StreamTable.reason(code)) }
        }
    }

    /// Sends the oldest output when no send is in flight.
    private func startSend(_ index: Int) {
        let stream = streams[index]
        guard !flights[index].sendInFlight, stream.phase.isLive else { return }
        let chunk = streams.pendingChunk(index)
        guard chunk.count > 0 else { return }
        ring.prepareStreamSend(descriptor: stream.descriptor, bytes: chunk,
                               tag: RingTag(.streamSend, generation: stream.socket.generation, slot: Int(stream.socket.slot)))
        flights[index].sendInFlight = true
    }

    /// A closing stream with nothing in flight any more is reported closed.
    private func settle(_ index: Int) {
        if streams[index].phase == .closing && flights[index].isEmpty { finish(index) }
    }

    private func finish(_ index: Int) {
        if flights[index].closingInFlight { awaitingCancellations -= 1 }
        flights[index] = Flight()
        streams.finish(index)
    }

    /// The flush: starts a send for every stream with new output and none in flight. The
    /// backend submits them with the flush's datagram sends, or alone.
    func flush() {
        streams.takeSends(startSend)
    }

    /// Before the turn waits and after it reaped: arms receives, cancels what closing streams
    /// have in flight, and lets go of those with nothing in flight.
    private func service() {
        streams.takeService { index in
            let stream = streams[index]
            let flight = flights[index]
            let (generation, slot) = (stream.socket.generation, Int(stream.socket.slot))
            let tag = RingTag(.streamReceive, generation: generation, slot: slot)
            let cancel = RingTag(.streamCancel, generation: generation, slot: slot)
            switch stream.phase {
            case .open:
                guard !flight.receiveInFlight else { return }
                let space = streams.receiveSpace(index)
                // No room: the owner has not consumed; `consume` brings the stream back here.
                guard space.count > 0 else { return }
                let length = min(space.count, readBudget)
                ring.prepareStreamReceive(descriptor: stream.descriptor, into: UnsafeMutableRawBufferPointer(rebasing: space[0..<length]), tag: tag)
                flights[index].receiveInFlight = true
            case .draining:
                // The owner closed it: no more input wanted, only the output sent.
                if flight.receiveInFlight && !flight.receiveCancelled {
                    ring.prepareCancel(of: tag, tag: cancel)
                    flights[index].receiveCancelled = true
                }
            case .closing:
                guard !flight.isEmpty else { return finish(index) }
                if !flight.closingInFlight {
                    flights[index].closingInFlight = true
                    awaitingCancellations += 1
                }
                // Each operation cancelled by its own tag: the kernel finds a tag by hashing,
                // where a cancel by descriptor walks every armed request of the ring (thousands
                // with thousands of connections; 3% of a worker's CPU at 2,000 TLS clients).
                if flight.receiveInFlight && !flight.receiveCancelled {
                    ring.prepareCancel(of: tag, tag: cancel)
                    flights[index].receiveCancelled = true
                }
                if flight.sendInFlight && !flight.sendCancelled {
                    ring.prepareCancel(of: RingTag(.streamSend, generation: generation, slot: slot), tag: cancel)
                    flights[index].sendCancelled = true
                }
            case .free, .closed:
                break
            }
        }
    }
}
