import DatagramEngine
import MallocCounter
import NetAddress
import RelayCore
import XCTest

/// The TURN peer policy: strict CIDR parsing, the default deny list (every block, its mapped
/// and NAT64 forms), the relay's own sockets, the operator's lists and their order, and the
/// exception for another allocation's relayed address.
final class PeerPolicyTests: XCTestCase, PeerPolicyFixture {
    func testStrictCIDRAcceptsWellFormedBlocks() throws {
        XCTAssertTrue(cidr("192.0.2.0/24").contains(ep("192.0.2.255:1")))
        XCTAssertFalse(cidr("192.0.2.0/24").contains(ep("192.0.3.0:1")))
        XCTAssertTrue(cidr("0.0.0.0/0").contains(ep("203.0.113.1:1")))
        XCTAssertFalse(cidr("0.0.0.0/0").contains(ep("[2001:db8::1]:1")), "an IPv4 /0 covers IPv4 only")
        XCTAssertTrue(cidr("::/0").contains(ep("[2001:db8::1]:1")))
        XCTAssertTrue(cidr("2001:db8::/32").contains(ep("[2001:db8:ffff::1]:1")))
        XCTAssertTrue(cidr("198.51.100.7").contains(ep("198.51.100.7:9")), "a bare address is one host")
        XCTAssertFalse(cidr("198.51.100.7").contains(ep("198.51.100.8:9")))
        XCTAssertTrue(cidr("198.51.100.7/32").contains(ep("198.51.100.7:9")))
        XCTAssertTrue(cidr("2001:db8::1/128").contains(ep("[2001:db8::1]:9")))
        XCTAssertTrue(cidr("::ffff:0:0/96").contains(ep("8.8.8.8:53")), "an IPv6-written prefix counts over 128 bits")
        XCTAssertTrue(cidr("::ffff:10.0.0.0/104").contains(ep("10.9.9.9:1")))
        XCTAssertEqual(cidr("10.0.0.0/8").description, "10.0.0.0/8")
    }

    func testStrictCIDRRefusesEveryBadShapeWithAClearMessage() {
        let cases: [(String, String)] = [
            ("", "expected ADDRESS/LENGTH"),
            ("10.0.0.0/33", "not an integer in 0...32"),
            ("2001:db8::/129", "not an integer in 0...128"),
            ("10.0.0.0/-1", "not an integer"),
            ("10.0.0.0/+8", "not an integer"),
            ("10.0.0.0/ 8", "not an integer"),
            ("10.0.0.0/", "not an integer"),
            ("10.0.0.0/0008", "not an integer"),
            ("10.0.0.0/8/8", "more than one"),
            ("nonsense/8", "not an IPv4 or IPv6 literal"),
            ("10.0.0/8", "not an IPv4 or IPv6 literal"),
            ("10.0.0.256/32", "not an IPv4 or IPv6 literal"),
            ("example.com/24", "not an IPv4 or IPv6 literal"),
            ("[::1]/128", "not an IPv4 or IPv6 literal"),
            ("fe80::%1/64", "zone"),
            ("10.0.0.1/8", "did you mean 10.0.0.0/8?"),
            ("192.168.1.1/16", "did you mean 192.168.0.0/16?"),
            ("2001:db8::1/32", "did you mean 2001:db8::/32?"),
            ("0.0.0.1/0", "did you mean 0.0.0.0/0?"),
            ("::ffff:10.1.0.0/104", "did you mean ::ffff:10.0.0.0/104?"),
            (String(repeating: "1", count: 200), "expected ADDRESS/LENGTH"),
        ]
        for (text, fragment) in cases {
            XCTAssertThrowsError(try AddressRange(cidr: text), text) { error in
                let message = String(describing: error)
                XCTAssertTrue(message.contains(fragment), "\(text): \(message)")
                XCTAssertTrue(message.contains("is not a CIDR block"), message)
            }
        }
        // The lenient form sessions use still takes host bits.
        XCTAssertNotNil(AddressRange(parsing: "10.0.0.1/8"))
    }

    func testDefaultListRefusesEachBlockAndItsMappedForm() {
        let policy = PeerPolicy()
        let refused: [(String, PeerRefusal)] = [
            ("0.0.0.0:80", .unspecified), ("0.1.2.3:80", .unspecified), ("[::]:80", .unspecified),
            ("[::ffff:0.0.0.0]:80", .unspecified), ("[::7f00:1]:80", .unspecified),
            ("127.0.0.1:80", .loopback), ("127.255.255.254:80", .loopback), ("[::1]:80", .loopback),
            ("[::ffff:127.0.0.1]:80", .loopback),
            ("10.0.0.1:80", .privateNetwork), ("172.16.0.1:80", .privateNetwork), ("172.31.255.255:80", .privateNetwork),
            ("192.168.1.1:80", .privateNetwork), ("[::ffff:192.168.1.1]:80", .privateNetwork),
            ("100.64.0.1:80", .privateNetwork), ("[fc00::1]:80", .privateNetwork), ("[fd12:3456::1]:80", .privateNetwork),
            ("[fec0::1]:80", .privateNetwork), ("[64:ff9b:1::1]:80", .privateNetwork),
            ("169.254.169.254:80", .linkLocal), ("[fe80::1]:80", .linkLocal), ("[fe80::1%1]:80", .linkLocal),
            ("224.0.0.1:80", .multicast), ("239.255.255.250:1900", .multicast), ("[ff02::1]:80", .multicast),
            ("[ff0e::1]:80", .multicast), ("[::ffff:224.0.0.1]:80", .multicast),
            ("255.255.255.255:80", .broadcast), ("240.0.0.1:80", .reserved), ("198.18.0.1:80", .reserved),
            ("[100::1]:80", .reserved), ("192.0.2.1:9", .reserved), ("198.51.100.1:9", .reserved),
            ("203.0.113.9:9", .reserved), ("[2001:db8::1]:9", .reserved),
            // NAT64: judged by the IPv4 address it embeds.
            ("[64:ff9b::7f00:1]:80", .loopback), ("[64:ff9b::a00:1]:80", .privateNetwork),
        ]
        for (text, reason) in refused {
            XCTAssertEqual(policy.decide(peer: ep(text), isRelayedAddress: never), .refused(reason), text)
            XCTAssertEqual(policy.decide(permission: ep(text)), .refused(reason), "permission \(text)")
            XCTAssertEqual(PeerPolicy.defaultReason(ep(text)), reason, text)
        }
        for text in ["8.8.8.8:53", "93.184.215.14:1", "172.32.0.1:80", "172.15.255.255:80", "100.128.0.1:80",
                     "11.0.0.1:80", "1.0.0.0:80", "[2a00:1450:4001::1]:80", "[2606:4700::1111]:443", "203.0.114.1:80",
                     "[64:ff9b::808:808]:53", "[::ffff:8.8.8.8]:53", "223.255.255.255:80", "[fbff::1]:80"] {
            XCTAssertEqual(policy.decide(peer: ep(text), isRelayedAddress: never), .allowed, text)
            XCTAssertEqual(policy.decide(permission: ep(text)), .allowed, "permission \(text)")
        }
    }

    func testOperatorListsAndTheirOrder() {
        // Allowed wins over the default list; explicit denied wins over allowed.
        let policy = PeerPolicy(allowed: [cidr("127.0.0.0/8"), cidr("10.0.0.0/8"), cidr("::1/128")],
                                denied: [cidr("10.9.0.0/16"), cidr("8.8.8.0/24"), cidr("2001:db8::/32")])
        XCTAssertEqual(policy.decide(peer: ep("127.0.0.1:5000"), isRelayedAddress: never), .allowed)
        XCTAssertEqual(policy.decide(peer: ep("[::1]:5000"), isRelayedAddress: never), .allowed)
        XCTAssertEqual(policy.decide(permission: ep("10.1.2.3:0")), .allowed)
        XCTAssertEqual(policy.decide(peer: ep("10.9.1.1:5000"), isRelayedAddress: never), .refused(.operatorDenied))
        XCTAssertEqual(policy.decide(permission: ep("10.9.1.1:0")), .refused(.operatorDenied))
        XCTAssertEqual(policy.decide(peer: ep("8.8.8.8:53"), isRelayedAddress: never), .refused(.operatorDenied))
        XCTAssertEqual(policy.decide(peer: ep("[::ffff:8.8.8.8]:53"), isRelayedAddress: never), .refused(.operatorDenied))
        XCTAssertEqual(policy.decide(peer: ep("[2001:db8::5]:53"), isRelayedAddress: never), .refused(.operatorDenied))
        XCTAssertEqual(policy.decide(peer: ep("192.168.0.1:5000"), isRelayedAddress: never), .refused(.privateNetwork),
                       "blocks outside the allowed ones keep their default")
    }

    func testTheRelaysOwnSocketsAreRefusedEvenWhenAllowed() {
        let policy = PeerPolicy(allowed: [cidr("0.0.0.0/0"), cidr("::/0")],
                                ownSockets: [ep("127.0.0.1:9480"), ep("0.0.0.0:3478"), ep("[::]:3479"), ep("[2001:db8::7]:5349")],
                                ownPorts: 40000...40999,
                                relayAddresses: [ep("0.0.0.0:0"), ep("203.0.113.5:0")],
                                ownAddresses: [ep("192.0.2.10:0")])
        let refusedSockets = [
            "127.0.0.1:9480",                      // the control API itself
            "[::ffff:127.0.0.1]:9480",             // its mapped form
            "0.0.0.0:9480", "0.1.0.0:9480", "[::]:9480", // unspecified reaches whichever local socket (CVE-2020-26262)
            "127.0.0.1:3478", "127.9.9.9:3478", "203.0.113.5:3478", "192.0.2.10:3478", "[::1]:3478", // wildcard listeners
            "203.0.113.5:3479", "[::1]:3479",
            "[2001:db8::7]:5349",
            "203.0.113.5:40000", "192.0.2.10:40999", "127.0.0.1:40500", // session and relayed ports
        ]
        for text in refusedSockets {
            XCTAssertEqual(policy.decide(peer: ep(text), isRelayedAddress: never), .refused(.relaySocket), text)
        }
        for text in ["127.0.0.2:9480", "203.0.113.5:39999", "203.0.113.5:41000", "198.51.100.1:3478",
                     "198.51.100.1:40000", "[2001:db8::8]:5349", "[2001:db8::7]:5350"] {
            XCTAssertEqual(policy.decide(peer: ep(text), isRelayedAddress: never), .allowed, text)
        }
        // Permissions carry no port: the port is judged when Send or ChannelBind name one.
        XCTAssertEqual(policy.decide(permission: ep("127.0.0.1:9480")), .allowed)
    }

    func testAnotherAllocationsRelayedAddressIsAllowed() {
        // The default setup: relayed sockets on 10.0.0.5, advertised as 203.0.113.5 (1:1 NAT),
        // private and own addresses refused, and the hook knows one allocation at port 40001.
        let policy = PeerPolicy(ownSockets: [ep("10.0.0.5:3478")], ownPorts: 40000...40999,
                                relayAddresses: [ep("10.0.0.5:0"), ep("203.0.113.5:0"), ep("0.0.0.0:0")])
        var asked: [Endpoint] = []
        let relayed: (Endpoint) -> Bool = { peer in
            asked.append(peer)
            return peer.port == 40001
        }
        XCTAssertEqual(policy.decide(permission: ep("10.0.0.5:0")), .allowed, "permission to the relay's private address")
        XCTAssertEqual(policy.decide(permission: ep("203.0.113.5:0")), .allowed)
        XCTAssertEqual(policy.decide(peer: ep("10.0.0.5:40001"), isRelayedAddress: relayed), .allowed)
        XCTAssertEqual(policy.decide(peer: ep("203.0.113.5:40001"), isRelayedAddress: relayed), .allowed)
        XCTAssertEqual(policy.decide(peer: ep("10.0.0.5:40002"), isRelayedAddress: relayed), .refused(.relaySocket),
                       "a pool port without an allocation is a session's port")
        XCTAssertEqual(policy.decide(peer: ep("10.0.0.5:22"), isRelayedAddress: relayed), .refused(.privateNetwork))
        XCTAssertEqual(policy.decide(peer: ep("10.0.0.5:3478"), isRelayedAddress: relayed), .refused(.relaySocket))
        asked.removeAll()
        XCTAssertEqual(policy.decide(peer: ep("10.0.0.6:40001"), isRelayedAddress: relayed), .refused(.privateNetwork),
                       "another host's port 40001 is not ours")
        XCTAssertEqual(policy.decide(peer: ep("8.8.8.8:40001"), isRelayedAddress: relayed), .allowed)
        XCTAssertEqual(policy.decide(peer: ep("127.0.0.1:40001"), isRelayedAddress: relayed), .refused(.relaySocket))
        XCTAssertEqual(policy.decide(peer: ep("127.0.0.1:50001"), isRelayedAddress: { _ in true }), .refused(.loopback),
                       "loopback at a relayed port could be another local service: not a relayed address")
        XCTAssertEqual(policy.decide(peer: ep("0.0.0.0:50001"), isRelayedAddress: { _ in true }), .refused(.unspecified))
        XCTAssertTrue(asked.isEmpty, "the hook is asked about relay addresses only")
        XCTAssertEqual(policy.decide(permission: ep("10.0.0.6:0")), .refused(.privateNetwork))
        XCTAssertEqual(policy.decide(permission: ep("0.0.0.0:0")), .refused(.unspecified),
                       "a wildcard relay address is not an address to give peers")

        // The operator's explicit refusal beats the exception.
        let strict = PeerPolicy(denied: [cidr("10.0.0.0/8")], relayAddresses: [ep("10.0.0.5:0")])
        XCTAssertEqual(strict.decide(peer: ep("10.0.0.5:40001"), isRelayedAddress: relayed), .refused(.operatorDenied))
        XCTAssertEqual(strict.decide(permission: ep("10.0.0.5:0")), .refused(.operatorDenied))
    }

    func testAllowingEverythingStillKeepsOwnSockets() {
        // The tests' configuration: loopback allowed, the relay on loopback.
        let policy = PeerPolicy(allowed: [cidr("127.0.0.0/8")], ownSockets: [ep("127.0.0.1:9480"), ep("127.0.0.1:3478")],
                                ownPorts: 40000...40099, relayAddresses: [ep("127.0.0.1:0")])
        XCTAssertEqual(policy.decide(peer: ep("127.0.0.1:50000"), isRelayedAddress: never), .allowed)
        XCTAssertEqual(policy.decide(peer: ep("127.0.0.1:3478"), isRelayedAddress: never), .refused(.relaySocket))
        XCTAssertEqual(policy.decide(peer: ep("127.0.0.1:40050"), isRelayedAddress: never), .refused(.relaySocket))
        XCTAssertEqual(policy.decide(peer: ep("127.0.0.1:40050"), isRelayedAddress: { _ in true }), .allowed)
    }

    func testDecisionsAllocateNothing() {
        let policy = PeerPolicy(allowed: [cidr("127.0.0.0/8")], denied: [cidr("192.0.2.0/24")],
                                ownSockets: [ep("127.0.0.1:9480"), ep("0.0.0.0:3478")], ownPorts: 40000...40099,
                                relayAddresses: [ep("203.0.113.5:0")], ownAddresses: [ep("192.0.2.10:0")])
        let peers = ["8.8.8.8:53", "127.0.0.1:9480", "[::1]:3478", "203.0.113.5:40001", "192.0.2.1:1",
                     "[64:ff9b::a00:1]:80", "10.0.0.1:1", "[fe80::1%2]:5"].map(ep)
        _ = peers.map { policy.decide(peer: $0, isRelayedAddress: never) }  // warm up lazy statics
        var allowed = 0
        // Index loops: an unspecialised for-in allocates per element in a debug build.
        var round = 0
        malloc_counter_start()
        while round < 1000 {
            var index = 0
            while index < peers.count {
                if policy.decide(peer: peers[index], isRelayedAddress: { $0.port == 40001 }) == .allowed { allowed += 1 }
                if policy.decide(permission: peers[index]) == .allowed { allowed += 1 }
                index += 1
            }
            round += 1
        }
        let allocations = malloc_counter_stop()
        XCTAssertEqual(allocations, 0)
        XCTAssertEqual(allowed, 1000 * 5)
    }
}
