import NetAddress
@testable import RelayCore
import XCTest

/// The relay-wide count of TCP and TLS connections per source (`TurnShared.admitConnection`):
/// an IPv4 address counts alone, an IPv6 address with the rest of its /64, so one IPv6 site
/// cannot pass the per-source limit by connecting from a fresh address each time.
final class ConnectionLimitTests: XCTestCase {
    func testTheLimitPerSourceCountsIPv4ByAddressAndIPv6ByItsSlash64() throws {
        let shared = TurnShared()
        var limits = TurnStreamLimits()
        limits.maxPerSource = 2
        let site = try ["2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:ffff::9"].map { try XCTUnwrap(Endpoint(host: $0, port: 40_000)) }
        XCTAssertNil(shared.admitConnection(from: site[0], limits: limits))
        XCTAssertNil(shared.admitConnection(from: site[1], limits: limits))
        XCTAssertEqual(shared.admitConnection(from: site[2], limits: limits), .perSourceLimit, "a third address of the same /64")
        let neighbour = try XCTUnwrap(Endpoint(host: "2001:db8:1:3::1", port: 40_000))
        XCTAssertNil(shared.admitConnection(from: neighbour, limits: limits), "the next /64 is another site")
        shared.releaseConnection(from: site[0])
        XCTAssertNil(shared.admitConnection(from: site[2], limits: limits), "room again once one of the site's connections closed")

        let office = try XCTUnwrap(Endpoint(host: "192.0.2.10", port: 40_000))
        XCTAssertNil(shared.admitConnection(from: office, limits: limits))
        XCTAssertNil(shared.admitConnection(from: Endpoint(host: "192.0.2.10", port: 40_001)!, limits: limits))
        XCTAssertEqual(shared.admitConnection(from: office, limits: limits), .perSourceLimit)
        XCTAssertNil(shared.admitConnection(from: Endpoint(host: "192.0.2.11", port: 40_000)!, limits: limits), "IPv4 counts by address")
        XCTAssertEqual(shared.connections, 6)
    }
}
