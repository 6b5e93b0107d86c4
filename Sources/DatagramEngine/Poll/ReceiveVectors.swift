import Glibc
import CURing

/// The preallocated vectors recvmsg / recvmmsg fill: per slot an mr_mmsghdr, an iovec over a
/// payload buffer, a source address and control space. Allocated once; `prepare` restores the
/// lengths the kernel overwrote before each call, which is all a call needs.
///
/// A payload longer than `payloadSize` arrives truncated (MSG_TRUNC); the engine counts it
/// and drops it.
final class ReceiveVectors {
    static let controlSize = 64

    let capacity: Int
    let payloadSize: Int
    let headers: UnsafeMutablePointer<mr_mmsghdr>
    let iovecs: UnsafeMutablePointer<iovec>
    let addresses: UnsafeMutablePointer<sockaddr_storage>
    let control: UnsafeMutableRawPointer
    let payloads: UnsafeMutableRawPointer

    init(capacity: Int, payloadSize: Int) {
        self.capacity = capacity
        self.payloadSize = payloadSize
        headers = .allocate(capacity: capacity)
        iovecs = .allocate(capacity: capacity)
        addresses = .allocate(capacity: capacity)
        addresses.initialize(repeating: sockaddr_storage(), count: capacity)
        control = .allocate(byteCount: capacity * ReceiveVectors.controlSize, alignment: 16)
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
                msg_control: control + slot * ReceiveVectors.controlSize,
                msg_controllen: ReceiveVectors.controlSize, msg_flags: 0)
            headers[slot].msg_len = 0
        }
    }
}
