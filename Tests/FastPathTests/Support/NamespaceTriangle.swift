import Foundation
import Glibc
import NetAddress
import TestSupport

/// Three network namespaces in a row, the way a relay sits between a client and a peer:
/// client ns (device "c") - veth - relay ns ("rc" | "rp") - veth - peer ns ("p"). Each link
/// has an IPv4 /24 and an IPv6 /64 (no duplicate address detection, so addresses are usable
/// at once): 10.71.1.0/24 and fd71:1::/64 between client and relay, 10.71.2.0/24 and
/// fd71:2::/64 between relay and peer; the relay's side is .1 / ::1, the other side .2 / ::2.
///
/// A test fixture: made with `ip`, removed with its namespaces by `remove()`. Sockets are put
/// in a namespace by creating them inside `inside(_:)`; the fast path is attached there too.
final class NamespaceTriangle {
    enum Side: String { case client, relay, peer }

    private let names: [Side: String]

    /// Fails (or skips outside `make test`) when not root: namespaces and BPF both need it.
    init() throws {
        try HostRequirement.require(getuid() == 0, "the fast path tests need root (network namespaces, BPF)")
        try HostRequirement.requireTools(["/usr/sbin/ip", "/usr/sbin/ethtool"])
        let id = getpid()
        names = [.client: "fp30-\(id)-c", .relay: "fp30-\(id)-r", .peer: "fp30-\(id)-p"]
        let (client, relay, peer) = (names[.client]!, names[.relay]!, names[.peer]!)
        var steps: [[String]] = [
            ["ip", "netns", "add", client], ["ip", "netns", "add", relay], ["ip", "netns", "add", peer],
            ["ip", "link", "add", "c", "netns", client, "type", "veth", "peer", "name", "rc", "netns", relay],
            ["ip", "link", "add", "rp", "netns", relay, "type", "veth", "peer", "name", "p", "netns", peer],
        ]
        for (namespace, device, v4, v6) in [(client, "c", "10.71.1.2/24", "fd71:1::2/64"), (relay, "rc", "10.71.1.1/24", "fd71:1::1/64"),
                                            (relay, "rp", "10.71.2.1/24", "fd71:2::1/64"), (peer, "p", "10.71.2.2/24", "fd71:2::2/64")] {
            steps += [["ip", "-n", namespace, "addr", "add", v4, "dev", device],
                      ["ip", "-n", namespace, "addr", "add", v6, "dev", device, "nodad"],
                      ["ip", "-n", namespace, "link", "set", device, "up"]]
        }
        steps += [["ip", "-n", relay, "link", "set", "lo", "up"]]
        for step in steps {
            do { try Self.run(step) } catch { remove(); throw error }
        }
    }

    func remove() {
        for name in names.values { _ = try? ChildProcess.run("/usr/sbin/ip", ["netns", "del", name]) }
    }

    /// Turns UDP transmit checksum offload on or off on every device: on, a local sender leaves
    /// the checksum to the kernel (CHECKSUM_PARTIAL); off, it computes it itself.
    func setChecksumOffload(_ on: Bool) throws {
        for (side, device) in [(Side.client, "c"), (.relay, "rc"), (.relay, "rp"), (.peer, "p")] {
            try Self.run(["ip", "netns", "exec", names[side]!, "ethtool", "-K", device, "tx", on ? "on" : "off"])
        }
    }

    /// `ip netns exec` into `side`'s namespace: the argument list for a child process.
    func execute(in side: Side, _ command: [String]) -> [String] {
        ["netns", "exec", names[side]!] + command
    }

    /// Runs `body` on this thread inside `side`'s namespace, then returns the thread to its
    /// own; sockets created and interfaces looked up in `body` belong to that namespace.
    func inside<T>(_ side: Side, _ body: () throws -> T) throws -> T {
        let home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)
        let target = open("/run/netns/\(names[side]!)", O_RDONLY | O_CLOEXEC)
        defer { close(home); close(target) }
        guard home >= 0, target >= 0, Self.setns(target, Self.newNet) == 0 else {
            throw StepFailure(description: "setns into \(names[side]!): errno \(errno)")
        }
        defer { precondition(Self.setns(home, Self.newNet) == 0, "setns back home: \(errno)") }
        return try body()
    }

    private static func run(_ arguments: [String]) throws {
        let (status, output) = try ChildProcess.run("/usr/sbin/ip", Array(arguments.dropFirst()))
        guard status == 0 else {
            throw StepFailure(description: "\(arguments.joined(separator: " ")): \(output)")
        }
    }

    /// A command that set the triangle up failed, with its output.
    struct StepFailure: Error, CustomStringConvertible {
        let description: String
    }

    private static let newNet: Int32 = 0x4000_0000  // CLONE_NEWNET
    /// glibc's setns(2), which Swift's Glibc module does not import (it sits behind _GNU_SOURCE).
    private static let setns: @convention(c) (Int32, Int32) -> Int32 = {
        unsafeBitCast(dlsym(dlopen(nil, RTLD_NOW), "setns")!, to: (@convention(c) (Int32, Int32) -> Int32).self)
    }()
}
