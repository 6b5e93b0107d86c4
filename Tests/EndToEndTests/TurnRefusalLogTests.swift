import Foundation
import Glibc
import NetAddress
import STUN
import TestSupport
import XCTest

/// Refusals the operator can cure, through the real executable: a 440 for a family the relay
/// address lacks, a 508 at --turn-max-allocations and a 403 for a peer the policy refuses each write one line (both `--log-format`s) saying why and which option
/// cures it; more of the same cause within the minute are counted for the next line, not written.
final class TurnRefusalLogTests: XCTestCase {
    static let message = "TURN request refused"

    func testEachCurableRefusalWritesOneLineNamingItsCureInBothFormats() throws {
        try IPv6Loopback.require()
        for format in ["text", "json"] {
            // ::1 relays IPv6 only; one worker, whose one line per cause a minute is the relay's.
            let fixture = try TurnRelayFixture(["--log-format", format, "--relay-address", "::1", "--turn-max-allocations", "1",
                                                "--workers", "1"])
            defer { XCTAssertEqual(fixture.relay.stop(), 0) }
            let ipv4 = try fixture.client()
            XCTAssertEqual(try ipv4.ask(.allocate) { $0.append(.requestedTransport, [17, 0, 0, 0]) }.errorCode?.code, 440)
            let family = LogLines.wait(fixture.relay, message: Self.message) { $0["cause"] == "family_not_relayed" }
            XCTAssertEqual(family?["code"], "440", fixture.relay.log)
            XCTAssertEqual(family?["level"], "warning")
            XCTAssertEqual(family?["client"], "127.0.0.1")
            XCTAssertEqual(family?["port"], "\(ipv4.socket.localAddress.port)")
            XCTAssertEqual(family?["suppressed"], "0")
            XCTAssertTrue(family?["why"]?.contains("no relayed address of IPv4: --relay-address ::1 gives none") == true,
                          "\(String(describing: family))")

            let first = try fixture.client()
            _ = try first.allocate(family: .ipv6)
            let second = try fixture.client()
            for _ in 0..<3 {
                let refused = try second.ask(.allocate) { builder in
                    builder.append(.requestedTransport, [17, 0, 0, 0])
                    builder.append(.requestedAddressFamily, [AddressFamily.ipv6.rawValue, 0, 0, 0])
                }
                XCTAssertEqual(refused.errorCode?.code, 508)
            }
            let full = LogLines.wait(fixture.relay, message: Self.message) { $0["cause"] == "allocation_limit" }
            XCTAssertEqual(full?["code"], "508", fixture.relay.log)
            XCTAssertTrue(full?["why"]?.contains("--turn-max-allocations (1)") == true, "\(String(describing: full))")

            XCTAssertEqual(try first.permit(Endpoint(host: "fc00::1", port: 0)!).errorCode?.code, 403)
            let peer = LogLines.wait(fixture.relay, message: Self.message) { $0["cause"] == "peer_refused" }
            XCTAssertEqual(peer?["code"], "403", fixture.relay.log)
            XCTAssertEqual(peer?["peer"], "[fc00::1]:0")
            XCTAssertTrue(peer?["why"]?.contains("(private)") == true && peer?["why"]?.contains("--turn-allowed-peer") == true,
                          "\(String(describing: peer))")
            // Three 508s, one line: the other two wait, counted, for the next minute's line.
            let lines = LogLines.all(in: fixture.relay.log, message: Self.message)
            XCTAssertEqual(lines.filter { $0["cause"] == "allocation_limit" }.count, 1, fixture.relay.log)
            XCTAssertEqual(lines.count, 3, fixture.relay.log)
        }
    }
}

/// A TCP connection closed on accept at --turn-max-connections-per-source writes the same kind
/// of line, without an error code (no request was answered). (At --turn-max-connections the
/// engine stops accepting instead, so new connections wait in the kernel's queue.)
final class TurnConnectionRefusalLogTests: XCTestCase {
    func testAConnectionClosedAtItsSourcesLimitWritesOneLineNamingIt() throws {
        for format in ["text", "json"] {
            let server = try TurnStreamServerFixture(["--log-format", format, "--turn-max-connections-per-source", "1"])
            let kept = try LoopbackTCP.connect(port: server.tcpPort)
            defer { close(kept) }
            XCTAssertTrue(eventually {
                (try? server.relay.stats()).flatMap { RelayProcess.number($0, "turn", "transports", "tcp", "connections") } == 1
            })
            let refused = try LoopbackTCP.connect(port: server.tcpPort)
            defer { close(refused) }
            let line = LogLines.wait(server.relay, message: TurnRefusalLogTests.message) { $0["cause"] == "source_connection_limit" }
            XCTAssertNil(line?["code"], "\(String(describing: line))")
            XCTAssertEqual(line?["client"], "127.0.0.1", server.relay.log)
            XCTAssertTrue(line?["why"]?.contains("--turn-max-connections-per-source (1)") == true, server.relay.log)
            XCTAssertEqual(server.relay.stop(), 0)
        }
    }
}
