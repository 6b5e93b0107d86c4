import Foundation
import Glibc
import NetAddress

/// Three network namespaces in a row, the way a relay sits between a client and a peer:
/// client ns (device "c") - veth - relay ns ("rc" | "rp") - veth - peer ns ("p"). Each link
/// has an IPv4 /24 and an IPv6 /64 (no duplicate address detection, so addresses are usable
/// at once): 10.71.1.0/24 and fd71:1::/64 between client and relay, 10.71.2.0/24 and
/// fd71:2::/64 between relay and peer; the relay's side is .1 / ::1, the other side .2 / ::2.
///
/// A test fixture (FastPathTests drive the fast path itself in it, EndToEndTests the relay):
/// made with `ip`, removed with its namespaces by `remove()`. Sockets are put in a namespace by
/// creating them inside `inside(_:)`; the fast path is attached there too. The devices are
/// made inside their namespaces, so their short names never meet the host's.
public final class NamespaceTriangle {
    public enum Side: String, Sendable { case client, relay, peer }

    /// One family's addresses: the client's, the relay's on the client's link (`front`) and on
    /// the peer's link (`back`), the peer's, and the peer link's prefix.
    public struct Family: Sendable {
        public let client: String
        public let front: String
        public let back: String
        public let peer: String
        public let peerSubnet: String

        /// `host` as a command line writes it beside a port.
        public static func bracketed(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }
    }

    public static let ipv4 = Family(client: "10.71.1.2", front: "10.71.1.1", back: "10.71.2.1", peer: "10.71.2.2", peerSubnet: "10.71.2.0/24")
    public static let ipv6 = Family(client: "fd71:1::2", front: "fd71:1::1", back: "fd71:2::1", peer: "fd71:2::2", peerSubnet: "fd71:2::/64")
    /// The devices: the client's, the relay's two, the peer's.
    public static let clientDevice = "c"
    public static let frontDevice = "rc"
    public static let backDevice = "rp"
    public static let peerDevice = "p"

    private let namespaces: [Side: NetworkNamespace]

    /// Fails (or skips outside `make test`) when not root: namespaces and BPF both need it.
    /// `tag` names the namespaces (with the process id), so that fixtures of different tests
    /// can tell theirs apart.
    public init(tag: String = "fp30") throws {
        try HostRequirement.require(getuid() == 0, "the fast path tests need root (network namespaces, BPF)")
        try HostRequirement.requireTools(["/usr/sbin/ip", "/usr/sbin/ethtool"])
        let id = getpid()
        let made = try NetworkNamespace.make("\(tag)-\(id)-c", "\(tag)-\(id)-r", "\(tag)-\(id)-p")
        namespaces = [.client: made[0], .relay: made[1], .peer: made[2]]
        let (client, relay, peer) = (made[0], made[1], made[2])
        do {
            try Command.check(["ip", "link", "add", "c", "netns", client.name, "type", "veth", "peer", "name", "rc",
                                        "netns", relay.name])
            try Command.check(["ip", "link", "add", "rp", "netns", relay.name, "type", "veth", "peer", "name", "p",
                                        "netns", peer.name])
            for (namespace, device, v4, v6) in [(client, "c", "10.71.1.2/24", "fd71:1::2/64"), (relay, "rc", "10.71.1.1/24", "fd71:1::1/64"),
                                                (relay, "rp", "10.71.2.1/24", "fd71:2::1/64"), (peer, "p", "10.71.2.2/24", "fd71:2::2/64")] {
                try namespace.run(["addr", "add", v4, "dev", device])
                try namespace.run(["addr", "add", v6, "dev", device, "nodad"])
                try namespace.run(["link", "set", device, "up"])
            }
        } catch {
            remove()
            throw error
        }
    }

    public func remove() {
        for namespace in namespaces.values { namespace.remove() }
    }

    /// Turns UDP transmit checksum offload on or off on every device: on, a local sender leaves
    /// the checksum to the kernel (CHECKSUM_PARTIAL); off, it computes it itself.
    public func setChecksumOffload(_ on: Bool) throws {
        try setChecksumOffload(senders: on, relay: on)
    }

    /// Transmit checksum offload on the client's and the peer's devices (`senders`: on, their
    /// datagrams reach the relay with the checksum left to the kernel) and on the relay's two
    /// (`relay`: off, the kernel finishes a checksum left to it as the datagram leaves the
    /// relay, and the receiver checks what it finished; on, the datagram arrives with the
    /// checksum still left to finish, which a receiver in this host takes as good).
    public func setChecksumOffload(senders: Bool, relay: Bool) throws {
        for (side, device, on) in [(Side.client, "c", senders), (.relay, "rc", relay), (.relay, "rp", relay), (.peer, "p", senders)] {
            try Command.check(["ip"] + execute(in: side, ["ethtool", "-K", device, "tx", on ? "on" : "off"]))
        }
    }

    /// Sets the MTU of every device.
    public func setMTU(_ mtu: Int) throws {
        for (side, device) in [(Side.client, "c"), (.relay, "rc"), (.relay, "rp"), (.peer, "p")] {
            try namespaces[side]!.run(["link", "set", device, "mtu", "\(mtu)"])
        }
    }

    /// UDP datagrams `side`'s namespace dropped for a bad checksum, IPv4 and IPv6 together
    /// (UdpInCsumErrors and Udp6InCsumErrors).
    public func udpChecksumErrors(in side: Side) throws -> Int {
        try inside(side) {
            let ipv4 = try Self.counter("InCsumErrors", table: "Udp:", in: Self.contents(of: "/proc/thread-self/net/snmp"))
            let ipv6 = try Self.counter("Udp6InCsumErrors", table: nil, in: Self.contents(of: "/proc/thread-self/net/snmp6"))
            return ipv4 + ipv6
        }
    }

    /// A counter of /proc/net/snmp (a line of names after `table`, then a line of values) or,
    /// with `table` nil, of /proc/net/snmp6 (a name and its value on each line).
    private static func counter(_ name: String, table: String?, in text: String) throws -> Int {
        let lines = text.split(separator: "\n").map { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init) }
        if let table {
            let rows = lines.filter { $0.first == table }
            if rows.count == 2, let index = rows[0].firstIndex(of: name), let value = Int(rows[1][index]) { return value }
        } else if let row = lines.first(where: { $0.first == name }), row.count == 2, let value = Int(row[1]) {
            return value
        }
        throw Command.Failure(step: "reading \(name)", output: text)
    }

    private static func contents(of path: String) throws -> String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Command.Failure(step: "open \(path)", output: String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var text: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(descriptor, &chunk, chunk.count)
            guard count > 0 else { break }
            text += chunk[0..<count]
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Turns GRO on or off on the client's and the peer's devices: native XDP on the relay's
    /// devices redirects frames into their veth peers, and veth delivers a redirected frame
    /// only when the receiving end has GRO on (or an XDP program of its own).
    public func setOuterGRO(_ on: Bool) throws {
        for (side, device) in [(Side.client, "c"), (.peer, "p")] {
            try Command.check(["ip"] + execute(in: side, ["ethtool", "-K", device, "gro", on ? "on" : "off"]))
        }
    }

    /// Runs `command` inside `side`'s namespace (`sysctl -w ...`, `ip link set ...`) to its end;
    /// throws when it fails.
    @discardableResult
    public func run(in side: Side, _ command: [String]) throws -> String {
        try Command.check(["ip"] + execute(in: side, command))
    }

    /// `ip netns exec` into `side`'s namespace: the argument list for a child process.
    public func execute(in side: Side, _ command: [String]) -> [String] {
        ["netns", "exec", namespaces[side]!.name] + command
    }

    /// Runs `body` on this thread inside `side`'s namespace, then returns the thread to its
    /// own; sockets created and interfaces looked up in `body` belong to that namespace.
    public func inside<T>(_ side: Side, _ body: () throws -> T) throws -> T {
        try namespaces[side]!.inside(body)
    }
}
