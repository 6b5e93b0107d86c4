import Glibc
import CLoadGen

/// Reads the TOS / Traffic Class byte out of the ancillary data of one received datagram,
/// walking it with the C library's own CMSG macros (through the load generator's C shim).
public enum ControlMessages {
    /// The TOS byte from an IP_TOS (IPv4: one byte) or IPV6_TCLASS (IPv6: an int) message,
    /// or nil when neither is present. Never reads outside `length` bytes.
    @inline(__always)
    public static func tos(in control: UnsafeRawPointer, length: Int) -> UInt8? {
        let control = UnsafeMutableRawPointer(mutating: control)
        var cmsg = lg_cmsg_next(control, length, nil)
        while let current = cmsg {
            let level = current.pointee.cmsg_level
            let type = current.pointee.cmsg_type
            let dataLength = lg_cmsg_data_length(current)
            let data = UnsafeRawPointer(lg_cmsg_data(current)!)
            if level == Int32(IPPROTO_IP), type == Int32(IP_TOS), dataLength >= 1 {
                return data.load(as: UInt8.self)
            }
            if level == Int32(IPPROTO_IPV6), type == Int32(IPV6_TCLASS), dataLength >= 4 {
                return UInt8(truncatingIfNeeded: data.loadUnaligned(as: Int32.self))
            }
            cmsg = lg_cmsg_next(control, length, current)
        }
        return nil
    }

    /// When the kernel received the datagram (SO_TIMESTAMPNS), in CLOCK_REALTIME nanoseconds, or
    /// nil when no stamp came. Never reads outside `length` bytes.
    @inline(__always)
    public static func arrival(in control: UnsafeRawPointer, length: Int) -> UInt64? {
        let control = UnsafeMutableRawPointer(mutating: control)
        var cmsg = lg_cmsg_next(control, length, nil)
        while let current = cmsg {
            if current.pointee.cmsg_level == SOL_SOCKET, current.pointee.cmsg_type == lg_scm_timestampns(),
               lg_cmsg_data_length(current) >= MemoryLayout<timespec>.size {
                let stamp = UnsafeRawPointer(lg_cmsg_data(current)!).loadUnaligned(as: timespec.self)
                // A datagram queued before stamping was switched on carries a zero stamp.
                guard stamp.tv_sec > 0 else { return nil }
                return UInt64(stamp.tv_sec) &* 1_000_000_000 &+ UInt64(stamp.tv_nsec)
            }
            cmsg = lg_cmsg_next(control, length, current)
        }
        return nil
    }
}
