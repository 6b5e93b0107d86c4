import DatagramEngine
@testable import mediarelay
import NetAddress
import RelayCore
import XCTest

/// GET /v1/turn/allocations: its limit is bounded, and each allocation says who, where, and
/// what it relayed with which ECN marks.
final class TurnAllocationJSONTests: XCTestCase {
    func testLimitIsBounded() {
        XCTAssertEqual(TurnAllocationJSON.limit(nil), 100)
        XCTAssertEqual(TurnAllocationJSON.limit("limit=5"), 5)
        XCTAssertEqual(TurnAllocationJSON.limit("x=1&limit=1000"), 1000)
        XCTAssertNil(TurnAllocationJSON.limit("limit=1001"))
        XCTAssertNil(TurnAllocationJSON.limit("limit=0"))
        XCTAssertNil(TurnAllocationJSON.limit("limit=many"))
    }

    func testObjectCarriesCountersAndECN() {
        var counters = AllocationCounters()
        counters.channelDataIn = 3
        counters.ecnFromClient[Int(ECN.ect1.rawValue)] = 3
        let info = TurnAllocationInfo(worker: 1, username: "alice", client: Endpoint(host: "192.0.2.1", port: 5000)!,
                                      relayed: [Endpoint(host: "198.51.100.1", port: 49152)!], ageSeconds: 2,
                                      expiresInSeconds: 598, permissions: [Endpoint(host: "203.0.113.5", port: 0)!],
                                      channels: [(0x4000, Endpoint(host: "203.0.113.5", port: 7000)!)], counters: counters)
        let object = TurnAllocationJSON.object(info)
        XCTAssertEqual(object["username"] as? String, "alice")
        XCTAssertEqual(object["relayed"] as? [String], ["198.51.100.1:49152"])
        XCTAssertEqual(object["permissions"] as? [String], ["203.0.113.5"])
        XCTAssertEqual((object["channels"] as? [[String: Any]])?.first?["number"] as? Int, 0x4000)
        XCTAssertEqual(object["channel_data_in"] as? UInt64, 3)
        XCTAssertEqual((object["ecn_from_client"] as? [String: Any])?["ect1"] as? UInt64, 3)
    }
}
