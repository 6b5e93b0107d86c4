import Glibc
import CURing
import SystemSupport

/// The io_uring backend's state machine: receives arrive as completions of one multishot
/// RECVMSG per socket, into provided buffers that are lent to the turn's sends and given back
/// on the next receive; all the sends of a flush go out in one submit, across sockets.
/// Listeners and streams are `RingStreams`' (their completions are handed to it wherever they
/// are reaped). The ring itself (memory, tags, reaping) is `Ring`'s.
final class RingBackend {
    let state: EngineState
    let ring: Ring
    /// Sockets whose receive must be (re-)armed before the turn waits.
    @exclusivity(unchecked) var toArm: [(slot: Int, generation: UInt32, descriptor: Int32)] = []
    /// Sockets whose multishot receive ended for want of a provided buffer (ENOBUFS), with
    /// their datagrams still queued in the kernel: armed again a few at a time as buffers come
    /// back (`armStarved`). Armed all at once, most would find the ring empty and end again,
    /// every turn: a burst from 2,000 TURN peers against 256 GRO buffers cost 2.6 such restarts
    /// per datagram received.
    @exclusivity(unchecked) var starved: [(slot: Int, generation: UInt32, descriptor: Int32)] = []
    @exclusivity(unchecked) private var starvedTurns = 0
    static let starvedTurnLimit = 8
    @exclusivity(unchecked) private var outstandingSends = 0
    /// Listeners and streams; nil when the configuration keeps streams off.
    let streams: RingStreams?

    init(state: EngineState, waker: EngineWaker) throws(SystemCallError) {
        let configuration = state.configuration
        let ring = try Ring(buffers: configuration.uringBufferCount, bufferSize: configuration.uringBufferSize,
                            wakeDescriptor: waker.descriptor)
        self.ring = ring
        self.state = state
        streams = state.streams.map { RingStreams(state: state, streams: $0, ring: ring) }
        toArm.reserveCapacity(1024)
        starved.reserveCapacity(1024)
    }

    func register(listener id: SocketID, descriptor: Int32) {
        streams?.register(listener: id, descriptor: descriptor)
    }

    func register(_ id: SocketID, descriptor: Int32) {
        ring.reserveStash(forSockets: Int(id.slot) + 1)
        // Every socket may starve at once; the packet path must not grow the list.
        if starved.capacity <= Int(id.slot) { starved.reserveCapacity(max(Int(id.slot) + 1, starved.capacity * 2)) }
        toArm.append((Int(id.slot), id.generation, descriptor))
    }

    // MARK: receive

    func receive(timeoutMilliseconds: Int32) {
        ring.recycleHeld()
        while ring.stashCount > 0 && !state.isFull {
            handle(ring.takeKept())
        }
        if !starved.isEmpty { armStarved() }
        // Re-arm after the stash: a receive that ended there must be armed again before this
        // turn waits, or its socket's datagrams wait for the timeout. (With kept completions
        // left, the turn does not wait: it is full.)
        armPending()
        if state.receivedCount == 0 && !state.wasWoken {
            // Stream events left from earlier (a full event list, completions reaped while a
            // flush waited) are said now: reap what is ready, but do not wait.
            if reapForTurn() == 0 && !(state.streams?.hasReports ?? false) {
                ring.submitAndWait(milliseconds: state.streams?.waitLimit(timeoutMilliseconds) ?? timeoutMilliseconds)
                _ = reapForTurn()
            }
        }
        // Receives that ended in this turn are armed now, and re-arms and the wake-up read reach
        // the kernel even in turns that found completions waiting and so did not enter it.
        armPending()
        if (streams?.awaitingCancellations ?? 0) > 0 {
            ring.submitAndGetEvents()
        } else if ring.pendingSubmissions > 0 {
            ring.submit()
        }
        ring.commitRecycled()
        state.counters.noteBatch(state.receivedCount)
        state.counters.syscalls &+= ring.takeSyscalls()
        state.streams?.makeEvents(state.streamEvents)
    }

    private func reapForTurn() -> Int {
        ring.reap { completion in
            handle(completion)
            return !state.isFull
        }
    }

    /// Inlined into the turn's reap and the kept completions' loop: called once per datagram,
    /// its prologue and epilogue showed in callgrind's counts.
    @inline(__always)
    private func handle(_ completion: RingCompletion) {
        switch completion.tag.kind {
        case .receive: handleReceive(completion)
        case .send: handleSend(completion)
        case .wake:
            state.wasWoken = true
            ring.prepareWakeRead()
        case .accept, .streamReceive, .streamSend, .streamCancel: _ = streams?.handle(completion)
        case .cancel, nil: break
        }
    }

    /// Inlined into the turn's reap, once per datagram: the call's register spills showed in
    /// callgrind's counts.
    @inline(__always)
    func handleReceive(_ completion: RingCompletion) {
        let slot = completion.tag.slot
        let generation = completion.tag.generation
        // The socket's one lookup for this completion: whether it is still the one the receive
        // was armed for, and its owner.
        let known = slot < state.table.entries.count
        let entry = known ? state.table[slot] : SocketTable.Entry()
        let current = known && entry.generation == generation
        let active = current && entry.active
        if completion.flags & UInt32(IORING_CQE_F_BUFFER) != 0 {
            let id = UInt16(truncatingIfNeeded: completion.flags >> UInt32(IORING_CQE_BUFFER_SHIFT))
            if active && completion.result >= 0
                && deliver(id, length: completion.result, slot: slot, generation: generation, owner: entry.owner) {
                ring.hold(id)
            } else {
                ring.recycle(id)
            }
        }
        if completion.flags & UInt32(IORING_CQE_F_MORE) == 0 {
            if active && completion.result == -ENOBUFS {
                state.counters.receiveRestarts &+= 1
                starved.append((slot, generation, entry.descriptor))
            } else if active && (completion.result >= 0 || completion.result == -EINTR) {
                // The multishot receive ended (the kernel chose to): re-arm.
                state.counters.receiveRestarts &+= 1
                toArm.append((slot, generation, entry.descriptor))
            } else if active {
                // A lasting error (the socket is unusable): re-arming would spin. The socket
                // stays registered but deaf; the failure is counted.
                if completion.result == -EBADF || completion.result == -EFAULT { SystemCall.bug("io_uring recvmsg", errno: -completion.result) }
                state.counters.receiveFailures &+= 1
            } else if current {
                state.table.release(slot)
            }
        }
    }

    /// Reads one provided buffer; true when it became a received datagram (the buffer is lent).
    @inline(__always)
    private func deliver(_ id: UInt16, length: Int32, slot: Int, generation: UInt32, owner: OwnerTag) -> Bool {
        guard let datagram = ring.datagram(inBuffer: id, length: length) else {
            state.counters.truncated &+= 1
            return false
        }
        return state.deliver(socket: SocketID(slot: Int32(slot), generation: generation), slot: slot, owner: owner,
                             source: datagram.source, metadata: datagram.metadata,
                             truncated: datagram.truncated, size: datagram.size, payload: datagram.payload)
    }

    /// Moves starved sockets, oldest first, to `toArm`, as many as the buffers can serve: half
    /// the ring once the worker has caught up (no completion kept or waiting, so every buffer
    /// but this turn's is back in the kernel; the other half for the sockets still armed), and
    /// a batch's worth when it has not for `starvedTurnLimit` turns, so none waits for ever.
    private func armStarved() {
        starvedTurns += 1
        let caughtUp = ring.stashCount == 0 && !ring.hasReadyCompletions
        guard caughtUp || starvedTurns >= RingBackend.starvedTurnLimit else { return }
        let budget = caughtUp ? state.configuration.uringBufferCount / 2 : state.configuration.batchSize
        let count = min(budget, starved.count)
        // Element by element: slicing and removeFirst may copy the array, and this runs per turn.
        for index in 0..<count { toArm.append(starved[index]) }
        for index in count..<starved.count { starved[index - count] = starved[index] }
        starved.removeLast(count)
        starvedTurns = 0
    }

    /// Queues a multishot receive for every socket waiting for one, and the listeners' and
    /// streams' operations (`RingStreams.arm`).
    private func armPending() {
        streams?.arm()
        guard !toArm.isEmpty else { return }
        for (slot, generation, descriptor) in toArm {
            ring.prepareReceive(descriptor: descriptor, tag: RingTag(.receive, generation: generation, slot: slot))
        }
        toArm.removeAll(keepingCapacity: true)
    }

    // MARK: send

    /// Queues one SENDMSG per message, submits them all with one io_uring_enter, and waits
    /// until every one has completed: the received buffers they point into go back to the
    /// kernel on the next receive. Receive completions met meanwhile are kept for it; those of
    /// listeners and streams are handled at once (they never wait in the stash). MSG_DONTWAIT
    /// makes every datagram send complete at once, so this wait is short; a stream's sends are
    /// not among those waited for.
    func send() {
        let vectors = state.sendVectors
        for index in 0..<vectors.count {
            let descriptor = vectors.message(index).descriptor
            ring.prepareSend(descriptor: descriptor, header: vectors.header(at: index), tag: RingTag(.send, slot: index))
        }
        outstandingSends += vectors.count
        ring.submitAndGetEvents()
        while outstandingSends > 0 {
            let reaped = ring.reap { completion in
                if completion.tag.kind == .send {
                    handleSend(completion)
                } else if streams?.handle(completion) != true {
                    ring.keep(completion)
                }
                return true
            }
            if outstandingSends > 0 && reaped == 0 { ring.submitAndWaitOne() }
        }
        state.counters.syscalls &+= ring.takeSyscalls()
    }

    private func handleSend(_ completion: RingCompletion) {
        outstandingSends -= 1
        if completion.result >= 0 {
            state.sent(completion.tag.slot)
        } else {
            if completion.result == -EBADF || completion.result == -EFAULT { SystemCall.bug("io_uring sendmsg", errno: -completion.result) }
            state.refused(completion.tag.slot, errno: -completion.result)
        }
    }

    /// Starts the streams' sends (submitted with the flush's datagrams, or by `submitPending`).
    func flushStreams() { streams?.flush() }

    /// Submits what a flush queued and nothing submitted yet (stream sends with no datagrams).
    func submitPending() {
        guard ring.pendingSubmissions > 0 else { return }
        ring.submitAndGetEvents()
        state.counters.syscalls &+= ring.takeSyscalls()
    }
}
