import Glibc
import SystemSupport

/// Closing sockets under io_uring: a socket's receive (a listener's accept) must deliver its
/// last completion before the slot (and the buffers it may still fill) can be reused, so
/// closing is cancel, then wait. Streams close otherwise, without waiting (`RingStreams`).
extension RingBackend {
    /// How long closing sockets may wait for their receives' last completions. The kernel
    /// delivers them over several io_uring_enter calls (with DEFER_TASKRUN each runs a bounded
    /// amount of deferred work), interleaved with the busy worker's other completions: 300
    /// receives cancelled at once took up to 3.5 ms with 2,000 TURN clients. A budget counted in
    /// wake-ups rather than time ran out in 2 ms there and forced hundreds of releases. A
    /// fiftieth of it (20 ms) in, the sockets still waited for are shut down for reading.
    static let cancellationLimit: UInt64 = 1_000_000_000

    /// Cancels these sockets' receives together and waits for all of them together, so closing
    /// many sockets at once (a wave of expired sessions) costs a few system calls, not a few
    /// per socket. The sockets are closed (their ports free) when this returns.
    func unregister(_ ids: [SocketID]) {
        var waiting: [(slot: Int, generation: UInt32, operation: RingTag.Kind)] = []
        for id in ids {
            guard let slot = state.table.lookup(id) else { continue }
            let operation: RingTag.Kind = state.table[slot].kind == .listener ? .accept : .receive
            state.table.deactivate(slot)
            if cancel(slot: slot, generation: id.generation, operation: operation) {
                waiting.append((slot, id.generation, operation))
            } else {
                state.table.release(slot)
            }
        }
        if !waiting.isEmpty { finishCancellations(waiting) }
    }

    /// Queues the cancellation of a socket's receive or accept. Returns false when none was in
    /// flight (it was still waiting to be armed), so there is nothing to wait for.
    private func cancel(slot: Int, generation: UInt32, operation: RingTag.Kind) -> Bool {
        if operation == .accept, let streams {
            let waiting = streams.toArm.count
            streams.toArm.removeAll { $0.slot == slot && $0.generation == generation }
            if streams.toArm.count < waiting { return false }
        } else {
            let waiting = toArm.count + starved.count
            toArm.removeAll { $0.slot == slot && $0.generation == generation }
            starved.removeAll { $0.slot == slot && $0.generation == generation }
            if toArm.count + starved.count < waiting { return false }
        }
        ring.prepareCancel(of: RingTag(operation, generation: generation, slot: slot),
                           tag: RingTag(.cancel, generation: generation, slot: slot))
        return true
    }

    /// Waits until each cancelled receive has delivered its last completion. A last completion
    /// may already sit among the kept completions or in the completion queue; when the kernel
    /// says there was nothing left to cancel and neither holds it, that receive had already ended.
    ///
    /// A socket is waited for by its slot and generation, never by its slot alone: completions
    /// handled here include accepts, and an accept takes the slot a socket released moments
    /// before. Waiting by slot took that new connection for the closing socket: the worker
    /// waited for a completion that never came, then closed the connection's descriptor under
    /// its stream (2,000 TURN clients over TCP saw resets; `RingUnregisterTests`).
    private func finishCancellations(_ waiting: [(slot: Int, generation: UInt32, operation: RingTag.Kind)]) {
        var receives = Set<RingTag>()
        var cancels: [RingTag: Int] = [:]
        for (slot, generation, operation) in waiting {
            receives.insert(RingTag(operation, generation: generation, slot: slot))
            cancels[RingTag(.cancel, generation: generation, slot: slot)] = slot
        }
        for _ in 0..<ring.stashCount {
            let completion = ring.takeKept()
            if receives.contains(completion.tag) { handleReceive(completion) } else { ring.keep(completion) }
        }
        ring.submitAndGetEvents()
        var nothingToCancel = Set<Int>()
        func pending() -> [Int] {
            waiting.filter { state.table.holds(slot: $0.slot, generation: $0.generation) && !state.table.isReleased($0.slot) }.map(\.slot)
        }
        var open = pending()
        let start = MonotonicClock.now()
        let shutDown = start &+ RingBackend.cancellationLimit / 50
        let giveUp = start &+ RingBackend.cancellationLimit
        var wokenByShutdown = false
        while !open.isEmpty {
            let reaped = ring.reap { completion in
                if receives.contains(completion.tag) {
                    if completion.tag.kind == .accept { _ = streams?.handle(completion) } else { handleReceive(completion) }
                } else if let slot = cancels[completion.tag] {
                    // -ENOENT: nothing was in flight. (-EALREADY means the receive is still
                    // finishing: keep waiting for its last completion.)
                    if completion.result == -ENOENT { nothingToCancel.insert(slot) }
                } else if streams?.handle(completion) != true {
                    ring.keep(completion)
                }
                return true
            }
            ring.commitRecycled()
            open = pending()
            guard !open.isEmpty, reaped == 0 else { continue }
            let ended = open.filter { nothingToCancel.contains($0) }
            if !ended.isEmpty {
                for slot in ended { state.table.release(slot) }
                open = pending()
            } else if MonotonicClock.now() >= giveUp {
                // Never seen: the last resort, so that a kernel that never completes a
                // cancelled receive costs this worker a second, counted, rather than its life.
                // A completion that still comes names the old generation and reaches nothing.
                for slot in open { state.table.release(slot) }
                state.counters.receiveCancelsForced &+= UInt64(open.count)
                break
            } else {
                // A receive the kernel could not cancel (-EALREADY: it is running) ends when
                // its socket is shut down for reading, which wakes it with an end of input.
                if !wokenByShutdown && MonotonicClock.now() >= shutDown {
                    for slot in open { _ = shutdown(state.table[slot].descriptor, Int32(SHUT_RD)) }
                    wokenByShutdown = true
                }
                ring.submitAndWait(milliseconds: 10)
            }
        }
        state.counters.syscalls &+= ring.takeSyscalls()
    }
}
