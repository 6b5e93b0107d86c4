import Foundation
import Glibc
import NetAddress
import XCTest
import DatagramEngine

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
    private let senderNamespace: String
    private let receiverNamespace: String

    /// Builds the pair, or throws XCTSkip when this host does not let us create network
    /// namespaces (no CAP_SYS_ADMIN, as in an unprivileged container): probed with `ip netns add`
    /// itself, before anything under test runs.
    init() throws {
        let id = getpid()
        senderNamespace = "gro11-\(id)-s"
        receiverNamespace = "gro11-\(id)-r"
        for tool in ["ip", "ethtool"] where try VethPair.run(["sh", "-c", "command -v \(tool)"]).status != 0 {
            throw VethError(step: "command -v \(tool)", output: "missing: make test-deps installs iproute2 and ethtool")
        }
        let probe = try VethPair.run(["ip", "netns", "add", senderNamespace])
        if probe.status != 0 {
            throw XCTSkip("this host does not allow network namespaces here: \(probe.output)")
        }
        let senderDevice = "g11s\(id % 100_000)", receiverDevice = "g11r\(id % 100_000)"
        let steps: [[String]] = [
            ["ip", "netns", "add", receiverNamespace],
            ["ip", "link", "add", senderDevice, "netns", senderNamespace, "type", "veth",
             "peer", "name", receiverDevice, "netns", receiverNamespace],
            ["ip", "-n", senderNamespace, "addr", "add", "10.111.0.1/24", "dev", senderDevice],
            ["ip", "-n", receiverNamespace, "addr", "add", "10.111.0.2/24", "dev", receiverDevice],
            ["ip", "-n", senderNamespace, "link", "set", senderDevice, "up"],
            ["ip", "-n", receiverNamespace, "link", "set", receiverDevice, "up"],
            ["ip", "netns", "exec", receiverNamespace, "ethtool", "-K", receiverDevice, "gro", "on", "rx-udp-gro-forwarding", "on"],
            ["ip", "netns", "exec", receiverNamespace, "sh", "-c", "echo 1 > /sys/class/net/\(receiverDevice)/threaded"],
        ]
        for step in steps {
            let result = try VethPair.run(step)
            if result.status != 0 {
                remove()
                throw VethError(step: step.joined(separator: " "), output: result.output)
            }
        }
    }

    func remove() {
        for namespace in [senderNamespace, receiverNamespace] {
            _ = try? VethPair.run(["ip", "netns", "del", namespace])
        }
    }

    /// Runs `body` on this thread inside the sender's (or receiver's) namespace, then returns
    /// the thread to its own; sockets created in `body` stay in that namespace.
    func inside<T>(receiver: Bool, _ body: () throws -> T) throws -> T {
        let namespace = receiver ? receiverNamespace : senderNamespace
        let home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)
        let target = open("/run/netns/\(namespace)", O_RDONLY | O_CLOEXEC)
        defer { close(home); close(target) }
        guard home >= 0, target >= 0, VethPair.setns(target, VethPair.newNet) == 0 else {
            throw VethError(step: "setns into \(namespace)", output: String(cString: strerror(errno)))
        }
        defer { precondition(VethPair.setns(home, VethPair.newNet) == 0, "setns back home: \(errno)") }
        return try body()
    }

    struct VethError: Error, CustomStringConvertible {
        let step: String
        let output: String
        var description: String { "\(step): \(output)" }
    }

    private static let newNet: Int32 = 0x4000_0000  // CLONE_NEWNET
    /// glibc's setns(2), which Swift's Glibc module does not import (it sits behind _GNU_SOURCE).
    private static let setns: @convention(c) (Int32, Int32) -> Int32 = {
        unsafeBitCast(dlsym(dlopen(nil, RTLD_NOW), "setns")!, to: (@convention(c) (Int32, Int32) -> Int32).self)
    }()

    private static func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
