import Glibc
import CURing

/// The perPacket and mmsg backends: epoll to learn which sockets are ready, then recvmsg per
/// datagram or recvmmsg per socket; sendmsg per message or sendmmsg per run of one socket.
/// Both use the same vectors and metadata handling: only the system calls differ.
extension DatagramEngine {
    func receiveWithPoller(timeoutMilliseconds: Int32) {
        guard let poller, let vectors = receiveVectors else { return }
        vectors.prepare(0..<receiveVectorsUsed)
        let ready = poller.wait(timeout: timeoutMilliseconds)
        counters.syscalls &+= 1
        var used = 0
        for event in 0..<ready {
            let tag = poller.events[event].data.u64
            if tag == EventPoller.wakeTag {
                var value: UInt64 = 0
                _ = read(waker.descriptor, &value, 8)
                counters.syscalls &+= 1
                wasWoken = true
                continue
            }
            let id = SocketID(slot: Int32(truncatingIfNeeded: tag & 0xFFFF_FFFF), generation: UInt32(tag >> 32))
            guard used < vectors.capacity, let slot = table.lookup(id) else { continue }
            let descriptor = table[slot].descriptor
            if backend == .mmsg {
                // MSG_TRUNC: a datagram longer than its buffer reports its real length.
                let flags = mr_msg_waitforone() | Int32(MSG_DONTWAIT) | Int32(MSG_TRUNC)
                let count = Int(mr_recvmmsg(descriptor, vectors.headers + used, UInt32(vectors.capacity - used), flags))
                counters.syscalls &+= 1
                guard count > 0 else { continue }
                counters.noteBatch(count)
                for index in used..<(used + count) { take(index, from: vectors, socket: id, slot: slot) }
                used += count
            } else {
                while used < vectors.capacity {
                    let length = recvmsg(descriptor, &vectors.headers[used].msg_hdr, Int32(MSG_DONTWAIT) | Int32(MSG_TRUNC))
                    counters.syscalls &+= 1
                    guard length >= 0 else { break }
                    vectors.headers[used].msg_len = UInt32(length)
                    counters.noteBatch(1)
                    take(used, from: vectors, socket: id, slot: slot)
                    used += 1
                }
            }
        }
        receiveVectorsUsed = used
    }

    @inline(__always)
    private func take(_ index: Int, from vectors: ReceiveVectors, socket id: SocketID, slot: Int) {
        let header = withUnsafeMutablePointer(to: &vectors.headers[index].msg_hdr) { $0 }
        let control = ReceiveControl.parse(header)
        let source = Endpoint(reading: header.pointee.msg_name, length: header.pointee.msg_namelen)
        let truncated = header.pointee.msg_flags & Int32(MSG_TRUNC) != 0
        let size = Int(vectors.headers[index].msg_len)
        let payload = UnsafeRawBufferPointer(start: vectors.payloads + index * vectors.payloadSize,
                                             count: min(size, vectors.payloadSize))
        accept(socket: id, slot: slot, source: source, control: control, truncated: truncated, size: size, payload: payload)
    }

    func sendWithSendmsg() {
        for index in 0..<sendVectors.count {
            let descriptor = table[Int(sendVectors.messages[index].slot)].descriptor
            while true {
                counters.syscalls &+= 1
                if sendmsg(descriptor, &sendVectors.headers[index].msg_hdr, 0) >= 0 {
                    noteSent(sendVectors.messages[index])
                } else if errno == EINTR {
                    continue
                } else {
                    noteFailed(index, errno: errno)
                }
                break
            }
        }
    }

    func sendWithSendmmsg() {
        var start = 0
        let total = sendVectors.count
        while start < total {
            let slot = sendVectors.messages[start].slot
            var end = start + 1
            while end < total && sendVectors.messages[end].slot == slot { end += 1 }
            let descriptor = table[Int(slot)].descriptor
            var next = start
            while next < end {
                counters.syscalls &+= 1
                let sent = Int(mr_sendmmsg(descriptor, sendVectors.headers + next, UInt32(end - next), 0))
                if sent > 0 {
                    for index in next..<(next + sent) { noteSent(sendVectors.messages[index]) }
                    next += sent
                } else if errno == EAGAIN || errno == ENOBUFS {
                    // The socket's buffer is full: the rest of the run would fail the same way,
                    // one syscall each. Count them all and move on.
                    let code = errno
                    for index in next..<end { counters.sendErrors.add(code, UInt64(sendVectors.messages[index].segments)) }
                    next = end
                } else if errno != EINTR {
                    // sendmmsg reports the error of the first message it could not send.
                    noteFailed(next, errno: errno)
                    next += 1
                }
            }
            start = end
        }
    }
}
