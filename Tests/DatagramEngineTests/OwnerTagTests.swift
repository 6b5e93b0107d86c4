import Foundation
import Glibc
import XCTest
@testable import DatagramEngine

/// Owner tags: every datagram carries the tag its socket had when it was read, a tag set after
/// registration applies from then on, and a socket taken from its owner mid-turn hands none of
/// this turn's datagrams to the owner's old entry (which a table may give to another at once).
final class OwnerTagTests: XCTestCase {
    func testDatagramsCarryTheirSocketsTagOnEveryBackend() throws {
        for backend in ConformanceTests.backends {
            let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend))
            let first = try UDPSocket(binding: Loopback.v4)
            let second = try UDPSocket(binding: Loopback.v4)
            let firstID = try engine.register(first, owner: OwnerTag(role: 3, index: 7))
            let secondID = try engine.register(second)
            engine.setOwner(secondID, OwnerTag(role: 5, index: 40_000))
            let peer = try UDPSocket(binding: Loopback.v4)
            Loopback.send(from: peer, to: first.localEndpoint, bytes: [1])
            Loopback.send(from: peer, to: second.localEndpoint, bytes: [2])
            var seen: [UInt8: OwnerTag] = [:]
            _ = Loopback.drain(engine, count: 2) { seen[$0.bytes[0]] = $0.owner }
            XCTAssertEqual(seen[1], OwnerTag(role: 3, index: 7), "\(backend)")
            XCTAssertEqual(seen[2], OwnerTag(role: 5, index: 40_000), "\(backend)")
            XCTAssertEqual(engine.socketCount, 2)
            _ = firstID
        }
    }

    func testADisownedSocketsDatagramsOfThisTurnGoToNobody() throws {
        for backend in ConformanceTests.backends {
            let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend))
            let kept = try UDPSocket(binding: Loopback.v4)
            let dropped = try UDPSocket(binding: Loopback.v4)
            _ = try engine.register(kept, owner: OwnerTag(role: 1, index: 1))
            let droppedID = try engine.register(dropped, owner: OwnerTag(role: 1, index: 2))
            let peer = try UDPSocket(binding: Loopback.v4)
            for byte in 0..<4 as Range<UInt8> {
                Loopback.send(from: peer, to: kept.localEndpoint, bytes: [byte])
                Loopback.send(from: peer, to: dropped.localEndpoint, bytes: [byte])
            }
            usleep(20_000)  // all eight queued before one receive takes them
            let count = engine.receive(timeoutMilliseconds: 1000)
            XCTAssertEqual(count, 8, "\(backend): one turn")
            // Mid-turn, the table forgets the socket: what was read from it is nobody's now.
            engine.disown(droppedID)
            var owners: [OwnerTag] = []
            for index in 0..<count { owners.append(engine.received(index).owner) }
            XCTAssertEqual(owners.filter { $0 == OwnerTag(role: 1, index: 1) }.count, 4, "\(backend)")
            XCTAssertEqual(owners.filter { $0 == .unowned }.count, 4, "\(backend)")
            // And later ones too, until it is closed.
            Loopback.send(from: peer, to: dropped.localEndpoint, bytes: [9])
            var later: [OwnerTag] = []
            _ = Loopback.drain(engine, count: 1) { later.append($0.owner) }
            XCTAssertEqual(later, [.unowned], "\(backend)")
            engine.unregister(droppedID)
            XCTAssertEqual(engine.socketCount, 1, "\(backend)")
        }
    }
}
