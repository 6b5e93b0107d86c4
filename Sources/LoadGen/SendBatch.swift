import Glibc
import CLoadGen
import STUN
import SystemSupport

/// Preallocated vectors for one sendmmsg call: payload buffers, iovecs, mmsghdrs and
/// destination addresses, allocated once in `init` and re-filled per batch, so sending
/// allocates nothing per datagram.
///
/// All messages of one batch leave through one socket (sendmmsg takes one descriptor); the
/// caller flushes before switching sockets. Each message has its own destination, so one
/// unconnected socket can feed many relay sessions in one call.
final class SendBatch {
    let capacity: Int
    let bufferSize: Int
    private let buffers: UnsafeMutableRawPointer
    private let iovecs: UnsafeMutablePointer<iovec>
    private let messages: UnsafeMutablePointer<lg_mmsghdr>
    private let names: UnsafeMutablePointer<sockaddr_storage>
    private(set) var count = 0
    private(set) var fd: Int32 = -1

    init(capacity: Int, bufferSize: Int) {
        self.capacity = capacity
        self.bufferSize = max(bufferSize, PayloadHeader.size)
        buffers = .allocate(byteCount: capacity * self.bufferSize, alignment: 16)
        buffers.initializeMemory(as: UInt8.self, repeating: 0, count: capacity * self.bufferSize)
        iovecs = .allocate(capacity: capacity)
        messages = .allocate(capacity: capacity)
        messages.initialize(repeating: lg_mmsghdr(), count: capacity)
        names = .allocate(capacity: capacity)
        for i in 0..<capacity {
            iovecs[i] = iovec(iov_base: buffers + i * self.bufferSize, iov_len: 0)
            names[i] = sockaddr_storage()
            var header = msghdr()
            header.msg_iov = iovecs + i
            header.msg_iovlen = 1
            header.msg_name = UnsafeMutableRawPointer(names + i)
            messages[i].msg_hdr = header
        }
    }

    deinit {
        buffers.deallocate()
        iovecs.deallocate()
        messages.deallocate()
        names.deallocate()
    }

    var isFull: Bool { count == capacity }

    /// Room a ChannelData header takes in front of the payload (size buffers with it).
    static let channelHeaderSize = ChannelData.headerSize

    /// Adds one datagram of `size` bytes (clamped to the buffer) starting with `header`; with a
    /// `channel`, framed as TURN ChannelData (4 more bytes in front, RFC 8656 section 12.4).
    /// The caller flushes first when the batch is full or bound for another socket.
    @inline(__always)
    func append(fd: Int32, to destination: SocketAddress, header: PayloadHeader, size: Int, channel: UInt16 = 0) {
        precondition(count < capacity && (count == 0 || fd == self.fd), "flush before switching sockets")
        self.fd = fd
        let buffer = buffers + count * bufferSize
        let framing = channel == 0 ? 0 : ChannelData.headerSize
        let payload = min(max(size, PayloadHeader.size), bufferSize - framing)
        if framing > 0 {
            ChannelData.writeHeader(channel: channel, length: payload, to: UnsafeMutableRawBufferPointer(start: buffer, count: framing), at: 0)
        }
        header.encode(into: buffer + framing)
        iovecs[count].iov_len = framing + payload
        names[count] = destination.storage
        messages[count].msg_hdr.msg_namelen = destination.length
        count += 1
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
                sent += n
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
