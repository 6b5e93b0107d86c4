import Foundation
import RelayCore
import RelayHTTP
import XCTest

@testable import mediarelay

/// /readyz: 200 while the relay takes new work; 503 while draining or once any capacity has
/// reached the threshold, with the reason and the figures in the body.
final class ReadinessTests: XCTestCase {
    func resources(allocations: Int, sessions: Int = 0) -> Capacity {
        Capacity(resources: [
            Capacity.Resource(name: "allocations", inUse: allocations, total: 10),
            Capacity.Resource(name: "sessions", inUse: sessions, total: 100),
            Capacity.Resource(name: "ports", inUse: 0, total: 0),
        ])
    }

    func body(_ response: HTTPResponse) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    }

    func testReadyBelowTheThreshold() throws {
        let readiness = Readiness(draining: false, threshold: 0.9, capacity: resources(allocations: 8, sessions: 89))
        XCTAssertTrue(readiness.isReady)
        let response = readiness.response
        XCTAssertEqual(response.status, 200)
        let object = try body(response)
        XCTAssertEqual(object["reason"] as? String, "ready")
        XCTAssertEqual((object["capacity"] as? [String: [String: Int]])?["allocations"], ["in_use": 8, "total": 10])
    }

    func testAtTheThresholdItIsNotReadyAndSaysWhich() throws {
        let readiness = Readiness(draining: false, threshold: 0.9, capacity: resources(allocations: 9, sessions: 90))
        let response = readiness.response
        XCTAssertEqual(response.status, 503)
        let object = try body(response)
        XCTAssertEqual(object["reason"] as? String, "capacity")
        XCTAssertEqual(object["full"] as? [String], ["allocations", "sessions"])
        XCTAssertEqual(object["detail"] as? String, "allocations 9 of 10, sessions 90 of 100 at or past the ready threshold 0.9")
    }

    func testAThresholdOfOneWaitsUntilFull() {
        XCTAssertTrue(Readiness(draining: false, threshold: 1, capacity: resources(allocations: 9)).isReady)
        XCTAssertFalse(Readiness(draining: false, threshold: 1, capacity: resources(allocations: 10)).isReady)
    }

    func testAResourceWithNothingToGiveNeverCounts() {
        // "ports" above has a total of 0 (no such resource configured): never full.
        XCTAssertTrue(Readiness(draining: false, threshold: 0.01, capacity: resources(allocations: 0)).isReady)
    }

    func testDrainingIsNeverReady() throws {
        let response = Readiness(draining: true, threshold: 0.9, capacity: resources(allocations: 0)).response
        XCTAssertEqual(response.status, 503)
        XCTAssertEqual(try body(response)["reason"] as? String, "draining")
    }

    func testRefusedSessionsSayWhyAndWhenToRetry() throws {
        for (error, reason) in [(RelayError.draining, "draining"), (.sessionCapReached(2), "sessions"), (.portsExhausted, "ports"),
                                (.workerUnresponsive, "unresponsive")] {
            let response = ControlAPI.unavailable(error)
            XCTAssertEqual(response.status, 503)
            XCTAssertEqual(response.headers["Retry-After"], String(ControlAPI.retryAfterSeconds))
            let object = try body(response)
            XCTAssertEqual(object["reason"] as? String, reason)
            XCTAssertEqual(object["error"] as? String, error.description)
        }
    }
}
