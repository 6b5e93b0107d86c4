@testable import ClientSockets
import Glibc
@testable import TurnClientKit
import XCTest
@testable import LoadGen

/// `--turn-peers each`: the address each client's data goes to, counted up as
/// bench/turn-bench.sh's `peer_address` counts (client i -> 127.1.(i/250).(i%250+1)).
final class TurnPeersTests: XCTestCase {
    func testEachCountsUpAsTurnBenchDoes() throws {
        let peers = try TurnPeers.each.addresses(first: SocketAddress(hostPort: "127.1.0.1:3480"), count: 2000)
        XCTAssertEqual(peers.count, 2000)
        for i in [0, 1, 249, 250, 251, 1999] {
            XCTAssertEqual(peers[i].description, "127.1.\(i / 250).\(i % 250 + 1):3480", "client \(i)")
        }
        XCTAssertEqual(Set(peers.map(\.description)).count, 2000, "no two clients share a peer")
    }

    func testEachStartsWhereTurnPeerSays() throws {
        let peers = try TurnPeers.each.addresses(first: SocketAddress(hostPort: "10.0.3.5:9"), count: 252)
        XCTAssertEqual(peers.map(\.description)[0], "10.0.3.5:9")
        XCTAssertEqual(peers.map(\.description)[249], "10.0.3.254:9")
        XCTAssertEqual(peers.map(\.description)[250], "10.0.4.5:9")
    }

    func testSharedIsTheOnePeerForAll() throws {
        let first = try SocketAddress(hostPort: "127.0.0.1:3480")
        XCTAssertEqual(try TurnPeers.shared.addresses(first: first, count: 3).map(\.description), Array(repeating: "127.0.0.1:3480", count: 3))
    }

    func testAddressesPastTheLastOctetAreRefused() throws {
        // From .7, 250 clients would need .256.
        XCTAssertThrowsError(try TurnPeers.each.addresses(first: SocketAddress(hostPort: "127.1.0.7:1"), count: 250))
        XCTAssertNoThrow(try TurnPeers.each.addresses(first: SocketAddress(hostPort: "127.1.0.6:1"), count: 250))
        // From 127.1.250.1, 1,501 clients would need 127.1.256.1.
        XCTAssertThrowsError(try TurnPeers.each.addresses(first: SocketAddress(hostPort: "127.1.250.1:1"), count: 1501))
        XCTAssertNoThrow(try TurnPeers.each.addresses(first: SocketAddress(hostPort: "127.1.250.1:1"), count: 1500))
    }
}
