import DatagramEngine
import Foundation
@testable import RelayCore
import STUN
import TestSupport
import XCTest

/// DONT-FRAGMENT (RFC 8656 sections 7.2 and 14) seen from outside the relay: tshark captures
/// on loopback what two relayed sockets send to a peer, one of an allocation that asked for
/// DONT-FRAGMENT and one of an allocation that did not, and reads each datagram's DF bit
/// (`ip.flags.df`). The first must carry DF, the second must not (the relay takes an incoming
/// DF bit it cannot read as 0). IPv4 only: IPv6 has no DF bit on the wire.
final class TurnDontFragmentTests: XCTestCase {
    static let tshark = "/usr/bin/tshark"

    func testDFBitOnTheWireFollowsTheAllocate() throws {
        try HostRequirement.requireTools([TurnDontFragmentTests.tshark])
        let harness = try TurnHarness()
        var fragmentFree = try TurnTestClient(harness)
        var plain = try TurnTestClient(harness)
        let dfPort = try XCTUnwrap(fragmentFree.allocate { $0.append(.dontFragment, []) }?.xorAddress(.xorRelayedAddress)).port
        let plainPort = try XCTUnwrap(plain.allocate()?.xorAddress(.xorRelayedAddress)).port
        let (peer, peerAddress) = try harness.socket()
        XCTAssertTrue(try XCTUnwrap(fragmentFree.bind(0x4000, peerAddress)).isSuccess)
        XCTAssertTrue(try XCTUnwrap(plain.bind(0x4000, peerAddress)).isSuccess)

        let capture = try Capture(filter: "udp and (src port \(dfPort) or src port \(plainPort))")
        defer { capture.stop() }
        // tshark says it is capturing a little before it is: datagrams go until it has seen
        // three from each relayed socket, for at most 30 s.
        var seen: [(port: UInt16, df: Bool)] = []
        func count(_ port: UInt16, df: Bool) -> Int { seen.filter { $0.port == port && $0.df == df }.count }
        let deadline = Date().addingTimeInterval(30)
        var index: UInt8 = 0
        while Date() < deadline && !(seen.filter { $0.port == dfPort }.count >= 3 && seen.filter { $0.port == plainPort }.count >= 3) {
            for client in [fragmentFree, plain] {
                client.send(channelData(0x4000, [index]))
                XCTAssertEqual(harness.next(on: peer)?.bytes, [index])
            }
            index &+= 1
            Thread.sleep(forTimeInterval: 0.02)
            seen = capture.fields()
        }
        // Each half on its own: three or more datagrams of each allocation, the one with DF set
        // on every one, the other with DF clear on every one. A total could be met by one side.
        XCTAssertGreaterThanOrEqual(count(dfPort, df: true), 3, "DONT-FRAGMENT asked: DF set from \(dfPort); captured \(seen)")
        XCTAssertEqual(count(dfPort, df: false), 0, "DONT-FRAGMENT asked: never DF clear from \(dfPort); captured \(seen)")
        XCTAssertGreaterThanOrEqual(count(plainPort, df: false), 3, "no DONT-FRAGMENT: DF clear from \(plainPort); captured \(seen)")
        XCTAssertEqual(count(plainPort, df: true), 0, "no DONT-FRAGMENT: never DF set from \(plainPort); captured \(seen)")
        XCTAssertEqual(seen.filter { $0.port != dfPort && $0.port != plainPort }.count, 0, "only the two relayed ports: \(seen)")
    }
}

/// tshark on loopback, writing "source port<TAB>DF" per captured datagram to a file, line by
/// line, until stopped (or 60 s have passed). Files, not pipes: the test polls them without a
/// reader thread.
private final class Capture {
    let process = Process()
    let directory: URL
    var output: URL { directory.appendingPathComponent("fields") }
    var log: URL { directory.appendingPathComponent("log") }

    init(filter: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("turn-df-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: TurnDontFragmentTests.tshark)
        process.arguments = ["-i", "lo", "-n", "-l", "-f", filter, "-a", "duration:60",
                             "-T", "fields", "-e", "udp.srcport", "-e", "ip.flags.df"]
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        // tshark says "Capturing on 'Loopback: lo'" once the filter is on the interface.
        let deadline = Date().addingTimeInterval(30)
        while !((try? String(contentsOf: log, encoding: .utf8))?.contains("Capturing on") ?? false) {
            guard process.isRunning, Date() < deadline else {
                throw CaptureFailed(log: (try? String(contentsOf: log, encoding: .utf8)) ?? "")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// What tshark has written so far (whole lines only).
    func fields() -> [(port: UInt16, df: Bool)] {
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: true).compactMap { line in
            let parts = line.split(separator: "\t")
            guard parts.count == 2, let port = UInt16(parts[0]) else { return nil }
            // Booleans print as 1/0, or True/False in newer tshark.
            return (port, parts[1] == "1" || parts[1].lowercased() == "true")
        }
    }

    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    struct CaptureFailed: Error, CustomStringConvertible {
        var log: String
        var description: String { "tshark did not start capturing on lo: \(log)" }
    }
}
