import ClientSockets
import Glibc
import CLoadGen
import STUN
import SystemSupport
import TurnClientKit

/// Preallocated vectors for one sendmmsg call: payload buffers, iovecs, mmsghdrs and
/// destination addresses, allocated once in `init` and re-filled per batch, so sending
/// allocates nothing per datagram.
///
/// All messages of one batch leave through one socket (sendmmsg takes one descriptor); the
/// caller flushes before switching sockets. Each message has its own destination, so one
/// unconnected socket can feed many relay sessions in one call.
///
/// With `segments` > 1 (sender GSO, `--sender-gso`) a message holds up to that many datagrams
/// of exactly `bufferSize` bytes back to back in one buffer, with a UDP_SEGMENT control message
/// of `bufferSize`: consecutive datagrams to one destination (a video frame) leave as one
/// buffer that the kernel cuts into datagrams, as a sender using GSO would send them.
final class SendBatch {
    let capacity: Int
    let bufferSize: Int
    /// Datagrams one message may carry: 1, or more with sender GSO.
    let segmentsPerMessage: Int
    private let buffers: UnsafeMutableRawPointer
    private let iovecs: UnsafeMutablePointer<iovec>
    private let messages: UnsafeMutablePointer<lg_mmsghdr>
    private let names: UnsafeMutablePointer<sockaddr_storage>
    private let segments: UnsafeMutablePointer<Int>
    private let control: UnsafeMutableRawPointer
    private(set) var count = 0
    private(set) var fd: Int32 = -1

    /// Control space per message: CMSG_SPACE(sizeof(uint16_t)) is 24 on 64-bit Linux.
    static let controlSpace = 32

    init(capacity: Int, bufferSize: Int, segments: Int = 1) {
        self.capacity = capacity
        self.bufferSize = max(bufferSize, PayloadHeader.size)
        segmentsPerMessage = max(1, segments)
        let messageBytes = self.bufferSize * segmentsPerMessage
        buffers = .allocate(byteCount: capacity * messageBytes, alignment: 16)
        buffers.initializeMemory(as: UInt8.self, repeating: 0, count: capacity * messageBytes)
        iovecs = .allocate(capacity: capacity)
        messages = .allocate(capacity: capacity)
        messages.initialize(repeating: lg_mmsghdr(), count: capacity)
        names = .allocate(capacity: capacity)
        self.segments = .allocate(capacity: capacity)
        self.segments.initialize(repeating: 0, count: capacity)
        control = .allocate(byteCount: capacity * SendBatch.controlSpace, alignment: 8)
        control.initializeMemory(as: UInt8.self, repeating: 0, count: capacity * SendBatch.controlSpace)
        for i in 0..<capacity {
            iovecs[i] = iovec(iov_base: buffers + i * messageBytes, iov_len: 0)
            names[i] = sockaddr_storage()
            var header = msghdr()
            header.msg_iov = iovecs + i
            header.msg_iovlen = 1
            header.msg_name = UnsafeMutableRawPointer(names + i)
            if segmentsPerMessage > 1 {
                // Every message says the same: cut into datagrams of bufferSize. A message of
                // one datagram is not longer than that, so the kernel sends it as it is.
                var size = UInt16(self.bufferSize)
                header.msg_control = control + i * SendBatch.controlSpace
                header.msg_controllen = lg_cmsg_write(header.msg_control, SendBatch.controlSpace, Int32(IPPROTO_UDP),
                                                      lg_udp_segment(), &size, 2)
            }
            messages[i].msg_hdr = header
        }
    }

    deinit {
        buffers.deallocate()
        iovecs.deallocate()
        messages.deallocate()
        names.deallocate()
        segments.deallocate()
        control.deallocate()
    }

    var isFull: Bool { count == capacity }

    /// Adds one datagram of `size` bytes (clamped to the buffer) starting with `header`; with a
    /// TURN `framing`, as ChannelData (RFC 8656 section 12.4) or a Send indication (11.3). Size
    /// the buffers with `TurnFraming.maxOverhead` for that. The caller flushes first when the
    /// batch is full or bound for another socket.
    @inline(__always)
    func append(fd: Int32, to destination: SocketAddress, header: PayloadHeader, size: Int, framing: TurnFraming = .none) {
        precondition(count < capacity && (count == 0 || fd == self.fd), "flush before switching sockets")
        // TURN framing is not cut into GSO segments: each datagram needs its own.
        if segmentsPerMessage > 1, framing.isNone, count > 0, size == bufferSize, segments[count - 1] < segmentsPerMessage,
           iovecs[count - 1].iov_len == segments[count - 1] * bufferSize, sameDestination(count - 1, destination) {
            // The next segment of the last message (the rest of a video frame).
            header.encode(into: iovecs[count - 1].iov_base + iovecs[count - 1].iov_len)
            iovecs[count - 1].iov_len += bufferSize
            segments[count - 1] += 1
            return
        }
        self.fd = fd
        let buffer = iovecs[count].iov_base!
        let front = framing.headerSize
        var payload = min(max(size, PayloadHeader.size), bufferSize - front)
        if !framing.isNone {
            payload = min(payload, bufferSize - front - framing.padding(payload, stream: false))
            framing.write(into: buffer, payload: payload, stream: false)
        }
        header.encode(into: buffer + front)
        iovecs[count].iov_len = front + payload + framing.padding(payload, stream: false)
        names[count] = destination.storage
        messages[count].msg_hdr.msg_namelen = destination.length
        segments[count] = 1
        count += 1
    }

    private func sameDestination(_ index: Int, _ destination: SocketAddress) -> Bool {
        guard messages[index].msg_hdr.msg_namelen == destination.length else { return false }
        return withUnsafeBytes(of: destination.storage) { memcmp(names + index, $0.baseAddress!, Int(destination.length)) == 0 }
    }

    /// Sends the batch. Returns how many datagrams the kernel took; the rest are dropped (a
    /// full socket buffer for more than a few ms means the host, not the pacer, is the limit).
    @discardableResult
    func flush() -> Int {
        defer { count = 0 }
        var sent = 0
        var next = 0
        var stalls = 0
        while next < count {
            switch SystemCall.outcome({ Int(lg_sendmmsg(fd, messages + next, UInt32(count - next), 0)) }) {
            case .done(let n) where n > 0:
                for i in next..<(next + n) { sent += segments[i] }
                next += n
            case .wouldBlock:
                guard stalls < 5 else { return sent }
                stalls += 1
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                SystemCall.ignoringFailure { Int(poll(&p, 1, 1)) }
            case .done, .failed:
                // Skip the datagram that failed (e.g. ECONNREFUSED left by an ICMP error) and go on.
                next += 1
            }
        }
        return sent
    }
}
