import NetAddress
import XCTest

@testable import mediarelay

/// Which interfaces the fast path takes when none is named, from a list built here (the real
/// getifaddrs is read by DeployTests' FastPathServerTests in a namespace of its own).
final class HostInterfacesTests: XCTestCase {
    private func address(_ text: String) -> Endpoint { Endpoint(host: text, port: 0)! }

    private let host = HostInterfaces([
        .init(name: "lo", isUp: true, addresses: [Endpoint(host: "127.0.0.1", port: 0)!, Endpoint(host: "::1", port: 0)!]),
        .init(name: "eth0", isUp: true, addresses: [Endpoint(host: "10.0.0.5", port: 0)!, Endpoint(host: "fe80::1", port: 0)!]),
        .init(name: "eth1", isUp: true, addresses: [Endpoint(host: "2001:db8::5", port: 0)!]),
        .init(name: "down0", isUp: false, addresses: [Endpoint(host: "10.9.0.1", port: 0)!]),
        // A container's veth on a node: up, with only its link-local address.
        .init(name: "veth9", isUp: true, addresses: [Endpoint(host: "fe80::9", port: 0)!]),
        .init(name: "bare0", isUp: true, addresses: []),
    ])

    func testAnAddressTakesTheInterfaceThatCarriesIt() {
        XCTAssertEqual(host.carrying([address("10.0.0.5")]), ["eth0"])
        XCTAssertEqual(host.carrying([address("10.0.0.5"), address("2001:db8::5")]), ["eth0", "eth1"])
        XCTAssertEqual(host.carrying([address("10.9.0.1")]), [], "a down interface is left out")
        XCTAssertEqual(host.carrying([address("192.0.2.1")]), [])
    }

    func testAWildcardTakesEveryUpInterfaceWithAnAddressOfItsFamily() {
        XCTAssertEqual(host.carrying([address("0.0.0.0")]), ["lo", "eth0"])
        XCTAssertEqual(host.carrying([address("::")]), ["lo", "eth0", "eth1"], "dual-stack, link-local left out")
    }
}
