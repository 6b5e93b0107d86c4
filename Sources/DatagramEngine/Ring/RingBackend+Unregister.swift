import Glibc

/// Closing sockets under io_uring: a socket's receive must deliver its last completion before
/// the slot (and the buffers it may still fill) can be reused, so closing is cancel, then wait.
extension RingBackend {
    /// Cancels these sockets' receives together and waits for all of them together, so closing
    /// many sockets at once (a wave of expired sessions) costs a few system calls, not a few
    /// per socket. The sockets are closed (their ports free) when this returns.
    func unregister(_ ids: [SocketID]) {
        var waiting: [(slot: Int, generation: UInt32)] = []
        for id in ids {
            guard let slot = state.table.lookup(id) else { continue }
            state.table.deactivate(slot)
            if cancel(slot: slot, generation: id.generation) {
                waiting.append((slot, id.generation))
            } else {
                state.table.release(slot)
            }
        }
        if !waiting.isEmpty { finishCancellations(waiting) }
    }

    /// Queues the cancellation of a socket's receive. Returns false when no receive was in
    /// flight (it was still waiting to be armed), so there is nothing to wait for.
    private func cancel(slot: Int, generation: UInt32) -> Bool {
        let waiting = toArm.count
        toArm.removeAll { $0.slot == slot && $0.generation == generation }
        if toArm.count < waiting { return false }
        ring.prepareCancel(of: RingTag(.receive, generation: generation, slot: slot),
                           tag: RingTag(.cancel, generation: generation, slot: slot))
        return true
    }

    /// Waits until each cancelled receive has delivered its last completion. A last completion
    /// may already sit among the kept completions or in the completion queue; when the kernel
    /// says there was nothing left to cancel and neither holds it, that receive had already ended.
    private func finishCancellations(_ waiting: [(slot: Int, generation: UInt32)]) {
        var receives = Set<RingTag>()
        var cancels: [RingTag: Int] = [:]
        for (slot, generation) in waiting {
            receives.insert(RingTag(.receive, generation: generation, slot: slot))
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
        while !open.isEmpty {
            let reaped = ring.reap { completion in
                if receives.contains(completion.tag) {
                    handleReceive(completion)
                } else if let slot = cancels[completion.tag] {
                    // -ENOENT: nothing was in flight. (-EALREADY means the receive is still
                    // finishing: keep waiting for its last completion.)
                    if completion.result == -ENOENT { nothingToCancel.insert(slot) }
                } else {
                    ring.keep(completion)
                }
                return true
            }
            ring.commitRecycled()
            open = pending()
            guard !open.isEmpty, reaped == 0 else { continue }
            let ended = open.filter { nothingToCancel.contains($0) }
            if ended.isEmpty {
                ring.submitAndWaitOne()
            } else {
                for slot in ended { state.table.release(slot) }
                open = pending()
            }
        }
        state.counters.syscalls &+= ring.takeSyscalls()
    }
}
