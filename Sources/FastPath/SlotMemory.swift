import CBPF
import Glibc
import SystemSupport

/// The fast path's slots map (one mr_fp_slot per counter slot: the time of the last datagram
/// forwarded, the byte credit and the packet credit) mapped into this process's memory, so that reading the time and
/// exchanging the credits are plain memory operations, no system call. The BPF program writes
/// the same memory at the same time, so every access goes through the C atomics of the CBPF
/// header; that, and the mapping living exactly as long as this object, is what makes sharing
/// it between threads sound. Which slot belongs to which flow is KernelFastPath's business.
final class SlotMemory: @unchecked Sendable {
    private let slots: UnsafeMutablePointer<mr_fp_slot>
    private let length: Int
    private let count: Int

    /// Maps `count` slots of the BPF_F_MMAPABLE array `map`.
    init(map: Int32, count: Int) throws(FastPathError) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        length = (count * MemoryLayout<mr_fp_slot>.stride + page - 1) / page * page
        let address = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, map, 0)
        guard let address, address != UnsafeMutableRawPointer(bitPattern: -1) else {
            throw .failed("mapping the slots map (\(length) bytes)", code: errno)
        }
        slots = address.bindMemory(to: mr_fp_slot.self, capacity: count)
        self.count = count
    }

    deinit { munmap(slots, length) }

    /// Readies `slot` for an entry: forwarded "now" as far as idleness goes, ending at
    /// `expires` (0: never), and, when `clearCredit`, nothing to spend (bytes or packets)
    /// until the owner grants some.
    func start(_ slot: UInt32, at time: UInt64, expires: UInt64, clearCredit: Bool) {
        let state = pointer(slot)
        if clearCredit {
            _ = mr_fp_slot_exchange_credit(state, 0)
            _ = mr_fp_slot_exchange_packet_credit(state, 0)
        }
        mr_fp_slot_set_expires(state, expires)
        mr_fp_slot_set_last_forwarded(state, time)
    }

    func setExpires(_ slot: UInt32, _ time: UInt64) {
        mr_fp_slot_set_expires(pointer(slot), time)
    }

    func lastForwarded(_ slot: UInt32) -> UInt64 {
        mr_fp_slot_last_forwarded(pointer(slot))
    }

    func exchangeCredit(_ slot: UInt32, _ bytes: Int64) -> Int64 {
        mr_fp_slot_exchange_credit(pointer(slot), bytes)
    }

    func exchangePacketCredit(_ slot: UInt32, _ packets: Int64) -> Int64 {
        mr_fp_slot_exchange_packet_credit(pointer(slot), packets)
    }

    private func pointer(_ slot: UInt32) -> UnsafeMutablePointer<mr_fp_slot> {
        precondition(Int(slot) < count, "fast path slot \(slot) outside the \(count) mapped")
        return slots + Int(slot)
    }
}
