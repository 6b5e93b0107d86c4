import Foundation
import XCTest

/// What a test needs from the host rather than from the code under test: an outside program,
/// an IPv6 loopback address.
///
/// Contract: a requirement that is met returns; one that is not throws `XCTSkip` with the
/// reason, except under `make test`, which installs every tool (make test-deps) and sets
/// MEDIARELAY_REQUIRE_TEST_TOOLS=1: there it throws `Missing`, which fails the test. A host
/// that lost a tool or its ::1 must not turn part of the suite into skips nobody reads.
public enum HostRequirement {
    /// The failure thrown under `make test`; its description is the reason.
    public struct Missing: Error, CustomStringConvertible {
        public let description: String
    }

    /// Whether this run promised every requirement (MEDIARELAY_REQUIRE_TEST_TOOLS=1).
    public static var isStrict: Bool {
        ProcessInfo.processInfo.environment["MEDIARELAY_REQUIRE_TEST_TOOLS"] == "1"
    }

    /// Skips, or fails under `make test`, with `reason` unless `met`.
    public static func require(_ met: Bool, _ reason: @autoclosure () -> String) throws {
        guard !met else { return }
        if isStrict { throw Missing(description: reason()) }
        throw XCTSkip(reason())
    }

    /// The executables at `paths` (iperf3, socat, coturn's tools, tshark), checked by path
    /// alone: nothing under test runs to find out.
    public static func requireTools(_ paths: [String]) throws {
        let missing = paths.filter { !FileManager.default.isExecutableFile(atPath: $0) }
        try require(missing.isEmpty, "\(missing.joined(separator: " and ")) not installed (make test-deps installs them)")
    }
}
