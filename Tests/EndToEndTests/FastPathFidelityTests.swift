import Foundation
import Glibc
@testable import LoadGen
import TestSupport
import XCTest

/// The kernel fast path does what the socket path does: frames and datagrams the host would
/// not deliver to the relay's socket are handed back (counted by reason) for the stack to
/// decide, and what leaves carries the relay's choices (DF, TTL, hop limit, flow label), not
/// the sender's. Every case runs through the real relay with `--fast-path off`, `tc` and
/// `xdp` in the same namespaces, and the three must agree on what reaches the far end and how;
/// a raw-socket sender (`RawLink`) makes the frames a socket cannot, and a sniffer on the far
/// link reads what left.
final class FastPathFidelityTests: XCTestCase {
    static let modes = ["off", "tc", "xdp"]

    /// A frame sent to one leg of a latched session, changed by `change`; what the kernel must
    /// do with it: forward it (`nil`) or hand it back for `reason`.
    struct Case: Sendable {
        let name: String
        let ipv6: Bool
        let reason: String?
        let change: @Sendable (inout TestFrame) -> Void
    }

    static let hostCases: [Case] = [
        Case(name: "as sent by a host", ipv6: false, reason: nil) { _ in },
        Case(name: "for another host's link address", ipv6: false, reason: "not_host") { $0.destinationMAC = [0x02, 0, 0, 0, 0, 0x99] },
        Case(name: "to the broadcast link address", ipv6: false, reason: "not_host") { $0.destinationMAC = Array(repeating: 0xFF, count: 6) },
        Case(name: "to a multicast link address", ipv6: false, reason: "not_host") { $0.destinationMAC = [0x01, 0, 0x5E, 0, 0, 0x01] },
        Case(name: "tagged for VLAN 5", ipv6: false, reason: "vlan") { $0.vlan = 5 },
        Case(name: "with a priority tag (VLAN 0)", ipv6: false, reason: "vlan") { $0.vlan = 0xA000 },
        Case(name: "with a wrong IPv4 header checksum", ipv6: false, reason: "bad_header") { $0.headerChecksumRight = false },
        Case(name: "with version 6 under the IPv4 ethertype", ipv6: false, reason: "bad_header") { $0.version = 6 },
        Case(name: "with a wrong UDP checksum", ipv6: false, reason: "bad_checksum") { $0.udpChecksum = .wrong },
        Case(name: "with no UDP checksum over IPv4", ipv6: false, reason: nil) { $0.udpChecksum = .zero },
        Case(name: "over IPv6 as sent by a host", ipv6: true, reason: nil) { _ in },
        Case(name: "with a wrong UDP checksum over IPv6", ipv6: true, reason: "bad_checksum") { $0.udpChecksum = .wrong },
        Case(name: "with a zero UDP checksum over IPv6", ipv6: true, reason: "bad_checksum") { $0.udpChecksum = .zero },
        Case(name: "with version 4 under the IPv6 ethertype", ipv6: true, reason: "bad_header") { $0.version = 4 },
    ]

    /// What one mode made of the cases: which payloads reached the far leg, how each left the
    /// relay (as the sniffer on the far link read it, with any VLAN tag), and what the kernel
    /// counted.
    struct Outcome {
        var delivered: Set<String> = []
        var seen: [String: TestFrame.Seen] = [:]
        var tagged: Set<String> = []
        var kernelDatagrams = 0
        var handedBack: [String: Int] = [:]
    }

    /// Frames the stack would not accept as they are (another host's or a group link address,
    /// a VLAN tag, a bad IPv4 header or version, a bad or, over IPv6, zero UDP checksum) reach
    /// the far end exactly as without the fast path (nothing, or what user space sends), and
    /// the kernel hands each back for its reason without counting it as forwarded.
    func testFramesTheHostWouldRefuseAreDecidedByTheStack() throws {
        let network = try FidelityNetwork()
        defer { network.remove() }
        var outcomes: [String: Outcome] = [:]
        for mode in Self.modes {
            outcomes[mode] = try network.run(mode: mode, [], cases: Self.hostCases)
        }
        let expectedInKernel = Self.hostCases.filter { $0.reason == nil }.count
        try Self.compare(outcomes, cases: Self.hostCases, kernelForwards: expectedInKernel)
        // The ones the stack takes leave as user space sends them: untagged, checksum right.
        let off = try XCTUnwrap(outcomes["off"])
        XCTAssertTrue(off.delivered.contains("as sent by a host") && off.delivered.contains("over IPv6 as sent by a host"),
                      "the control frames must reach the far leg: \(off.delivered.sorted())")
        for mode in Self.modes {
            XCTAssertEqual(outcomes[mode]?.tagged, [], "\(mode): frames that left tagged")
            for (name, seen) in outcomes[mode]?.seen ?? [:] { XCTAssertTrue(seen.checksumRight, "\(mode): \(name) left with a bad checksum") }
        }
    }

    /// With strict reverse-path filtering on the relay, a client's 5-tuple arriving on the
    /// peer-side interface is dropped by the stack; the fast path hands it back, so it is
    /// dropped there too, while the client's own datagrams go through.
    func testReversePathFilteringDecidesAsTheStackDoes() throws {
        let network = try FidelityNetwork()
        defer { network.remove() }
        try network.sysctl(.relay, "net.ipv4.conf.all.rp_filter=1")
        let cases = [
            Case(name: "from the client's link", ipv6: false, reason: nil) { _ in },
            Case(name: "with the client's address from the peer's link", ipv6: false, reason: "reverse_path") { _ in },
        ]
        var outcomes: [String: Outcome] = [:]
        for mode in Self.modes {
            outcomes[mode] = try network.run(mode: mode, [], cases: cases, fromPeerSide: [cases[1].name])
        }
        try Self.compare(outcomes, cases: cases, kernelForwards: 1)
        XCTAssertEqual(outcomes["off"]?.delivered, ["from the client's link"], "what strict reverse-path filtering lets through")
    }

    /// What leaves carries the relay's choices whoever carries it: the host's TTL and hop
    /// limit, DF set for sessions (as the relay's sockets send), and over IPv6 a flow label of
    /// the relay's own, the same for every datagram of a flow and never the sender's.
    func testWhatLeavesCarriesTheRelaysChoices() throws {
        let network = try FidelityNetwork()
        defer { network.remove() }
        try network.sysctl(.relay, "net.ipv4.ip_default_ttl=47")
        try network.sysctl(.relay, "net.ipv6.conf.\(NamespaceTriangle.backDevice).hop_limit=45")
        let sent: @Sendable (inout TestFrame) -> Void = { frame in
            frame.ttl = 9
            frame.dontFragment = false
            frame.flowLabel = 0x12345
        }
        let cases = (1...3).flatMap { index in
            [Case(name: "IPv4 datagram \(index)", ipv6: false, reason: nil, change: sent),
             Case(name: "IPv6 datagram \(index)", ipv6: true, reason: nil, change: sent)]
        }
        var outcomes: [String: Outcome] = [:]
        for mode in Self.modes {
            outcomes[mode] = try network.run(mode: mode, [], cases: cases)
        }
        try Self.compare(outcomes, cases: cases, kernelForwards: cases.count)
        for mode in Self.modes {
            let seen = outcomes[mode]?.seen ?? [:]
            var labels = Set<UInt32>()
            for index in 1...3 {
                let ipv4 = try XCTUnwrap(seen["IPv4 datagram \(index)"], "\(mode): IPv4 datagram \(index) not seen")
                XCTAssertEqual(ipv4.ttl, 47, "\(mode): the TTL of the relay's sockets")
                XCTAssertTrue(ipv4.dontFragment, "\(mode): a session's datagram leaves with DF set")
                let ipv6 = try XCTUnwrap(seen["IPv6 datagram \(index)"], "\(mode): IPv6 datagram \(index) not seen")
                XCTAssertEqual(ipv6.ttl, 45, "\(mode): the peer link's hop limit")
                labels.insert(ipv6.flowLabel)
            }
            XCTAssertEqual(labels.count, 1, "\(mode): one flow label per flow, got \(labels)")
            XCTAssertFalse(labels.contains(0x12345), "\(mode): the sender's flow label left with the datagram")
            XCTAssertFalse(labels.contains(0), "\(mode): no flow label, where the host labels flows")
        }
    }

    /// Sizes the relay or the egress link would refuse: a payload over --max-datagram-size is
    /// dropped by user space, with or without the kernel (which hands it back); one that fits
    /// the relay but not the egress link is handed back and user space fragments it, as it
    /// does without the fast path.
    func testSizesTheRelayOrTheLinkRefuseGoToUserSpace() throws {
        let network = try FidelityNetwork()
        defer { network.remove() }
        try network.run(in: .relay, ["ip", "link", "set", NamespaceTriangle.backDevice, "mtu", "800"])
        try network.run(in: .peer, ["ip", "link", "set", NamespaceTriangle.peerDevice, "mtu", "800"])
        let cases = [
            Case(name: "small", ipv6: false, reason: nil) { $0.payload += [UInt8](repeating: 7, count: 100) },
            Case(name: "over the egress link's MTU", ipv6: false, reason: "too_large") { $0.payload += [UInt8](repeating: 7, count: 900) },
            Case(name: "over the relay's largest datagram", ipv6: false, reason: "oversize") { $0.payload += [UInt8](repeating: 7, count: 1100) },
        ]
        var outcomes: [String: Outcome] = [:]
        for mode in Self.modes {
            outcomes[mode] = try network.run(mode: mode, ["--max-datagram-size", "1000"], cases: cases)
        }
        try Self.compare(outcomes, cases: cases, kernelForwards: 1)
        XCTAssertEqual(outcomes["off"]?.delivered, ["small", "over the egress link's MTU"], "what the relay delivers without the fast path")
    }

    /// Every mode delivers the same payloads, and what the sniffer saw of each agrees where
    /// the relay decides it (DF, TTL, checksum); the kernel forwarded `kernelForwards` and
    /// handed back each other case for its reason.
    static func compare(_ outcomes: [String: Outcome], cases: [Case], kernelForwards: Int,
                        file: StaticString = #filePath, line: UInt = #line) throws {
        let off = try XCTUnwrap(outcomes["off"], file: file, line: line)
        for mode in modes where mode != "off" {
            let outcome = try XCTUnwrap(outcomes[mode], file: file, line: line)
            XCTAssertEqual(outcome.delivered, off.delivered, "\(mode): delivered, against the socket path", file: file, line: line)
            for (name, seen) in off.seen {
                let other = outcome.seen[name]
                XCTAssertEqual(other?.dontFragment, seen.dontFragment, "\(mode): \(name): DF", file: file, line: line)
                XCTAssertEqual(other?.ttl, seen.ttl, "\(mode): \(name): TTL", file: file, line: line)
                XCTAssertEqual(other?.checksumRight, seen.checksumRight, "\(mode): \(name): checksum", file: file, line: line)
            }
            XCTAssertEqual(outcome.kernelDatagrams, kernelForwards, "\(mode): datagrams the kernel forwarded", file: file, line: line)
            var expected: [String: Int] = [:]
            for reason in cases.compactMap(\.reason) { expected[reason, default: 0] += 1 }
            XCTAssertEqual(outcome.handedBack.filter { $0.value != 0 }, expected, "\(mode): handed back by reason", file: file, line: line)
        }
    }
}
