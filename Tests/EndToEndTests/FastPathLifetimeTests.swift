import Foundation
import Glibc
@testable import LoadGen
import TestSupport
import XCTest

/// The kernel fast path's entries live no longer than the relay would let their flows live,
/// even when the relay cannot act: stopped (SIGSTOP), a session's idle timeout still ends its
/// pair in the kernel; killed (SIGKILL), nothing is forwarded at all, and a relay started
/// after it begins with no entries. Through the real relay in namespaces (FastPathNetwork).
final class FastPathLifetimeTests: XCTestCase {
    /// A session with a 2 s idle timeout, its pair in the kernel, and the relay stopped: a
    /// datagram every 100 ms for 1 s still arrives (only the kernel can carry it), and after
    /// 3 s of silence one does not (the entry is idle past its timeout; the stopped relay's
    /// socket holds it).
    func testAnIdleTimeoutEndsForwardingWhileTheRelayIsStopped() throws {
        let network = try FastPathNetwork()
        defer { network.remove() }
        let relay = try network.startRelay(fastPath: "tc", [])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let family = FastPathNetwork.ipv4
        let a = try network.inside(.client) { try IndependentPeer(host: family.client) }
        let b = try network.inside(.peer) { try IndependentPeer(host: family.peer) }
        let session = try network.latchedSession(relay, #"{"idle_timeout_seconds": 2}"#, a: a, b: b)
        let before = try network.kernel(relay)
        relay.process.signal(SIGSTOP)
        var stopped = true
        defer { if stopped { relay.process.signal(SIGCONT) } }
        for number in 0..<10 {
            try a.send([0x51, UInt8(number)], tos: 0, to: family.front, port: session.ports[0])
            usleep(100_000)
        }
        XCTAssertEqual(b.receive(expected: 10, seconds: 2).map(\.bytes), (0..<10).map { [0x51, UInt8($0)] },
                       "datagrams sent while the relay was stopped")
        usleep(3_000_000)
        try a.send([0x52], tos: 0, to: family.front, port: session.ports[0])
        XCTAssertEqual(b.receive(expected: 1, seconds: 1).map(\.bytes), [], "forwarded after 3 s idle with a 2 s idle timeout")
        relay.process.signal(SIGCONT)
        stopped = false
        let after = try network.kernel(relay)
        XCTAssertEqual(after.datagrams - before.datagrams, 10, "datagrams the kernel carried")
        XCTAssertEqual(after.handedBack("idle") - before.handedBack("idle"), 1, "\(after.handedBack)")
    }

    /// A forward-rule client the kernel carries, and the relay killed: the client's next
    /// datagram does not reach the upstream (the program left with the process that held its
    /// link). A relay started after it has no entries, and the client is new to it.
    func testAfterKillNineNothingIsForwarded() throws {
        let network = try FastPathNetwork()
        defer { network.remove() }
        let family = FastPathNetwork.ipv4
        let upstream = try network.inside(.peer) { try IndependentPeer(host: family.peer) }
        let rule = ["--forward", "\(family.front):4000=\(family.peer):\(upstream.port)"]
        let relay = try network.startRelay(fastPath: "tc", rule)
        let client = try network.inside(.client) { try IndependentPeer(host: family.client) }
        let established = try FastPathRelayTests.pingPong(client, to: family.front, port: 4000, upstream, perMark: 2)
        XCTAssertEqual(established.back.map(\.count), [2, 2, 2, 2], "the client's datagrams before the kill")
        XCTAssertEqual(try network.kernel(relay).datagrams, 2 * 8 - 1, "the kernel carried the client before the kill")

        relay.process.signal(SIGKILL)
        XCTAssertEqual(relay.process.waitForExit(timeout: 10), 128 + SIGKILL)
        try client.send([0x4B], tos: 0, to: family.front, port: 4000)
        XCTAssertEqual(upstream.receive(expected: 1, seconds: 1).map(\.bytes), [], "forwarded after kill -9")

        let next = try network.startRelay(fastPath: "tc", rule)
        defer { XCTAssertEqual(next.stop(), 0) }
        let fresh = try network.kernel(next)
        XCTAssertEqual(fresh.entries, 0, "entries a new relay found")
        XCTAssertEqual(fresh.datagrams, 0)
        try client.send([0x4C], tos: 0, to: family.front, port: 4000)
        XCTAssertEqual(upstream.receive(expected: 1).map(\.bytes), [[0x4C]], "the client through the new relay")
        XCTAssertEqual(try network.kernel(next).datagrams, 0, "the kernel carried a client's first datagram to a new relay")
    }
}
