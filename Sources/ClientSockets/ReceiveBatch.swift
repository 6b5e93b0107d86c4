import Glibc
import CLoadGen
import SystemSupport

/// Preallocated vectors for one recvmmsg call: buffers, iovecs, mmsghdrs, source addresses
/// and control space for the TOS cmsg, allocated once in `init`.
///
/// After `receive(from:)` returns n, messages 0..<n are valid until the next call; the
/// accessors read them in place without copying.
package final class ReceiveBatch {
    /// Room for the TOS byte's message and a receive timestamp's.
    static let controlSize = 96
    package let capacity: Int
    package let bufferSize: Int
    private let buffers: UnsafeMutableRawPointer
    private let controls: UnsafeMutableRawPointer
    private let iovecs: UnsafeMutablePointer<iovec>
    private let messages: UnsafeMutablePointer<lg_mmsghdr>
    private let names: UnsafeMutablePointer<sockaddr_storage>

    package init(capacity: Int, bufferSize: Int) {
        self.capacity = capacity
        self.bufferSize = bufferSize
        buffers = .allocate(byteCount: capacity * bufferSize, alignment: 16)
        controls = .allocate(byteCount: capacity * Self.controlSize, alignment: 8)
        iovecs = .allocate(capacity: capacity)
        messages = .allocate(capacity: capacity)
        messages.initialize(repeating: lg_mmsghdr(), count: capacity)
        names = .allocate(capacity: capacity)
        for i in 0..<capacity {
            iovecs[i] = iovec(iov_base: buffers + i * bufferSize, iov_len: bufferSize)
            names[i] = sockaddr_storage()
            var header = msghdr()
            header.msg_iov = iovecs + i
            header.msg_iovlen = 1
            header.msg_name = UnsafeMutableRawPointer(names + i)
            header.msg_control = controls + i * Self.controlSize
            messages[i].msg_hdr = header
        }
    }

    deinit {
        buffers.deallocate()
        controls.deallocate()
        iovecs.deallocate()
        messages.deallocate()
        names.deallocate()
    }

    /// Takes what is queued on `fd` without waiting: the number of datagrams (0 when none).
    package func receive(from fd: Int32) -> Int {
        for i in 0..<capacity {
            // The kernel overwrites these with what it filled in; give the full room back.
            messages[i].msg_hdr.msg_namelen = socklen_t(MemoryLayout<sockaddr_storage>.size)
            messages[i].msg_hdr.msg_controllen = Self.controlSize
            messages[i].msg_hdr.msg_flags = 0
        }
        let outcome = SystemCall.outcome { Int(lg_recvmmsg(fd, messages, UInt32(capacity), Int32(MSG_DONTWAIT))) }
        if case .done(let count) = outcome { return count }
        return 0
    }

    @inline(__always) package func payload(_ i: Int) -> UnsafeRawPointer { UnsafeRawPointer(buffers + i * bufferSize) }
    @inline(__always) package func length(_ i: Int) -> Int { Int(messages[i].msg_len) }
    @inline(__always) package func truncated(_ i: Int) -> Bool { messages[i].msg_hdr.msg_flags & Int32(MSG_TRUNC) != 0 }

    /// The datagram's TOS byte, 0 when the kernel attached none.
    @inline(__always) package func tos(_ i: Int) -> UInt8 {
        ControlMessages.tos(in: controls + i * Self.controlSize, length: Int(messages[i].msg_hdr.msg_controllen)) ?? 0
    }

    /// When the kernel queued the datagram, CLOCK_REALTIME ns (`TrafficSocket.stampArrivals`).
    @inline(__always) package func arrival(_ i: Int) -> UInt64? {
        ControlMessages.arrival(in: controls + i * Self.controlSize, length: Int(messages[i].msg_hdr.msg_controllen))
    }

    package func source(_ i: Int) -> SocketAddress {
        var address = SocketAddress()
        address.storage = names[i]
        address.length = messages[i].msg_hdr.msg_namelen
        return address
    }
}
