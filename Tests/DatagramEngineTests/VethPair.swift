import Foundation
import Glibc
import NetAddress
import XCTest
import DatagramEngine
import TestSupport

/// Two network namespaces joined by a veth pair whose receiving end does GRO the way veth can:
/// NAPI in its own thread (so datagrams queue up between polls and can be merged) and UDP GRO
/// forwarding on (veth hands a datagram to GRO only then, since its sending end offers TSO).
/// This is the nearest this host has to a NIC with GRO: unlike loopback, separately sent
/// datagrams are coalesced by the kernel's GRO engine, under its rules.
///
/// Made with `ip` and `ethtool` and removed with the namespaces on `remove()`. Sockets are put in
/// a namespace by creating them on a thread that has entered it (`inside`).
final class VethPair {
    let sender = Endpoint(host: "10.111.0.1", port: 0)!
    let receiver = Endpoint(host: "10.111.0.2", port: 0)!
    private let senderNamespace: NetworkNamespace
    private let receiverNamespace: NetworkNamespace

    /// Builds the pair, or throws XCTSkip when this host does not let us create network
    /// namespaces (no CAP_SYS_ADMIN, as in an unprivileged container): probed with `ip netns add`
    /// itself, before anything under test runs.
    init() throws {
        let id = getpid()
        if try Command.run(["sh", "-c", "command -v ethtool"]).status != 0 {
            throw Command.Failure(step: "command -v ethtool", output: "missing: make test-deps installs ethtool")
        }
        let namespaces = try NetworkNamespace.make("gro11-\(id)-s", "gro11-\(id)-r")
        (senderNamespace, receiverNamespace) = (namespaces[0], namespaces[1])
        let (senderName, receiverName) = (senderNamespace.name, receiverNamespace.name)
        let senderDevice = "g11s\(id % 100_000)", receiverDevice = "g11r\(id % 100_000)"
        let steps: [[String]] = [
            ["ip", "link", "add", senderDevice, "netns", senderName, "type", "veth",
             "peer", "name", receiverDevice, "netns", receiverName],
            ["ip", "-n", senderName, "addr", "add", "10.111.0.1/24", "dev", senderDevice],
            ["ip", "-n", receiverName, "addr", "add", "10.111.0.2/24", "dev", receiverDevice],
            ["ip", "-n", senderName, "link", "set", senderDevice, "up"],
            ["ip", "-n", receiverName, "link", "set", receiverDevice, "up"],
            ["ip", "netns", "exec", receiverName, "ethtool", "-K", receiverDevice, "gro", "on", "rx-udp-gro-forwarding", "on"],
            ["ip", "netns", "exec", receiverName, "sh", "-c", "echo 1 > /sys/class/net/\(receiverDevice)/threaded"],
        ]
        do {
            for step in steps { try Command.check(step) }
        } catch {
            remove()
            throw error
        }
    }

    func remove() {
        senderNamespace.remove()
        receiverNamespace.remove()
    }

    /// Runs `body` on this thread inside the sender's (or receiver's) namespace, then returns
    /// the thread to its own; sockets created in `body` stay in that namespace.
    func inside<T>(receiver: Bool, _ body: () throws -> T) throws -> T {
        try (receiver ? receiverNamespace : senderNamespace).inside(body)
    }
}
