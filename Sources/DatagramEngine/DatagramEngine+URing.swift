import Glibc
import CURing

/// The io_uring backend: receives arrive as completions of one multishot RECVMSG per socket,
/// into provided buffers that are lent to the turn's sends and given back on the next receive;
/// all the sends of a flush go out in one submit, across sockets.
extension DatagramEngine {
    func receiveWithRing(timeoutMilliseconds: Int32) {
        guard let ring else { return }
        ring.recycleHeld()
        while ring.stashCount > 0 && receivedCount < configuration.batchSize {
            handle(ring.popStash(), ring: ring)
        }
        // Re-arm after the stash: a receive that ended there (out of buffers) must be armed
        // again before this turn waits, or its socket's datagrams wait for the timeout.
        ring.armPending()
        if receivedCount == 0 && !wasWoken {
            var ready = ring.peek()
            if ready == 0 {
                ring.submitAndWait(milliseconds: timeoutMilliseconds)
                ready = ring.peek()
            }
            var consumed = 0
            while consumed < ready && receivedCount < configuration.batchSize {
                let entry = ring.completions[consumed]!.pointee
                handle(URingDriver.Completion(tag: entry.user_data, result: entry.res, flags: entry.flags), ring: ring)
                consumed += 1
            }
            ring.advance(consumed)
        }
        // Receives that ended in this turn are armed now, and re-arms and the wake-up read reach
        // the kernel even in turns that found completions waiting and so did not enter it.
        ring.armPending()
        if ring.pendingSubmissions > 0 { ring.submit() }
        ring.commitRecycled()
        counters.noteBatch(receivedCount)
        counters.syscalls &+= ring.takeSyscalls()
    }

    private func handle(_ completion: URingDriver.Completion, ring: URingDriver) {
        let kind = completion.tag >> 56
        if kind == URingDriver.Kind.receive.rawValue {
            handleReceive(completion, ring: ring)
        } else if kind == URingDriver.Kind.send.rawValue {
            handleSend(completion, ring: ring)
        } else if kind == URingDriver.Kind.wake.rawValue {
            wasWoken = true
            ring.armWake()
        }
    }

    func handleReceive(_ completion: URingDriver.Completion, ring: URingDriver) {
        let slot = Int(completion.tag & 0xFF_FFFF)
        let generation = UInt32(truncatingIfNeeded: completion.tag >> 24)
        let current = table.holds(slot: slot, generation: generation)
        let active = current && table[slot].active
        if completion.flags & UInt32(IORING_CQE_F_BUFFER) != 0 {
            let id = UInt16(truncatingIfNeeded: completion.flags >> UInt32(IORING_CQE_BUFFER_SHIFT))
            if active && completion.result >= 0 && take(id, length: completion.result, slot: slot, generation: generation, ring: ring) {
                ring.hold(id)
            } else {
                ring.recycle(id)
            }
        }
        if completion.flags & UInt32(IORING_CQE_F_MORE) == 0 {
            if active && (completion.result >= 0 || completion.result == -ENOBUFS || completion.result == -EINTR) {
                // The multishot receive ended (out of buffers, or the kernel chose to): re-arm.
                counters.receiveRestarts &+= 1
                ring.arm(slot: slot, generation: generation, descriptor: table[slot].descriptor)
            } else if active {
                // A lasting error (the socket is unusable): re-arming would spin. The socket
                // stays registered but deaf; the failure is counted.
                counters.receiveFailures &+= 1
            } else if current {
                table.release(slot)
            }
        }
    }

    /// Reads one provided buffer; true when it became a received datagram (the buffer is lent).
    private func take(_ id: UInt16, length: Int32, slot: Int, generation: UInt32, ring: URingDriver) -> Bool {
        let buffer = ring.buffer(id)
        guard let header = io_uring_recvmsg_validate(buffer, length, ring.template) else {
            counters.truncated &+= 1
            return false
        }
        var control = ReceiveControl()
        var cmsg = io_uring_recvmsg_cmsg_firsthdr(header, ring.template)
        while let current = cmsg {
            control.read(current)
            cmsg = io_uring_recvmsg_cmsg_nexthdr(header, ring.template, current)
        }
        let source = Endpoint(reading: io_uring_recvmsg_name(header), length: header.pointee.namelen)
        let payloadLength = Int(io_uring_recvmsg_payload_length(header, length, ring.template))
        let payload = UnsafeRawBufferPointer(start: io_uring_recvmsg_payload(header, ring.template), count: payloadLength)
        let truncated = header.pointee.flags & UInt32(MSG_TRUNC) != 0
        let before = receivedCount
        // payloadlen is the real length: the receives ask for MSG_TRUNC.
        accept(socket: SocketID(slot: Int32(slot), generation: generation), slot: slot, source: source,
               control: control, truncated: truncated, size: truncated ? Int(header.pointee.payloadlen) : payloadLength, payload: payload)
        return receivedCount > before
    }

    private func handleSend(_ completion: URingDriver.Completion, ring: URingDriver) {
        let index = Int(completion.tag & 0xFF_FFFF)
        ring.outstandingSends -= 1
        if completion.result >= 0 {
            noteSent(sendVectors.messages[index])
        } else {
            noteFailed(index, errno: -completion.result)
        }
    }

    /// Waits until each cancelled receive has delivered its last completion, so the sockets are
    /// closed (and their ports free) when `unregister` returns. A last completion may already
    /// sit in the stash (kept while reaping sends) or the CQ ring; when the kernel says there
    /// was nothing left to cancel and neither holds it, that receive had already ended.
    func finishCancellations(_ waiting: [(slot: Int, generation: UInt32)], ring: URingDriver) {
        var receives: [UInt64: Int] = [:]
        var cancels: [UInt64: Int] = [:]
        for (slot, generation) in waiting {
            receives[URingDriver.tag(.receive, generation: generation, slot: slot)] = slot
            cancels[URingDriver.tag(.cancel, generation: generation, slot: slot)] = slot
        }
        for _ in 0..<ring.stashCount {
            let completion = ring.popStash()
            if receives[completion.tag] != nil { handleReceive(completion, ring: ring) } else { ring.pushStash(completion) }
        }
        ring.submitAndGetEvents()
        var nothingToCancel = Set<Int>()
        func pending() -> [Int] { waiting.map(\.slot).filter { !table.isReleased($0) } }
        var open = pending()
        while !open.isEmpty {
            let ready = ring.peek()
            for position in 0..<ready {
                let entry = ring.completions[position]!.pointee
                let completion = URingDriver.Completion(tag: entry.user_data, result: entry.res, flags: entry.flags)
                if receives[entry.user_data] != nil {
                    handleReceive(completion, ring: ring)
                } else if let slot = cancels[entry.user_data] {
                    // -ENOENT: nothing was in flight. (-EALREADY means the receive is still
                    // finishing: keep waiting for its last completion.)
                    if entry.res == -ENOENT { nothingToCancel.insert(slot) }
                } else {
                    ring.pushStash(completion)
                }
            }
            ring.advance(ready)
            ring.commitRecycled()
            open = pending()
            guard !open.isEmpty, ready == 0 else { continue }
            let ended = open.filter { nothingToCancel.contains($0) }
            if ended.isEmpty {
                ring.submitAndWaitOne()
            } else {
                for slot in ended { table.release(slot) }
                open = pending()
            }
        }
    }

    /// Queues one SENDMSG per message, submits them all with one io_uring_enter, and waits
    /// until every one has completed: the received buffers they point into go back to the
    /// kernel on the next receive. Receive completions met meanwhile are kept for it.
    func sendWithRing() {
        guard let ring else { return }
        for index in 0..<sendVectors.count {
            let entry = ring.nextSubmission()
            let descriptor = table[Int(sendVectors.messages[index].slot)].descriptor
            // MSG_DONTWAIT: a full socket buffer is an EAGAIN result (counted, as with sendmmsg),
            // never a poll that would hold the worker until the socket drains.
            io_uring_prep_sendmsg(entry, descriptor, &sendVectors.headers[index].msg_hdr, UInt32(MSG_DONTWAIT))
            io_uring_sqe_set_data64(entry, URingDriver.tag(.send, slot: index))
        }
        ring.outstandingSends += sendVectors.count
        ring.submitAndGetEvents()
        while ring.outstandingSends > 0 {
            let ready = ring.peek()
            for position in 0..<ready {
                let entry = ring.completions[position]!.pointee
                let completion = URingDriver.Completion(tag: entry.user_data, result: entry.res, flags: entry.flags)
                if entry.user_data >> 56 == URingDriver.Kind.send.rawValue {
                    handleSend(completion, ring: ring)
                } else {
                    ring.pushStash(completion)
                }
            }
            ring.advance(ready)
            if ring.outstandingSends > 0 && ready == 0 { ring.submitAndWaitOne() }
        }
        counters.syscalls &+= ring.takeSyscalls()
    }
}
