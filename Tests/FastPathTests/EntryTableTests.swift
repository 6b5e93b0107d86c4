import FastPath
import Foundation
import Glibc
import NetAddress
import Synchronization
import SystemSupport
import TestSupport
import XCTest

/// The entries' bookkeeping in user space against the real kernel maps (loaded, not attached):
/// a full table refuses and counts it, a removed entry's place is used again with its counters,
/// idle time and credit started afresh, and several threads may install and remove at once.
final class EntryTableTests: XCTestCase {
    private func loaded(capacity: Int) throws -> KernelFastPath {
        try HostRequirement.require(getuid() == 0, "the fast path tests need root (BPF)")
        do { return try KernelFastPath(capacity: capacity) } catch {
            try HostRequirement.require(false, "\(error)")
            throw error
        }
    }

    private static func key(_ port: UInt16) -> FlowKey {
        FlowKey(source: Endpoint(host: "192.0.2.1", port: port)!, destination: Endpoint(host: "192.0.2.2", port: 3478)!)
    }

    private static let entry = FlowEntry(source: Endpoint(host: "192.0.2.2", port: 50000)!, destination: Endpoint(host: "192.0.2.3", port: 9)!)

    func testFullTableRefusesAndFreedPlacesAreReused() throws {
        let fastPath = try loaded(capacity: 2)
        try fastPath.put(Self.key(1), Self.entry)
        try fastPath.put(Self.key(2), Self.entry)
        try fastPath.put(Self.key(2), Self.entry)  // a replacement takes no new place
        XCTAssertThrowsError(try fastPath.put(Self.key(3), Self.entry)) { error in
            XCTAssertTrue("\(error)".contains("the table is full (2 entries)"), "\(error)")
        }
        XCTAssertEqual(fastPath.refusals, 1)
        XCTAssertEqual(fastPath.count, 2)
        fastPath.remove(Self.key(1))
        XCTAssertNil(fastPath.counters(Self.key(1)))
        XCTAssertNil(fastPath.lastForwarded(Self.key(1)))
        try fastPath.put(Self.key(3), Self.entry)
        XCTAssertEqual(fastPath.counters(Self.key(3)), FlowCounters())
        XCTAssertEqual(fastPath.count, 2)
        XCTAssertEqual(fastPath.refusals, 1)
    }

    /// With one place only, the next entry gets the removed one's slot: no credit (bytes or
    /// packets) carried over, and its idle time starts at its own install.
    func testReusedPlaceStartsWithoutCreditAndAtItsInstall() throws {
        let fastPath = try loaded(capacity: 1)
        try fastPath.put(Self.key(1), FlowEntry(source: Self.entry.source, destination: Self.entry.destination, credited: true))
        XCTAssertEqual(fastPath.exchangeCredit(Self.key(1), 5000), 0)
        XCTAssertEqual(fastPath.exchangePacketCredit(Self.key(1), 40), 0)
        fastPath.remove(Self.key(1))
        MonotonicClock.sleep(until: MonotonicClock.now() + MonotonicClock.nanoseconds(0.01))
        let before = MonotonicClock.now()
        try fastPath.put(Self.key(2), FlowEntry(source: Self.entry.source, destination: Self.entry.destination, credited: true))
        XCTAssertEqual(fastPath.exchangeCredit(Self.key(2), 0), 0)
        XCTAssertEqual(fastPath.exchangePacketCredit(Self.key(2), 0), 0)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(fastPath.lastForwarded(Self.key(2))), before)
    }

    /// Two threads install, replace, read and remove their own flows at once, many times; the
    /// table ends empty with every place free (filled again exactly to capacity) and no refusal.
    func testTwoThreadsInstallAndRemoveAtOnce() throws {
        let capacity = 64
        let fastPath = try loaded(capacity: capacity)
        let failures = Mutex<[String]>([])
        let done = DispatchGroup()
        for thread in 0..<2 {
            done.enter()
            Thread.detachNewThread {
                for round in 0..<200 {
                    let keys = (0..<32).map { Self.key(UInt16(1000 + thread * 100 + $0)) }
                    for key in keys {
                        do { try fastPath.put(key, Self.entry) } catch { failures.withLock { $0.append("\(error)") } }
                        _ = fastPath.exchangeCredit(key, Int64(round))
                        if fastPath.lastForwarded(key) == nil || fastPath.counters(key) == nil {
                            failures.withLock { $0.append("thread \(thread), round \(round): \(key) missing right after its install") }
                        }
                    }
                    for key in keys { fastPath.remove(key) }
                }
                done.leave()
            }
        }
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertEqual(fastPath.count, 0)
        XCTAssertEqual(fastPath.refusals, 0)
        for port in 0..<capacity { try fastPath.put(Self.key(UInt16(port + 1)), Self.entry) }
        XCTAssertThrowsError(try fastPath.put(Self.key(9999), Self.entry))
        XCTAssertEqual(fastPath.refusals, 1)
    }
}
