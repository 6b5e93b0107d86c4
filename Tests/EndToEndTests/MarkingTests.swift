import DatagramEngine
import Foundation
import TestPorts
import TestSupport
import XCTest

/// ECN and DSCP across the real relay, seen by an independent receiver (IndependentPeer: the
/// load generator's socket code, not the relay's engine): preserved by default, re-marked to
/// the service class, zeroed, ECN cleared; CE passed through and Not-ECT never upgraded; through
/// a session on every engine and through a forward rule both ways, on IPv4 and IPv6 (each its
/// own test, which skips, or fails under make test, on a host without ::1).
final class MarkingTests: XCTestCase {
    /// Every ECN codepoint (Not-ECT, ECT(1), ECT(0), CE) with DSCP 0, AF11, AF41, EF and 63.
    static let sent: [UInt8] = [0, 1, 2, 3].flatMap { ecn in [0, 10, 34, 46, 63].map { UInt8($0 << 2 | ecn) } }

    /// A policy and the TOS byte it must produce from each sent one, worked out here with plain
    /// bit arithmetic rather than the relay's types.
    struct Policy: Sendable {
        let name: String
        let session: String
        let flags: [String]
        let expected: @Sendable (UInt8) -> UInt8
    }

    static let policies = [
        Policy(name: "mirror + preserve", session: "{}", flags: [], expected: { $0 }),
        Policy(name: "class interactiveVoice", session: #"{"dscp": "class", "service_class": "interactiveVoice"}"#,
               flags: ["--dscp", "class", "--service-class", "interactiveVoice"], expected: { 46 << 2 | $0 & 3 }),
        Policy(name: "class responsiveData", session: #"{"dscp": "class", "service_class": "responsiveData"}"#,
               flags: ["--dscp", "class", "--service-class", "responsiveData"], expected: { 18 << 2 | $0 & 3 }),
        Policy(name: "zero", session: #"{"dscp": "zero"}"#, flags: ["--dscp", "zero"], expected: { $0 & 3 }),
        Policy(name: "ecn clear", session: #"{"ecn": "clear"}"#, flags: ["--ecn", "clear"], expected: { $0 & ~3 }),
    ]

    func testSessionPoliciesOnEveryEngineSeenIndependently() throws {
        try checkSessionPolicies(host: "127.0.0.1")
    }

    func testSessionPoliciesOnEveryEngineOverIPv6SeenIndependently() throws {
        try IPv6Loopback.require()
        try checkSessionPolicies(host: "::1")
    }

    private func checkSessionPolicies(host: String) throws {
        for engine in ["perpacket", "mmsg", "uring"] {
            let relay = try RelayProcess(ports: PortBlock(count: 100), ["--engine", engine, "--relay-address", host])
            defer { XCTAssertEqual(relay.stop(), 0) }
            for policy in Self.policies {
                let session = try relay.createSession(policy.session)
                let a = try IndependentPeer(host: host)
                let b = try IndependentPeer(host: host)
                try b.send([0xFF], tos: 0, to: host, port: session.legs[1].port)
                try relay.waitForLatch(session: session.id, leg: 1)
                for (index, tos) in Self.sent.enumerated() { try a.send([UInt8(index)], tos: tos, to: host, port: session.legs[0].port) }
                XCTAssertEqual(Self.marks(b.receive(expected: Self.sent.count)), Self.sent.map(policy.expected),
                               "\(engine) \(host) session \(policy.name)")
            }
        }
    }

    /// Forward rules take the server-wide policy; it applies to both directions.
    func testForwardRulePoliciesBothWaysSeenIndependently() throws {
        try checkForwardRulePolicies(host: "127.0.0.1")
    }

    func testForwardRulePoliciesBothWaysOverIPv6SeenIndependently() throws {
        try IPv6Loopback.require()
        try checkForwardRulePolicies(host: "::1")
    }

    private func checkForwardRulePolicies(host: String) throws {
        let bracketed = host.contains(":") ? "[\(host)]" : host
        for policy in Self.policies {
            let upstream = try IndependentPeer(host: host)
            let listen = try IndependentPeer(host: host).port  // a free port, released
            let relay = try RelayProcess(ports: PortBlock(count: 100), ["--relay-address", host,
                                          "--forward", "\(bracketed):\(listen)=\(bracketed):\(upstream.port)"] + policy.flags)
            defer { XCTAssertEqual(relay.stop(), 0) }
            let client = try IndependentPeer(host: host)
            for (index, tos) in Self.sent.enumerated() { try client.send([UInt8(index)], tos: tos, to: host, port: listen) }
            let atUpstream = upstream.receive(expected: Self.sent.count)
            XCTAssertEqual(Self.marks(atUpstream), Self.sent.map(policy.expected), "\(host) rule \(policy.name): to upstream")
            guard let source = atUpstream.first?.source else { continue }
            for (index, tos) in Self.sent.enumerated() { try upstream.send([UInt8(index)], tos: tos, to: source) }
            XCTAssertEqual(Self.marks(client.receive(expected: Self.sent.count)), Self.sent.map(policy.expected),
                           "\(host) rule \(policy.name): back to the client")
        }
    }

    /// The marks of datagrams numbered by their first byte, in that order.
    static func marks(_ arrivals: [IndependentPeer.Arrival]) -> [UInt8] {
        arrivals.sorted { $0.bytes.first ?? 0 < $1.bytes.first ?? 0 }.map(\.tos)
    }
}

/// A dual-stack relay address: an IPv4 peer and an IPv6 peer share one session; each keeps
/// its marking across the family change (IP_TOS to the IPv4-mapped peer, IPV6_TCLASS to the
/// other), as an independent receiver sees it.
final class DualStackTests: XCTestCase {
    func testIPv4AndIPv6PeersInOneSessionKeepTheirMarking() throws {
        try IPv6Loopback.require()
        for engine in ["mmsg", "uring"] {
            let relay = try RelayProcess(ports: PortBlock(count: 100), ["--engine", engine,
                                          "--relay-address", "::", "--advertise-address", "::1"])
            defer { XCTAssertEqual(relay.stop(), 0) }
            let session = try relay.createSession()
            let v4 = try IndependentPeer(host: "127.0.0.1")
            let v6 = try IndependentPeer(host: "::1")
            // Leg A is the same dual-stack socket, reached over IPv4.
            try v4.send([0], tos: 0, to: "127.0.0.1", port: session.legs[0].port)
            try relay.waitForLatch(session: session.id, leg: 0)
            for (index, tos) in MarkingTests.sent.enumerated() { try v6.send([UInt8(index)], tos: tos, to: "::1", port: session.legs[1].port) }
            XCTAssertEqual(MarkingTests.marks(v4.receive(expected: MarkingTests.sent.count)), MarkingTests.sent, "\(engine): IPv6 to IPv4")
            for (index, tos) in MarkingTests.sent.enumerated() { try v4.send([UInt8(index)], tos: tos, to: "127.0.0.1", port: session.legs[0].port) }
            XCTAssertEqual(MarkingTests.marks(v6.receive(expected: MarkingTests.sent.count)), MarkingTests.sent, "\(engine): IPv4 to IPv6")
        }
    }
}
