@testable import BenchSupport
@testable import ClientSockets
import CLoadGen
import Foundation
import Glibc
import XCTest
@testable import LoadGen

/// `CPUPlacement` on this machine's CPUs, read back from the kernel.
final class CPUPlacementTests: XCTestCase {
    /// The allowed-CPU mask of a thread or process, from /proc/PID/task/TID/status.
    func allowedMask(_ pid: pid_t, thread: pid_t) throws -> UInt64 {
        let status = try String(contentsOfFile: "/proc/\(pid)/task/\(thread)/status", encoding: .utf8)
        let line = try XCTUnwrap(status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed:") })
        let hex = line.split(separator: "\t").last.map { $0.replacingOccurrences(of: ",", with: "") } ?? ""
        return try XCTUnwrap(UInt64(hex.suffix(16), radix: 16), String(line))
    }

    func testSplitPinsAThreadAndEveryThreadOfAProcess() throws {
        var allowed: UInt64 = 0
        XCTAssertEqual(lg_cpu_mask_get(&allowed), 0)
        guard let placement = CPUPlacement.split() else {
            throw XCTSkip("fewer than two CPUs allowed here (mask 0x\(String(allowed, radix: 16)))")
        }
        XCTAssertEqual(placement.sourceMask.nonzeroBitCount, 1)
        XCTAssertEqual(placement.forwarderMask.nonzeroBitCount, 1)
        XCTAssertNotEqual(placement.sourceMask, placement.forwarderMask)
        XCTAssertEqual((placement.sourceMask | placement.forwarderMask) & ~allowed, 0, "both within the allowed CPUs")

        // A thread of ours, pinned from inside, as LoadRun's sender and receiver are.
        let seen = ThreadOutcome<UInt64>()
        seen.start(name: "placed") {
            try? CPUPlacement.pin(thread: 0, to: placement.forwarderMask)
            var mask: UInt64 = 0
            _ = lg_cpu_mask_get(&mask)
            return mask
        }
        XCTAssertEqual(seen.wait(), placement.forwarderMask)

        // A child process, every thread of it, as compare places the relay.
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sleep")
        child.arguments = ["30"]
        try child.run()
        defer {
            child.terminate()
            child.waitUntilExit()
        }
        let pid = child.processIdentifier
        try CPUPlacement.pin(process: pid, to: placement.sourceMask)
        let threads = CPUPlacement.threads(of: pid)
        XCTAssertEqual(threads, [pid], "sleep has one thread")
        XCTAssertEqual(try allowedMask(pid, thread: pid), placement.sourceMask)
        XCTAssertThrowsError(try CPUPlacement.pin(thread: pid, to: 0), "an empty mask is refused, and said") { error in
            XCTAssertTrue((error as? LoadError)?.message.hasPrefix("sched_setaffinity(\(pid), 0x0): ") == true, "\(error)")
        }
    }
}
