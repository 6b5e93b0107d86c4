import FastPath
import Foundation
import Glibc
import NetAddress
import TestSupport
import XCTest

@testable import mediarelay

/// A full kernel table, on a real fast path (loaded into the kernel, not attached): the log
/// says so in one line a minute, and /readyz shows the table's figures without turning unready
/// (the user-space path still takes the flows the kernel refuses).
final class FastPathFullTableTests: XCTestCase {
    private func fullTable() throws -> KernelFastPath {
        try HostRequirement.require(getuid() == 0, "the fast path needs root (BPF)")
        let fastPath = try KernelFastPath(capacity: 2)
        let entry = FlowEntry(source: Endpoint(host: "192.0.2.2", port: 50000)!, destination: Endpoint(host: "192.0.2.3", port: 9)!)
        for port: UInt16 in 1...3 {
            let key = FlowKey(source: Endpoint(host: "192.0.2.1", port: port)!, destination: Endpoint(host: "192.0.2.2", port: 3478)!)
            _ = fastPath.install(key, entry)
        }
        return fastPath
    }

    func testAFullTableIsLoggedOnceAMinute() throws {
        let fastPath = try fullTable()
        var log = FastPathRefusalLog()
        let line = try XCTUnwrap(log.line(fastPath, now: 1000))
        XCTAssertTrue(line.contains("1 new flow entry refused: its table is full (2 of 2 entries"), line)
        XCTAssertTrue(line.contains("stay on the user-space path"), line)
        XCTAssertNil(log.line(fastPath, now: 1001), "nothing new")
        let more = FlowKey(source: Endpoint(host: "192.0.2.1", port: 4)!, destination: Endpoint(host: "192.0.2.2", port: 3478)!)
        XCTAssertFalse(fastPath.install(more, FlowEntry(source: Endpoint(host: "192.0.2.2", port: 50000)!,
                                                        destination: Endpoint(host: "192.0.2.3", port: 9)!)))
        XCTAssertNil(log.line(fastPath, now: 1030), "within the minute")
        XCTAssertNotNil(log.line(fastPath, now: 1061), "after it")
    }

    func testReadyzShowsTheTableWithoutTurningUnready() throws {
        let fastPath = try fullTable()
        let readiness = Readiness(draining: false, threshold: 0.9,
                                  capacity: Capacity(resources: [Capacity.Resource(name: "sessions", inUse: 0, total: 100)]),
                                  fastPath: fastPath)
        let response = readiness.response
        XCTAssertEqual(response.status, 200)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        let table = try XCTUnwrap(object["fast_path"] as? [String: Any])
        XCTAssertEqual(table["entries"] as? Int, 2)
        XCTAssertEqual(table["capacity"] as? Int, 2)
        XCTAssertEqual(table["full"] as? Bool, true)
        XCTAssertEqual(table["refusals"] as? Int, 1)
    }
}
