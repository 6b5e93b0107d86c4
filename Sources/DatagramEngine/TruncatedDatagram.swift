/// A datagram longer than the engine's maximum size, which it counted as truncated and
/// dropped: its real size (the kernel reports it with MSG_TRUNC) and where it came from, so an
/// operator can tell a misconfigured limit from an attack. The engine keeps the latest one; the
/// relay logs it off the packet path, rate-limited.
public struct TruncatedDatagram: Sendable, Equatable {
    public var size: Int
    public var sourcePort: UInt16

    public init(size: Int, sourcePort: UInt16) {
        self.size = size
        self.sourcePort = sourcePort
    }
}
