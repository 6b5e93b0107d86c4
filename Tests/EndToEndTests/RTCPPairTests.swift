import DatagramEngine
import Foundation
import NetAddress
import TestPorts
import XCTest

/// `"rtcp": "pair"` sessions for RTP senders that send RTCP to the RTP port + 1 (RFC 3550),
/// as ffmpeg does by default: every leg gets an even RTP port and the odd port after it, and
/// RTP and RTCP each reach the receiver's matching socket.
final class RTCPPairTests: XCTestCase {
    var relay: RelayProcess!

    override func setUpWithError() throws {
        relay = try RelayProcess(ports: PortBlock(count: 99, offset: 1), [])  // odd start: pairs must still align
    }

    override func tearDown() {
        XCTAssertEqual(relay.stop(), 0, relay.log)
    }

    /// (RTP, RTCP) endpoints of each leg, read from the session's JSON.
    func pairSession(_ body: String = #"{"rtcp": "pair"}"#) throws -> (id: String, legs: [(rtp: Endpoint, rtcp: Endpoint)]) {
        let info = try XCTUnwrap(relay.request("POST", "/v1/sessions", body: body).json)
        XCTAssertEqual(info["rtcp"] as? String, "pair")
        let legs = try XCTUnwrap(info["legs"] as? [[String: Any]])
        return (try XCTUnwrap(info["id"] as? String), try legs.map { leg in
            let rtcp = try XCTUnwrap(leg["rtcp"] as? [String: Any], "every leg has its RTCP companion")
            return (Endpoint(host: leg["address"] as! String, port: UInt16(leg["port"] as! Int))!,
                    Endpoint(host: rtcp["address"] as! String, port: UInt16(rtcp["port"] as! Int))!)
        })
    }

    func testEveryLegHasAnEvenRTPPortAndTheNextOddPortForRTCP() throws {
        let sessions = [try pairSession(), try pairSession(#"{"rtcp": "pair", "legs": 3}"#)]
        var ports: Set<UInt16> = []
        for leg in sessions.flatMap(\.legs) {
            XCTAssertEqual(leg.rtp.port % 2, 0)
            XCTAssertEqual(leg.rtcp.port, leg.rtp.port + 1)
            ports.formUnion([leg.rtp.port, leg.rtcp.port])
        }
        XCTAssertEqual(ports.count, 10)
        XCTAssertEqual(try relay.stats()["ports_in_use"] as? Int, 10)
        // RTCP goes companion to companion, RTP leg to leg, never across.
        let peers = try Peers(count: 4)  // 0, 1: A's RTP and RTCP sockets; 2, 3: B's
        let legs = sessions[0].legs
        peers.send(from: 0, to: legs[0].rtp, [0])
        peers.send(from: 1, to: legs[0].rtcp, [0])
        try waitUntil { try latchedSockets(sessions[0].id) == 2 }
        peers.send(from: 2, to: legs[1].rtp, [1])
        peers.send(from: 3, to: legs[1].rtcp, [2])
        let backwards = peers.collect(expected: 2)
        XCTAssertEqual(Dictionary(backwards.map { ($0.peer, $0.bytes) }) { $1 }, [0: [1], 1: [2]])
        XCTAssertEqual(Dictionary(backwards.map { ($0.peer, $0.source) }) { $1 }, [0: legs[0].rtp, 1: legs[0].rtcp])
        peers.send(from: 0, to: legs[0].rtp, [3])
        peers.send(from: 1, to: legs[0].rtcp, [4])
        let forwards = peers.collect(expected: 2)
        XCTAssertEqual(Dictionary(forwards.map { ($0.peer, $0.bytes) }) { $1 }, [2: [3], 3: [4]])
        XCTAssertEqual(Dictionary(forwards.map { ($0.peer, $0.source) }) { $1 }, [2: legs[1].rtp, 3: legs[1].rtcp],
                       "each from the matching socket of leg B")
        for leg in sessions.map(\.id) { XCTAssertEqual(try relay.request("DELETE", "/v1/sessions/\(leg)").status, 204) }
        XCTAssertEqual(try relay.stats()["ports_in_use"] as? Int, 0, "RTCP companions' ports are released too")
    }

    /// Real ffmpeg sends one second of Opus over RTP to leg A (RTCP sender reports to port + 1,
    /// from its own port + 1) while a receiver sits on leg B's RTP and RTCP ports. The last
    /// sender report counts the RTP packets ffmpeg sent: the receiver must get all of them.
    func testFFmpegRTPAndRTCPEachReachTheReceiversMatchingPort() throws {
        let ffmpeg = "/usr/bin/ffmpeg"
        try TestTools.require([ffmpeg])
        let session = try pairSession()
        let receiver = try Peers(count: 2)  // 0: RTP socket, 1: RTCP socket
        receiver.send(from: 0, to: session.legs[1].rtp, [0x80, 0x7F])  // latch B's ports, then only listen
        receiver.send(from: 1, to: session.legs[1].rtcp, [0x80, 0xC9, 0, 1, 0, 0, 0x30, 0x39])  // an empty RR
        try waitUntil { try latchedSockets(session.id) == 2 }

        let sender = Process()
        sender.executableURL = URL(fileURLWithPath: ffmpeg)
        sender.arguments = ["-hide_banner", "-nostdin", "-loglevel", "error", "-re", "-f", "lavfi", "-i", "sine=frequency=440:duration=1",
                            "-c:a", "libopus", "-b:a", "32k", "-ssrc", "12345", "-seq", "1000", "-rtpflags", "send_bye",
                            "-f", "rtp", "rtp://\(session.legs[0].rtp)"]
        let errors = Pipe()
        sender.standardError = errors
        sender.standardOutput = FileHandle.nullDevice
        try sender.run()
        var rtp: [[UInt8]] = []
        var rtcp: [[UInt8]] = []
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline && (sender.isRunning || !rtcp.contains(where: { RTCP.types($0).contains(RTCP.bye) })) {
            for arrival in receiver.collect(seconds: 0.2) {
                XCTAssertEqual(arrival.source, arrival.peer == 0 ? session.legs[1].rtp : session.legs[1].rtcp)
                if arrival.peer == 0 { rtp.append(arrival.bytes) } else { rtcp.append(arrival.bytes) }
            }
        }
        sender.waitUntilExit()
        XCTAssertEqual(sender.terminationStatus, 0, String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))

        // RTP port: RTP only, every sequence number from 1000 on.
        XCTAssertGreaterThanOrEqual(rtp.count, 50, "a second of 20 ms Opus frames")
        XCTAssertEqual(rtp.filter { $0.count <= 12 || $0[0] >> 6 != 2 || RTCP.isRTCP($0) }.count, 0, "only RTP on the RTP port")
        XCTAssertEqual(rtp.map { $0.count > 12 ? Int($0[2]) << 8 | Int($0[3]) : -1 }, Array(1000..<(1000 + rtp.count)), "in order, none missing")
        // RTCP port: RTCP only, from this sender, the last report counting every RTP packet.
        XCTAssertTrue(rtcp.allSatisfy(RTCP.isRTCP), "only RTCP on the RTCP port")
        XCTAssertTrue(rtcp.allSatisfy { RTCP.ssrc($0) == 12345 })
        XCTAssertTrue(RTCP.types(rtcp.last ?? []).contains(RTCP.bye), "the BYE arrived")
        XCTAssertEqual(rtcp.compactMap(RTCP.senderPacketCount).last, UInt32(rtp.count), "the receiver got every RTP packet sent")
        XCTAssertGreaterThanOrEqual(rtcp.count, 2, "the first sender report and the BYE")
    }

    private func latchedSockets(_ id: String) throws -> Int {
        let legs = try XCTUnwrap(relay.request("GET", "/v1/sessions/\(id)").json?["legs"] as? [[String: Any]])
        return legs.flatMap { [$0, $0["rtcp"] as? [String: Any] ?? [:]] }.filter { $0["latched"] is [String: Any] }.count
    }
}

/// Just enough of RTCP (RFC 3550 section 6) to tell it from RTP and read sender reports.
enum RTCP {
    static let senderReport: UInt8 = 200
    static let bye: UInt8 = 203

    /// RTCP packet types are 200...204; in RTP that byte is the marker bit and payload type.
    static func isRTCP(_ datagram: [UInt8]) -> Bool {
        datagram.count >= 8 && datagram[0] >> 6 == 2 && (200...204).contains(datagram[1])
    }

    static func ssrc(_ datagram: [UInt8]) -> UInt32 {
        datagram.count >= 8 ? datagram[4..<8].reduce(0) { $0 << 8 | UInt32($1) } : 0
    }

    /// The packets of a compound datagram as (offset, type).
    static func packets(_ datagram: [UInt8]) -> [(offset: Int, type: UInt8)] {
        var result: [(Int, UInt8)] = []
        var offset = 0
        while offset + 4 <= datagram.count {
            result.append((offset, datagram[offset + 1]))
            offset += (Int(datagram[offset + 2]) << 8 | Int(datagram[offset + 3]) + 1) * 4
        }
        return result
    }

    static func types(_ datagram: [UInt8]) -> [UInt8] { packets(datagram).map(\.type) }

    /// The sender's packet count of the datagram's sender report, if it holds one.
    static func senderPacketCount(_ datagram: [UInt8]) -> UInt32? {
        guard let report = packets(datagram).first(where: { $0.type == senderReport }), report.offset + 24 <= datagram.count else { return nil }
        return datagram[(report.offset + 20)..<(report.offset + 24)].reduce(0) { $0 << 8 | UInt32($1) }
    }
}
