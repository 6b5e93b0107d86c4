import NetAddress
import XCTest

@testable import mediarelay

/// Address mistakes caught before the relay starts: relayed addresses advertised as
/// 127.0.0.1 to clients elsewhere, UDP listeners inside --ports, addresses the host lacks.
final class StartupChecksTests: XCTestCase {
    private let user = ["--turn-user", "a:b"]

    func testATURNListenerOthersReachNeedsAnAdvertisedAddressBesideAWildcardRelayAddress() {
        for listener in [["--turn", "0.0.0.0:3478"], ["--turn-tcp", "[::]:3478"], ["--turn", "192.0.2.5:3478"]] {
            refusal(user + listener, mentions: [listener.joined(separator: " "), "--advertise-address", "127.0.0.1"])
            XCTAssertNotNil(runOptions(user + listener + ["--advertise-address", "203.0.113.9"]))
            XCTAssertNotNil(runOptions(user + listener + ["--relay-address", "192.0.2.5"]), "advertised as the relay address")
        }
        XCTAssertNotNil(runOptions(user + ["--turn", "127.0.0.1:3478"]), "a loopback listener is reached from this host only")
        refusal(["--config", "c.json"], files: ["c.json": #"{"turn": ["0.0.0.0:3478"], "turn_user": ["a:b"]}"#],
                mentions: [#"config c.json: key "turn": 0.0.0.0:3478"#, "--advertise-address"])
    }

    func testAUDPListenerInsideThePortRangeIsRefused() {
        refusal(user + ["--turn", "127.0.0.1:40005"], mentions: ["--turn 127.0.0.1:40005", "port 40005 is inside --ports 40000-40999"])
        refusal(["--forward", "127.0.0.1:40999=127.0.0.1:5000"], mentions: ["--forward 127.0.0.1:40999=127.0.0.1:5000", "inside --ports"])
        XCTAssertNotNil(runOptions(user + ["--turn", "127.0.0.1:40005", "--ports", "41000-41999"]))
        XCTAssertNotNil(runOptions(user + ["--turn-tcp", "127.0.0.1:40005"]), "TCP ports are not the pool's")
    }

    func testAnAddressTheHostLacksIsNamedWithTheCure() throws {
        let host = [Endpoint(host: "127.0.0.1", port: 0)!, Endpoint(host: "10.0.0.5", port: 0)!, Endpoint(host: "::1", port: 0)!]
        let relay = try XCTUnwrap(runOptions(["--relay-address", "192.0.2.7"]))
        let error = try XCTUnwrap(relay.addressNotOnHost(host))
        XCTAssertEqual(error.subject, "--relay-address 192.0.2.7")
        XCTAssertTrue(error.problem.contains("192.0.2.7 is not an address of this host (it has 10.0.0.5, 127.0.0.1, ::1)"), error.problem)
        XCTAssertTrue(error.problem.contains("--free-bind on"), error.problem)
        var floating = relay
        floating.freeBind = true
        XCTAssertNil(floating.addressNotOnHost(host))
        // Made by hand: a TLS listener would need a certificate to parse.
        var listener = ServerOptions()
        listener.relayAddress = "10.0.0.5"
        listener.turnListeners = [HostPort(host: "127.0.0.2", port: 3478)]
        listener.turnTLSListeners = [HostPort(host: "192.0.2.8", port: 443)]
        XCTAssertEqual(listener.addressNotOnHost(host)?.subject, "--turn-tls 192.0.2.8:443")
        XCTAssertNil(try XCTUnwrap(runOptions(user + ["--turn", "[::]:3478", "--advertise-address", "192.0.2.9"])).addressNotOnHost(host),
                     "wildcards and 127.0.0.0/8 are always here")
    }
}
