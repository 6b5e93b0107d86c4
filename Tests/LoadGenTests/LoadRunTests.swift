import BenchSupport
@testable import ClientSockets
@testable import LoadGen
import TestPorts
import XCTest

/// A whole run without a relay: forward-rule mode with the "rule" short-circuited, i.e. the
/// clients send straight to the generator's own upstream socket. Exercises setup, latching,
/// the sending and receiving threads and the result, over real loopback sockets.
final class LoadRunTests: XCTestCase {
    func run(_ configure: (inout LoadOptions) -> Void) throws -> LoadResult {
        let address = "127.0.0.1:\(try FreePort.udp())"
        var o = LoadOptions()
        o.target = address
        o.upstreamListen = address
        o.seconds = 0.4
        o.warmup = 0.1
        o.progress = false
        configure(&o)
        return try LoadRun(options: o, log: { _ in }).run()
    }

    func testVoiceRoundTripIsCompleteAndKeepsMarking() throws {
        let r = try run { $0.profile = .voice; $0.streams = 8 }
        XCTAssertEqual(r.latchedStreams, 8)
        XCTAssertGreaterThan(r.sent, 0)
        XCTAssertEqual(r.received, r.sent, "loopback without a relay loses nothing")
        XCTAssertEqual(r.lost, 0)
        XCTAssertEqual(r.duplicated, 0)
        XCTAssertEqual(r.reordered, 0, "one socket per stream, FIFO")
        XCTAssertEqual(r.ecnKept, 1)
        XCTAssertEqual(r.dscpKept, 1)
        XCTAssertEqual(r.tos, 46 << 2 | 2)
        XCTAssertEqual(r.offeredRate, 400)
        XCTAssertGreaterThan(r.latencyUs[2], 0)
        XCTAssertNil(r.relay, "no --relay, no relay figures")
        XCTAssertGreaterThan(r.generatorCPUSeconds, 0)
    }

    func testBidirectionalSendsBothWays() throws {
        let r = try run { $0.streams = 3; $0.rate = 3000; $0.bidirectional = true; $0.tos = 0x2E }
        XCTAssertEqual(r.offeredRate, 6000)
        XCTAssertEqual(r.received, r.sent)
        XCTAssertEqual(r.ecnKept, 1)
        XCTAssertEqual(r.dscpKept, 1)
        XCTAssertEqual(r.foreign, 0)
    }
}

extension LoadRunTests {
    /// compare --pin relay's receiving side: placed beside the sender and polling at SCHED_IDLE,
    /// it still takes every datagram (it runs whenever the sender sleeps), and times them by the
    /// kernel's stamps.
    func testAReceiverPollingAtIdlePriorityBesideTheSenderMissesNothing() throws {
        guard let placement = CPUPlacement.alone() else { throw XCTSkip("fewer than two CPUs allowed here: nothing to place") }
        XCTAssertEqual((placement.sinkMask | placement.sourceMask) & placement.forwarderMask, 0, "the relay's CPU is its own")
        let r = try run { $0.streams = 4; $0.rate = 4000; $0.placement = placement; $0.receiverSpins = true; $0.arrivalStamps = true }
        XCTAssertGreaterThan(r.sent, 0)
        XCTAssertEqual(r.received, r.sent)
        XCTAssertEqual(r.lost, 0)
        XCTAssertGreaterThan(r.latencyUs[0], 0, "every datagram measured")
    }
}
