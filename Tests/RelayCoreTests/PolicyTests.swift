import DatagramEngine
import NetAddress
import RelayCore
import XCTest

final class PolicyTests: XCTestCase {
    func testPreserveKeepsEveryCodepointAndMirrorKeepsDSCP() {
        let policy = MarkingPolicy()
        for byte in 0...255 {
            let marking = TrafficClass(rawValue: UInt8(byte))
            XCTAssertEqual(policy.apply(marking), marking)
        }
    }

    func testClassZeroAndClear() {
        let voice = MarkingPolicy(dscp: .class, ecn: .preserve, serviceClass: .interactiveVoice)
        XCTAssertEqual(voice.apply(TrafficClass(dscp: 3, ecn: .ce)), TrafficClass(dscp: 46, ecn: .ce))
        XCTAssertEqual(voice.apply(TrafficClass(dscp: 3, ecn: .notECT)), TrafficClass(dscp: 46, ecn: .notECT), "never upgraded")
        let zero = MarkingPolicy(dscp: .zero, ecn: .clear)
        XCTAssertEqual(zero.apply(TrafficClass(dscp: 34, ecn: .ect1)), TrafficClass(rawValue: 0))
    }

    func testServiceClassTableMatchesTheDesign() {
        let expected: [ServiceClass: UInt8] = [.background: 1, .bestEffort: 0, .responsiveData: 18, .streamingVideo: 26,
                                               .interactiveVideo: 34, .interactiveVoice: 46, .signaling: 40]
        for service in ServiceClass.allCases { XCTAssertEqual(service.dscp, expected[service], service.rawValue) }
    }
}

final class AddressRangeTests: XCTestCase {
    func testIPv4AndIPv6Ranges() throws {
        let v4 = try XCTUnwrap(AddressRange(parsing: "192.0.2.0/24"))
        XCTAssertTrue(v4.contains(Endpoint(host: "192.0.2.200", port: 5)!))
        XCTAssertFalse(v4.contains(Endpoint(host: "192.0.3.1", port: 5)!))
        XCTAssertTrue(v4.contains(Endpoint(host: "::ffff:192.0.2.9", port: 5)!), "IPv4-mapped peers on dual-stack sockets")
        let v6 = try XCTUnwrap(AddressRange(parsing: "2001:db8::/32"))
        XCTAssertTrue(v6.contains(Endpoint(host: "2001:db8:1::1", port: 1)!))
        XCTAssertFalse(v6.contains(Endpoint(host: "2001:db9::1", port: 1)!))
        XCTAssertTrue(AddressRange(parsing: "0.0.0.0/0")!.contains(Endpoint(host: "8.8.8.8", port: 1)!))
        XCTAssertTrue(AddressRange(parsing: "10.1.2.3")!.contains(Endpoint(host: "10.1.2.3", port: 1)!))
        XCTAssertFalse(AddressRange(parsing: "10.1.2.3")!.contains(Endpoint(host: "10.1.2.4", port: 1)!))
        for bad in ["", "10.0.0.0/33", "2001:db8::/129", "nonsense/8", "10.0.0.0/x", "1.2.3.4/8/9"] {
            XCTAssertNil(AddressRange(parsing: bad), bad)
        }
    }
}

final class PortPoolTests: XCTestCase {
    func testHandsOutEveryPortOnceRoundRobin() {
        let pool = PortPool(range: 5000...5002)
        XCTAssertEqual([pool.acquire(), pool.acquire(), pool.acquire()], [5000, 5001, 5002])
        XCTAssertNil(pool.acquire())
        pool.release(5001)
        pool.release(5001)  // twice: no double count
        XCTAssertEqual(pool.available, 1)
        XCTAssertEqual(pool.acquire(), 5001)
        pool.release(5000)
        pool.release(5002)
        XCTAssertEqual(pool.acquire(), 5002, "round-robin: the next port after the last handed out")
    }

    func testForwardClientsHoldAtMostHalfTheRange() {
        let pool = PortPool(range: 6000...6009)
        let clients = (0..<10).compactMap { _ in pool.acquire(for: .client) }
        XCTAssertEqual(clients.count, 5, "clients stop at half")
        XCTAssertEqual((0..<10).compactMap { _ in pool.acquire(for: .session) }.count, 5, "sessions still get the rest")
        pool.release(clients[0], from: .client)
        XCTAssertNotNil(pool.acquire(for: .client), "a released client port can serve a client again")
        XCTAssertNil(pool.acquire(for: .client))
    }
}
