import Glibc

/// Closing sockets under io_uring: a socket's receive (a listener's accept) must deliver its
/// last completion before the slot (and the buffers it may still fill) can be reused, so
/// closing is cancel, then wait. Streams close otherwise, without waiting (`RingStreams`).
extension RingBackend {
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
            let waiting = toArm.count
            toArm.removeAll { $0.slot == slot && $0.generation == generation }
            if toArm.count < waiting { return false }
        }
        ring.prepareCancel(of: RingTag(operation, generation: generation, slot: slot),
                           tag: RingTag(.cancel, generation: generation, slot: slot))
        return true
    }

    /// Waits until each cancelled receive has delivered its last completion. A last completion
    /// may already sit among the kept completions or in the completion queue; when the kernel
    /// says there was nothing left to cancel and neither holds it, that receive had already ended.
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
        func pending() -> [Int] { waiting.map(\.slot).filter { !state.table.isReleased($0) } }
        var open = pending()
        var waits = 0
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
            if ended.isEmpty {
                // A receive the kernel could not cancel (-EALREADY: it is running, waiting for
                // data that will never come to a socket being closed) ends only when its socket
                // is shut down for reading, which wakes it with an end of input. Seen under
                // TURN over TCP at 2,000 clients: without this the worker waited here forever.
                waits += 1
                if waits == 3 {
                    for slot in open where state.table[slot].descriptor >= 0 {
                        _ = shutdown(state.table[slot].descriptor, Int32(SHUT_RD))
                    }
                }
                // The last resort: never hold the worker longer than this. A completion that
                // still comes names the old generation, so it reaches nothing: its buffer goes
                // back to the ring.
                if waits > 20 {
                    for slot in open { state.table.release(slot) }
                    state.counters.receiveCancelsForced &+= UInt64(open.count)
                    break
                }
                ring.submitAndWait(milliseconds: 10)
            } else {
                for slot in ended { state.table.release(slot) }
                open = pending()
            }
        }
        state.counters.syscalls &+= ring.takeSyscalls()
    }
}
