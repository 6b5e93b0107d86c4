import CBPF
import NetAddress

/// The exact 5-tuple of an arriving UDP datagram: who sent it (`source`) to which of the
/// relay's addresses (`destination`). Both of one family: an IPv4 address is kept in
/// IPv4-mapped form by Endpoint and goes to the kernel as IPv4. `channel` (0x4000-0x7FFF) keys
/// ChannelData of one channel: a TURN client's 5-tuple carries all its channels; 0 for the rest.
public struct FlowKey: Hashable, Sendable, CustomStringConvertible {
    public let source: Endpoint
    public let destination: Endpoint
    public let channel: UInt16

    public init(source: Endpoint, destination: Endpoint, channel: UInt16 = 0) {
        self.source = source
        self.destination = destination
        self.channel = channel
    }

    public var description: String { channel == 0 ? "\(source) -> \(destination)" : "\(source) -> \(destination) channel \(channel)" }

    var isSameFamily: Bool { source.isIPv4 == destination.isIPv4 }

    /// The map's key: family, channel, ports and addresses in network order.
    var kernelKey: mr_fp_key {
        var key = mr_fp_key()
        key.family = source.isIPv4 ? 4 : 6
        key.channel = channel.bigEndian
        key.source_port = source.port.bigEndian
        key.destination_port = destination.port.bigEndian
        withUnsafeMutableBytes(of: &key.source) { FlowKey.write(source, into: $0) }
        withUnsafeMutableBytes(of: &key.destination) { FlowKey.write(destination, into: $0) }
        return key
    }

    /// An address as the packet carries it: 4 bytes for IPv4 (the rest zero), else 16.
    static func write(_ endpoint: Endpoint, into bytes: UnsafeMutableRawBufferPointer) {
        var address = endpoint.in6
        withUnsafeBytes(of: &address) { raw in
            if endpoint.isIPv4 {
                bytes.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[12..<16]))
            } else {
                bytes.copyMemory(from: raw)
            }
        }
    }
}
