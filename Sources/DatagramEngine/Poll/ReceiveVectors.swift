import Glibc
import CURing
import NetAddress

/// The preallocated vectors recvmsg / recvmmsg fill: per slot an mmsghdr, an iovec over a
/// payload buffer of `payloadSize` bytes, a source address and control space. Allocated once;
/// `prepare` restores the lengths the kernel overwrote before each call, which is all a call
/// needs. The pointers stay in here.
///
/// Buffer contract: after a receive, slot i's payload is valid until the next `prepare` of
/// that slot. A datagram longer than `payloadSize` arrives truncated (MSG_TRUNC): the engine
/// counts it and drops it.
final class ReceiveVectors {
    let capacity: Int
    let payloadSize: Int
    private let headers: UnsafeMutablePointer<mr_mmsghdr>
    private let iovecs: UnsafeMutablePointer<iovec>
    private let addresses: UnsafeMutablePointer<sockaddr_storage>
    private let control: UnsafeMutableRawPointer
    private let payloads: UnsafeMutableRawPointer

    init(capacity: Int, payloadSize: Int) {
        self.capacity = capacity
        self.payloadSize = payloadSize
        headers = .allocate(capacity: capacity)
        iovecs = .allocate(capacity: capacity)
        addresses = .allocate(capacity: capacity)
        addresses.initialize(repeating: sockaddr_storage(), count: capacity)
        control = .allocate(byteCount: capacity * ReceiveMetadata.capacity, alignment: 16)
        payloads = .allocate(byteCount: capacity * payloadSize, alignment: 64)
        for slot in 0..<capacity {
            iovecs[slot] = iovec(iov_base: payloads + slot * payloadSize, iov_len: payloadSize)
            headers[slot] = mr_mmsghdr()
        }
        prepare(0..<capacity)
    }

    deinit {
        headers.deallocate()
        iovecs.deallocate()
        addresses.deallocate()
        control.deallocate()
        payloads.deallocate()
    }

    func prepare(_ slots: Range<Int>) {
        for slot in slots {
            headers[slot].msg_hdr = msghdr(
                msg_name: UnsafeMutableRawPointer(addresses + slot),
                msg_namelen: socklen_t(MemoryLayout<sockaddr_storage>.size),
                msg_iov: iovecs + slot, msg_iovlen: 1,
                msg_control: control + slot * ReceiveMetadata.capacity,
                msg_controllen: ReceiveMetadata.capacity, msg_flags: 0)
            headers[slot].msg_len = 0
        }
    }

    /// Slots `slot...` as the vector recvmmsg fills.
    @inline(__always)
    func headers(from slot: Int) -> UnsafeMutablePointer<mr_mmsghdr> { headers + slot }

    /// Slot `slot`'s msghdr, for recvmsg.
    @inline(__always)
    func header(at slot: Int) -> UnsafeMutablePointer<msghdr> {
        UnsafeMutableRawPointer(headers + slot).assumingMemoryBound(to: msghdr.self)
    }

    /// recvmsg returns the length; recvmmsg writes it into the vector. Keep them in one place.
    @inline(__always)
    func setLength(_ length: Int, at slot: Int) { headers[slot].msg_len = UInt32(length) }

    /// What slot `slot` received: source, control messages, truncation and the payload.
    @inline(__always)
    func datagram(at slot: Int) -> (source: Endpoint?, metadata: ReceiveMetadata, truncated: Bool, size: Int, payload: UnsafeRawBufferPointer) {
        let header = headers[slot].msg_hdr
        let metadata = ReceiveMetadata(control: header.msg_control, length: Int(header.msg_controllen))
        let source = Endpoint(reading: addresses + slot, length: header.msg_namelen)
        // With MSG_TRUNC the length is the datagram's, which may exceed the buffer.
        let size = Int(headers[slot].msg_len)
        let payload = UnsafeRawBufferPointer(start: payloads + slot * payloadSize, count: min(size, payloadSize))
        return (source, metadata, header.msg_flags & Int32(MSG_TRUNC) != 0, size, payload)
    }
}
