import ClientSockets
import Foundation
import LoadGen
import NetAddress
import TestSupport
import XCTest

/// A TURN client over TCP that never reads its socket, through the real executable: a peer
/// floods its relayed address, and the relay drops what the connection's bounded output
/// cannot take (counted as client_backpressure) instead of waiting or buffering, so its memory
/// stays flat and another client and a session relay every datagram meanwhile.
final class TurnStreamBackpressureTests: XCTestCase {
    private static let datagrams = 20_000
    private static let payloadBytes = 1_000

    func testAClientThatNeverReadsLosesOnlyItsOwnDatagrams() throws {
        let server = try TurnStreamServerFixture()
        let relay = server.relay
        let pid = relay.process.processIdentifier
        let traffic = try SteadyTrafficHarness(relay: relay, turnPort: server.udpPort)
        let flooder = try IndependentPeer(host: "127.0.0.1")
        let stuck = try StreamTurnClient(to: Endpoint(host: "127.0.0.1", port: server.tcpPort)!, receiveBufferBytes: 4096)
        let relayed = try stuck.allocate(channel: 0x4000, to: Endpoint(host: "127.0.0.1", port: flooder.port)!)
        let destination = try SocketAddress(host: relayed.hostText, port: relayed.port)
        var before: ProcessFootprint?
        var largest: ProcessFootprint?
        for index in 0..<Self.datagrams {
            var payload = [UInt8](repeating: 0xAB, count: Self.payloadBytes)
            withUnsafeBytes(of: UInt32(index).bigEndian) { payload.replaceSubrange(0..<4, with: $0) }
            try flooder.send(payload, tos: 0, to: destination)
            if index % 100 == 0 { try traffic.tick() }
            // The baseline once the client's output is at its bound (what the relay sets up for
            // a first datagram of this size is in it); the largest after, from there on.
            if index == Self.datagrams / 4 {
                let dropping = try relay.waitFor(seconds: 10) { RelayProcess.number($0, "turn", "drops", "client_backpressure") ?? 0 > 0 }
                XCTAssertGreaterThan(RelayProcess.number(dropping, "turn", "drops", "client_backpressure") ?? 0, 0,
                                     "nothing dropped after \(index) datagrams of \(Self.payloadBytes) bytes: \(dropping)")
                before = try ProcessFootprint(pid: pid)
            } else if index % 1000 == 0, let baseline = before {
                let now = try ProcessFootprint(pid: pid)
                if now.residentKilobytes > (largest ?? baseline).residentKilobytes { largest = now }
            }
        }
        traffic.settle()
        traffic.assertEverythingRelayed("while a client did not read")

        // Once the relay has taken the last datagram in, its counters stop moving.
        var stats = try relay.stats()
        var settled = false
        let figures = { (stats: [String: Any]) in
            (RelayProcess.number(stats, "turn", "drops", "client_backpressure") ?? 0,
             RelayProcess.number(stats, "turn", "transports", "tcp", "datagrams_to_clients") ?? 0)
        }
        for _ in 0..<50 where !settled {
            usleep(300_000)
            let next = try relay.stats()
            settled = figures(next) == figures(stats)
            stats = next
        }
        let (dropped, delivered) = figures(stats)
        let after = try ProcessFootprint(pid: pid)
        let baseline = try XCTUnwrap(before)
        let largestSeen = [largest ?? baseline, after].max { $0.residentKilobytes < $1.residentKilobytes }!
        print("TurnStreamBackpressureTests: \(Self.datagrams) datagrams of \(Self.payloadBytes) bytes to a client that does not read: "
              + "\(delivered) written to its stream, \(dropped) dropped as client_backpressure; relay once dropping \(baseline), "
              + "largest \(largestSeen), after \(after); \(traffic.summary)")
        XCTAssertGreaterThan(dropped, 0, "\(stats)")
        XCTAssertLessThanOrEqual(delivered + dropped, Self.datagrams)
        XCTAssertLessThan(largestSeen.residentKilobytes - baseline.residentKilobytes, Self.memorySlackKilobytes, "memory grew with the backlog")

        // What the relay did write is whole: the stuck client, reading now, finds ChannelData
        // of the flood's datagrams, in order.
        var previous = -1
        for _ in 0..<min(delivered, 20) {
            let message = try XCTUnwrap(stuck.readMessage(seconds: 10), "the relay's output to the stuck client")
            XCTAssertEqual(message.count, 4 + Self.payloadBytes)
            XCTAssertEqual(Array(message.prefix(4)), [0x40, 0x00, UInt8(Self.payloadBytes >> 8), UInt8(Self.payloadBytes & 0xFF)])
            let sequence = message[4..<8].reduce(0) { $0 << 8 | Int($1) }
            XCTAssertGreaterThan(sequence, previous, "out of order")
            previous = sequence
        }
        XCTAssertEqual(relay.stop(), 0, relay.log)
    }

    /// "Flat": what the relay's allocator and the kernel's accounting may move by on their own.
    private static let memorySlackKilobytes = 4 << 10
}
