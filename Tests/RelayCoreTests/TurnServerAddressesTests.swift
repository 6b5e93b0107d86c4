import NetAddress
import RelayCore
import XCTest

/// The relay's addresses as the TURN server sees them (`TurnServerAddresses`): relayed and
/// advertised addresses per family, the own sockets the peer policy refuses, and the alternates
/// that are this relay itself. Table logic only: no socket.
final class TurnServerAddressesTests: XCTestCase, PeerPolicyFixture {
    private func host(_ text: String) -> Endpoint { Endpoint(host: text, port: 0)! }

    private func addresses(relay: String, advertise: String, hosts: [String] = [], udp: [String] = [], tcp: [String] = [],
                           tls: [String] = [], other: [String] = [], ports: ClosedRange<UInt16>? = nil) -> TurnServerAddresses {
        TurnServerAddresses(relayAddress: host(relay), advertiseAddress: host(advertise), hostAddresses: hosts.map(host),
                            udpListeners: udp.map(ep), tcpListeners: tcp.map(ep), tlsListeners: tls.map(ep),
                            otherSockets: other.map(ep), ownPorts: ports)
    }

    func testAnIPv4RelayAddressServesIPv4AndLoopbackAlsoIPv6() {
        let plain = addresses(relay: "198.51.100.4", advertise: "198.51.100.4")
        XCTAssertEqual(plain.relayIPv4, host("198.51.100.4"))
        XCTAssertEqual(plain.advertiseIPv4, host("198.51.100.4"))
        XCTAssertNil(plain.relayIPv6, "an IPv4 address that is not loopback offers no IPv6")
        XCTAssertNil(plain.advertiseIPv6)
        let loopback = addresses(relay: "127.0.0.1", advertise: "127.0.0.1")
        XCTAssertEqual(loopback.relayIPv4, host("127.0.0.1"))
        XCTAssertEqual(loopback.relayIPv6, host("::1"), "127.0.0.1 also relays on ::1, for loopback tests")
        XCTAssertEqual(loopback.advertiseIPv6, host("::1"))
        let six = addresses(relay: "2001:db8::4", advertise: "2001:db8::4")
        XCTAssertNil(six.relayIPv4)
        XCTAssertEqual(six.relayIPv6, host("2001:db8::4"))
        XCTAssertEqual(six.advertiseIPv6, host("2001:db8::4"))
    }

    func testAWildcardRelayAddressIsOfferedOnlyWhereAnAddressIsAdvertised() {
        // "::" binds both families, but a wildcard is never handed to a client: a family is
        // offered only when the advertise address is of it.
        let natted = addresses(relay: "::", advertise: "203.0.113.10")
        XCTAssertEqual(natted.relayIPv4, Endpoint(ipv4: 0, port: 0))
        XCTAssertEqual(natted.advertiseIPv4, host("203.0.113.10"))
        XCTAssertNil(natted.relayIPv6, "nothing to advertise for IPv6")
        XCTAssertNil(natted.advertiseIPv6)
        let sixOnly = addresses(relay: "::", advertise: "2001:db8::10")
        XCTAssertNil(sixOnly.relayIPv4)
        XCTAssertNil(sixOnly.advertiseIPv4)
        XCTAssertEqual(sixOnly.relayIPv6, host("::"))
        XCTAssertEqual(sixOnly.advertiseIPv6, host("2001:db8::10"))
        let fourAny = addresses(relay: "0.0.0.0", advertise: "127.0.0.1")
        XCTAssertEqual(fourAny.relayIPv4, Endpoint(ipv4: 0, port: 0))
        XCTAssertEqual(fourAny.advertiseIPv4, host("127.0.0.1"))
        XCTAssertNil(fourAny.relayIPv6, "0.0.0.0 takes IPv4 only")
    }

    func testEachFamilyHasOneAddressAndTheAdvertisedOneWinsInItsFamily() {
        let natted = addresses(relay: "10.0.0.5", advertise: "203.0.113.10")
        XCTAssertEqual(natted.relayIPv4, host("10.0.0.5"), "sockets bind the inside address")
        XCTAssertEqual(natted.advertiseIPv4, host("203.0.113.10"), "clients are given the public one")
        XCTAssertNil(natted.relayIPv6)
        // An advertise address of the other family names that family; this one keeps its own.
        let mixed = addresses(relay: "10.0.0.5", advertise: "2001:db8::7")
        XCTAssertEqual(mixed.relayIPv4, host("10.0.0.5"))
        XCTAssertEqual(mixed.advertiseIPv4, host("10.0.0.5"))
        XCTAssertNil(mixed.relayIPv6, "no IPv6 socket to relay from: IPv6 is not offered")
    }

    func testIPv4MappedAddressesAreTheirIPv4Address() {
        let mapped = addresses(relay: "::ffff:10.0.0.5", advertise: "::ffff:203.0.113.10", ports: 40000...40999)
        XCTAssertEqual(mapped.relayIPv4, host("10.0.0.5"))
        XCTAssertEqual(mapped.advertiseIPv4, host("203.0.113.10"))
        XCTAssertNil(mapped.relayIPv6, "a mapped address is IPv4, not IPv6")
        let policy = mapped.peerPolicy(allowed: [cidr("0.0.0.0/0")])
        XCTAssertEqual(policy.decide(peer: ep("203.0.113.10:40001"), isRelayedAddress: never), .refused(.relaySocket))
        XCTAssertEqual(policy.decide(peer: ep("[::ffff:203.0.113.10]:40001"), isRelayedAddress: never), .refused(.relaySocket))
        XCTAssertEqual(policy.decide(peer: ep("[::ffff:10.0.0.5]:40001"), isRelayedAddress: never), .refused(.relaySocket))
    }

    func testThePolicyRefusesEveryOwnSocketOnEveryOwnAddressEvenWhenAllowed() {
        let relay = addresses(relay: "10.0.0.5", advertise: "203.0.113.10", hosts: ["192.168.1.2"], udp: ["10.0.0.5:3478"],
                              tcp: ["0.0.0.0:3479"], tls: ["[::]:5349"], other: ["0.0.0.0:5000", "127.0.0.1:9480"],
                              ports: 40000...40999)
        XCTAssertEqual(Set(relay.ownSockets), Set(["10.0.0.5:3478", "0.0.0.0:3479", "[::]:5349", "0.0.0.0:5000", "127.0.0.1:9480"].map(ep)))
        let policy = relay.peerPolicy(allowed: [cidr("0.0.0.0/0"), cidr("::/0")])
        for own in ["10.0.0.5:3478", "203.0.113.10:3479", "192.168.1.2:5000", "203.0.113.10:5349", "127.0.0.1:9480",
                    "203.0.113.10:40001", "10.0.0.5:40999", "192.168.1.2:40000"] {
            XCTAssertEqual(policy.decide(peer: ep(own), isRelayedAddress: never), .refused(.relaySocket), own)
        }
        // The advertised address is the relay's own: its pool port is another allocation's
        // relayed address when the hook says so, and then reachable.
        XCTAssertEqual(policy.decide(peer: ep("203.0.113.10:40001"), isRelayedAddress: { _ in true }), .allowed)
        XCTAssertEqual(policy.decide(permission: ep("203.0.113.10:1")), .allowed, "a relayed address may be permitted")
        // Another host at the same ports is a peer like any other.
        for foreign in ["198.51.100.99:5000", "198.51.100.99:40001", "192.168.1.3:3479"] {
            XCTAssertEqual(policy.decide(peer: ep(foreign), isRelayedAddress: never), .allowed, foreign)
        }
        let denied = relay.peerPolicy(denied: [cidr("198.51.100.0/24")])
        XCTAssertEqual(denied.decide(peer: ep("198.51.100.99:5000"), isRelayedAddress: never), .refused(.operatorDenied))
        XCTAssertEqual(denied.decide(peer: ep("8.8.8.8:53"), isRelayedAddress: never), .allowed)
    }

    func testTheSettingsTakeTheFamiliesAndThePolicy() {
        let relay = addresses(relay: "::", advertise: "203.0.113.10", udp: ["0.0.0.0:3478"], ports: 40000...40999)
        let settings = TurnSettings(authenticator: TurnAuthenticator(credentials: TurnCredentials(realm: "r", users: [("u", "p")])),
                                    addresses: relay, allowedPeers: [cidr("10.0.0.0/8")], deniedPeers: [cidr("8.8.8.0/24")])
        XCTAssertEqual(settings.relayIPv4, Endpoint(ipv4: 0, port: 0))
        XCTAssertNil(settings.relayIPv6)
        XCTAssertEqual(settings.advertiseIPv4, host("203.0.113.10"))
        XCTAssertNil(settings.advertiseIPv6)
        XCTAssertEqual(settings.peerPolicy.allowed, [cidr("10.0.0.0/8")])
        XCTAssertEqual(settings.peerPolicy.denied, [cidr("8.8.8.0/24")])
        XCTAssertEqual(settings.peerPolicy.decide(peer: ep("203.0.113.10:3478"), isRelayedAddress: never), .refused(.relaySocket),
                       "a wildcard listener's port is own on the advertised address")
        XCTAssertEqual(settings.peerPolicy.decide(peer: ep("10.1.1.1:3478"), isRelayedAddress: never), .allowed, "allowed, not own")
    }

    func testAnAlternateIsThisRelayWhenItReachesOneOfItsListeners() {
        let relay = addresses(relay: "10.0.0.5", advertise: "203.0.113.10", hosts: ["192.168.1.2"], udp: ["0.0.0.0:3478"],
                              tcp: ["10.0.0.5:3479"], tls: ["[::]:5349"])
        let cases: [(String, Bool, Bool, String)] = [
            ("127.0.0.5:3478", false, true, "a wildcard listener is reached on loopback"),
            ("192.168.1.2:3478", false, true, "and on the host's interfaces"),
            ("10.0.0.5:3478", false, true, "and on the relay address"),
            ("192.168.1.3:3478", false, false, "another host"),
            ("[::1]:3478", false, false, "0.0.0.0 takes no IPv6"),
            ("10.0.0.5:3479", false, true, "a TCP listener serves plain alternates"),
            ("10.0.0.6:3479", false, false, "another host at a listener's port"),
            ("203.0.113.10:3479", false, true, "behind a 1:1 NAT the advertised address reaches every listener"),
            ("203.0.113.10:3480", false, false, "no listener on that port"),
            ("127.0.0.1:5349", true, true, "\"::\" takes IPv4 too"),
            ("[::1]:5349", true, true, "a TLS alternate against the TLS listeners"),
            ("127.0.0.1:5349", false, false, "a plain alternate is not compared with TLS listeners"),
            ("127.0.0.1:3478", true, false, "nor a TLS one with UDP listeners"),
        ]
        for (alternate, tls, expected, why) in cases {
            XCTAssertEqual(relay.isThisRelay(alternate: ep(alternate), tls: tls), expected, "\(alternate): \(why)")
        }
        // 127.0.0.1 advertised by default is no NAT's public side: a sibling in a lab listens there.
        let lab = addresses(relay: "127.0.0.1", advertise: "127.0.0.1", udp: ["127.0.0.1:3478"])
        XCTAssertFalse(lab.isThisRelay(alternate: ep("127.0.0.2:3478"), tls: false))
        XCTAssertTrue(lab.isThisRelay(alternate: ep("127.0.0.1:3478"), tls: false))
    }
}
