import FastPath
import NetAddress
import SystemSupport
import XCTest

/// An entry with an idle timeout forwards while datagrams keep coming, and hands its flow back
/// once the flow has been quiet longer than the timeout, with nobody in user space doing
/// anything; it forwards again only after a new install. The time of the last datagram
/// forwarded is read from memory shared with the kernel.
final class IdleTimeoutTests: XCTestCase {
    func testQuietFlowIsHandedBackUntilInstalledAgain() throws {
        let harness = try FastPathHarness(ipv6: false)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        let timeout = MonotonicClock.nanoseconds(0.5)
        let beforeInstall = MonotonicClock.now()
        try fastPath.put(harness.toPeer, harness.entryToPeer(routed: true, idleTimeout: timeout))
        let installed = try XCTUnwrap(fastPath.lastForwarded(harness.toPeer))
        XCTAssertTrue((beforeInstall...MonotonicClock.now()).contains(installed), "install time \(installed)")

        // Datagrams closer together than the timeout, for longer than it in all.
        var last = installed
        for number in UInt8(1)...6 {
            MonotonicClock.sleep(until: MonotonicClock.now() + MonotonicClock.nanoseconds(0.1))
            let sent = MonotonicClock.now()
            try harness.client.send([number], to: harness.relayClientSide.local)
            XCTAssertEqual(harness.peer.receive()?.payload, [number], "datagram \(number) within the timeout")
            let forwarded = try XCTUnwrap(fastPath.lastForwarded(harness.toPeer))
            XCTAssertTrue((sent...MonotonicClock.now()).contains(forwarded), "datagram \(number): last forwarded \(forwarded), sent \(sent)")
            XCTAssertGreaterThan(forwarded, last)
            last = forwarded
        }

        MonotonicClock.sleep(until: last + timeout + MonotonicClock.nanoseconds(0.2))
        for number in UInt8(7)...8 {
            try harness.client.send([number], to: harness.relayClientSide.local)
            XCTAssertEqual(harness.relayClientSide.receive()?.payload, [number], "datagram \(number) after the quiet time")
        }
        XCTAssertNil(harness.peer.receive(timeout: 0.05))
        XCTAssertEqual(fastPath.lastForwarded(harness.toPeer), last, "a datagram handed back is not one forwarded")

        try fastPath.put(harness.toPeer, harness.entryToPeer(routed: true, idleTimeout: timeout))
        try harness.client.send([9], to: harness.relayClientSide.local)
        XCTAssertEqual(harness.peer.receive()?.payload, [9], "forwarded again once installed again")
        let counters = try XCTUnwrap(fastPath.counters(harness.toPeer))
        XCTAssertEqual(counters.packets, 7)
        XCTAssertEqual(counters.handedBack, [.idle: 2])
    }

    /// Without an idle timeout a quiet flow goes on being forwarded.
    func testEntryWithoutTimeoutForwardsAfterAQuietTime() throws {
        let harness = try FastPathHarness(ipv6: true)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        try fastPath.put(harness.toPeer, harness.entryToPeer(routed: true))
        MonotonicClock.sleep(until: MonotonicClock.now() + MonotonicClock.nanoseconds(0.3))
        try harness.client.send([1], to: harness.relayClientSide.local)
        XCTAssertEqual(harness.peer.receive()?.payload, [1])
        XCTAssertEqual(fastPath.counters(harness.toPeer)?.handedBack, [:])
    }
}
