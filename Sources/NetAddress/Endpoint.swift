import Glibc

/// An IP address and UDP port, IPv4 or IPv6, in one fixed-size value that is cheap to copy,
/// compare and hash: the relay keys its tables by it on the packet path. What the packet path
/// calls per datagram is @inlinable: this is a module of its own (the leaf every other module
/// shares), and a call across modules that cannot be inlined costs as much as the work.
///
/// IPv4 addresses are stored in their IPv4-mapped IPv6 form (::ffff:a.b.c.d), so a peer seen
/// on an IPv4 socket and the same peer seen on a dual-stack socket are one key.
public struct Endpoint: Hashable, Sendable, CustomStringConvertible {
    /// The 16 address bytes in network order, as two big-endian halves.
    public var high: UInt64
    public var low: UInt64
    /// Port in host byte order.
    public var port: UInt16
    /// IPv6 scope (interface index) for link-local addresses; 0 otherwise.
    public var scope: UInt32

    // Written out rather than synthesized, so that they inline into other modules: the relay
    // compares and hashes endpoints per datagram (send runs, forward-rule clients, TURN 5-tuples).
    @inlinable
    public static func == (a: Endpoint, b: Endpoint) -> Bool {
        a.high == b.high && a.low == b.low && a.port == b.port && a.scope == b.scope
    }

    @inlinable
    public func hash(into hasher: inout Hasher) {
        hasher.combine(high)
        hasher.combine(low)
        hasher.combine(port)
        hasher.combine(scope)
    }

    @usableFromInline static let mappedPrefix: UInt64 = 0x0000_FFFF  // the upper half of low for ::ffff:0:0/96

    @inlinable
    public init(high: UInt64, low: UInt64, port: UInt16, scope: UInt32 = 0) {
        self.high = high
        self.low = low
        self.port = port
        self.scope = scope
    }

    /// An IPv4 endpoint from a host-order address, e.g. 0x7F00_0001 for 127.0.0.1.
    @inlinable
    public init(ipv4 address: UInt32, port: UInt16) {
        self.init(high: 0, low: (Endpoint.mappedPrefix << 32) | UInt64(address), port: port)
    }

    /// Parses an IPv4 or IPv6 literal (no names: a relay must not depend on DNS at start-up).
    public init?(host: String, port: UInt16) {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            self.init(ipv4: UInt32(bigEndian: v4.s_addr), port: port)
            return
        }
        var text = host
        var scope: UInt32 = 0
        if let percent = host.firstIndex(of: "%") {
            text = String(host[..<percent])
            let name = String(host[host.index(after: percent)...])
            scope = UInt32(name) ?? if_nametoindex(name)
            if scope == 0 { return nil }
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        self.init(v6, port: port, scope: scope)
    }

    /// Parses `A.B.C.D:PORT` or `[V6]:PORT`.
    public init?(parsing text: String) {
        guard let parts = Endpoint.split(text), let port = UInt16(parts.port) else { return nil }
        self.init(host: String(parts.host), port: port)
    }

    /// Splits `HOST:PORT` or `[HOST]:PORT` into its two texts, checking neither; nil when the
    /// shape is wrong. An unbracketed host with a colon is refused: "::1:80" is ambiguous.
    public static func split(_ text: String) -> (host: Substring, port: Substring, bracketed: Bool)? {
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            return (text[text.index(after: text.startIndex)..<close], rest.dropFirst(), true)
        }
        guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { return nil }
        return (text[..<colon], text[text.index(after: colon)...], false)
    }

    @inlinable
    public init(_ address: in6_addr, port: UInt16, scope: UInt32) {
        var address = address
        let (high, low) = withUnsafeBytes(of: &address) { raw in
            (UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
             UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }
        self.init(high: high, low: low, port: port, scope: scope)
    }

    /// True for IPv4 addresses (kept in IPv4-mapped form).
    @inlinable
    public var isIPv4: Bool { high == 0 && (low >> 32) == Endpoint.mappedPrefix }

    /// The IPv4 address in host order; meaningful only when `isIPv4`.
    @inlinable
    public var ipv4Address: UInt32 { UInt32(truncatingIfNeeded: low) }

    @inlinable
    public var isWildcard: Bool { (high == 0 && low == 0) || (isIPv4 && ipv4Address == 0) }

    @inlinable
    public var isLoopback: Bool {
        isIPv4 ? (ipv4Address >> 24) == 127 : (high == 0 && low == 1)
    }

    @inlinable
    public var in6: in6_addr {
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { raw in
            raw.storeBytes(of: high.bigEndian, toByteOffset: 0, as: UInt64.self)
            raw.storeBytes(of: low.bigEndian, toByteOffset: 8, as: UInt64.self)
        }
        return address
    }

    /// The address alone, without the port, as text.
    public var hostText: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        if isIPv4 {
            var v4 = in_addr(s_addr: ipv4Address.bigEndian)
            inet_ntop(AF_INET, &v4, &buffer, socklen_t(buffer.count))
        } else {
            var v6 = in6
            inet_ntop(AF_INET6, &v6, &buffer, socklen_t(buffer.count))
        }
        let text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return scope != 0 && !isIPv4 ? "\(text)%\(scope)" : text
    }

    public var description: String { isIPv4 ? "\(hostText):\(port)" : "[\(hostText)]:\(port)" }

    /// Writes this endpoint as the socket address a socket of `family` expects (an IPv4 peer on
    /// an IPv6 socket becomes ::ffff:a.b.c.d). Returns the address length, or 0 when an IPv6
    /// peer cannot be reached from an IPv4 socket.
    @inlinable
    public func write(to storage: UnsafeMutablePointer<sockaddr_storage>, family: Int32) -> socklen_t {
        if family == AF_INET {
            guard isIPv4 else { return 0 }
            return UnsafeMutableRawPointer(storage).withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                $0.pointee = sockaddr_in()
                $0.pointee.sin_family = sa_family_t(AF_INET)
                $0.pointee.sin_port = port.bigEndian
                $0.pointee.sin_addr = in_addr(s_addr: ipv4Address.bigEndian)
                return socklen_t(MemoryLayout<sockaddr_in>.size)
            }
        }
        return UnsafeMutableRawPointer(storage).withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
            $0.pointee = sockaddr_in6()
            $0.pointee.sin6_family = sa_family_t(AF_INET6)
            $0.pointee.sin6_port = port.bigEndian
            $0.pointee.sin6_addr = in6
            $0.pointee.sin6_scope_id = scope
            return socklen_t(MemoryLayout<sockaddr_in6>.size)
        }
    }

    /// Reads a socket address the kernel wrote; nil for families other than IPv4 and IPv6.
    /// Inlined: once per received datagram, and the IPv4 case is a few loads.
    @inlinable @inline(__always)
    public init?(reading address: UnsafeRawPointer, length: socklen_t) {
        let family = Int32(address.load(as: sa_family_t.self))
        if family == AF_INET, length >= MemoryLayout<sockaddr_in>.size {
            let v4 = address.loadUnaligned(as: sockaddr_in.self)
            self.init(ipv4: UInt32(bigEndian: v4.sin_addr.s_addr), port: UInt16(bigEndian: v4.sin_port))
        } else if family == AF_INET6, length >= MemoryLayout<sockaddr_in6>.size {
            let v6 = address.loadUnaligned(as: sockaddr_in6.self)
            self.init(v6.sin6_addr, port: UInt16(bigEndian: v6.sin6_port), scope: v6.sin6_scope_id)
            if isIPv4 { scope = 0 }
        } else {
            return nil
        }
    }
}
