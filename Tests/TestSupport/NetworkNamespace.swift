import Foundation
import Glibc
import XCTest

/// A network namespace a test makes with `ip netns add` and removes with `remove()`: its own
/// interfaces, addresses and routes, so a test can build a host with several addresses without
/// touching the machine's own network. Its loopback is up from the start.
///
/// Sockets go into it by being created on a thread that has entered it (`inside`); a process
/// started there (Foundation's `Process`, spawned from the calling thread) runs in it too.
public final class NetworkNamespace {
    public let name: String

    /// Makes the namespace, or throws XCTSkip when this host does not let us (no CAP_SYS_ADMIN,
    /// as in an unprivileged container): probed with `ip netns add` itself, before anything
    /// under test runs. A missing `ip` is a failure under `make test` (HostRequirement).
    public init(_ name: String) throws {
        try HostRequirement.require(try Command.run(["sh", "-c", "command -v ip"]).status == 0,
                                    "no ip command: make test-deps installs iproute2")
        self.name = name
        let made = try Command.run(["ip", "netns", "add", name])
        if made.status != 0 { throw XCTSkip("this host does not allow network namespaces here: \(made.output)") }
        do {
            try run(["link", "set", "lo", "up"])
        } catch {
            remove()
            throw error
        }
    }

    /// One namespace per name, in order; when one cannot be made, those made before are
    /// removed and the error is thrown.
    public static func make(_ names: String...) throws -> [NetworkNamespace] {
        var made: [NetworkNamespace] = []
        do {
            for name in names { made.append(try NetworkNamespace(name)) }
        } catch {
            for namespace in made { namespace.remove() }
            throw error
        }
        return made
    }

    public func remove() { _ = try? Command.run(["ip", "netns", "del", name]) }

    /// `ip -n NAME ARGUMENTS...`; throws with its output when it fails.
    @discardableResult
    public func run(_ arguments: [String]) throws -> String {
        try Command.check(["ip", "-n", name] + arguments)
    }

    /// Runs `body` on this thread inside the namespace, then returns the thread to its own;
    /// sockets created and processes started in `body` stay in the namespace.
    public func inside<T>(_ body: () throws -> T) throws -> T {
        let home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)
        let target = open("/run/netns/\(name)", O_RDONLY | O_CLOEXEC)
        defer { close(home); close(target) }
        guard home >= 0, target >= 0, NetworkNamespace.setns(target, NetworkNamespace.newNet) == 0 else {
            throw Command.Failure(step: "setns into \(name)", output: String(cString: strerror(errno)))
        }
        defer { precondition(NetworkNamespace.setns(home, NetworkNamespace.newNet) == 0, "setns back home: \(errno)") }
        return try body()
    }

    private static let newNet: Int32 = 0x4000_0000  // CLONE_NEWNET
    /// glibc's setns(2), which Swift's Glibc module does not import (it sits behind _GNU_SOURCE).
    private static let setns: @convention(c) (Int32, Int32) -> Int32 = {
        unsafeBitCast(dlsym(dlopen(nil, RTLD_NOW), "setns")!, to: (@convention(c) (Int32, Int32) -> Int32).self)
    }()
}
