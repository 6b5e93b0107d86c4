import DatagramEngine
@testable import RelayCore
import NetAddress
import XCTest

/// Peers written as IPv6 forms that reach an IPv4 address (NAT64, 6to4, Teredo, ISATAP) are
/// judged as that address by every rule of the peer policy; and a relayed port of one family
/// is never taken for the same port of the other family.
final class EmbeddedPeerTests: XCTestCase, PeerPolicyFixture {
    /// 8.8.8.8 (0808:0808) and 127.0.0.1 (7f00:0001) in each form, port kept.
    private let eightForms = ["[64:ff9b::808:808]:53", "[64:ff9b::8.8.8.8]:53", "[64:ff9b:1::808:808]:53",
                              "[2002:808:808::1]:53", "[2001:0:4136:e378:8000:63bf:f7f7:f7f7]:53",
                              "[2001:db9::5efe:808:808]:53", "[2001:db9::200:5efe:808:808]:53"]
    private let loopbackForms = ["[64:ff9b::7f00:1]:53", "[64:ff9b:1::7f00:1]:53", "[2002:7f00:1::1]:53",
                                 "[2001:0:4136:e378:8000:63bf:80ff:fffe]:53", "[2a00:1::5efe:7f00:1]:53"]

    func testEachFormYieldsTheAddressItReaches() {
        for text in eightForms {
            XCTAssertEqual(ep(text).embeddedIPv4, ep("8.8.8.8:53"), text)
        }
        for text in loopbackForms {
            XCTAssertEqual(ep(text).embeddedIPv4, ep("127.0.0.1:53"), text)
        }
        for text in ["8.8.8.8:53", "[::ffff:8.8.8.8]:53", "[2a00:1450:4001::1]:53", "[2001:db8::808:808]:53",
                     "[64:ff9a::808:808]:53", "[2003::1]:53", "[::1]:53"] {
            XCTAssertNil(ep(text).embeddedIPv4, text)
        }
    }

    func testDefaultListRefusesEveryFormOfLoopback() {
        let policy = PeerPolicy()
        for text in loopbackForms {
            // The local-use NAT64 block is refused as written before what it embeds is looked at.
            let reason: PeerRefusal = text.hasPrefix("[64:ff9b:1:") ? .privateNetwork : .loopback
            XCTAssertEqual(policy.decide(peer: ep(text), isRelayedAddress: never), .refused(reason), text)
            XCTAssertEqual(policy.decide(permission: ep(text)), .refused(reason), "permission \(text)")
        }
        // The local-use NAT64 block keeps its own verdict even when what it embeds is public.
        XCTAssertEqual(policy.decide(permission: ep("[64:ff9b:1::808:808]:53")), .refused(.privateNetwork))
        for text in eightForms where !text.hasPrefix("[64:ff9b:1:") {
            XCTAssertEqual(policy.decide(peer: ep(text), isRelayedAddress: never), .allowed, text)
        }
    }

    func testOperatorDenyListCoversEveryForm() {
        let policy = PeerPolicy(allowed: [cidr("64:ff9b:1::/48")], denied: [cidr("8.8.8.0/24")])
        for text in eightForms + ["8.8.8.8:53", "[::ffff:8.8.8.8]:53"] {
            XCTAssertEqual(policy.decide(peer: ep(text), isRelayedAddress: never), .refused(.operatorDenied), text)
            XCTAssertEqual(policy.decide(permission: ep(text)), .refused(.operatorDenied), "permission \(text)")
        }
        XCTAssertEqual(policy.decide(peer: ep("[64:ff9b::909:909]:53"), isRelayedAddress: never), .allowed)
        XCTAssertEqual(policy.decide(peer: ep("[64:ff9b:1::909:909]:53"), isRelayedAddress: never), .allowed,
                       "the local-use block allowed as written, what it embeds is public")
    }

    func testAnAllowedFormDoesNotAllowWhatItEmbeds() {
        // Allowing the NAT64 prefix is not allowing loopback through it; allowing the IPv4
        // address is allowing it in every form, as the IPv4 rule would.
        let prefixOnly = PeerPolicy(allowed: [cidr("64:ff9b::/96"), cidr("2002::/16")])
        XCTAssertEqual(prefixOnly.decide(peer: ep("[64:ff9b::7f00:1]:53"), isRelayedAddress: never), .refused(.loopback))
        XCTAssertEqual(prefixOnly.decide(peer: ep("[2002:a00:1::1]:53"), isRelayedAddress: never), .refused(.privateNetwork))
        let loopback = PeerPolicy(allowed: [cidr("127.0.0.0/8")])
        XCTAssertEqual(loopback.decide(peer: ep("[64:ff9b::7f00:1]:53"), isRelayedAddress: never), .allowed)
    }

    func testTheRelaysOwnPublicAddressInEveryFormIsOwn() {
        // Relay behind a 1:1 NAT: sockets on 10.0.0.5, advertised as 198.18.7.10 (written below
        // as c612:70a); the control port 9480 and TURN listener 3478 bound on the wildcard.
        let policy = PeerPolicy(allowed: [cidr("0.0.0.0/0"), cidr("::/0")],
                                ownSockets: [ep("0.0.0.0:9480"), ep("0.0.0.0:3478")], ownPorts: 40000...40999,
                                relayAddresses: [ep("10.0.0.5:0"), ep("198.18.7.10:0")])
        let relayedEverywhere: (Endpoint) -> Bool = { _ in true }
        for port in [9480, 3478, 40001] {
            for host in ["[64:ff9b::c612:70a]", "[2002:c612:70a::1]", "[2001:0:1:2:0:ffff:39ed:f8f5]", "[2a00::5efe:c612:70a]"] {
                let peer = ep("\(host):\(port)")
                XCTAssertEqual(peer.embeddedIPv4, ep("198.18.7.10:\(port)"), "\(peer)")
                XCTAssertEqual(policy.decide(peer: peer, isRelayedAddress: relayedEverywhere), .refused(.relaySocket), "\(peer)")
            }
        }
        // The IPv4 form itself at a relayed port is another allocation: allowed.
        XCTAssertEqual(policy.decide(peer: ep("198.18.7.10:40001"), isRelayedAddress: relayedEverywhere), .allowed)
        XCTAssertTrue(OwnAddresses([ep("198.18.7.10:0")]).contains(ep("[64:ff9b::c612:70a]:1")))
    }

    func testARelayedPortOfOneFamilyIsNotTheOtherFamilys() {
        // --relay-address 127.0.0.1 relays on 127.0.0.1 and ::1; one allocation holds port 40010
        // on IPv4 only, another 40020 on IPv6 only.
        let relayed = RelayedPorts()
        relayed.insert(40010, ipv6: false)
        relayed.insert(40020, ipv6: true)
        let policy = PeerPolicy(allowed: [cidr("127.0.0.0/8"), cidr("::1/128")], ownPorts: 40000...40099,
                                relayAddresses: [ep("127.0.0.1:0"), ep("[::1]:0")])
        let hook: (Endpoint) -> Bool = { relayed.contains($0) }
        XCTAssertEqual(policy.decide(peer: ep("127.0.0.1:40010"), isRelayedAddress: hook), .allowed)
        XCTAssertEqual(policy.decide(peer: ep("[::1]:40010"), isRelayedAddress: hook), .refused(.relaySocket))
        XCTAssertEqual(policy.decide(peer: ep("[::1]:40020"), isRelayedAddress: hook), .allowed)
        XCTAssertEqual(policy.decide(peer: ep("127.0.0.1:40020"), isRelayedAddress: hook), .refused(.relaySocket))
        XCTAssertEqual(policy.decide(peer: ep("[::ffff:127.0.0.1]:40020"), isRelayedAddress: hook), .refused(.relaySocket))
        // A channel made while [::1]:40020 was relayed goes stale on IPv6 alone.
        XCTAssertFalse(policy.isStaleRelayedPeer(ep("[::1]:40020"), relayed: relayed))
        XCTAssertTrue(policy.isStaleRelayedPeer(ep("127.0.0.1:40020"), relayed: relayed))
        relayed.remove(40020, ipv6: true)
        XCTAssertTrue(policy.isStaleRelayedPeer(ep("[::1]:40020"), relayed: relayed))
        XCTAssertFalse(policy.isStaleRelayedPeer(ep("127.0.0.1:40010"), relayed: relayed))
    }
}
