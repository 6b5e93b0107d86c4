import DatagramEngine
import Foundation
import TestPorts
import XCTest

/// ECN and DSCP across the relay, on every engine: preserved by default, re-marked to the
/// service class, zeroed, ECN cleared, and Not-ECT never upgraded.
final class MarkingTests: XCTestCase {
    func testMarkingPoliciesOnEveryEngine() throws {
        for engine in ["perpacket", "mmsg", "uring"] {
            let relay = try RelayProcess(ports: PortBlock(count: 100), ["--engine", engine])
            defer { XCTAssertEqual(relay.stop(), 0) }
            let sent = ECN.allCases.flatMap { ecn in [0, 10, 34, 46, 63].map { TrafficClass(dscp: UInt8($0), ecn: ecn) } }

            XCTAssertEqual(try passThrough(relay, "{}", sent), sent, "\(engine): mirror + preserve")
            XCTAssertEqual(try passThrough(relay, #"{"dscp": "class", "service_class": "interactiveVoice"}"#, sent),
                           sent.map { TrafficClass(dscp: 46, ecn: $0.ecn) }, "\(engine): class")
            XCTAssertEqual(try passThrough(relay, #"{"dscp": "zero"}"#, sent),
                           sent.map { TrafficClass(dscp: 0, ecn: $0.ecn) }, "\(engine): zero")
            XCTAssertEqual(try passThrough(relay, #"{"ecn": "clear"}"#, sent),
                           sent.map { TrafficClass(dscp: $0.dscp, ecn: .notECT) }, "\(engine): ecn clear")
        }
    }

    /// The server-wide defaults apply to forward rules too.
    func testServerDefaultsRemarkForwardRules() throws {
        let upstream = try Peers(count: 1)
        let listen = try freeUDPPort()
        let relay = try RelayProcess(ports: PortBlock(count: 100), ["--dscp", "class", "--service-class", "responsiveData",
                                      "--forward", "127.0.0.1:\(listen)=\(upstream.address(0))"])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let client = try Peers(count: 1)
        client.send(from: 0, to: Endpoint(host: "127.0.0.1", port: listen)!, [1], trafficClass: TrafficClass(dscp: 46, ecn: .ce))
        XCTAssertEqual(upstream.collect(expected: 1).map(\.trafficClass), [TrafficClass(dscp: 18, ecn: .ce)])
    }

    /// Sends each marking from leg A's peer and returns the markings leg B's peer received, in order.
    private func passThrough(_ relay: RelayProcess, _ json: String, _ sent: [TrafficClass]) throws -> [TrafficClass] {
        let session = try relay.createSession(json)
        let peers = try Peers(count: 2)
        peers.send(from: 1, to: session.legs[1], [0])
        peers.send(from: 0, to: session.legs[0], [0])
        _ = peers.collect(expected: 1)
        for (index, marking) in sent.enumerated() { peers.send(from: 0, to: session.legs[0], [UInt8(index)], trafficClass: marking) }
        let arrivals = peers.collect(expected: sent.count).sorted { $0.bytes[0] < $1.bytes[0] }
        return arrivals.map(\.trafficClass)
    }
}

/// A dual-stack relay address: an IPv4 peer and an IPv6 peer share one session; each keeps
/// its marking across the family change (IP_TOS to the IPv4-mapped peer, IPV6_TCLASS to the other).
final class DualStackTests: XCTestCase {
    func testIPv4AndIPv6PeersInOneSessionKeepTheirMarking() throws {
        guard (try? UDPSocket(binding: Endpoint(host: "::1", port: 0)!)) != nil else {
            throw XCTSkip("this host has no ::1")
        }
        for engine in ["mmsg", "uring"] {
            let relay = try RelayProcess(ports: PortBlock(count: 100), ["--engine", engine,
                                          "--relay-address", "::", "--advertise-address", "::1"])
            defer { XCTAssertEqual(relay.stop(), 0) }
            let session = try relay.createSession()
            let v4 = try Peers(count: 1)
            let v6 = try Peers(count: 1, family: Endpoint(host: "::1", port: 0)!)
            var legA = session.legs[0]
            legA = Endpoint(host: "127.0.0.1", port: legA.port)!  // the same dual-stack socket, reached over IPv4
            v4.send(from: 0, to: legA, [0])
            usleep(100_000)
            v6.send(from: 0, to: session.legs[1], [1], trafficClass: TrafficClass(dscp: 34, ecn: .ect1))
            XCTAssertEqual(v4.collect(expected: 1).map(\.trafficClass), [TrafficClass(dscp: 34, ecn: .ect1)], engine)
            v4.send(from: 0, to: legA, [2], trafficClass: TrafficClass(dscp: 46, ecn: .ce))
            XCTAssertEqual(v6.collect(expected: 1).map(\.trafficClass), [TrafficClass(dscp: 46, ecn: .ce)], engine)
        }
    }
}
