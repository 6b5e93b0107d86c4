import Foundation
import TestSupport

/// Outside programs some tests drive (iperf3, socat, coturn's tools). `make test` installs
/// them (make test-deps, which fails when it cannot) and sets MEDIARELAY_REQUIRE_TEST_TOOLS=1,
/// so there a missing tool is an error; a bare `swift test` without them skips and says how
/// (HostRequirement).
enum TestTools {
    static func require(_ paths: [String]) throws {
        try HostRequirement.requireTools(paths)
    }

    /// Waits (at most 20 s) until something listens on TCP `ipv4`:`port`, read from
    /// /proc/net/tcp so that no probe connection is made (iperf3 -s -1 would take it as its
    /// one client). Returns whether it did.
    static func waitForTCPListener(_ ipv4: String, port: UInt16) -> Bool {
        let octets = ipv4.split(separator: ".").compactMap { UInt8($0) }
        let local = octets.reversed().map { String(format: "%02X", $0) }.joined() + String(format: ":%04X", port)
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let table = (try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8)) ?? ""
            let listening = table.split(separator: "\n").contains { line in
                let fields = line.split(separator: " ")
                return fields.count > 3 && fields[1] == local && fields[3] == "0A"
            }
            if listening { return true }
            usleep(20_000)
        }
        return false
    }
}
