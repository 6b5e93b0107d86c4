import Foundation
import Glibc
import NetAddress
import STUN
import TestPorts
import XCTest

/// Address mistakes stop start-up with one line naming the cure, through the real executable:
/// a --relay-address or listener address the host lacks (until --free-bind on, which binds it
/// with IP_FREEBIND), a TURN listener others reach with relayed addresses that would be
/// advertised as 127.0.0.1, a UDP listener inside --ports.
final class StartupAddressChecksTests: XCTestCase {
    /// From TEST-NET-3 (RFC 5737), which no host should carry.
    static let absent = "203.0.113.77"

    private func assertStops(_ arguments: [String], _ mentions: [String], file: StaticString = #filePath, line: UInt = #line) throws {
        let (status, stderr) = try RelayProcess.runToExit(["--http", "127.0.0.1:0"] + arguments, file: file, line: line)
        XCTAssertEqual(status, 2, stderr, file: file, line: line)
        XCTAssertEqual(stderr.split(separator: "\n").count, 1, stderr, file: file, line: line)
        XCTAssertTrue(stderr.hasPrefix("mediarelay: "), stderr, file: file, line: line)
        for text in mentions { XCTAssertTrue(stderr.contains(text), "\(stderr) does not say \(text)", file: file, line: line) }
    }

    /// It passed start-up, /readyz said 200, and every Allocate was refused with 508, unlogged.
    func testAnAddressTheHostLacksStopsStartUpNamingTheCure() throws {
        let ports = try PortBlock(count: 10)
        try assertStops(["--ports", ports.argument, "--relay-address", Self.absent],
                        ["--relay-address \(Self.absent): \(Self.absent) is not an address of this host (it has ", "127.0.0.1",
                         "--free-bind on"])
        let free = try IndependentPeer(host: "127.0.0.1").port
        try assertStops(["--ports", ports.argument, "--turn-user", "a:b", "--relay-address", "127.0.0.1", "--turn", "\(Self.absent):\(free)"],
                        ["--turn \(Self.absent):\(free)", "not an address of this host"])
    }

    /// With --free-bind on the same address is bound (IP_FREEBIND): a relayed address and a
    /// session leg on it, as a floating address that has not arrived yet would be.
    func testFreeBindBindsAnAddressThatIsNotHereYet() throws {
        let fixture = try TurnRelayFixture(["--free-bind", "on", "--relay-address", Self.absent, "--control-token", "t"])
        defer { XCTAssertEqual(fixture.relay.stop(), 0) }
        XCTAssertEqual(try fixture.client().allocate().hostText, Self.absent)
        let (_, legs) = try fixture.relay.createSession(token: "t")
        XCTAssertEqual(legs.first?.hostText, Self.absent)
        XCTAssertTrue(fixture.relay.log.contains("--free-bind on: --relay-address \(Self.absent) is not on this host yet"), fixture.relay.log)
    }

    /// It handed out 127.0.0.1 as the relayed address to clients on other hosts, silently.
    func testAWildcardTURNListenerWithoutAnAdvertisedAddressStopsStartUp() throws {
        let ports = try PortBlock(count: 10)
        let free = try IndependentPeer(host: "127.0.0.1").port
        try assertStops(["--ports", ports.argument, "--turn-user", "a:b", "--turn", "0.0.0.0:\(free)"],
                        ["--turn 0.0.0.0:\(free): other hosts reach this listener", "advertised as 127.0.0.1", "give --advertise-address"])
    }

    /// It was accepted, and sessions and relayed addresses then competed for the port.
    func testAUDPListenerInsideThePortRangeStopsStartUp() throws {
        let ports = try PortBlock(count: 10)
        let inside = ports.range.lowerBound + 3
        try assertStops(["--ports", ports.argument, "--turn-user", "a:b", "--turn", "127.0.0.1:\(inside)"],
                        ["--turn 127.0.0.1:\(inside): port \(inside) is inside --ports \(ports.argument)", "narrow --ports"])
    }
}
