import Foundation
import Glibc
import TestSupport
import XCTest

/// ECN and DSCP through the real relay's TURN server (RFC 8656 section 14, README "ECN and
/// DSCP"), set and read by sockets that share no code with the relay (TurnServerFixture): every
/// ECN codepoint with several DSCPs, through ChannelData and Send/Data indications, client to
/// peer and peer to client, on IPv4 and IPv6 relayed addresses (and across the two, and through
/// a dual-stack listener), on every engine, under each DSCP policy and the other marking
/// settings (`--ecn`, `--service-class`, the config file, a reload).
///
/// Unlike TurnAllocationTests, whose peers are the relay's own engine, these fail when the
/// engine writes a mark wrongly in a way its own receive would undo (ECT(0) sent as ECT(1)).
final class TurnMarkingTests: XCTestCase {
    /// A marking setting and the TOS byte it must produce from each sent one, worked out here
    /// with plain bit arithmetic rather than the relay's types.
    struct Marking: Sendable {
        let name: String
        let flags: [String]
        let expected: @Sendable (UInt8) -> UInt8
    }

    /// The DSCP policies: ECN preserved under each (ECT(0) and ECT(1) distinct, CE passed,
    /// Not-ECT never upgraded).
    static let dscpPolicies = [
        Marking(name: "mirror (the default)", flags: [], expected: { $0 }),
        Marking(name: "class interactiveVideo", flags: ["--dscp", "class", "--service-class", "interactiveVideo"],
                expected: { 34 << 2 | $0 & 3 }),
        Marking(name: "zero", flags: ["--dscp", "zero"], expected: { $0 & 3 }),
    ]

    func testDSCPPoliciesKeepECNThroughAnIPv4RelaySeenIndependently() throws {
        try checkDSCPPolicies(host: "127.0.0.1")
    }

    func testDSCPPoliciesKeepECNThroughAnIPv6RelaySeenIndependently() throws {
        try IPv6Loopback.require()
        try checkDSCPPolicies(host: "::1")
    }

    /// One relay per policy and engine (each sends its own way: sendmsg, sendmmsg, io_uring);
    /// every path of one allocation checked with every mark.
    private func checkDSCPPolicies(host: String) throws {
        for engine in ["perpacket", "mmsg", "uring"] {
            for policy in Self.dscpPolicies {
                let fixture = try TurnServerFixture(hosts: [host], ["--engine", engine] + policy.flags)
                defer { XCTAssertEqual(fixture.relay.stop(), 0) }
                let allocation = try fixture.allocate(on: host)
                XCTAssertEqual(allocation.relayed.host, host, "the relayed address is of the client's family")
                assertMarks(allocation, policy, "\(engine) \(host) \(policy.name)")
            }
        }
    }

    /// A client of one family with a relayed address of the other (REQUESTED-ADDRESS-FAMILY):
    /// each datagram leaves with the option of its own leg's family (IP_TOS on one side,
    /// IPV6_TCLASS on the other) and the marks still arrive intact or as the policy says.
    func testMarksCrossBetweenFamiliesSeenIndependently() throws {
        try IPv6Loopback.require()
        for policy in [Self.dscpPolicies[0], Self.dscpPolicies[1]] {
            let fixture = try TurnServerFixture(hosts: ["127.0.0.1", "::1"], policy.flags)
            defer { XCTAssertEqual(fixture.relay.stop(), 0) }
            for (client, peers) in [("127.0.0.1", "::1"), ("::1", "127.0.0.1")] {
                let allocation = try fixture.allocate(on: client, peersOn: peers)
                XCTAssertEqual(allocation.relayed.host, peers, "the relayed address is of the peers' family")
                assertMarks(allocation, policy, "client \(client), peers \(peers), \(policy.name)")
            }
        }
    }

    /// A dual-stack TURN listener ("::"): an IPv4 client is an IPv4-mapped address to it, and
    /// what the relay sends there must carry IP_TOS, not IPV6_TCLASS, to keep its marks.
    func testMarksReachAnIPv4ClientOfADualStackListenerSeenIndependently() throws {
        try IPv6Loopback.require()
        for policy in [Self.dscpPolicies[0], Self.dscpPolicies[2]] {
            let fixture = try TurnServerFixture(hosts: ["::"], policy.flags)
            defer { XCTAssertEqual(fixture.relay.stop(), 0) }
            for (client, peers) in [("127.0.0.1", "127.0.0.1"), ("::1", "::1"), ("127.0.0.1", "::1")] {
                let allocation = try fixture.allocate(on: client, listener: "::", peersOn: peers)
                assertMarks(allocation, policy, "dual-stack listener, client \(client), peers \(peers), \(policy.name)")
            }
        }
    }

    /// The other settings through the executable, each expecting marks that differ from mirror:
    /// ECN cleared, `--dscp class` with its default service class, the settings from a config
    /// file, and flags that win over the file.
    func testMarkingSettingsApplyToTurnFromFlagsAndTheConfigFile() throws {
        let host = "127.0.0.1"
        let fromFile = try ConfigFixture(self, #"{"dscp": "class", "service_class": "background", "ecn": "clear"}"#)
        let overridden = try ConfigFixture(self, #"{"dscp": "zero", "service_class": "background"}"#)
        let settings = [
            Marking(name: "--ecn clear", flags: ["--ecn", "clear"], expected: { $0 & ~3 }),
            Marking(name: "--dscp class, service class bestEffort by default", flags: ["--dscp", "class"], expected: { $0 & 3 }),
            Marking(name: "--dscp class --service-class interactiveVoice --ecn clear",
                    flags: ["--dscp", "class", "--service-class", "interactiveVoice", "--ecn", "clear"], expected: { _ in 46 << 2 }),
            Marking(name: "config file: class background, ecn clear", flags: ["--config", fromFile.path], expected: { _ in 1 << 2 }),
            Marking(name: "config file zero background, flags class signaling",
                    flags: ["--config", overridden.path, "--dscp", "class", "--service-class", "signaling"],
                    expected: { 40 << 2 | $0 & 3 }),
        ]
        for setting in settings {
            let fixture = try TurnServerFixture(hosts: [host], setting.flags)
            defer { XCTAssertEqual(fixture.relay.stop(), 0) }
            assertMarks(try fixture.allocate(on: host), setting, setting.name)
        }
    }

    /// A reload changes the marking of new sessions only; the TURN server keeps what it started
    /// with (it reads its settings once), for allocations old and new, and the reload's log line
    /// must say so rather than leave a TURN operator believing it applied.
    func testSighupLeavesTurnMarkingAsStartedAndSaysSo() throws {
        let host = "127.0.0.1"
        let config = try ConfigFixture(self, #"{"dscp": "mirror"}"#)
        let fixture = try TurnServerFixture(hosts: [host], ["--config", config.path])
        defer { XCTAssertEqual(fixture.relay.stop(), 0) }
        let before = try fixture.allocate(on: host)
        try config.write(#"{"dscp": "zero"}"#)
        kill(fixture.relay.process.processIdentifier, SIGHUP)
        XCTAssertTrue(eventually { fixture.relay.log.contains("SIGHUP: reloaded") }, fixture.relay.log)
        let line = fixture.relay.log.split(separator: "\n").first { $0.contains("SIGHUP: reloaded") } ?? ""
        XCTAssertTrue(line.contains("dscp") && line.contains("TURN"), "the reload line does not say what TURN does: \(line)")
        let mirror = Marking(name: "mirror after a reload to zero", flags: [], expected: { $0 })
        assertMarks(before, mirror, "an allocation made before the reload")
        assertMarks(try fixture.allocate(on: host), mirror, "an allocation made after the reload")
    }

    /// Every ECN codepoint with DSCP 0, AF11, AF41, EF and 63, three of each in a row: equal
    /// datagrams to one destination with one marking are what the relay sends as one GSO run,
    /// and a change of marking must end the run.
    static let sent = MarkingTests.sent.flatMap { [$0, $0, $0] }

    /// `sent` along each path of `allocation`.
    private func assertMarks(_ allocation: TurnServerFixture.Allocation, _ marking: Marking, _ label: String,
                             file: StaticString = #filePath, line: UInt = #line) {
        for path in TurnServerFixture.Allocation.Path.allCases {
            XCTAssertEqual(try allocation.relay(Self.sent, along: path), Self.sent.map(marking.expected),
                           "\(label): \(path)", file: file, line: line)
        }
    }
}
