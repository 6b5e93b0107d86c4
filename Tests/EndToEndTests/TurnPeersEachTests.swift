import Foundation
import TestPorts
import XCTest

/// mediarelay-load's `--turn-peers each` through mediarelay's own TURN listener: every client's
/// permission, channel (or Send indications) and data go to a peer address of its own, and every
/// datagram comes back from it. The peers themselves show that each saw one relayed address and
/// no two saw the same.
final class TurnPeersEachTests: XCTestCase {
    func testEveryClientReachesItsOwnPeerAndBack() throws {
        let turnPort = try FreePort.udp()
        // 127.1.0.x are loopback peers, refused unless allowed.
        let relay = try RelayProcess(ports: PortBlock(count: 50), ["--turn", "127.0.0.1:\(turnPort)", "--turn-realm", "load.test",
                                      "--turn-user", "load:pw", "--turn-allowed-peer", "127.0.0.0/8"])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let clients = 6
        for framing in [[], ["--turn-send-indications"]] {
            let peers = try EchoPeersFixture(count: clients)
            let object: [String: Any]
            do {
                object = try LoadGeneratorTests.runLoad([
                    "--turn", "127.0.0.1:\(turnPort)", "--turn-user", "load:pw", "--streams", "\(clients)", "--profile", "voice",
                    "--seconds", "1", "--warmup", "0.2", "--drain", "5",
                    "--turn-peer", peers.firstAddress, "--turn-peers", "each",
                ] + framing)
            } catch {
                _ = peers.stop()
                throw error
            }
            let echoed = peers.stop()
            XCTAssertEqual(object["turn_peers"] as? String, "each", "\(framing)")
            XCTAssertEqual(object["latched_streams"] as? Int, clients, "\(framing)")
            let sent = try XCTUnwrap(object["sent"] as? Int)
            XCTAssertGreaterThan(sent, 0)
            XCTAssertEqual(object["received"] as? Int, sent, "every datagram echoed back to its client, \(framing)")
            XCTAssertEqual(object["foreign"] as? Int, 0)
            for (i, peer) in echoed.enumerated() {
                XCTAssertGreaterThan(peer.datagrams, 0, "127.1.0.\(i + 1) echoed, \(framing)")
                XCTAssertEqual(peer.sources.count, 1, "127.1.0.\(i + 1) heard one allocation, \(framing): \(peer.sources)")
            }
            XCTAssertEqual(Set(echoed.flatMap(\.sources)).count, clients, "a relayed address per peer, \(framing)")
            XCTAssertEqual(echoed.reduce(0) { $0 + $1.datagrams }, sent + clients, "the data and a latching datagram per client")
        }
    }
}
