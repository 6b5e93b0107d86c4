import FastPath
import Foundation
import Glibc
import NetAddress
import SystemSupport
import TestSupport
import XCTest

/// What the kernel leaves to user space: unknown sources, STUN messages, entries past their
/// expiry, and everything once the process that owned the link is gone, kill -9 included.
final class HandBackTests: XCTestCase {
    func testUnknownSourceReachesTheRelaysSocket() throws {
        let harness = try FastPathHarness(ipv6: false)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        try fastPath.put(harness.toPeer, harness.entryToPeer())
        let stranger = try harness.triangle.inside(.client) { try ProbeSocket(Endpoint(host: "10.71.1.2", port: 40001)!) }
        try stranger.send([7, 7, 7], to: harness.relayClientSide.local, trafficClass: 0x03)
        XCTAssertEqual(harness.relayClientSide.receive(), .init(source: stranger.local, trafficClass: 0x03, payload: [7, 7, 7]))
        XCTAssertNil(harness.peer.receive(timeout: 0.05))
        XCTAssertEqual(fastPath.counters(harness.toPeer), FlowCounters())
    }

    /// On a plain entry and on a channel's: a STUN request is user space's.
    func testStunMessageOnAnEntryIsHandedBack() throws {
        let harness = try FastPathHarness(ipv6: true)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        let bindingRequest: [UInt8] = [0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xa4, 0x42] + [UInt8](repeating: 0x5a, count: 12)
        for kind in [FlowEntry.Kind.plain, .stripChannel(0x4001)] {
            try fastPath.put(harness.toPeer, harness.entryToPeer(kind))
            try harness.client.send(bindingRequest, to: harness.relayClientSide.local)
            XCTAssertEqual(harness.relayClientSide.receive()?.payload, bindingRequest, "\(kind)")
            XCTAssertNil(harness.peer.receive(timeout: 0.05), "\(kind)")
            XCTAssertEqual(fastPath.counters(harness.toPeer)?.handedBack, [.stun: 1], "\(kind)")
            fastPath.remove(harness.toPeer)
        }
    }

    /// A datagram too large for the link leaves the client in fragments: the first (it has the
    /// ports) is handed back, counted, the rest pass unseen, and the relay's stack reassembles.
    func testFragmentsGoToUserSpace() throws {
        for ipv6 in [false, true] {
            let harness = try FastPathHarness(ipv6: ipv6)
            defer { harness.remove() }
            let fastPath = try XCTUnwrap(harness.fastPath)
            try fastPath.put(harness.toPeer, harness.entryToPeer())
            harness.client.allowFragments()
            let large = (0..<3000).map { UInt8(truncatingIfNeeded: $0) }
            try harness.client.send(large, to: harness.relayClientSide.local)
            let arrived = harness.relayClientSide.receive()?.payload ?? []
            XCTAssertTrue(arrived == large, "IPv6 \(ipv6): \(arrived.count) bytes arrived, not the 3000 sent")
            XCTAssertNil(harness.peer.receive(timeout: 0.05))
            // An IPv6 fragment header stands where UDP's would: no ports, no entry to count in.
            XCTAssertEqual(fastPath.counters(harness.toPeer)?.handedBack, ipv6 ? [:] : [.fragment: 1], "IPv6 \(ipv6)")
        }
    }

    /// An entry forwards until its expiry and hands back after it, with nobody in user space
    /// taking it out; installed again with a later expiry it forwards again, counters kept.
    func testExpiredEntryHandsBack() throws {
        let harness = try FastPathHarness(ipv6: false)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        let expiry = MonotonicClock.now() + MonotonicClock.nanoseconds(0.3)
        try fastPath.put(harness.toPeer, harness.entryToPeer(expiresAt: expiry))
        try harness.client.send([1], to: harness.relayClientSide.local)
        XCTAssertEqual(harness.peer.receive()?.payload, [1], "forwarded before its expiry")
        MonotonicClock.sleep(until: expiry + MonotonicClock.nanoseconds(0.05))
        try harness.client.send([2], to: harness.relayClientSide.local)
        XCTAssertEqual(harness.relayClientSide.receive()?.payload, [2], "handed back after its expiry")
        XCTAssertNil(harness.peer.receive(timeout: 0.05))

        try fastPath.put(harness.toPeer, harness.entryToPeer(expiresAt: MonotonicClock.now() + MonotonicClock.nanoseconds(60)))
        try harness.client.send([3], to: harness.relayClientSide.local)
        XCTAssertEqual(harness.peer.receive()?.payload, [3], "forwarded again once renewed")
        let counters = try XCTUnwrap(fastPath.counters(harness.toPeer))
        XCTAssertEqual(counters.packets, 2)
        XCTAssertEqual(counters.handedBack, [.expired: 1])
    }

    /// An entry that shares an end hands back once that end passes, though its own has not;
    /// moving the shared end (a store, as for a renewed TURN permission) forwards it again,
    /// and moving its own end likewise needs no new install.
    func testASharedEndStopsTheEntriesThatShareIt() throws {
        let harness = try FastPathHarness(ipv6: false)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        let shared = try XCTUnwrap(fastPath.reserveEnd(MonotonicClock.now() + MonotonicClock.nanoseconds(60)))
        var entry = harness.entryToPeer(expiresAt: MonotonicClock.now() + MonotonicClock.nanoseconds(60))
        entry.sharedEnds = [shared]
        try fastPath.put(harness.toPeer, entry)
        try harness.client.send([1], to: harness.relayClientSide.local)
        XCTAssertEqual(harness.peer.receive()?.payload, [1], "forwarded while every end is ahead")

        fastPath.setExpiry(shared, MonotonicClock.now())
        try harness.client.send([2], to: harness.relayClientSide.local)
        XCTAssertEqual(harness.relayClientSide.receive()?.payload, [2], "handed back once the shared end passed")
        XCTAssertNil(harness.peer.receive(timeout: 0.05))

        fastPath.setExpiry(shared, MonotonicClock.now() + MonotonicClock.nanoseconds(60))
        try harness.client.send([3], to: harness.relayClientSide.local)
        XCTAssertEqual(harness.peer.receive()?.payload, [3], "forwarded again once the shared end moved")

        let own = try XCTUnwrap(fastPath.slot(harness.toPeer))
        fastPath.setExpiry(own, MonotonicClock.now())
        try harness.client.send([4], to: harness.relayClientSide.local)
        XCTAssertEqual(harness.relayClientSide.receive()?.payload, [4], "handed back once its own end was moved back")
        XCTAssertEqual(fastPath.counters(harness.toPeer)?.handedBack, [.expired: 2])
        fastPath.remove(harness.toPeer)
        fastPath.releaseEnd(shared)
    }

    /// A child process owns the link; once it is killed with -9 the program is gone: the
    /// datagram that it forwarded before now reaches the relay's own socket.
    func testNothingIsForwardedAfterTheOwnerIsKilled() throws { try checkNothingForwardedAfterKill(mode: "tc") }

    /// The same for XDP links.
    func testNothingIsForwardedByXDPAfterTheOwnerIsKilled() throws { try checkNothingForwardedAfterKill(mode: "xdp") }

    private func checkNothingForwardedAfterKill(mode: String) throws {
        try HostRequirement.requireTools(["/usr/sbin/bpftool"])
        let harness = try FastPathHarness(ipv6: false, attach: false, mode: mode == "xdp" ? .xdp : .tc)
        defer { harness.remove() }
        try harness.triangle.setChecksumOffload(false)
        let holder = try ChildProcess("/usr/sbin/ip", harness.triangle.execute(in: .relay, [
            Self.productsDirectory.appendingPathComponent("fastpath-holder").path, "rc",
            "\(harness.client.local)", "\(harness.relayClientSide.local)",
            "\(harness.relayPeerSide.local)", "\(harness.peer.local)", "rp", mode,
        ]))
        let deadline = Date().addingTimeInterval(10)
        while !holder.text.contains("ready") && holder.process.isRunning && Date() < deadline { usleep(20_000) }
        guard holder.text.contains("ready") else {
            try HostRequirement.require(false, "fastpath-holder did not start: \(holder.text)")
            return
        }
        try harness.client.send([1], to: harness.relayClientSide.local)
        XCTAssertEqual(harness.peer.receive()?.payload, [1], "forwarded while the holder lives")
        let loaded = try Self.programsLoaded()
        XCTAssertGreaterThan(loaded, 0)

        kill(holder.process.processIdentifier, SIGKILL)
        holder.process.waitUntilExit()
        var remaining = loaded
        for _ in 0..<50 where remaining == loaded {
            usleep(20_000)
            remaining = try Self.programsLoaded()
        }
        XCTAssertEqual(remaining, loaded - 1, "the holder's program outlived it")
        try harness.client.send([2], to: harness.relayClientSide.local)
        XCTAssertEqual(harness.relayClientSide.receive()?.payload, [2], "user space gets it after kill -9")
        XCTAssertNil(harness.peer.receive(timeout: 0.1), "forwarded after kill -9")
    }

    func testRefusalsSayWhyInOneLine() throws {
        let harness = try FastPathHarness(ipv6: false)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        XCTAssertThrowsError(try harness.triangle.inside(.relay) { try fastPath.attach(interface: "nosuchif0") }) { error in
            XCTAssertTrue("\(error)".contains("no interface named nosuchif0"), "\(error)")
            XCTAssertFalse("\(error)".contains("\n"))
        }
        let mixed = FlowKey(source: harness.client.local, destination: Endpoint(host: "fd71:1::1", port: 3478)!)
        XCTAssertThrowsError(try fastPath.put(mixed, harness.entryToPeer())) { error in
            XCTAssertTrue("\(error)".contains("differ in family"), "\(error)")
        }
        XCTAssertThrowsError(try fastPath.put(harness.toPeer, harness.entryToPeer(.stripChannel(0x3fff)))) { error in
            XCTAssertTrue("\(error)".contains("outside 0x4000-0x7FFF"), "\(error)")
        }
        let badChannel = FlowKey(source: harness.client.local, destination: harness.relayClientSide.local, channel: 0x3000)
        XCTAssertThrowsError(try fastPath.put(badChannel, harness.entryToPeer())) { error in
            XCTAssertTrue("\(error)".contains("channel 12288 is outside 0x4000-0x7FFF"), "\(error)")
        }
        XCTAssertEqual(fastPath.count, 0)
        XCTAssertEqual(fastPath.refusals, 3)
    }

    /// Without capabilities (root's bounding set emptied by setpriv) loading fails with one
    /// line that names what is missing.
    func testWithoutCapabilitiesTheLoadSaysWhy() throws {
        try HostRequirement.requireTools(["/usr/bin/setpriv"])
        let holder = Self.productsDirectory.appendingPathComponent("fastpath-holder").path
        let (status, output) = try ChildProcess.run("/usr/bin/setpriv", ["--bounding-set=-all", "--inh-caps=-all", holder,
                                                                          "lo", "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4", "lo"])
        XCTAssertEqual(status, 1, output)
        XCTAssertEqual(output.split(separator: "\n").count, 1, output)
        XCTAssertTrue(output.contains("needs CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON"), output)
    }

    /// How many programs named mr_relay_ingress the kernel holds (bpftool prog show).
    private static func programsLoaded() throws -> Int {
        let (status, output) = try ChildProcess.run("/usr/sbin/bpftool", ["prog", "show"])
        guard status == 0 else { throw Command.Failure(step: "bpftool prog show", output: output) }
        return output.components(separatedBy: "name mr_relay_ingress").count - 1
    }

    /// The directory with the built products (next to the test bundle).
    private static var productsDirectory: URL {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: url.appendingPathComponent("fastpath-holder").path) && url.path != "/" {
            url.deleteLastPathComponent()
        }
        return url
    }
}
