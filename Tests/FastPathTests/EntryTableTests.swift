import FastPath
import Glibc
import NetAddress
import TestSupport
import XCTest

/// The entries' bookkeeping in user space against the real kernel maps (loaded, not attached):
/// a full table refuses, a removed entry's place is used again, and a new entry's counters
/// start at zero.
final class EntryTableTests: XCTestCase {
    func testFullTableRefusesAndFreedPlacesAreReused() throws {
        try HostRequirement.require(getuid() == 0, "the fast path tests need root (BPF)")
        let fastPath: KernelFastPath
        do { fastPath = try KernelFastPath(capacity: 2) } catch {
            try HostRequirement.require(false, "\(error)")
            return
        }
        func key(_ port: UInt16) -> FlowKey {
            FlowKey(source: Endpoint(host: "192.0.2.1", port: port)!, destination: Endpoint(host: "192.0.2.2", port: 3478)!)
        }
        let entry = FlowEntry(source: Endpoint(host: "192.0.2.2", port: 50000)!, destination: Endpoint(host: "192.0.2.3", port: 9)!,
                              egressInterface: 0)
        try fastPath.install(key(1), entry)
        try fastPath.install(key(2), entry)
        try fastPath.install(key(2), entry)  // a replacement takes no new place
        XCTAssertThrowsError(try fastPath.install(key(3), entry)) { error in
            XCTAssertTrue("\(error)".contains("the table is full (2 entries)"), "\(error)")
        }
        XCTAssertEqual(fastPath.count, 2)
        fastPath.remove(key(1))
        XCTAssertNil(fastPath.counters(key(1)))
        try fastPath.install(key(3), entry)
        XCTAssertEqual(fastPath.counters(key(3)), FlowCounters())
        XCTAssertEqual(fastPath.count, 2)
    }
}
