import Glibc

/// Reads the TOS / Traffic Class byte out of the ancillary data of one received datagram.
///
/// Swift cannot import the CMSG_* macros, so the layout is walked by hand. On 64-bit Linux a
/// `cmsghdr` is 16 bytes (`size_t cmsg_len`, `int cmsg_level`, `int cmsg_type`) and both
/// headers and data are aligned to 8 bytes (`CMSG_ALIGN` is `sizeof(size_t)`).
public enum ControlMessages {
    public static let headerSize = 16
    public static let alignment = 8

    /// The TOS byte from an IP_TOS (IPv4: one byte) or IPV6_TCLASS (IPv6: an int) message,
    /// or nil when neither is present. Never reads outside `length` bytes.
    @inline(__always)
    public static func tos(in control: UnsafeRawPointer, length: Int) -> UInt8? {
        var offset = 0
        while offset + headerSize <= length {
            let cmsgLen = Int(control.loadUnaligned(fromByteOffset: offset, as: UInt.self))
            guard cmsgLen >= headerSize, offset + cmsgLen <= length else { return nil }
            let level = control.loadUnaligned(fromByteOffset: offset + 8, as: Int32.self)
            let type = control.loadUnaligned(fromByteOffset: offset + 12, as: Int32.self)
            let dataLength = cmsgLen - headerSize
            if level == Int32(IPPROTO_IP), type == Int32(IP_TOS), dataLength >= 1 {
                return control.load(fromByteOffset: offset + headerSize, as: UInt8.self)
            }
            if level == Int32(IPPROTO_IPV6), type == Int32(IPV6_TCLASS), dataLength >= 4 {
                return UInt8(truncatingIfNeeded: control.loadUnaligned(fromByteOffset: offset + headerSize, as: Int32.self))
            }
            offset += (cmsgLen + alignment - 1) & ~(alignment - 1)
        }
        return nil
    }
}
